"""``RecordChunk`` (``hot_read.proto``) in protobuf's wire format, without message objects.

Why: a chunk is megabytes of record batches plus a few integers, and the generated message
class copies those megabytes into its arena and again when it serializes (about 2.9 ms per
4 MiB here, against 0.5 ms for one join), and once more when a reader asks for ``records``.
The service and the connector therefore encode and decode chunks with these two functions;
the bytes on the wire are exactly what the generated code writes and reads, so any protobuf
client of ``hot_read.proto`` keeps working (the unit tests compare both ways).

Contract:

- :func:`encode_chunk` gives the bytes ``RecordChunk(...).SerializeToString()`` gives: fields
  in number order, proto3 zero values left out, negative int64 as 10-byte varints. The records
  are copied once, into the result.
- :func:`decode_chunk` reads what any protobuf encoder writes: fields in any order, repeated
  scalar fields overriding earlier ones, unknown fields skipped. Malformed input raises
  ``ValueError``, nothing else. ``records`` is a read-only view into the message (no copy of
  its megabytes; it keeps the message alive).

No imports beyond the standard library: the connector's executors use it without the broker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["ChunkView", "decode_chunk", "encode_chunk"]

_VARINT: Final = 0
_FIXED64: Final = 1
_LENGTH_DELIMITED: Final = 2
_FIXED32: Final = 5
_UINT64: Final = 1 << 64
_INT64_SIGN: Final = 1 << 63

# Field numbers of hot_read.proto.
_RECORDS: Final = 1
_ABORTED: Final = 2
_NEXT_OFFSET: Final = 3
_HIGH_WATERMARK: Final = 4
_LAST_STABLE_OFFSET: Final = 5
_LOG_START_OFFSET: Final = 6
_PRODUCER_ID: Final = 1
_FIRST_OFFSET: Final = 2
_LAST_OFFSET: Final = 3


@dataclass(frozen=True, slots=True)
class ChunkView:
    """A decoded ``RecordChunk``; ``aborted_transactions`` holds ``(producer_id,
    first_offset, last_offset)`` triples."""

    records: bytes | memoryview
    aborted_transactions: tuple[tuple[int, int, int], ...]
    next_offset: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int


def _varint(value: int) -> bytes:
    value %= _UINT64  # int64 as protobuf writes it: two's complement, 10 bytes if negative
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _int_field(number: int, value: int) -> bytes:
    return b"" if value == 0 else _varint(number << 3 | _VARINT) + _varint(value)


def encode_chunk(
    records: bytes,
    next_offset: int,
    high_watermark: int,
    last_stable_offset: int,
    log_start_offset: int,
    aborted_transactions: Sequence[tuple[int, int, int]] = (),
) -> bytes:
    """The wire bytes of a ``RecordChunk``; see the module docstring."""
    parts: list[bytes] = []
    if records:
        parts += [_varint(_RECORDS << 3 | _LENGTH_DELIMITED), _varint(len(records)), records]
    for producer_id, first_offset, last_offset in aborted_transactions:
        body = (
            _int_field(_PRODUCER_ID, producer_id)
            + _int_field(_FIRST_OFFSET, first_offset)
            + _int_field(_LAST_OFFSET, last_offset)
        )
        parts += [_varint(_ABORTED << 3 | _LENGTH_DELIMITED), _varint(len(body)), body]
    parts += [
        _int_field(_NEXT_OFFSET, next_offset),
        _int_field(_HIGH_WATERMARK, high_watermark),
        _int_field(_LAST_STABLE_OFFSET, last_stable_offset),
        _int_field(_LOG_START_OFFSET, log_start_offset),
    ]
    return b"".join(parts)


def _read_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("RecordChunk: truncated or overlong varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value % _UINT64, pos
        shift += 7


def _int64(value: int) -> int:
    return value - _UINT64 if value & _INT64_SIGN else value


def _fields(data: bytes, pos: int, end: int) -> list[tuple[int, int, int, int]]:
    """``(field number, wire type, value or start, end)`` of each field in ``data[pos:end]``."""
    found = []
    while pos < end:
        key, pos = _read_varint(data, pos, end)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise ValueError("RecordChunk: field number 0")
        if wire_type == _VARINT:
            value, pos = _read_varint(data, pos, end)
            found.append((number, wire_type, value, pos))
        elif wire_type == _LENGTH_DELIMITED:
            size, pos = _read_varint(data, pos, end)
            if size > end - pos:
                raise ValueError("RecordChunk: field runs past the end")
            found.append((number, wire_type, pos, pos + size))
            pos += size
        elif wire_type in (_FIXED64, _FIXED32):
            pos += 8 if wire_type == _FIXED64 else 4
            if pos > end:
                raise ValueError("RecordChunk: field runs past the end")
        else:
            raise ValueError(f"RecordChunk: unsupported wire type {wire_type}")
    return found


def _aborted(data: bytes, start: int, end: int) -> tuple[int, int, int]:
    values = {_PRODUCER_ID: 0, _FIRST_OFFSET: 0, _LAST_OFFSET: 0}
    for number, wire_type, value, _ in _fields(data, start, end):
        if number in values:
            if wire_type != _VARINT:
                raise ValueError("RecordChunk: aborted transaction field of the wrong type")
            values[number] = _int64(value)
    return values[_PRODUCER_ID], values[_FIRST_OFFSET], values[_LAST_OFFSET]


def decode_chunk(data: bytes) -> ChunkView:
    """A ``RecordChunk`` from its wire bytes; see the module docstring."""
    records: bytes | memoryview = b""
    aborted: list[tuple[int, int, int]] = []
    numbers = {_NEXT_OFFSET: 0, _HIGH_WATERMARK: 0, _LAST_STABLE_OFFSET: 0, _LOG_START_OFFSET: 0}
    for number, wire_type, value, end in _fields(data, 0, len(data)):
        if number == _RECORDS and wire_type == _LENGTH_DELIMITED:
            records = memoryview(data)[value:end].toreadonly()
        elif number == _ABORTED and wire_type == _LENGTH_DELIMITED:
            aborted.append(_aborted(data, value, end))
        elif number in numbers and wire_type == _VARINT:
            numbers[number] = _int64(value)
        elif number in numbers or number in (_RECORDS, _ABORTED):
            raise ValueError(f"RecordChunk: field {number} has wire type {wire_type}")
    return ChunkView(
        records,
        tuple(aborted),
        numbers[_NEXT_OFFSET],
        numbers[_HIGH_WATERMARK],
        numbers[_LAST_STABLE_OFFSET],
        numbers[_LOG_START_OFFSET],
    )
