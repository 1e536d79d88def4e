"""Record codec for Kafka record batch v2: the records inside a batch, decoded and encoded.

:mod:`sparklog.protocol.records` owns the 61-byte batch header (parsing, validation, in-place
offset assignment); this module owns everything after it. Each record is (all varints zigzag)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint |
    [headerKeyLength varint | headerKey utf-8 | headerValueLength varint | headerValue]*

A length of -1 encodes a null key, value or header value.

Contract:

- For tools, tests, tiering and the metadata log; never on the produce/fetch hot path, which
  only reads or writes headers (see :mod:`sparklog.protocol.records`).
- ``decode_batch`` checks the frame, magic, counts and (unless ``verify_crc=False``) the CRC
  with the header layer's own checks, decompresses at most ``max_decompressed_size`` bytes,
  then requires the records to fill the payload exactly: no missing, short, overlong or
  trailing records.
- Every malformed input raises :class:`~sparklog.protocol.records.CorruptRecordError` with the
  Kafka error code a client should see; any other exception escaping is a bug (fuzz-tested).
- ``build_batch`` produces a batch that ``validate_batch`` accepts and that ``decode_batch``
  turns back into the same records: decoding then re-encoding ``Record``s keeps their offsets,
  timestamps, keys, values and headers. A decoded record's timestamp is the batch's
  maxTimestamp when the batch is LogAppendTime, as Kafka's readers do.
- Control records (transaction markers and KRaft's markers) are ordinary records in a batch
  with the control bit set; ``control_record``/``build_control_batch``/
  ``decode_control_record`` encode and read their key (version, type) and the COMMIT/ABORT
  marker value (version, coordinator epoch).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

import crc32c

from sparklog.protocol import compression as codecs
from sparklog.protocol.records import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    CORRUPT_MESSAGE,
    DELETE_HORIZON_MASK,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORDS_OFFSET,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    Buffer,
    CorruptRecordError,
    check_batch_counts,
    check_batch_frame,
    validate_batch,
)

# Control record types (ControlRecordType.java); 2.. are KRaft's own markers.
CONTROL_ABORT: Final = 0
CONTROL_COMMIT: Final = 1
CONTROL_LEADER_CHANGE: Final = 2
CONTROL_SNAPSHOT_HEADER: Final = 3
CONTROL_SNAPSHOT_FOOTER: Final = 4
CONTROL_KRAFT_VERSION: Final = 5
CONTROL_KRAFT_VOTERS: Final = 6

_AFTER_CRC: Final = struct.Struct(">hiqqqhii")
_CONTROL_KEY: Final = struct.Struct(">hh")
_TXN_MARKER_VALUE: Final = struct.Struct(">hi")


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
        header = check_batch_frame(buf, pos)
        if header.magic != MAGIC_V2:
            raise CorruptRecordError(f"Record batch has magic {header.magic}; only 2 is supported")
        check_batch_counts(header)
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
    return header, decode_records(data, header)


def decode_records(data: bytes, header: BatchHeader) -> list[Record]:
    """The ``header.records_count`` records of a batch's decompressed records region
    ``data``, which they must fill exactly (the record loop of :func:`decode_batch`)."""
    records: list[Record] = []
    cursor = 0
    for _ in range(header.records_count):
        record, cursor = _read_record(data, cursor, header)
        records.append(record)
    if cursor != len(data):
        raise CorruptRecordError("Incorrect declared batch size, records still remaining in file")
    return records


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
    delete_horizon_ms: int | None = None,
) -> bytes:
    """Encode one v2 batch. Inputs are ``RecordInput``s, decoded ``Record``s (re-encoding keeps
    their offsets) or ``(key, value[, headers[, timestamp]])`` tuples. ``max_timestamp``
    overrides the header's (the broker's time for a LogAppendTime batch).
    ``delete_horizon_ms`` (log compaction, KIP-534) sets the delete-horizon attribute and
    stores the horizon as the base timestamp, record timestamp deltas being relative to it."""
    now_ms = int(time.time() * 1000)
    inputs = [_normalise(item, i, base_offset, now_ms) for i, item in enumerate(records)]
    raw = bytearray()
    if inputs:
        base_timestamp = inputs[0].timestamp if delete_horizon_ms is None else delete_horizon_ms
        assert base_timestamp is not None
        for record in inputs:
            _encode_record(raw, record, base_timestamp)
        highest = max(r.timestamp for r in inputs if r.timestamp is not None)
        last_delta = inputs[-1].offset_delta
    else:
        base_timestamp = highest = NO_TIMESTAMP
        if delete_horizon_ms is not None:
            base_timestamp = delete_horizon_ms
        last_delta = 0
    attributes = (
        (compression & COMPRESSION_MASK)
        | (TIMESTAMP_TYPE_MASK if timestamp_type == TIMESTAMP_LOG_APPEND_TIME else 0)
        | (TRANSACTIONAL_MASK if is_transactional else 0)
        | (CONTROL_MASK if is_control else 0)
        | (DELETE_HORIZON_MASK if delete_horizon_ms is not None else 0)
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
