"""Primitive types of the Kafka wire protocol, sans-IO: a bounded :class:`Reader` and a
chunked :class:`Writer`.

Contract:
- A :class:`Reader` reads big-endian primitives from a window ``[pos, end)`` of a memoryview.
  For any input it either returns a value or raises :class:`ProtocolError` - never
  ``IndexError``, ``struct.error`` or ``UnicodeDecodeError``. Truncated input, a negative length
  other than -1 for a nullable value (or -1 for a non-nullable one), a length or element count
  beyond the bytes left, a varint longer than its type allows and invalid UTF-8 are all
  protocol errors. A reader never reads outside its window, so a sub-reader over a tagged field
  cannot run into the rest of the message.
- Byte strings decode to ``bytes`` (a copy, safe to keep); :meth:`Reader.raw` returns a
  ``memoryview`` slice of the input (zero copy, valid as long as the input buffer is).
- A :class:`Writer` appends to a ``bytearray``; a large byte string given to
  :meth:`Writer.raw` becomes a chunk of its own (no copy), so a multi-megabyte record set is
  never copied while a response is built. Writers validate ranges through ``struct`` and raise
  ``ValueError``/``struct.error`` for values that do not fit: that is the caller's bug.

Compact lengths (flexible versions) are unsigned varints holding ``length + 1``; 0 means null.

Allocation bounds (Kafka 4.4's deserialization limits): an array may claim at most
:data:`MAX_ARRAY_ELEMENTS` elements and a tagged-field section at most
:data:`MAX_TAGGED_FIELDS` fields. Either count above its bound is a :class:`ProtocolError`
raised when the count is read, before any element is decoded or any list built (the
listener then closes the connection, as for any malformed request).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final, Protocol, runtime_checkable

from sparklog.protocol.errors import ProtocolError

BytesLike = bytes | bytearray | memoryview


@runtime_checkable
class FileRegion(Protocol):
    """Bytes that stay in a file until the transport sends them (zero-copy responses).

    A ``records`` value may hold regions; the writer keeps each as a chunk of its own, so the
    I/O layer can hand it to ``sendfile`` instead of reading it into memory.
    """

    @property
    def length(self) -> int: ...

    def read_bytes(self) -> bytes: ...


Chunk = bytes | memoryview | FileRegion

# What a ``records`` field of a message being encoded may hold (codec.py): nothing, bytes, a
# file region, or several of them written back to back.
RecordsValue = BytesLike | FileRegion | Sequence[BytesLike | FileRegion] | None

INT8: Final = struct.Struct(">b")
INT16: Final = struct.Struct(">h")
INT32: Final = struct.Struct(">i")
INT64: Final = struct.Struct(">q")
UINT16: Final = struct.Struct(">H")
UINT32: Final = struct.Struct(">I")
FLOAT64: Final = struct.Struct(">d")

# Kafka 4.4: the most elements one array may claim, and the most tagged fields in one section.
MAX_ARRAY_ELEMENTS: Final = 1_000_000
MAX_TAGGED_FIELDS: Final = 10_000

# Byte strings at least this long are emitted as chunks of their own rather than copied.
PASSTHROUGH_BYTES: Final = 4096

_UVARINT_MAX_BYTES: Final = 5
_UVARLONG_MAX_BYTES: Final = 10


class Reader:
    """Reads primitives from ``data[pos:end]``; ``pos`` advances as values are read."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, data: BytesLike, pos: int = 0, end: int | None = None) -> None:
        view = data if isinstance(data, memoryview) else memoryview(data)
        if view.format != "B" or view.ndim != 1:
            # Indexing must yield unsigned ints (varints); "c" or "b" views would not.
            view = view.cast("B")
        self.buf: memoryview = view
        self.pos = pos
        self.end = len(view) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _advance(self, size: int) -> int:
        """Reserve ``size`` bytes and return where they start."""
        pos = self.pos
        new = pos + size
        if new > self.end:
            raise ProtocolError(f"truncated: need {size} bytes at {pos}, have {self.end - pos}")
        self.pos = new
        return pos

    # -- fixed-width integers --------------------------------------------------------------
    def int8(self) -> int:
        return int(INT8.unpack_from(self.buf, self._advance(1))[0])

    def boolean(self) -> bool:
        return self.int8() != 0

    def int16(self) -> int:
        return int(INT16.unpack_from(self.buf, self._advance(2))[0])

    def int32(self) -> int:
        return int(INT32.unpack_from(self.buf, self._advance(4))[0])

    def int64(self) -> int:
        return int(INT64.unpack_from(self.buf, self._advance(8))[0])

    def uint16(self) -> int:
        return int(UINT16.unpack_from(self.buf, self._advance(2))[0])

    def uint32(self) -> int:
        return int(UINT32.unpack_from(self.buf, self._advance(4))[0])

    def float64(self) -> float:
        return float(FLOAT64.unpack_from(self.buf, self._advance(8))[0])

    def uuid(self) -> bytes:
        pos = self._advance(16)
        return bytes(self.buf[pos : pos + 16])

    # -- varints ---------------------------------------------------------------------------
    def uvarint(self) -> int:
        """An unsigned varint of at most 5 bytes (a Java ``int``), masked to 32 bits."""
        pos = self.pos
        if pos < self.end:
            first = self.buf[pos]
            if first < 0x80:
                self.pos = pos + 1
                return first
        return self._varint_slow(_UVARINT_MAX_BYTES) & 0xFFFFFFFF

    def uvarlong(self) -> int:
        return self._varint_slow(_UVARLONG_MAX_BYTES) & 0xFFFFFFFFFFFFFFFF

    def varint(self) -> int:
        """A zigzag-encoded signed 32-bit varint (record fields)."""
        raw = self.uvarint()
        return (raw >> 1) ^ -(raw & 1)

    def varlong(self) -> int:
        """A zigzag-encoded signed 64-bit varint (record fields)."""
        raw = self.uvarlong()
        return (raw >> 1) ^ -(raw & 1)

    def _varint_slow(self, max_bytes: int) -> int:
        buf = self.buf
        pos = self.pos
        end = self.end
        value = 0
        shift = 0
        for _ in range(max_bytes):
            if pos >= end:
                raise ProtocolError(f"truncated varint at {self.pos}")
            byte = buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                self.pos = pos
                return value
            shift += 7
        raise ProtocolError(f"varint longer than {max_bytes} bytes at {self.pos}")

    # -- lengths ---------------------------------------------------------------------------
    def _check_length(self, length: int, nullable: bool, what: str) -> int | None:
        if length < 0:
            if length == -1 and nullable:
                return None
            raise ProtocolError(f"invalid {what} length {length} at {self.pos}")
        if length > self.end - self.pos:
            raise ProtocolError(
                f"{what} length {length} exceeds the {self.end - self.pos} bytes left"
            )
        return length

    def _check_count(self, count: int | None) -> int | None:
        if count is not None and count > MAX_ARRAY_ELEMENTS:
            raise ProtocolError(
                f"array of {count} elements exceeds the limit of {MAX_ARRAY_ELEMENTS}"
            )
        return count

    def array_length(self, nullable: bool = False) -> int | None:
        """An int32 element count; like Kafka, it may not exceed the bytes left nor
        :data:`MAX_ARRAY_ELEMENTS`."""
        return self._check_count(self._check_length(self.int32(), nullable, "array"))

    def compact_array_length(self, nullable: bool = False) -> int | None:
        return self._check_count(self._check_length(self.uvarint() - 1, nullable, "array"))

    def tagged_field_count(self) -> int:
        """The field count opening a tagged-field section, at most :data:`MAX_TAGGED_FIELDS`."""
        count = self.uvarint()
        if count > MAX_TAGGED_FIELDS:
            raise ProtocolError(f"{count} tagged fields exceed the limit of {MAX_TAGGED_FIELDS}")
        return count

    # -- strings and bytes -----------------------------------------------------------------
    def _utf8(self, length: int) -> str:
        pos = self._advance(length)
        try:
            return str(self.buf[pos : pos + length], "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"invalid UTF-8 in string at {pos}: {exc.reason}") from None

    def string(self) -> str:
        length = self._check_length(self.int16(), False, "string")
        assert length is not None
        return self._utf8(length)

    def nullable_string(self) -> str | None:
        length = self._check_length(self.int16(), True, "string")
        return None if length is None else self._utf8(length)

    def compact_string(self) -> str:
        length = self._check_length(self.uvarint() - 1, False, "string")
        assert length is not None
        return self._utf8(length)

    def compact_nullable_string(self) -> str | None:
        length = self._check_length(self.uvarint() - 1, True, "string")
        return None if length is None else self._utf8(length)

    def raw(self, length: int) -> memoryview:
        """``length`` bytes as a zero-copy slice of the input."""
        if length < 0:
            raise ProtocolError(f"invalid length {length} at {self.pos}")
        pos = self._advance(length)
        return self.buf[pos : pos + length]

    def skip(self, length: int) -> None:
        self.raw(length)

    def byte_string(self) -> bytes:
        length = self._check_length(self.int32(), False, "bytes")
        assert length is not None
        return bytes(self.raw(length))

    def nullable_byte_string(self) -> bytes | None:
        length = self._check_length(self.int32(), True, "bytes")
        return None if length is None else bytes(self.raw(length))

    def compact_byte_string(self) -> bytes:
        length = self._check_length(self.uvarint() - 1, False, "bytes")
        assert length is not None
        return bytes(self.raw(length))

    def compact_nullable_byte_string(self) -> bytes | None:
        length = self._check_length(self.uvarint() - 1, True, "bytes")
        return None if length is None else bytes(self.raw(length))

    def records(self, compact: bool) -> memoryview | None:
        """Nullable bytes returned as a zero-copy slice (record batches)."""
        raw_length = self.uvarint() - 1 if compact else self.int32()
        length = self._check_length(raw_length, True, "records")
        return None if length is None else self.raw(length)


def uvarint_bytes(value: int) -> bytes:
    """The unsigned varint encoding of ``value`` (0 <= value < 2**64)."""
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint_bytes(value: int) -> bytes:
    """Zigzag varint of a signed 32-bit value."""
    if not -0x80000000 <= value <= 0x7FFFFFFF:
        raise ValueError(f"varint out of range: {value}")
    return uvarint_bytes(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def varlong_bytes(value: int) -> bytes:
    """Zigzag varint of a signed 64-bit value."""
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise ValueError(f"varlong out of range: {value}")
    return uvarint_bytes(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def join_chunks(chunks: list[Chunk]) -> bytes:
    """The bytes of an encoded message, reading any file regions into memory."""
    return b"".join(c if isinstance(c, bytes | memoryview) else c.read_bytes() for c in chunks)


def nbytes(data: BytesLike | FileRegion) -> int:
    """The size in bytes of ``data`` (``len`` of a memoryview counts items, not bytes)."""
    if isinstance(data, memoryview):
        return data.nbytes
    if isinstance(data, bytes | bytearray):
        return len(data)
    return data.length


def uvarint_size(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


# Single-byte varints are by far the most common (lengths, counts, empty tag sections).
_SMALL_UVARINTS: Final = tuple(bytes((i,)) for i in range(0x80))


class Writer:
    """Appends primitives; :meth:`chunks` returns the output as a list of byte strings."""

    __slots__ = ("_chunks", "_size", "buf")

    def __init__(self) -> None:
        self.buf = bytearray()
        self._chunks: list[Chunk] = []
        self._size = 0  # bytes already moved into _chunks

    @property
    def size(self) -> int:
        return self._size + len(self.buf)

    def int8(self, value: int) -> None:
        self.buf += INT8.pack(value)

    def boolean(self, value: bool) -> None:
        if value is None:
            raise ValueError("a bool cannot be None")
        self.buf.append(1 if value else 0)

    def int16(self, value: int) -> None:
        self.buf += INT16.pack(value)

    def int32(self, value: int) -> None:
        self.buf += INT32.pack(value)

    def int64(self, value: int) -> None:
        self.buf += INT64.pack(value)

    def uint16(self, value: int) -> None:
        self.buf += UINT16.pack(value)

    def uint32(self, value: int) -> None:
        self.buf += UINT32.pack(value)

    def float64(self, value: float) -> None:
        self.buf += FLOAT64.pack(value)

    def uuid(self, value: BytesLike) -> None:
        if len(value) != 16:
            raise ValueError(f"a uuid is 16 bytes, got {len(value)}")
        self.buf += value

    def uvarint(self, value: int) -> None:
        if 0 <= value < 0x80:
            self.buf += _SMALL_UVARINTS[value]
        else:
            self.buf += uvarint_bytes(value)

    def varint(self, value: int) -> None:
        self.buf += varint_bytes(value)

    def varlong(self, value: int) -> None:
        self.buf += varlong_bytes(value)

    def raw(self, data: BytesLike | FileRegion) -> None:
        """Append ``data``; a large one (or a file region) becomes its own chunk, uncopied."""
        size = nbytes(data)
        if size < PASSTHROUGH_BYTES and isinstance(data, bytes | bytearray | memoryview):
            self.buf += data
            return
        if self.buf:
            # A view, not a copy: this bytearray is never appended to again.
            self._chunks.append(memoryview(self.buf))
            self._size += len(self.buf)
            self.buf = bytearray()
        self._chunks.append(memoryview(data) if isinstance(data, bytearray) else data)
        self._size += size

    def string(self, value: str) -> None:
        data = value.encode("utf-8")
        self.buf += INT16.pack(len(data))
        self.buf += data

    def nullable_string(self, value: str | None) -> None:
        if value is None:
            self.buf += b"\xff\xff"
        else:
            self.string(value)

    def compact_string(self, value: str) -> None:
        data = value.encode("utf-8")
        self.uvarint(len(data) + 1)
        self.buf += data

    def compact_nullable_string(self, value: str | None) -> None:
        if value is None:
            self.buf.append(0)
        else:
            self.compact_string(value)

    def byte_string(self, value: BytesLike) -> None:
        self.buf += INT32.pack(nbytes(value))
        self.raw(value)

    def nullable_byte_string(self, value: BytesLike | None) -> None:
        if value is None:
            self.buf += b"\xff\xff\xff\xff"
        else:
            self.byte_string(value)

    def compact_byte_string(self, value: BytesLike) -> None:
        self.uvarint(nbytes(value) + 1)
        self.raw(value)

    def compact_nullable_byte_string(self, value: BytesLike | None) -> None:
        if value is None:
            self.buf.append(0)
        else:
            self.compact_byte_string(value)

    def first_buffer(self) -> bytearray | memoryview:
        """The writable buffer holding the first bytes written (to patch a size prefix)."""
        if self._chunks:
            first = self._chunks[0]
            if isinstance(first, memoryview) and not first.readonly:
                return first
            raise ValueError("the first chunk is not a writer buffer")
        return self.buf

    def chunks(self) -> list[Chunk]:
        """The output so far. The writer must not be used afterwards."""
        out = self._chunks
        if self.buf:
            out.append(bytes(self.buf))
        return out

    def getvalue(self) -> bytes:
        if not self._chunks:
            return bytes(self.buf)
        return join_chunks(self.chunks())
