"""The connector's Arrow decoder against the reference codec (record_codec.decode_batch).

Random batches (null keys, values and header values, empty and multi-byte varints, every codec,
CreateTime and LogAppendTime) must give exactly the rows the reference decoder gives; ranges
cut inside batches, control batches and aborted transactions (both the Fetch and the read
service form) are dropped as Kafka consumers drop them; damaged input raises
CorruptRecordError only.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklog.connector.arrow_decode import AbortedTransactions, ArrowRecordBuilder
from sparklog.connector.schema import arrow_schema
from sparklog.protocol import compression as codecs
from sparklog.protocol.record_codec import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    RecordInput,
    build_batch,
    build_control_batch,
    decode_batch,
)
from sparklog.protocol.records import TIMESTAMP_LOG_APPEND_TIME, CorruptRecordError

Row = tuple[bytes | None, bytes | None, int, int, int, Any]

_bytes_or_none = st.one_of(st.none(), st.binary(max_size=300))
_headers = st.lists(
    st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20))), max_size=3
)
_record = st.builds(
    RecordInput,
    key=_bytes_or_none,
    value=_bytes_or_none,
    headers=_headers.map(tuple),
    timestamp=st.integers(min_value=0, max_value=2**41),
)
_batch_spec = st.tuples(
    st.lists(_record, min_size=1, max_size=12),
    st.sampled_from([codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD]),
    st.booleans(),  # LogAppendTime
    st.integers(min_value=0, max_value=3),  # offset gap before the batch
)


def _reference_rows(buf: bytes, start: int, end: int, include_headers: bool) -> list[Row]:
    rows: list[Row] = []
    pos = 0
    while pos < len(buf):
        header, records = decode_batch(buf, pos)
        pos += header.size_in_bytes
        if header.is_control:
            continue
        for r in records:
            if start <= r.offset < end:
                headers = (
                    [{"key": k, "value": v} for k, v in r.headers] or None
                    if include_headers
                    else None
                )
                rows.append((r.key, r.value, r.offset, r.timestamp, header.timestamp_type, headers))
    return rows


def _rows(batch: pa.RecordBatch, include_headers: bool) -> list[Row]:
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    data = batch.to_pydict()
    out: list[Row] = []
    for i in range(batch.num_rows):
        stamp: dt.datetime = data["timestamp"][i]
        ms = (stamp - epoch) // dt.timedelta(milliseconds=1)
        headers = data["headers"][i] if include_headers else None
        out.append(
            (
                data["key"][i],
                data["value"][i],
                data["offset"][i],
                ms,
                data["timestampType"][i],
                headers,
            )
        )
    return out


def _encode(specs: list[tuple[list[RecordInput], int, bool, int]]) -> bytes:
    out = bytearray()
    offset = 0
    for records, codec, log_append, gap in specs:
        offset += gap
        out += build_batch(
            records,
            base_offset=offset,
            compression=codec,
            timestamp_type=TIMESTAMP_LOG_APPEND_TIME if log_append else 0,
            max_timestamp=1_700_000_000_000 if log_append else None,
        )
        offset += len(records)
    return bytes(out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(_batch_spec, min_size=1, max_size=4),
    include_headers=st.booleans(),
    cut=st.tuples(st.integers(0, 60), st.integers(0, 60)),
)
def test_same_rows_as_reference(
    specs: list[tuple[list[RecordInput], int, bool, int]],
    include_headers: bool,
    cut: tuple[int, int],
) -> None:
    buf = _encode(specs)
    start, end = min(cut), max(cut) + 1
    builder = ArrowRecordBuilder("t", 3, include_headers)
    consumed, next_offset = builder.add(buf, start, end)
    batch = builder.build()
    assert batch.schema == arrow_schema(include_headers)
    assert consumed <= len(buf)
    assert _rows(batch, include_headers) == _reference_rows(buf, start, end, include_headers)
    assert set(batch.column("topic").to_pylist()) <= {"t"}
    assert set(batch.column("partition").to_pylist()) <= {3}
    assert builder.rows == 0 and builder.build().num_rows == 0
    if consumed == len(buf):
        assert next_offset == decode_batch(buf, _last_batch_pos(buf))[0].next_offset


def _last_batch_pos(buf: bytes) -> int:
    pos = last = 0
    while pos < len(buf):
        last = pos
        pos += decode_batch(buf, pos)[0].size_in_bytes
    return last


def test_multi_byte_varints_and_large_values() -> None:
    records = [
        RecordInput(b"k" * 70, b"v" * 70_000, (), 5, 0),
        RecordInput(None, b"x" * 200, (("h", None),), 1_000_000_000, 300),
        RecordInput(b"", None, (), -1 + 2, 20_000),
    ]
    buf = build_batch(records, base_offset=2**40)
    builder = ArrowRecordBuilder("t", 0, True)
    builder.add(buf, 0, 2**41)
    assert _rows(builder.build(), True) == _reference_rows(buf, 0, 2**41, True)


def test_partial_tail_is_left_for_the_next_read() -> None:
    first = build_batch([(b"a", b"1"), (b"b", b"2")], base_offset=0)
    second = build_batch([(b"c", b"3")], base_offset=2)
    builder = ArrowRecordBuilder("t", 0, False)
    consumed, next_offset = builder.add(first + second[:-5], 0, 100)
    assert (consumed, next_offset) == (len(first), 2)
    assert builder.build().column("value").to_pylist() == [b"1", b"2"]


def _txn(offset: int, pid: int, values: list[bytes]) -> bytes:
    return build_batch(
        [(None, v) for v in values],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )


def _marker(offset: int, pid: int, kind: int) -> bytes:
    return build_control_batch(kind, base_offset=offset, producer_id=pid, producer_epoch=0)


def _log_with_transactions() -> bytes:
    # pid 1 aborts [0, 2], pid 2 commits [1..4], pid 1 commits [5, 7]; plain records at 8.
    return b"".join(
        [
            _txn(0, 1, [b"a0"]),
            _txn(1, 2, [b"c1"]),
            _marker(2, 1, CONTROL_ABORT),
            _txn(3, 2, [b"c3"]),
            _marker(4, 2, CONTROL_COMMIT),
            _txn(5, 1, [b"c5", b"c6"]),
            _marker(7, 1, CONTROL_COMMIT),
            build_batch([(None, b"p8")], base_offset=8),
        ]
    )


def test_fetch_form_aborted_transactions_close_at_their_marker() -> None:
    buf = _log_with_transactions()
    aborted = AbortedTransactions()
    aborted.add(1, 0)
    builder = ArrowRecordBuilder("t", 0, False)
    builder.add(buf, 0, 9, aborted)
    batch = builder.build()
    assert batch.column("value").to_pylist() == [b"c1", b"c3", b"c5", b"c6", b"p8"]
    assert batch.column("offset").to_pylist() == [1, 3, 5, 6, 8]


def test_read_service_form_aborted_transactions_without_markers() -> None:
    buf = b"".join(
        [
            _txn(0, 1, [b"a0"]),
            _txn(1, 2, [b"c1"]),
            _txn(3, 2, [b"c3"]),
            _txn(5, 1, [b"c5", b"c6"]),
        ]
    )
    aborted = AbortedTransactions()
    aborted.add(1, 0, 2)
    builder = ArrowRecordBuilder("t", 0, False)
    builder.add(buf, 0, 9, aborted)
    assert builder.build().column("offset").to_pylist() == [1, 3, 5, 6]


def test_without_tracker_every_data_record_is_kept() -> None:
    builder = ArrowRecordBuilder("t", 0, False)
    builder.add(_log_with_transactions(), 0, 9)
    assert builder.build().column("offset").to_pylist() == [0, 1, 3, 5, 6, 8]


@pytest.mark.parametrize("damage", ["truncate_record", "magic", "length", "codec"])
def test_damage_raises_corrupt_record_error(damage: str) -> None:
    buf = bytearray(build_batch([(b"key", b"value" * 20)] * 3, base_offset=0))
    if damage == "truncate_record":
        # Shrink the declared batch length so the last record is cut.
        buf[8:12] = (int.from_bytes(buf[8:12]) - 10).to_bytes(4)
        del buf[-10:]
    elif damage == "magic":
        buf[16] = 1
    elif damage == "length":
        buf[8:12] = (10).to_bytes(4)
    else:
        buf[22] |= 0x07  # compression id 7 does not exist
    with pytest.raises(CorruptRecordError):
        ArrowRecordBuilder("t", 0, True).add(bytes(buf), 0, 100)


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=61, max_size=400), st.booleans())
def test_fuzz_only_corrupt_record_error(noise: bytes, include_headers: bool) -> None:
    good = build_batch([(b"k", b"v" * 30, (("h", b"x"),))] * 2, base_offset=0)
    buf = bytearray(good)
    buf[61:] = noise[: len(good) - 61].ljust(len(good) - 61, b"\x00")
    try:
        builder = ArrowRecordBuilder("t", 0, include_headers)
        builder.add(bytes(buf), 0, 100)
        builder.build()
    except CorruptRecordError:
        pass
