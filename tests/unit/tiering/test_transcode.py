"""Segment -> Parquet -> Kafka batches round trips (hypothesis), plus the edge cases.

The round trip must keep records, offsets, batch boundaries and producer fields for every
codec, headers, null keys and values, control and transactional batches, LogAppendTime and
compacted segments (gaps between batches and inside them); a segment of CreateTime batches
comes back byte for byte. Well-formed batches must be decoded by the vector path, never by the
exact path (record_codec's loop), which is kept for odd and damaged batches.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklog.protocol.record_codec import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    Record,
    RecordInput,
    build_batch,
    control_record,
    decode_batch,
)
from sparklog.protocol.records import (
    CRC_OFFSET,
    RECORDS_COUNT_OFFSET,
    BatchHeader,
    compute_crc,
    iter_batches,
)
from sparklog.tiering import batch_decode, parquet_batches
from sparklog.tiering.layout import PARQUET_SCHEMA
from sparklog.tiering.metadata import AbortedTxn
from sparklog.tiering.parquet_batches import parquet_to_batches
from sparklog.tiering.transcode import TranscodeError, segment_to_parquet


@dataclass(frozen=True)
class BatchSpec:
    records: list[RecordInput]
    compression: int
    timestamp_type: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool
    control: bool
    gap_before: int
    epoch_bump: int
    trailing_gap: int  # compacted away after the last record (lastOffsetDelta beyond it)


header_st = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=12)))
record_st = st.builds(
    RecordInput,
    key=st.one_of(st.none(), st.binary(max_size=16)),
    value=st.one_of(st.none(), st.binary(max_size=64), st.sampled_from([b"x" * 70, b"y" * 9000])),
    headers=st.one_of(st.just(()), st.lists(header_st, max_size=3).map(tuple)),
    timestamp=st.integers(0, 2**41),
)
# Runs of equal-sized records, as producers write them (the vector path finds them at once).
uniform_st = st.builds(
    lambda n, size, t0: [RecordInput(b"%04d" % i, b"v" * size, (), t0 + i) for i in range(n)],
    st.integers(1, 150),
    st.sampled_from([0, 10, 100, 1024]),
    st.integers(0, 2**41),
)


@st.composite
def batch_spec(draw: st.DrawFn) -> BatchSpec:
    control = draw(st.booleans()) and draw(st.booleans())
    if control:
        kind = draw(st.sampled_from([CONTROL_ABORT, CONTROL_COMMIT]))
        records = [control_record(kind, draw(st.integers(0, 5)), draw(st.integers(0, 2**41)))]
    elif draw(st.booleans()):
        records = draw(uniform_st)
    else:
        records = draw(st.lists(record_st, min_size=1, max_size=6))
    compacted = not control and draw(st.integers(0, 3)) == 0
    if compacted:
        gaps = draw(st.lists(st.integers(1, 3), min_size=len(records), max_size=len(records)))
        delta = -1
        for i, gap in enumerate(gaps):
            delta += gap
            records[i] = dataclasses.replace(records[i], offset_delta=delta)
    return BatchSpec(
        records=records,
        compression=draw(st.integers(0, 4)),
        timestamp_type=draw(st.integers(0, 1)),
        producer_id=draw(st.sampled_from([-1, 7, 1000])),
        producer_epoch=draw(st.sampled_from([-1, 0, 3])),
        base_sequence=draw(st.sampled_from([-1, 0, 42])),
        transactional=control or draw(st.booleans()),
        control=control,
        gap_before=draw(st.sampled_from([0, 0, 0, 5])),
        epoch_bump=draw(st.sampled_from([0, 0, 1])),
        trailing_gap=draw(st.sampled_from([0, 2])) if compacted else 0,
    )


def build_segment(specs: list[BatchSpec], first_offset: int = 0) -> bytes:
    out = bytearray()
    offset = first_offset
    epoch = 0
    for spec in specs:
        offset += spec.gap_before
        epoch += spec.epoch_bump
        last_delta = (spec.records[-1].offset_delta or len(spec.records) - 1) + spec.trailing_gap
        out += build_batch(
            spec.records,
            base_offset=offset,
            compression=spec.compression,
            timestamp_type=spec.timestamp_type,
            producer_id=spec.producer_id,
            producer_epoch=spec.producer_epoch,
            base_sequence=spec.base_sequence,
            partition_leader_epoch=epoch,
            is_transactional=spec.transactional,
            is_control=spec.control,
            max_timestamp=1_700_000_000_000 if spec.timestamp_type == 1 else None,
            last_offset_delta=last_delta,
        )
        offset += last_delta + 1
    return bytes(out)


def decode_all(data: bytes) -> list[tuple[BatchHeader, list[Record]]]:
    return [decode_batch(data, pos) for pos, _ in iter_batches(data)]


def same_batch(a: tuple[BatchHeader, list[Record]], b: tuple[BatchHeader, list[Record]]) -> None:
    ha, hb = a[0], b[0]
    for name in (
        "base_offset",
        "last_offset_delta",
        "partition_leader_epoch",
        "attributes",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "records_count",
    ):
        assert getattr(ha, name) == getattr(hb, name), name
    if ha.timestamp_type == 0:
        assert ha.base_timestamp == hb.base_timestamp
    assert a[1] == b[1]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(batch_spec(), min_size=1, max_size=8),
    row_group_rows=st.integers(1, 7),
    first_offset=st.sampled_from([0, 12345]),
)
def test_roundtrip_every_record(
    specs: list[BatchSpec], row_group_rows: int, first_offset: int
) -> None:
    segment = build_segment(specs, first_offset)
    with mock.patch.object(batch_decode, "_exact", _no_exact_path):
        data, stats = segment_to_parquet(segment, row_group_rows=row_group_rows)
    assert isinstance(data, bytes)
    original = decode_all(segment)
    all_records = [r for _, records in original for r in records]

    table = pq.read_table(pa.BufferReader(data))
    assert table.schema.equals(PARQUET_SCHEMA)
    offsets = table.column("offset").to_pylist()
    assert offsets == [r.offset for r in all_records]
    assert stats.record_count == len(all_records) == table.num_rows
    assert stats.base_offset == original[0][0].base_offset
    assert stats.end_offset == original[-1][0].last_offset
    assert stats.max_timestamp == max(r.timestamp for r in all_records)
    for spec_index, (header, _) in enumerate(original):
        if specs[spec_index].gap_before == 0 and spec_index > 0:
            assert original[spec_index - 1][0].next_offset == header.base_offset

    rebuilt_bytes = parquet_to_batches(data, 0, 1 << 30)
    rebuilt = decode_all(rebuilt_bytes)
    assert len(rebuilt) == len(original)
    for a, b in zip(original, rebuilt, strict=True):
        same_batch(a, b)
    if all(spec.timestamp_type == 0 for spec in specs):
        assert rebuilt_bytes == segment


def _no_exact_path(*_: object) -> None:
    raise AssertionError("the vector path declined a well-formed batch")


@settings(max_examples=30, deadline=None)
@given(
    specs=st.lists(batch_spec(), min_size=1, max_size=6),
    row_group_rows=st.integers(1, 5),
    chunk_rows=st.integers(1, 4),
    data=st.data(),
)
def test_fetch_from_offset(
    specs: list[BatchSpec], row_group_rows: int, chunk_rows: int, data: st.DataObject
) -> None:
    segment = build_segment(specs)
    parquet, stats = segment_to_parquet(segment, row_group_rows=row_group_rows)
    assert isinstance(parquet, bytes)
    start = data.draw(st.integers(0, stats.end_offset))
    original = decode_all(segment)
    expected = [b for b in original if b[0].last_offset >= start]
    # Small chunks make batches straddle the chunks rows are decoded in.
    with mock.patch.object(parquet_batches, "_CHUNK_ROWS", chunk_rows):
        rebuilt = decode_all(parquet_to_batches(parquet, start, 1 << 30))
    assert len(rebuilt) == len(expected)
    for a, b in zip(expected, rebuilt, strict=True):
        same_batch(a, b)
    # max_bytes cuts at batch boundaries and always returns the first batch.
    one = parquet_to_batches(parquet, start, 1)
    assert len(decode_all(one)) == 1
    assert decode_all(one)[0][0].base_offset == expected[0][0].base_offset


def test_aborted_flags_and_file_metadata(tmp_path: Path) -> None:
    data = build_batch(
        [(b"k", b"committed")],
        base_offset=0,
        producer_id=5,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    data += build_batch(
        [(b"k", b"aborted"), (b"k", b"aborted2")],
        base_offset=1,
        producer_id=6,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    data += build_batch(
        [control_record(CONTROL_ABORT)],
        base_offset=3,
        producer_id=6,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )
    data += build_batch([(None, None)], base_offset=4)
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(data)
    out = tmp_path / "seg.parquet"
    path, stats = segment_to_parquet(
        str(log), [AbortedTxn(6, 1, 3)], out=str(out), topic="t", partition=3
    )
    assert path == str(out)
    table = pq.read_table(str(out))
    assert table.column("aborted").to_pylist() == [False, True, True, False, False]
    assert table.column("is_control").to_pylist() == [False, False, False, True, False]
    assert table.column("key").to_pylist()[-1] is None
    assert table.column("value").to_pylist()[-1] is None
    assert table.column("headers").to_pylist() == [None] * 5
    meta = pq.ParquetFile(str(out)).metadata
    kv = {k.decode(): v.decode() for k, v in meta.metadata.items()}
    assert kv["sparklog.format"] == "1"
    assert (kv["topic"], kv["partition"], kv["base_offset"], kv["end_offset"]) == (
        "t",
        "3",
        "0",
        "4",
    )
    assert meta.row_group(0).column(0).statistics.has_min_max
    assert stats.segment_bytes == len(data)


def test_row_groups_are_sized_and_skipped() -> None:
    segment = b"".join(
        build_batch([(b"k", b"v%d" % i) for i in range(10)], base_offset=10 * b) for b in range(10)
    )
    data, _ = segment_to_parquet(segment, row_group_rows=25)
    assert isinstance(data, bytes)
    parquet = pq.ParquetFile(pa.BufferReader(data))
    assert [parquet.metadata.row_group(i).num_rows for i in range(4)] == [25, 25, 25, 25]
    batches = decode_all(parquet_to_batches(data, 95, 1 << 20))
    assert [h.base_offset for h, _ in batches] == [90]
    assert len(batches[0][1]) == 10


def test_empty_segment() -> None:
    data, stats = segment_to_parquet(b"")
    assert isinstance(data, bytes)
    assert stats.record_count == 0 and stats.base_offset == -1
    assert pq.read_table(pa.BufferReader(data)).num_rows == 0
    assert parquet_to_batches(data, 0, 100) == b""


def test_corrupt_and_torn_segments_are_clean_errors(tmp_path: Path) -> None:
    good = build_batch([(b"k", b"v")] * 3)
    damaged = bytearray(good)
    damaged[-1] ^= 0xFF
    with pytest.raises(TranscodeError, match="corrupt"):
        segment_to_parquet(bytes(damaged))
    with pytest.raises(TranscodeError, match="torn"):
        segment_to_parquet(good + good[:20])
    with pytest.raises(TranscodeError):
        parquet_to_batches(b"PAR1 not parquet", 0, 100)
    data, _ = segment_to_parquet(good)
    assert isinstance(data, bytes)
    with pytest.raises(TranscodeError):
        parquet_to_batches(data[: len(data) // 2], 0, 100)


def test_records_that_do_not_fill_their_batch_are_corrupt(tmp_path: Path) -> None:
    """A batch with a valid CRC whose records do not match its count: the vector path
    declines it and the exact path refuses it, from a mapped file as from bytes."""
    good = bytearray(build_batch([(b"k", b"v" * 300)] * 30, base_offset=0))
    struct.pack_into(">i", good, RECORDS_COUNT_OFFSET, 31)
    struct.pack_into(">I", good, CRC_OFFSET, compute_crc(good, 0, len(good) - 12))
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(bytes(good))
    for source in (str(log), bytes(good)):
        with pytest.raises(TranscodeError, match="corrupt"):
            segment_to_parquet(source)


def test_objects_written_with_other_encodings_rebuild_alike() -> None:
    """The encodings are not part of the layout: an object written by an earlier version
    (plain encodings, no delta) or another writer rebuilds the same batches."""
    segment = b"".join(
        build_batch(
            [(b"k%d" % i, None if i % 4 else b"v" * i, (("h", b"%d" % i),)) for i in range(40)],
            base_offset=40 * b,
            compression=b % 5,
        )
        for b in range(6)
    )
    data, _ = segment_to_parquet(segment, row_group_rows=50)
    assert isinstance(data, bytes)
    table = pq.read_table(pa.BufferReader(data))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=64, use_dictionary=False, compression="snappy")
    other = sink.getvalue().to_pybytes()
    assert parquet_to_batches(other, 0, 1 << 30) == parquet_to_batches(data, 0, 1 << 30)
    assert parquet_to_batches(other, 0, 1 << 30) == segment


def test_uncompressed_batches_are_framed_in_place_in_the_joined_records() -> None:
    """batch_encode leaves each batch's header place before its first record: an uncompressed
    batch comes back as a view of the encoder's buffer, a compressed one as new bytes, both
    byte for byte the batches of origin; views of one chunk do not overwrite each other."""
    plain = [
        build_batch([(b"k%d" % i, b"v%d" % i * 30) for i in range(n)], base_offset=base)
        for base, n in ((0, 3), (3, 1), (4, 5))
    ]
    zstd = build_batch([(b"z", b"w" * 200)], base_offset=9, compression=4)
    parquet, _ = segment_to_parquet(b"".join([*plain, zstd]), row_group_rows=100)
    batches = list(parquet_batches.iter_parquet_batches(parquet))
    assert [type(batch) for batch in batches] == [memoryview, memoryview, memoryview, bytes]
    assert [bytes(batch) for batch in batches] == [*plain, zstd]
