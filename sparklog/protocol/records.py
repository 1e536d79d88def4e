"""Kafka record batch v2 (magic 2): header parsing, validation and in-place offset assignment.

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
- ``check_batch_frame``/``check_batch_counts`` are the building blocks of the checked readers,
  shared with :mod:`sparklog.protocol.record_codec` (which decodes and encodes the records
  themselves, for tools, tests and tiering; never on the produce path).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
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

CORRUPT_MESSAGE: Final = ErrorCode.CORRUPT_MESSAGE
MESSAGE_TOO_LARGE: Final = ErrorCode.MESSAGE_TOO_LARGE
INVALID_RECORD: Final = ErrorCode.INVALID_RECORD
UNSUPPORTED_COMPRESSION_TYPE: Final = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE

_HEADER: Final = struct.Struct(">qiibIhiqqqhii")
_INT64: Final = struct.Struct(">q")
_INT32: Final = struct.Struct(">i")
_UINT32: Final = struct.Struct(">I")
_INT16: Final = struct.Struct(">h")
assert _HEADER.size == RECORD_BATCH_OVERHEAD


class CorruptRecordError(KafkaApiError):
    """A batch is damaged or not acceptable; ``error_code`` (= ``code``) is the Kafka error the
    partition is answered with. The connection stays open (reliability plan A6)."""

    def __init__(self, message: str, error_code: ErrorCode = ErrorCode.CORRUPT_MESSAGE) -> None:
        super().__init__(error_code, message)
        self.error_code = error_code


class RecordValidationError(CorruptRecordError):
    """Some records of a client batch are refused (Kafka's RecordValidationException, KIP-467):
    the whole batch fails with INVALID_RECORD and ``record_errors`` names each refused record
    by its index in the batch, which a Produce v8+ response carries in ``record_errors``."""

    def __init__(self, record_errors: list[tuple[int, str]]) -> None:
        shown = ", ".join(
            f"RecordError(batchIndex={index}, message='{message}')"
            for index, message in record_errors[:3]
        )
        super().__init__(
            f"One or more records have been rejected due to {len(record_errors)} record errors "
            f"in total, and only showing the first three errors at most: [{shown}]",
            INVALID_RECORD,
        )
        self.record_errors = record_errors


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


def check_batch_frame(buf: Buffer, pos: int) -> BatchHeader:
    """Size checks shared by every checked reader (the caller checks magic); returns the
    decoded header."""
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


def check_batch_counts(header: BatchHeader) -> None:
    """Offset range, record count and codec checks shared by every checked reader."""
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
    return check_framed_batch(buf, pos, check_batch_frame(buf, pos))


def check_framed_batch(buf: Buffer, pos: int, header: BatchHeader) -> BatchHeader:
    """:func:`validate_batch` of a batch whose frame is already known whole (``header`` as
    :func:`iter_batches` yields it): magic 2, CRC, coherent counts, without decoding the
    header a second time. Returns ``header``."""
    if header.magic != MAGIC_V2:
        raise CorruptRecordError(
            f"Record batch at position {pos} has magic {header.magic}; only magic 2 is supported"
        )
    _check_crc(buf, pos, header)
    check_batch_counts(header)
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
    header = check_batch_frame(buf, 0)
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
    check_batch_counts(header)


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
