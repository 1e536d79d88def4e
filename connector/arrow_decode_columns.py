"""Growing column buffers of :class:`.arrow_decode.ArrowRecordBuilder` and their Arrow arrays.

A :class:`Column` is appended to row by row by the Python loops (its ``tail``) and chunk by
chunk by the numpy path; :meth:`Column.joined` gives all of it in order as one buffer. The
functions turn joined columns into Arrow arrays without a Python object per value.
"""

from __future__ import annotations

from array import array
from typing import Generic, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from sparklog.protocol.records import CorruptRecordError

try:
    from .arrow_decode_np import validity_bitmap as _validity_bitmap
except ImportError:  # numpy is optional: a Python loop builds the bitmap then
    _validity_bitmap = None  # type: ignore[assignment]

__all__ = ["Column", "binary_array", "micros_array"]

_Tail = TypeVar("_Tail", bytearray, "array[int]")


class Column(Generic[_Tail]):
    """One growing column buffer. The Python loops append to :attr:`tail`; the numpy path
    adds whole chunks, joined once by :meth:`joined`: growing one ``bytearray`` or ``array``
    batch by batch re-copies it many times over (their growth factor is about 1.125)."""

    __slots__ = ("_chunks", "tail")

    def __init__(self, tail: _Tail) -> None:
        self.tail: _Tail = tail
        self._chunks: list[_Tail | memoryview] = []

    def add(self, chunk: memoryview) -> None:
        if self.tail:
            # A new tail, not a cleared one: the chunk list still holds the old.
            self._chunks.append(self.tail)
            self.tail = self.tail[:0]
        self._chunks.append(chunk)

    def joined(self) -> _Tail | bytes:
        return b"".join([*self._chunks, self.tail]) if self._chunks else self.tail


def micros_array(millis: Column[array[int]], count: int) -> pa.Array:
    as_ms = pa.Array.from_buffers(pa.int64(), count, [None, pa.py_buffer(millis.joined())])
    try:
        micros = pc.multiply_checked(as_ms, 1000)
    except pa.ArrowInvalid as exc:
        raise CorruptRecordError(f"Record timestamp out of range: {exc}") from exc
    return micros.cast(pa.timestamp("us", tz="UTC"))


def binary_array(
    data: Column[bytearray], ends: Column[array[int]], nulls: Column[array[int]], count: int
) -> pa.Array:
    validity = None
    null_rows = nulls.joined()
    null_count = len(null_rows) // 8 if isinstance(null_rows, bytes) else len(null_rows)
    if null_count and _validity_bitmap is not None:
        validity = pa.py_buffer(_validity_bitmap(null_rows, count))
    elif null_count:
        # Without numpy no chunk was ever added: the rows are still the tail ``array``.
        bitmap = bytearray(b"\xff") * ((count + 7) // 8)
        for row in nulls.tail:
            bitmap[row >> 3] &= ~(1 << (row & 7)) & 0xFF
        validity = pa.py_buffer(bitmap)
    return pa.Array.from_buffers(
        pa.binary(),
        count,
        [validity, pa.py_buffer(ends.joined()), pa.py_buffer(data.joined())],
        null_count=null_count,
    )
