"""The shared batch decoder's exact path: batches the vector path declines (here a 10-byte
timestamp delta, a non-UTF-8 header key) are decoded, or refused, by record_codec's loop,
and a run mixing them with plain batches gives the same rows as decoding each batch alone."""

from __future__ import annotations

import pytest

from sparklog.protocol import compression as codecs
from sparklog.protocol.record_codec import RecordInput, build_batch, decode_batch
from sparklog.protocol.records import RECORDS_OFFSET, CorruptRecordError, parse_batch_header
from sparklog.tiering.batch_decode import BatchRecords, decode_records
from sparklog.tiering.layout import HEADER_TYPE


def _batch_records(buf: bytes) -> BatchRecords:
    header = parse_batch_header(buf)
    payload = codecs.decompress(header.compression, buf[RECORDS_OFFSET:])
    return BatchRecords(
        payload=payload,
        pos=0,
        end=len(payload),
        count=header.records_count,
        base_offset=header.base_offset,
        base_timestamp=header.base_timestamp,
        max_timestamp=header.max_timestamp,
        log_append=header.timestamp_type == 1,
    )


def test_declined_batch_in_a_run_takes_the_exact_path() -> None:
    plain = [RecordInput(b"k%d" % i, b"v" * 30, (("h", b"1"),), 1000 + i) for i in range(50)]
    # The second record's timestamp delta is below -2**62: a 10-byte varlong.
    odd = [RecordInput(b"a", None, (), 2**62 + 5), RecordInput(None, b"b", (), 4)]
    batches = [
        build_batch(plain, base_offset=0),
        build_batch(odd, base_offset=50, compression=codecs.LZ4),
        build_batch(plain, base_offset=52, compression=codecs.ZSTD),
    ]
    decoded = decode_records([_batch_records(b) for b in batches], HEADER_TYPE)
    expected = [r for b in batches for r in decode_batch(b)[1]]
    assert decoded.batch_rows.tolist() == [50, 2, 50]
    assert decoded.offsets.tolist() == [r.offset for r in expected]
    assert decoded.timestamps.tolist() == [r.timestamp for r in expected]
    assert decoded.keys.to_pylist() == [r.key for r in expected]
    assert decoded.values.to_pylist() == [r.value for r in expected]
    assert decoded.headers is not None
    rows = decoded.headers.to_pylist()
    headers = [[(h["key"], h["value"]) for h in row] if row else [] for row in rows]
    assert headers == [list(r.headers) for r in expected]


def test_a_header_key_that_is_not_utf8_is_refused() -> None:
    good = build_batch([(b"k", b"v", (("hh", b"x"),))] * 20)
    damaged = bytearray(good)
    at = damaged.rindex(b"hh")
    damaged[at] = 0xFF
    with pytest.raises(CorruptRecordError, match="UTF-8"):
        decode_records([_batch_records(bytes(damaged))], HEADER_TYPE)
