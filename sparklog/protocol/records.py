"""Kafka record batch v2 (magic 2): header parsing, validation, in-place offset assignment and a
full record codec.

Layout (big-endian, 61-byte header; Kafka's DefaultRecordBatch)::

    baseOffset int64 @0 | batchLength int32 @8 (bytes after this field) |
    partitionLeaderEpoch int32 @12 | magic int8 @16 | crc uint32 @17 |
    attributes int16 @21 | lastOffsetDelta int32 @23 | baseTimestamp int64 @27 |
    maxTimestamp int64 @35 | producerId int64 @43 | producerEpoch int16 @51 |
    baseSequence int32 @53 | recordsCount int32 @57 | records...

The CRC-32C covers bytes 21..end, so baseOffset and partitionLeaderEpoch can be rewritten by
the broker without recomputing it.

Contract:

- The produce/read hot path (``parse_batch_header``, ``iter_batches``, ``assign_offsets``)
  reads or writes the 61-byte header only, never copies the buffer and never touches records.
- Every malformed input raises ``CorruptRecordError`` carrying the Kafka error code a client
  should see (CORRUPT_MESSAGE for size/CRC damage, INVALID_RECORD for well-formed batches a
  broker must refuse, UNSUPPORTED_COMPRESSION_TYPE for an unknown codec). Any other exception
  escaping this module is a bug; the fuzz tests enforce that.
- ``iter_batches`` is the unchecked reader: it stops quietly at an incomplete tail (a torn
  write or a fetch cut at max bytes) and trusts CRCs. ``scan_valid_prefix`` is the checked
  reader used by crash recovery; ``validate_produce_records`` applies Kafka 4.x's rules for a
  client's Produce payload.
- ``decode_batch``/``build_batch`` are for tools, tests and tiering, not the produce path.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

import crc32c

from sparklog.protocol import compression as codecs
from sparklog.protocol.errors import ErrorCode, KafkaApiError

Buffer: TypeAlias = bytes | bytearray | memoryview
WritableBuffer: TypeAlias = bytearray | memoryview

MAGIC_V2: Final = 2
LOG_OVERHEAD: Final = 12  # baseOffset + batchLength
RECORD_BATCH_OVERHEAD: Final = 61
MIN_BATCH_LENGTH: Final = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD
# Smallest possible record: 7 single-byte fields (length, attrs, ts, offset, key, value, hdrs).
MIN_RECORD_SIZE: Final = 7

BASE_OFFSET_OFFSET: Final = 0
LENGTH_OFFSET: Final = 8
PARTITION_LEADER_EPOCH_OFFSET: Final = 12
MAGIC_OFFSET: Final = 16
CRC_OFFSET: Final = 17
ATTRIBUTES_OFFSET: Final = 21
LAST_OFFSET_DELTA_OFFSET: Final = 23
BASE_TIMESTAMP_OFFSET: Final = 27
MAX_TIMESTAMP_OFFSET: Final = 35
PRODUCER_ID_OFFSET: Final = 43
PRODUCER_EPOCH_OFFSET: Final = 51
BASE_SEQUENCE_OFFSET: Final = 53
RECORDS_COUNT_OFFSET: Final = 57
RECORDS_OFFSET: Final = RECORD_BATCH_OVERHEAD

COMPRESSION_MASK: Final = 0x07
TIMESTAMP_TYPE_MASK: Final = 0x08
TRANSACTIONAL_MASK: Final = 0x10
CONTROL_MASK: Final = 0x20
DELETE_HORIZON_MASK: Final = 0x40

TIMESTAMP_CREATE_TIME: Final = 0
TIMESTAMP_LOG_APPEND_TIME: Final = 1

NO_TIMESTAMP: Final = -1
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
NO_PARTITION_LEADER_EPOCH: Final = -1

# Control record types (ControlRecordType.java); 2.. are KRaft's own markers.
CONTROL_ABORT: Final = 0
CONTROL_COMMIT: Final = 1
CONTROL_LEADER_CHANGE: Final = 2
CONTROL_SNAPSHOT_HEADER: Final = 3
CONTROL_SNAPSHOT_FOOTER: Final = 4
CONTROL_KRAFT_VERSION: Final = 5
CONTROL_KRAFT_VOTERS: Final = 6

CORRUPT_MESSAGE: Final = ErrorCode.CORRUPT_MESSAGE
MESSAGE_TOO_LARGE: Final = ErrorCode.MESSAGE_TOO_LARGE
INVALID_RECORD: Final = ErrorCode.INVALID_RECORD
UNSUPPORTED_COMPRESSION_TYPE: Final = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE

_HEADER: Final = struct.Struct(">qiibIhiqqqhii")
_INT64: Final = struct.Struct(">q")
_INT32: Final = struct.Struct(">i")
_UINT32: Final = struct.Struct(">I")
_INT16: Final = struct.Struct(">h")
_CONTROL_KEY: Final = struct.Struct(">hh")
_TXN_MARKER_VALUE: Final = struct.Struct(">hi")
assert _HEADER.size == RECORD_BATCH_OVERHEAD


class CorruptRecordError(KafkaApiError):
    """A batch is damaged or not acceptable; ``error_code`` (= ``code``) is the Kafka error the
    partition is answered with. The connection stays open (reliability plan A6)."""

    def __init__(self, message: str, error_code: ErrorCode = ErrorCode.CORRUPT_MESSAGE) -> None:
        super().__init__(error_code, message)
        self.error_code = error_code


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The 61-byte v2 header, decoded. ``crc`` is the stored value, not a verified one."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def record_count(self) -> int:
        return self.records_count

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record; wraps at 2**31 like Kafka's incrementSequence."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)


def parse_batch_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    """Decode the header at ``pos`` without any check beyond "61 bytes are there"."""
    if pos < 0 or len(buf) - pos < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordError(
            f"Record batch header is truncated: {max(0, len(buf) - pos)} bytes at position {pos},"
            f" need {RECORD_BATCH_OVERHEAD}"
        )
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def compute_crc(buf: Buffer, pos: int, batch_length: int) -> int:
    """CRC-32C of the region the v2 CRC covers (attributes to the end of the batch)."""
    with memoryview(buf) as view:
        return int(crc32c.crc32c(view[pos + ATTRIBUTES_OFFSET : pos + LOG_OVERHEAD + batch_length]))


def _check_frame(buf: Buffer, pos: int) -> BatchHeader:
    """Size and magic checks shared by every checked reader; returns the decoded header."""
    available = len(buf) - pos
    if available < LOG_OVERHEAD:
        raise CorruptRecordError(
            f"Record batch is truncated: {available} bytes at position {pos}, need at least"
            f" {LOG_OVERHEAD} to read its length"
        )
    (batch_length,) = _INT32.unpack_from(buf, pos + LENGTH_OFFSET)
    if batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(
            f"Record batch is corrupt (the size {batch_length + LOG_OVERHEAD} is smaller than the"
            f" minimum allowed overhead {RECORD_BATCH_OVERHEAD})"
        )
    if batch_length > available - LOG_OVERHEAD:
        raise CorruptRecordError(
            f"Record batch is truncated: it declares {batch_length + LOG_OVERHEAD} bytes but only"
            f" {available} remain at position {pos}"
        )
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def _check_crc(buf: Buffer, pos: int, header: BatchHeader) -> None:
    computed = compute_crc(buf, pos, header.batch_length)
    if computed != header.crc:
        raise CorruptRecordError(
            f"Record is corrupt (stored crc = {header.crc}, computed crc = {computed})"
        )


def _check_counts(header: BatchHeader) -> None:
    # Compaction keeps lastOffsetDelta while dropping records, so a stored batch may hold
    # fewer records than its offset range, never more.
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise CorruptRecordError(
            f"Record batch has a negative offset delta {header.last_offset_delta} or record"
            f" count {header.records_count}",
            INVALID_RECORD,
        )
    if header.records_count > header.last_offset_delta + 1:
        raise CorruptRecordError(
            f"Inconsistent batch offset range [{header.base_offset}, {header.last_offset}]"
            f" and count of records {header.records_count}",
            INVALID_RECORD,
        )
    payload = header.batch_length - MIN_BATCH_LENGTH
    if header.compression == codecs.NONE and header.records_count * MIN_RECORD_SIZE > payload:
        raise CorruptRecordError(
            f"Record batch declares {header.records_count} records but holds only {payload}"
            " bytes of records",
            INVALID_RECORD,
        )
    if header.compression not in codecs.CODEC_NAMES:
        raise CorruptRecordError(
            f"Unknown compression type id: {header.compression}", UNSUPPORTED_COMPRESSION_TYPE
        )


def validate_batch(buf: Buffer, pos: int = 0) -> BatchHeader:
    """Check the batch at ``pos``: whole, magic 2, CRC, coherent counts. Returns its header."""
    header = _check_frame(buf, pos)
    if header.magic != MAGIC_V2:
        raise CorruptRecordError(
            f"Record batch at position {pos} has magic {header.magic}; only magic 2 is supported"
        )
    _check_crc(buf, pos, header)
    _check_counts(header)
    return header


def iter_batches(buf: Buffer, pos: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each complete batch, unchecked, stopping at a partial
    tail. A length field too small to be a batch cannot be skipped over, so it raises."""
    end = len(buf)
    unpack_length = _INT32.unpack_from
    unpack_header = _HEADER.unpack_from
    while end - pos >= RECORD_BATCH_OVERHEAD:
        (batch_length,) = unpack_length(buf, pos + LENGTH_OFFSET)
        if batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(
                f"Record batch at position {pos} is corrupt (the size"
                f" {batch_length + LOG_OVERHEAD} is smaller than the minimum allowed overhead"
                f" {RECORD_BATCH_OVERHEAD})"
            )
        size = batch_length + LOG_OVERHEAD
        if size > end - pos:
            return
        yield pos, BatchHeader(*unpack_header(buf, pos))
        pos += size


def scan_valid_prefix(buf: Buffer) -> tuple[int, list[BatchHeader]]:
    """Length of the longest prefix made of whole, CRC-valid v2 batches, and their headers.

    Crash recovery truncates the segment to this length (Kafka's LogSegment.recover).
    """
    pos = 0
    headers: list[BatchHeader] = []
    while pos < len(buf):
        try:
            header = validate_batch(buf, pos)
        except CorruptRecordError:
            break
        headers.append(header)
        pos += header.size_in_bytes
    return pos, headers


def validate_produce_records(
    buf: Buffer, *, topic_partition: str = "", max_batch_size: int | None = None
) -> list[tuple[int, BatchHeader]]:
    """Apply Kafka 4.x's checks to the records of one partition of a Produce request.

    In Kafka's order: exactly one batch of magic 2 (ProduceRequest.validateRecords, v3+),
    base offset 0 and size limit (UnifiedLog.analyzeAndValidateRecords), CRC (ensureValid),
    then the client-origin batch rules of LogValidator.validateBatch. Bytes after the batch
    are refused rather than silently dropped.
    """
    where = f" in topic partition {topic_partition}" if topic_partition else ""
    if len(buf) == 0:
        raise CorruptRecordError(
            "Produce requests must have at least one record batch", INVALID_RECORD
        )
    header = _check_frame(buf, 0)
    if header.magic != MAGIC_V2:
        raise CorruptRecordError(
            "Produce requests are only allowed to contain record batches with magic version 2",
            INVALID_RECORD,
        )
    if header.size_in_bytes != len(buf):
        trailing = len(buf) - header.size_in_bytes
        if trailing >= LOG_OVERHEAD and _INT32.unpack_from(buf, header.size_in_bytes + 8)[0] >= (
            MIN_BATCH_LENGTH
        ):
            raise CorruptRecordError(
                "Produce requests are only allowed to contain exactly one record batch",
                INVALID_RECORD,
            )
        raise CorruptRecordError(
            f"Produce request has {trailing} bytes of trailing data after its record batch{where}."
            " A possible cause is a corrupted produce request."
        )
    if header.base_offset != 0:
        raise CorruptRecordError(
            f"The baseOffset of the record batch in the append to {topic_partition or '?'} should"
            f" be 0, but it is {header.base_offset}",
            INVALID_RECORD,
        )
    if max_batch_size is not None and header.size_in_bytes > max_batch_size:
        raise CorruptRecordError(
            f"The record batch size in the append to {topic_partition or '?'} is"
            f" {header.size_in_bytes} bytes which exceeds the maximum configured value of"
            f" {max_batch_size}.",
            MESSAGE_TOO_LARGE,
        )
    _check_crc(buf, 0, header)
    _check_client_batch(header, where)
    return [(0, header)]


def _check_client_batch(header: BatchHeader, where: str) -> None:
    if header.compression not in codecs.CODEC_NAMES:
        raise CorruptRecordError(
            f"Unknown compression type id: {header.compression}", UNSUPPORTED_COMPRESSION_TYPE
        )
    if header.last_offset_delta < 0:
        raise CorruptRecordError(
            f"Batch has an invalid offset range: [{header.base_offset}, {header.last_offset}]"
            f"{where}",
            INVALID_RECORD,
        )
    if header.records_count <= 0:
        raise CorruptRecordError(
            f"Invalid reported count for record batch: {header.records_count}{where}",
            INVALID_RECORD,
        )
    if header.records_count != header.last_offset_delta + 1:
        raise CorruptRecordError(
            f"Inconsistent batch offset range [{header.base_offset}, {header.last_offset}] and"
            f" count of records {header.records_count}{where}",
            INVALID_RECORD,
        )
    if header.is_control:
        raise CorruptRecordError(
            f"Clients are not allowed to write control records{where}", INVALID_RECORD
        )
    if header.has_producer_id and header.base_sequence < 0:
        raise CorruptRecordError(
            f"Invalid sequence number {header.base_sequence} in record batch with producerId"
            f" {header.producer_id}{where}",
            INVALID_RECORD,
        )
    _check_counts(header)


def assign_offsets(
    buf: WritableBuffer, pos: int, base_offset: int, leader_epoch: int
) -> BatchHeader:
    """Write the broker-assigned base offset and leader epoch in place; both lie outside the
    CRC, so the batch stays valid. O(1): records are not touched."""
    _INT64.pack_into(buf, pos + BASE_OFFSET_OFFSET, base_offset)
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
    return parse_batch_header(buf, pos)


def set_log_append_time(buf: WritableBuffer, pos: int, timestamp_ms: int) -> BatchHeader:
    """Stamp a LogAppendTime batch: set the timestamp-type bit and maxTimestamp, then rewrite
    the CRC (both fields are inside it). Record timestamps are left alone, as in Kafka:
    readers take every record's timestamp from maxTimestamp for such batches."""
    header = parse_batch_header(buf, pos)
    attributes = header.attributes | TIMESTAMP_TYPE_MASK
    if attributes == header.attributes and header.max_timestamp == timestamp_ms:
        return header
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    _UINT32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos, header.batch_length))
    return parse_batch_header(buf, pos)


# --- Record codec: tools, tests and tiering; never on the produce path. -----------------------

_AFTER_CRC: Final = struct.Struct(">hiqqqhii")


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record with absolute offset and effective timestamp (maxTimestamp for a
    LogAppendTime batch)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True)
class RecordInput:
    """A record to encode. ``timestamp`` None = now; ``offset_delta`` None = its index (set it
    to rebuild compacted batches with offset gaps)."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None
    offset_delta: int | None = None


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """The key (and, for transaction markers, the value) of a control record."""

    control_type: int
    version: int = 0
    coordinator_epoch: int | None = None


RecordLike: TypeAlias = (
    RecordInput
    | Record
    | tuple[bytes | None, bytes | None]
    | tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]
    | tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]], int | None]
)


def _read_varint(data: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    """Zigzag varint (``max_bytes`` 5) or varlong (10) at ``pos``; returns (value, next pos)."""
    raw = 0
    shift = 0
    end = pos + max_bytes
    while pos < end:
        if pos >= len(data):
            raise CorruptRecordError("Incorrect declared batch size, premature EOF reached")
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise CorruptRecordError(f"Varint is longer than {max_bytes} bytes")


def _write_varint(out: bytearray, value: int) -> None:
    raw = (value << 1) ^ (value >> 63)
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


def _read_bytes(data: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    length, pos = _read_varint(data, pos, 5)
    if length < 0:
        return None, pos
    if pos + length > end:
        raise CorruptRecordError(
            f"Record field of {length} bytes runs past the end of its record", CORRUPT_MESSAGE
        )
    return data[pos : pos + length], pos + length


def _read_record(data: bytes, pos: int, header: BatchHeader) -> tuple[Record, int]:
    length, pos = _read_varint(data, pos, 5)
    start = pos
    end = pos + length
    if length < 0 or end > len(data):
        raise CorruptRecordError("Incorrect declared batch size, premature EOF reached")
    pos += 1  # record attributes: unused since Kafka 0.11
    timestamp_delta, pos = _read_varint(data, pos, 10)
    offset_delta, pos = _read_varint(data, pos, 5)
    key, pos = _read_bytes(data, pos, end)
    value, pos = _read_bytes(data, pos, end)
    header_count, pos = _read_varint(data, pos, 5)
    if header_count < 0:
        raise CorruptRecordError(f"Found invalid number of record headers {header_count}")
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(header_count):
        key_length, pos = _read_varint(data, pos, 5)
        if key_length < 0 or pos + key_length > end:
            raise CorruptRecordError(f"Invalid record header key size {key_length}")
        try:
            header_key = data[pos : pos + key_length].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptRecordError(f"Record header key is not valid UTF-8: {exc}") from exc
        header_value, pos = _read_bytes(data, pos + key_length, end)
        headers.append((header_key, header_value))
    if pos != end:
        raise CorruptRecordError(
            f"Invalid record size: expected to read {length} bytes in record payload, but"
            f" instead read {pos - start}"
        )
    if header.timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        timestamp = header.max_timestamp
    else:
        timestamp = header.base_timestamp + timestamp_delta
    record = Record(header.base_offset + offset_delta, timestamp, key, value, tuple(headers))
    return record, pos


def decode_batch(
    buf: Buffer,
    pos: int = 0,
    *,
    verify_crc: bool = True,
    max_decompressed_size: int = codecs.DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> tuple[BatchHeader, list[Record]]:
    """Decode (and decompress) every record of the batch at ``pos``."""
    if verify_crc:
        header = validate_batch(buf, pos)
    else:
        header = _check_frame(buf, pos)
        if header.magic != MAGIC_V2:
            raise CorruptRecordError(f"Record batch has magic {header.magic}; only 2 is supported")
        _check_counts(header)
    if header.records_count == 0:
        return header, []
    with memoryview(buf) as view:
        payload = view[pos + RECORDS_OFFSET : pos + header.size_in_bytes]
        try:
            data = codecs.decompress(header.compression, payload, max_decompressed_size)
        except codecs.CompressionError as exc:
            raise CorruptRecordError(str(exc), exc.code) from exc
        finally:
            payload.release()
    records: list[Record] = []
    cursor = 0
    for _ in range(header.records_count):
        record, cursor = _read_record(data, cursor, header)
        records.append(record)
    if cursor != len(data):
        raise CorruptRecordError("Incorrect declared batch size, records still remaining in file")
    return header, records


def _normalise(item: RecordLike, index: int, base_offset: int, now_ms: int) -> RecordInput:
    if isinstance(item, RecordInput):
        if item.timestamp is None or item.offset_delta is None:
            return RecordInput(
                item.key,
                item.value,
                tuple(item.headers),
                now_ms if item.timestamp is None else item.timestamp,
                index if item.offset_delta is None else item.offset_delta,
            )
        return item
    if isinstance(item, Record):
        return RecordInput(
            item.key, item.value, item.headers, item.timestamp, item.offset - base_offset
        )
    key, value = item[0], item[1]
    headers = tuple(item[2]) if len(item) > 2 else ()
    timestamp = item[3] if len(item) > 3 else None
    return RecordInput(key, value, headers, now_ms if timestamp is None else timestamp, index)


def _encode_record(out: bytearray, record: RecordInput, base_timestamp: int) -> None:
    body = bytearray(b"\x00")
    assert record.timestamp is not None and record.offset_delta is not None
    _write_varint(body, record.timestamp - base_timestamp)
    _write_varint(body, record.offset_delta)
    for field in (record.key, record.value):
        if field is None:
            _write_varint(body, -1)
        else:
            _write_varint(body, len(field))
            body += field
    _write_varint(body, len(record.headers))
    for header_key, header_value in record.headers:
        encoded_key = header_key.encode("utf-8")
        _write_varint(body, len(encoded_key))
        body += encoded_key
        if header_value is None:
            _write_varint(body, -1)
        else:
            _write_varint(body, len(header_value))
            body += header_value
    _write_varint(out, len(body))
    out += body


def build_batch(
    records: Sequence[RecordLike],
    *,
    base_offset: int = 0,
    compression: int = codecs.NONE,
    timestamp_type: int = TIMESTAMP_CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
    is_control: bool = False,
    last_offset_delta: int | None = None,
    max_timestamp: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """Encode one v2 batch. Inputs are ``RecordInput``s, decoded ``Record``s (re-encoding keeps
    their offsets) or ``(key, value[, headers[, timestamp]])`` tuples. ``max_timestamp``
    overrides the header's (the broker's time for a LogAppendTime batch)."""
    now_ms = int(time.time() * 1000)
    inputs = [_normalise(item, i, base_offset, now_ms) for i, item in enumerate(records)]
    raw = bytearray()
    if inputs:
        base_timestamp = inputs[0].timestamp
        assert base_timestamp is not None
        for record in inputs:
            _encode_record(raw, record, base_timestamp)
        highest = max(r.timestamp for r in inputs if r.timestamp is not None)
        last_delta = inputs[-1].offset_delta
    else:
        base_timestamp = highest = NO_TIMESTAMP
        last_delta = 0
    attributes = (
        (compression & COMPRESSION_MASK)
        | (TIMESTAMP_TYPE_MASK if timestamp_type == TIMESTAMP_LOG_APPEND_TIME else 0)
        | (TRANSACTIONAL_MASK if is_transactional else 0)
        | (CONTROL_MASK if is_control else 0)
    )
    payload = codecs.compress(compression, raw, compression_level)
    body = (
        _AFTER_CRC.pack(
            attributes,
            last_delta if last_offset_delta is None else last_offset_delta,
            base_timestamp,
            highest if max_timestamp is None else max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(inputs),
        )
        + payload
    )
    prefix = struct.pack(
        ">qiibI",
        base_offset,
        len(body) + 9,
        partition_leader_epoch,
        MAGIC_V2,
        crc32c.crc32c(body),
    )
    return prefix + body


def control_record(
    control_type: int, coordinator_epoch: int = 0, timestamp: int | None = None
) -> RecordInput:
    """A COMMIT/ABORT transaction marker (key version 0, value version 0 + coordinator epoch)."""
    return RecordInput(
        key=_CONTROL_KEY.pack(0, control_type),
        value=_TXN_MARKER_VALUE.pack(0, coordinator_epoch),
        timestamp=timestamp,
    )


def build_control_batch(
    control_type: int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp: int | None = None,
) -> bytes:
    """The single-record transactional control batch a coordinator's marker writes."""
    return build_batch(
        [control_record(control_type, coordinator_epoch, timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=True,
        is_control=True,
    )


def decode_control_record(record: Record) -> ControlRecord:
    """Read a control record's key (and the marker value of COMMIT/ABORT)."""
    if record.key is None or len(record.key) < _CONTROL_KEY.size:
        raise CorruptRecordError("Control record key is missing or shorter than 4 bytes")
    version, control_type = _CONTROL_KEY.unpack_from(record.key)
    if control_type not in (CONTROL_ABORT, CONTROL_COMMIT):
        return ControlRecord(control_type, version)
    if record.value is None or len(record.value) < _TXN_MARKER_VALUE.size:
        raise CorruptRecordError("Transaction marker value is missing or shorter than 6 bytes")
    _, coordinator_epoch = _TXN_MARKER_VALUE.unpack_from(record.value)
    return ControlRecord(control_type, version, coordinator_epoch)
