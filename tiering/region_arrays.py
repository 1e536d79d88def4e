"""Arrow arrays of byte fields that lie in one region (a batch run's records), for the
shared batch decoder (:mod:`.batch_decode`).

Contract: given the region (a uint8 numpy array), each field's start and length (-1 = null;
starts increasing, fields not overlapping), :func:`binary_array` returns a ``binary`` (or
``string``) array holding copies of the fields, and :func:`view_array` a ``binary_view`` array
pointing into the region (no copy; the array keeps the region alive). Both give equal values.
Pure functions; no I/O.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = ["binary_array", "view_array"]

_BINARY: Final = pa.binary()
_BINARY_VIEW: Final = pa.binary_view()
_INLINE_VIEW_BYTES: Final = 12  # a binary_view element this short lives in its view
_VIEW_COLUMNS: Final = np.arange(_INLINE_VIEW_BYTES, dtype=np.int64)

Int64s = npt.NDArray[np.int64]
Bytes = npt.NDArray[np.uint8]


def _count(values: npt.NDArray[np.bool_]) -> int:
    return int(np.count_nonzero(values))


def _gather(region: Bytes, starts: Int64s, sizes: Int64s) -> tuple[pa.Buffer, Int64s]:
    """The fields ``region[starts[i] : starts[i] + sizes[i]]`` concatenated (in increasing
    order, not overlapping) and their end offsets."""
    ends = np.cumsum(sizes)
    count = len(starts)
    if not count or not ends[-1]:
        return pa.py_buffer(b""), ends
    # One Arrow binary array over the region whose elements alternate field, gap (up to the
    # next field); Arrow's take of the even elements copies the fields in C (far faster than
    # numpy's boolean indexing of bytes or joining slices).
    offsets = np.empty(2 * count + 1, dtype=np.int32)
    offsets[0 : 2 * count : 2] = starts
    offsets[1 : 2 * count : 2] = starts + sizes
    offsets[2 * count] = len(region)
    elements = pa.Array.from_buffers(
        pa.binary(), 2 * count, [None, pa.py_buffer(offsets), pa.py_buffer(region)]
    )
    picked = elements.take(pa.array(np.arange(0, 2 * count, 2, dtype=np.int32)))
    # Read where the picked bytes begin rather than assume 0: Arrow may answer with a slice.
    _, picked_offsets, data = picked.buffers()
    begin = int(np.frombuffer(picked_offsets, dtype=np.int32)[picked.offset])
    return data.slice(begin, int(ends[-1])), ends


def binary_array(
    region: Bytes, starts: Int64s, lengths: Int64s, type_: pa.DataType = _BINARY
) -> pa.Array:
    """A binary (or string) array of the fields; a negative length is null."""
    nulls = lengths < 0
    data, ends = _gather(region, starts, np.maximum(lengths, 0))
    offsets = np.zeros(len(starts) + 1, dtype=np.int32)
    offsets[1:] = ends
    null_count = _count(nulls)
    validity = None
    if null_count:
        validity = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
    return pa.Array.from_buffers(
        type_, len(starts), [validity, pa.py_buffer(offsets), data], null_count=null_count
    )


def view_array(region: Bytes, starts: Int64s, lengths: Int64s) -> pa.Array:
    """A binary_view array of the fields ``region[starts[i] : starts[i] + lengths[i]]`` that
    points into ``region`` (a negative length is null). Each 16-byte view is four uint32
    words: the length, then, up to 12 bytes, the bytes themselves zero-padded, else a 4-byte
    prefix, buffer index 0 and the offset (Arrow's layout). Words are read at any byte
    offset through an overlapping uint32 view of the region."""
    count = len(starts)
    nulls = lengths < 0
    sizes = np.maximum(lengths, 0)
    views = np.zeros((count, 4), dtype=np.uint32)
    views[:, 0] = sizes
    inline = sizes <= _INLINE_VIEW_BYTES
    inlined = _count(inline)
    if len(region) >= _INLINE_VIEW_BYTES + 4:
        words = np.ndarray((len(region) - 3,), dtype="<u4", buffer=region, strides=(1,))
        # Fields near the region's end would read past it: clipped here, redone below.
        tail = np.flatnonzero(starts + _INLINE_VIEW_BYTES > len(region))
        last_word = len(words) - 1
        # (Fancy indexing: ``take`` on this strided view is an order of magnitude slower.)
        first = words[np.minimum(starts, last_word)]
        if inlined:
            widest = int(sizes[inline].max())
            for word in range(3):
                if 4 * word >= widest:
                    break
                kept = np.clip(sizes - 4 * word, 0, 4).astype(np.uint64) * 8
                mask = ((np.uint64(1) << kept) - np.uint64(1)).astype(np.uint32)
                value = first if word == 0 else words[np.minimum(starts + 4 * word, last_word)]
                views[:, 1 + word] = np.where(inline, value & mask, 0)
        if inlined != count:
            long_ = ~inline
            views[:, 1] = np.where(long_, first, views[:, 1])
            views[:, 3] = np.where(long_, starts.astype(np.uint32), views[:, 3])
    else:
        tail = np.arange(count)
    if len(tail):
        as_bytes = views.view(np.uint8)
        as_bytes[tail, 4:] = 0
        for i in tail.tolist():
            size = int(sizes[i])
            start = int(starts[i])
            if size <= _INLINE_VIEW_BYTES:
                as_bytes[i, 4 : 4 + size] = region[start : start + size]
            else:
                as_bytes[i, 4:8] = region[start : start + 4]
                views[i, 3] = start
    null_count = _count(nulls)
    validity = None
    if null_count:
        validity = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
    return pa.Array.from_buffers(
        _BINARY_VIEW,
        count,
        [validity, pa.py_buffer(views), pa.py_buffer(region)],
        null_count=null_count,
    )
