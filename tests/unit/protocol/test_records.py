"""Tests for sparklog.protocol.records and sparklog.protocol.record_codec: header, validation,
in-place edits, codec, fuzz and golden interop with kafka-python's independent v2 encoder and
decoder."""

from __future__ import annotations

import contextlib
import struct
import types
from collections.abc import Iterator

import cramjam
import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import default_records as kafka_records

from sparklog.protocol import compression as codecs
from sparklog.protocol import record_codec as rc
from sparklog.protocol import records as r

CODECS = [codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD]


def sample_batch(**kwargs: object) -> bytes:
    rows = [
        (b"k1", b"v1", [("h", b"x"), ("n", None)], 1_000),
        (None, b"v2", [], 1_007),
        (b"k3", None, [], 1_003),
    ]
    return rc.build_batch(rows, **kwargs)  # type: ignore[arg-type]


# --- header ------------------------------------------------------------------------------------


def test_parse_batch_header_fields_and_properties() -> None:
    raw = sample_batch(
        base_offset=100,
        partition_leader_epoch=7,
        producer_id=42,
        producer_epoch=3,
        base_sequence=10,
        is_transactional=True,
        compression=codecs.ZSTD,
    )
    header = r.parse_batch_header(raw)
    assert header.base_offset == 100
    assert header.batch_length == len(raw) - 12
    assert header.size_in_bytes == len(raw)
    assert header.partition_leader_epoch == 7
    assert header.magic == 2
    assert header.crc == crc32c.crc32c(raw[21:])
    assert header.compression == codecs.ZSTD
    assert header.timestamp_type == r.TIMESTAMP_CREATE_TIME
    assert header.is_transactional and not header.is_control
    assert header.last_offset_delta == 2
    assert header.last_offset == 102 and header.next_offset == 103
    assert header.record_count == header.records_count == 3
    assert header.base_timestamp == 1_000 and header.max_timestamp == 1_007
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 10)
    assert header.has_producer_id and header.last_sequence == 12


def test_header_at_offset_in_memoryview() -> None:
    raw = b"\xff" * 5 + sample_batch(base_offset=9)
    assert r.parse_batch_header(memoryview(raw), 5).base_offset == 9


def test_last_sequence_wraps() -> None:
    raw = sample_batch(producer_id=1, producer_epoch=0, base_sequence=2**31 - 2)
    assert r.parse_batch_header(raw).last_sequence == 0
    assert r.parse_batch_header(sample_batch()).last_sequence == r.NO_SEQUENCE


@pytest.mark.parametrize("size", [0, 1, 12, 60])
def test_parse_batch_header_short_buffer(size: int) -> None:
    with pytest.raises(r.CorruptRecordError, match="truncated"):
        r.parse_batch_header(sample_batch()[:size])


# --- validation --------------------------------------------------------------------------------


def test_validate_accepts_valid_batches() -> None:
    for codec in CODECS:
        raw = sample_batch(compression=codec)
        assert r.validate_batch(raw) == r.parse_batch_header(raw)


def test_every_single_byte_change_in_crc_region_is_detected() -> None:
    for codec in (codecs.NONE, codecs.GZIP):
        raw = sample_batch(compression=codec)
        for index in range(r.ATTRIBUTES_OFFSET, len(raw)):
            for flip in (0x01, 0x80, 0xFF):
                damaged = bytearray(raw)
                damaged[index] ^= flip
                with pytest.raises(r.CorruptRecordError) as info:
                    r.validate_batch(damaged)
                assert info.value.error_code == r.CORRUPT_MESSAGE
                assert "Record is corrupt (stored crc = " in str(info.value)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_any_change_to_crc_field_or_covered_bytes_is_detected(data: st.DataObject) -> None:
    raw = bytearray(sample_batch(compression=codecs.LZ4))
    index = data.draw(st.integers(r.CRC_OFFSET, len(raw) - 1))
    raw[index] ^= data.draw(st.integers(1, 255))
    with pytest.raises(r.CorruptRecordError):
        r.validate_batch(raw)


def test_base_offset_and_epoch_are_outside_the_crc() -> None:
    damaged = bytearray(sample_batch())
    damaged[0:8] = b"\x00\x00\x00\x00\x00\x00\x01\x00"
    damaged[12:16] = b"\x00\x00\x00\x09"
    assert r.validate_batch(damaged).base_offset == 256


def test_magic_other_than_two_is_refused() -> None:
    damaged = bytearray(sample_batch())
    damaged[r.MAGIC_OFFSET] = 1
    with pytest.raises(r.CorruptRecordError, match="magic 1"):
        r.validate_batch(damaged)


def test_length_below_overhead_is_refused() -> None:
    damaged = bytearray(sample_batch())
    struct.pack_into(">i", damaged, 8, 48)
    with pytest.raises(r.CorruptRecordError, match="smaller than the minimum allowed overhead 61"):
        r.validate_batch(damaged)
    with pytest.raises(r.CorruptRecordError):
        list(r.iter_batches(damaged))


def _patch(raw: bytes, fmt: str, offset: int, value: int) -> bytearray:
    """Rewrite a header field and fix the CRC, to reach the checks behind it."""
    patched = bytearray(raw)
    struct.pack_into(fmt, patched, offset, value)
    struct.pack_into(">I", patched, r.CRC_OFFSET, crc32c.crc32c(bytes(patched[21:])))
    return patched


def test_count_larger_than_offset_range_is_invalid_record() -> None:
    patched = _patch(sample_batch(), ">i", r.LAST_OFFSET_DELTA_OFFSET, 1)
    with pytest.raises(r.CorruptRecordError, match="Inconsistent batch offset range") as info:
        r.validate_batch(patched)
    assert info.value.error_code == r.INVALID_RECORD


def test_compacted_shape_is_accepted_in_logs() -> None:
    # Compaction keeps lastOffsetDelta and drops records: fewer records than offsets is fine.
    patched = _patch(sample_batch(), ">i", r.LAST_OFFSET_DELTA_OFFSET, 10)
    assert r.validate_batch(patched).last_offset == 10


def test_uncompressed_count_that_cannot_fit_is_refused() -> None:
    raw = sample_batch()
    patched = _patch(raw, ">i", r.RECORDS_COUNT_OFFSET, 1000)
    patched = _patch(bytes(patched), ">i", r.LAST_OFFSET_DELTA_OFFSET, 999)
    with pytest.raises(r.CorruptRecordError, match="declares 1000 records"):
        r.validate_batch(patched)


def test_unknown_compression_is_unsupported() -> None:
    patched = _patch(sample_batch(), ">h", r.ATTRIBUTES_OFFSET, 6)
    with pytest.raises(r.CorruptRecordError) as info:
        r.validate_batch(patched)
    assert info.value.error_code == r.UNSUPPORTED_COMPRESSION_TYPE


def three_batches() -> bytes:
    return b"".join(
        sample_batch(base_offset=base, compression=codec)
        for base, codec in ((0, codecs.NONE), (3, codecs.SNAPPY), (6, codecs.ZSTD))
    )


def test_iter_batches_positions_and_headers() -> None:
    log = three_batches()
    found = list(r.iter_batches(log))
    assert [h.base_offset for _, h in found] == [0, 3, 6]
    assert found[0][0] == 0
    assert found[1][0] == found[0][1].size_in_bytes
    assert found[2][0] + found[2][1].size_in_bytes == len(log)
    assert list(r.iter_batches(memoryview(log), found[1][0])) == found[1:]


def test_iter_batches_on_every_truncation() -> None:
    log = three_batches()
    ends = [p + h.size_in_bytes for p, h in r.iter_batches(log)]
    for cut in range(len(log) + 1):
        found = list(r.iter_batches(log[:cut]))
        assert len(found) == sum(1 for end in ends if end <= cut)


def test_iter_batches_fed_one_byte_at_a_time() -> None:
    log = bytearray()
    seen: list[int] = []
    for byte in three_batches():
        log.append(byte)
        seen = [p for p, _ in r.iter_batches(log)]
    assert len(seen) == 3


def test_validate_batch_on_every_truncation() -> None:
    raw = sample_batch(compression=codecs.GZIP)
    for cut in range(len(raw)):
        with pytest.raises(r.CorruptRecordError) as info:
            r.validate_batch(raw[:cut])
        assert info.value.error_code == r.CORRUPT_MESSAGE
        with pytest.raises(r.CorruptRecordError):
            rc.decode_batch(raw[:cut])


def test_trailing_data_is_ignored_by_batch_readers() -> None:
    raw = sample_batch()
    assert r.validate_batch(raw + b"\x00" * 7) == r.parse_batch_header(raw)
    assert len(rc.decode_batch(raw + b"junk")[1]) == 3


@settings(max_examples=100, deadline=None)
@given(garbage=st.binary(max_size=200), valid_count=st.integers(0, 3))
def test_scan_valid_prefix_stops_at_garbage(garbage: bytes, valid_count: int) -> None:
    batches = [sample_batch(base_offset=3 * i) for i in range(valid_count)]
    prefix = b"".join(batches)
    valid_bytes, headers = r.scan_valid_prefix(prefix + garbage)
    assert valid_bytes == len(prefix)
    assert [h.base_offset for h in headers] == [3 * i for i in range(valid_count)]


def test_scan_valid_prefix_on_torn_and_damaged_tails() -> None:
    log = three_batches()
    ends = [p + h.size_in_bytes for p, h in r.iter_batches(log)]
    for cut in range(0, len(log) + 1, 3):
        valid_bytes, headers = r.scan_valid_prefix(log[:cut])
        assert valid_bytes == max([0, *(end for end in ends if end <= cut)])
        assert len(headers) == sum(1 for end in ends if end <= cut)
    damaged = bytearray(log)
    damaged[ends[1] - 1] ^= 0x01
    assert r.scan_valid_prefix(damaged) == (ends[0], [r.parse_batch_header(log)])


@settings(max_examples=300, deadline=None)
@given(garbage=st.binary(max_size=400))
def test_readers_raise_only_corrupt_record_error_on_garbage(garbage: bytes) -> None:
    for reader in (
        lambda b: list(r.iter_batches(b)),
        r.validate_batch,
        r.scan_valid_prefix,
        r.validate_produce_records,
        lambda b: rc.decode_batch(b, verify_crc=False),
    ):
        with contextlib.suppress(r.CorruptRecordError):
            reader(garbage)


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_record_decoder_raises_only_corrupt_record_error(codec: int, data: st.DataObject) -> None:
    # With the CRC check off, the record parser sees arbitrary damage and must stay clean.
    raw = bytearray(sample_batch(compression=codec))
    for _ in range(data.draw(st.integers(1, 3))):
        index = data.draw(st.integers(r.RECORDS_COUNT_OFFSET, len(raw) - 1))
        raw[index] = data.draw(st.integers(0, 255))
    with contextlib.suppress(r.CorruptRecordError):
        rc.decode_batch(raw, verify_crc=False)


# --- produce validation ------------------------------------------------------------------------


def test_validate_produce_records_accepts_a_client_batch() -> None:
    raw = sample_batch(producer_id=5, producer_epoch=0, base_sequence=0)
    assert r.validate_produce_records(raw) == [(0, r.parse_batch_header(raw))]


def _produce_error(raw: bytes | bytearray, **kwargs: object) -> r.CorruptRecordError:
    with pytest.raises(r.CorruptRecordError) as info:
        r.validate_produce_records(raw, topic_partition="orders-0", **kwargs)  # type: ignore[arg-type]
    return info.value


@pytest.mark.parametrize(
    ("raw", "code", "message"),
    [
        (b"", r.INVALID_RECORD, "at least one record batch"),
        (sample_batch() * 2, r.INVALID_RECORD, "exactly one record batch"),
        (sample_batch() + b"\x00\x01", r.CORRUPT_MESSAGE, "2 bytes of trailing data"),
        (sample_batch()[:-1], r.CORRUPT_MESSAGE, "truncated"),
        (
            sample_batch(base_offset=5),
            r.INVALID_RECORD,
            "The baseOffset of the record batch in the append to orders-0 should be 0, but it is 5",
        ),
        (
            sample_batch(is_control=True),
            r.INVALID_RECORD,
            "Clients are not allowed to write control records in topic partition orders-0",
        ),
        (
            sample_batch(producer_id=9, producer_epoch=0),
            r.INVALID_RECORD,
            "Invalid sequence number -1 in record batch with producerId 9",
        ),
        (
            rc.build_batch([]),
            r.INVALID_RECORD,
            "Invalid reported count for record batch: 0",
        ),
        (
            sample_batch(last_offset_delta=5),
            r.INVALID_RECORD,
            "Inconsistent batch offset range [0, 5] and count of records 3",
        ),
    ],
)
def test_validate_produce_records_errors(raw: bytes, code: int, message: str) -> None:
    error = _produce_error(raw)
    assert error.error_code == code
    assert message in str(error)


def test_validate_produce_records_magic_and_crc() -> None:
    raw = bytearray(sample_batch())
    raw[-1] ^= 0x55
    error = _produce_error(raw)
    assert error.error_code == r.CORRUPT_MESSAGE and "stored crc" in str(error)
    raw[r.MAGIC_OFFSET] = 1
    assert _produce_error(raw).error_code == r.INVALID_RECORD


def test_validate_produce_records_size_limit() -> None:
    raw = sample_batch()
    error = _produce_error(raw, max_batch_size=len(raw) - 1)
    assert error.error_code == r.MESSAGE_TOO_LARGE
    assert r.validate_produce_records(raw, max_batch_size=len(raw))


# --- in-place edits ----------------------------------------------------------------------------


def test_assign_offsets_in_place_keeps_crc() -> None:
    log = bytearray(b"\xee" * 10 + sample_batch(compression=codecs.LZ4))
    header = r.assign_offsets(memoryview(log), 10, base_offset=5000, leader_epoch=12)
    assert (header.base_offset, header.partition_leader_epoch, header.last_offset) == (
        5000,
        12,
        5002,
    )
    assert log[:10] == b"\xee" * 10
    assert r.validate_batch(log, 10) == header
    assert [rec.offset for rec in rc.decode_batch(log, 10)[1]] == [5000, 5001, 5002]


def test_set_log_append_time_rewrites_crc() -> None:
    raw = bytearray(sample_batch(compression=codecs.GZIP))
    header = r.set_log_append_time(raw, 0, 9_999)
    assert header.timestamp_type == r.TIMESTAMP_LOG_APPEND_TIME
    assert header.max_timestamp == 9_999 and header.base_timestamp == 1_000
    assert header.compression == codecs.GZIP
    assert r.validate_batch(raw) == header
    assert {rec.timestamp for rec in rc.decode_batch(raw)[1]} == {9_999}
    kafka_batch = kafka_records.DefaultRecordBatch(bytearray(raw))
    assert kafka_batch.validate_crc()
    assert {m.timestamp for m in kafka_batch} == {9_999}
    assert r.set_log_append_time(raw, 0, 9_999) == header


# --- codec -------------------------------------------------------------------------------------

header_values = st.one_of(st.none(), st.binary(max_size=20))
record_inputs = st.builds(
    rc.RecordInput,
    key=st.one_of(st.none(), st.binary(max_size=40)),
    value=st.one_of(st.none(), st.binary(max_size=300)),
    headers=st.lists(st.tuples(st.text(max_size=10), header_values), max_size=3).map(tuple),
    timestamp=st.integers(-(2**40), 2**45),
)


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=40, deadline=None)
@given(
    inputs=st.lists(record_inputs, max_size=20),
    base_offset=st.integers(0, 2**62),
    leader_epoch=st.integers(-1, 2**31 - 1),
)
def test_build_decode_round_trip(
    codec: int, inputs: list[rc.RecordInput], base_offset: int, leader_epoch: int
) -> None:
    raw = rc.build_batch(
        inputs, base_offset=base_offset, compression=codec, partition_leader_epoch=leader_epoch
    )
    header, decoded = rc.decode_batch(raw)
    assert header.size_in_bytes == len(raw)
    assert header.records_count == len(inputs)
    assert header.partition_leader_epoch == leader_epoch
    assert header.compression == codec
    assert [(rec.offset, rec.timestamp, rec.key, rec.value, rec.headers) for rec in decoded] == [
        (base_offset + i, rec.timestamp, rec.key, rec.value, rec.headers)
        for i, rec in enumerate(inputs)
    ]
    if inputs:
        timestamps = [rec.timestamp for rec in inputs if rec.timestamp is not None]
        assert header.max_timestamp == max(timestamps)
    # Re-encoding decoded records reproduces the batch byte for byte.
    assert (
        rc.build_batch(
            decoded, base_offset=base_offset, compression=codec, partition_leader_epoch=leader_epoch
        )
        == raw
    )


def test_offset_gaps_survive_reencoding() -> None:
    inputs = [
        rc.RecordInput(b"a", b"1", timestamp=5, offset_delta=0),
        rc.RecordInput(b"b", b"2", timestamp=6, offset_delta=4),
    ]
    raw = rc.build_batch(inputs, base_offset=10, last_offset_delta=6)
    header, decoded = rc.decode_batch(raw)
    assert [rec.offset for rec in decoded] == [10, 14]
    assert header.last_offset == 16
    assert rc.build_batch(decoded, base_offset=10, last_offset_delta=6) == raw


def test_default_timestamp_is_now() -> None:
    import time

    before = int(time.time() * 1000)
    _, decoded = rc.decode_batch(rc.build_batch([(b"k", b"v")]))
    assert before <= decoded[0].timestamp <= int(time.time() * 1000)


def test_empty_batch_header() -> None:
    header, decoded = rc.decode_batch(rc.build_batch([], compression=codecs.ZSTD))
    assert decoded == [] and header.records_count == 0
    assert header.base_timestamp == header.max_timestamp == r.NO_TIMESTAMP


def test_control_batch_round_trip() -> None:
    raw = rc.build_control_batch(
        rc.CONTROL_COMMIT, producer_id=77, producer_epoch=2, coordinator_epoch=5, base_offset=40
    )
    header, decoded = rc.decode_batch(raw)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 2, -1)
    assert rc.decode_control_record(decoded[0]) == rc.ControlRecord(rc.CONTROL_COMMIT, 0, 5)
    kafka_batch = kafka_records.DefaultRecordBatch(bytearray(raw))
    assert kafka_batch.is_control_batch
    (marker,) = list(kafka_batch)
    assert marker.commit and marker.offset == 40


def test_decode_control_record_errors() -> None:
    with pytest.raises(r.CorruptRecordError):
        rc.decode_control_record(rc.Record(0, 0, b"\x00", None))
    with pytest.raises(r.CorruptRecordError):
        rc.decode_control_record(rc.Record(0, 0, b"\x00\x00\x00\x00", b"\x00"))
    leader_change = rc.Record(0, 0, b"\x00\x00\x00\x02", b"whatever")
    assert rc.decode_control_record(leader_change) == rc.ControlRecord(rc.CONTROL_LEADER_CHANGE)


def test_decode_respects_decompression_bound() -> None:
    raw = rc.build_batch([(b"k", bytes(100_000), [], 1)], compression=codecs.ZSTD)
    with pytest.raises(r.CorruptRecordError, match="exceeds the limit"):
        rc.decode_batch(raw, max_decompressed_size=50_000)


def test_records_remaining_after_count() -> None:
    raw = rc.build_batch([(b"a", b"1", [], 1), (b"b", b"2", [], 2)])
    patched = _patch(raw, ">i", r.RECORDS_COUNT_OFFSET, 1)
    with pytest.raises(r.CorruptRecordError, match="records still remaining"):
        rc.decode_batch(patched)


# --- golden interop with kafka-python ---------------------------------------------------------


@pytest.fixture
def kafka_python_snappy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """kafka-python's snappy codec needs python-snappy; lend it cramjam's raw snappy so its own
    xerial framing code runs (encode) and its own xerial detection runs (decode)."""
    shim = types.SimpleNamespace(
        compress=lambda data: bytes(cramjam.snappy.compress_raw(bytes(data))),
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(bytes(data))),
    )
    monkeypatch.setattr("kafka.codec.snappy", shim)
    yield


GOLDEN_ROWS: list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = [
    (0, 1_700_000_000_000, b"key-0", b"value-0" * 50, [("trace", b"abc"), ("empty", b"")]),
    (1, 1_700_000_000_005, None, b"value-1" * 50, []),
    (2, 1_699_999_999_990, b"key-2", None, [("null", None)]),
]


@pytest.mark.usefixtures("kafka_python_snappy")
@pytest.mark.parametrize("codec", CODECS)
def test_decode_batch_built_by_kafka_python(codec: int) -> None:
    builder = kafka_records.DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=1234,
        producer_epoch=1,
        base_sequence=20,
        batch_size=1 << 20,
    )
    for offset, timestamp, key, value, headers in GOLDEN_ROWS:
        builder.append(offset, timestamp, key, value, headers)
    raw = bytes(builder.build())
    if codec == codecs.SNAPPY:
        assert raw[r.RECORDS_OFFSET :].startswith(codecs.XERIAL_MAGIC)
    header = r.validate_produce_records(raw)[0][1]
    assert header.compression == codec
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (1234, 1, 20)
    assert header.max_timestamp == 1_700_000_000_005
    _, decoded = rc.decode_batch(raw)
    assert [(x.offset, x.timestamp, x.key, x.value, list(x.headers)) for x in decoded] == [
        (o, t, k, v, h) for o, t, k, v, h in GOLDEN_ROWS
    ]


@pytest.mark.usefixtures("kafka_python_snappy")
@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_our_batch(codec: int) -> None:
    raw = rc.build_batch(
        [(k, v, h, t) for _, t, k, v, h in GOLDEN_ROWS],
        base_offset=300,
        compression=codec,
        producer_id=8,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
        partition_leader_epoch=4,
    )
    batch = kafka_records.DefaultRecordBatch(bytearray(raw))
    assert batch.validate_crc()
    assert batch.compression_type == codec
    assert batch.is_transactional and batch.producer_id == 8
    assert [(m.offset, m.timestamp, m.key, m.value, list(m.headers)) for m in batch] == [
        (300 + o, t, k, v, h) for o, t, k, v, h in GOLDEN_ROWS
    ]
