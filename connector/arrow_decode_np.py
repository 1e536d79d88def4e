"""A numpy fast path for record batches' records, used by :mod:`.arrow_decode`.

Contract of :func:`decode_records`: given a run of batches (:class:`BatchRecords`: each one's
decompressed records region and header fields, in log order), it either returns their kept
rows as flat column buffers (:class:`DecodedRecords`), or returns ``None`` and the caller
decodes those batches with its pure-Python loops instead. It never raises for malformed bytes
and never touches the caller's state, so a ``None`` costs only time.

Invariants that make the two paths give identical rows:

- Rows come back only for batches in the plain shape every producer writes: every record's
  length is positive and a batch's records tile its region exactly; every field lies inside
  its record; the header count is the single byte 0 and ends the record; int32 varints take
  at most 5 bytes and the timestamp delta at most 9; offsets, timestamps and the column sizes
  fit their Arrow types. Anything else (headers, damage, oddities the Python loops tolerate or
  reject in their own ways) returns ``None``, so the Python loops stay the single authority
  on edge cases.
- Key or value length < 0 means null, as in the Python loops. A ``dense`` batch takes
  offsets ``base + i`` as the Python dense loop does; otherwise offsets are
  ``base + offsetDelta`` and the batch's ``[low, high)`` cut is applied per record.
  LogAppendTime rows take the batch's max timestamp, others ``base + timestampDelta``.

How: only the record starts depend on each other (each on the previous record's length);
runs of equal-sized records are found at once and only records of varying sizes are walked
in Python (:func:`_record_starts`). Every other field is decoded for all records of all the
batches at once, so numpy's fixed cost per call (1-2 us here, a few dozen calls) is paid
once per run, not per batch. A varint column is read one byte per record when every value is
below 0x80, two when below 0x4000, and otherwise through a window of up to 5 or 9 bytes with
a continuation mask. Keys and values are copied out by Arrow: a binary array over the region
whose elements alternate field, gap, taken down to the fields (see :func:`_gather`).
"""

from __future__ import annotations

import dataclasses
from array import array
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = ["BatchRecords", "DecodedRecords", "decode_records", "validity_bitmap"]

_INT32_MAX: Final = 0x7FFFFFFF
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_INT32_VARINT_BYTES: Final = 5
_INT64_VARINT_BYTES: Final = 9  # 63 payload bits: always fits an int64 before the zigzag
_SHIFTS: Final = np.arange(0, 70, 7, dtype=np.uint64)
_COLUMNS: Final = np.arange(10, dtype=np.int64)
# Record starts: at most this many runs of equal-sized records per batch are found by numpy,
# and a run shorter than ``_SHORT_RUN`` means sizes vary, so the rest is walked record by record.
_MAX_RUNS: Final = 8
_SHORT_RUN: Final = 16

Int64s = npt.NDArray[np.int64]
Bytes = npt.NDArray[np.uint8]


@dataclasses.dataclass(frozen=True, slots=True)
class DecodedRecords:
    """One batch's kept rows; ``*_ends`` and ``*_null_rows`` are already shifted by the
    builder's running totals so they append to its buffers as they are."""

    rows: int
    offsets: memoryview  # int64, native byte order, like ``array("q")``
    timestamps: memoryview  # int64, milliseconds
    types: memoryview  # int8: 1 for LogAppendTime
    key_data: memoryview
    key_ends: memoryview  # int32, like ``array("i")``
    key_null_rows: memoryview  # int64
    value_data: memoryview
    value_ends: memoryview  # int32
    value_null_rows: memoryview  # int64
    key_total: int  # the last key end: the builder's running totals after this batch
    value_total: int


def _record_starts(data: bytes, pos: int, end: int, count: int) -> Int64s | None:
    """Where each of the ``count`` records from ``pos`` starts, following the length varints;
    ``None`` for a length varint of 4 bytes or more (records of 1 MiB and up, where this is
    not what costs).

    Each start depends on the previous record's length, so a plain walk is a Python loop per
    record, which used to be most of the decoder's time. Runs of records of one size (the
    usual case: fixed-width keys and values, and the offset and timestamp deltas of a batch
    change width at most a few times) are found with numpy instead: guess that the records
    from ``pos`` all have the size of the first one, and keep the guesses up to the first
    one whose length varint differs from the first one's bytes. That check is exact: a record
    starting at a kept guess has the first one's length, so the next one starts at the next
    guess. Short runs (variable sizes) hand the rest of the batch to the loop."""
    u8 = np.frombuffer(data, dtype=np.uint8)
    runs: list[Int64s] = []
    left = count
    for _ in range(_MAX_RUNS):
        if left == 0:
            break
        first = data[pos]
        second = data[pos + 1] if first >= 0x80 else 0
        if second >= 0x80:
            break
        raw = first if first < 0x80 else (first & 0x7F) | (second << 7)
        if raw & 1:
            break  # a negative length: the loop below steps over it, the caller rejects it
        stride = (1 if first < 0x80 else 2) + (raw >> 1)
        guesses = np.arange(pos, pos + stride * left, stride, dtype=np.int64)
        same = u8.take(guesses, mode="clip") == first
        if first >= 0x80:
            same &= u8.take(guesses + 1, mode="clip") == second
        same &= guesses < end
        differs = np.flatnonzero(~same)
        run = left if not len(differs) else int(differs[0])
        runs.append(guesses[:run])
        left -= run
        pos += stride * run
        if run < _SHORT_RUN:
            break
    if left:
        rest = _walk(data, pos, left)
        if rest is None:
            return None
        runs.append(rest)
    return runs[0] if len(runs) == 1 else np.concatenate(runs)


def _walk(data: bytes, pos: int, count: int) -> Int64s | None:
    """:func:`_record_starts` one record at a time."""
    starts = array("q")
    append = starts.append
    for _ in range(count):
        append(pos)
        b = data[pos]
        if b < 0x80:
            # A negative (odd) length moves on as if positive; the vector check rejects it.
            pos += 1 + (b >> 1)
        else:
            b2 = data[pos + 1]
            if b2 < 0x80:
                pos += 2 + (((b & 0x7F) | (b2 << 7)) >> 1)
                continue
            b3 = data[pos + 2]
            if b3 >= 0x80:
                return None
            pos += 3 + (((b & 0x7F) | ((b2 & 0x7F) << 7) | (b3 << 14)) >> 1)
    return np.frombuffer(starts, dtype=np.int64)


def _count(values: npt.NDArray[np.bool_] | Bytes) -> int:
    """Non-zero elements; ``ndarray.any`` costs several times more per call, and this path
    makes dozens of such calls per batch."""
    return int(np.count_nonzero(values))


def _raw(values: npt.NDArray[np.int64] | npt.NDArray[np.int32]) -> memoryview:
    """The bytes of ``values`` without a copy, in the form ``array.frombytes`` takes."""
    return np.ascontiguousarray(values).view(np.uint8).data


def _zigzag(raw: Int64s) -> Int64s:
    result: Int64s = (raw >> 1) ^ -(raw & 1)
    return result


def _varints(u8: Bytes, pos: Int64s, max_bytes: int) -> tuple[Int64s, Int64s] | None:
    """Zigzag varints starting at ``pos`` (positions may be garbage; reads are clipped):
    values and the positions after them, or ``None`` if one is longer than ``max_bytes``."""
    first = u8.take(pos, mode="clip").astype(np.int64)
    long_first = first >= 0x80
    if not _count(long_first):
        return _zigzag(first), pos + 1
    second = u8.take(pos + 1, mode="clip").astype(np.int64)
    if not _count(long_first & (second >= 0x80)):
        two = (first & 0x7F) | (second << 7)
        raw = np.where(long_first, two, first)
        return _zigzag(raw), pos + 1 + long_first
    window = u8.take(pos[:, None] + _COLUMNS[:max_bytes], mode="clip")
    more = window >= 0x80
    last = more.argmin(axis=1)  # the first byte without the continuation bit
    if _count(more[np.arange(len(pos)), last]):
        return None
    parts = (window & 0x7F).astype(np.uint64) << _SHIFTS[:max_bytes]
    parts[_COLUMNS[:max_bytes] > last[:, None]] = 0
    raw64 = parts.sum(axis=1, dtype=np.uint64).astype(np.int64)
    return _zigzag(raw64), pos + 1 + last


def _gather(region: Bytes, starts: Int64s, sizes: Int64s, total: int) -> memoryview:
    """The fields ``region[starts[i] : starts[i] + sizes[i]]`` concatenated, ``total``
    bytes; the fields are in increasing order and do not overlap."""
    if not total:
        return memoryview(b"")
    # One Arrow binary array over the region whose elements alternate field, gap (up to the
    # next field); Arrow's take of the even elements then copies the fields in C. Measured:
    # 2.5 times faster than filtering elements key, gap, value, gap (which was itself about
    # 20 times faster than numpy's boolean indexing of bytes, 5 times than joining slices).
    count = len(starts)
    offsets = np.empty(2 * count + 1, dtype=np.int32)
    offsets[0 : 2 * count : 2] = starts
    offsets[1 : 2 * count : 2] = starts + sizes
    offsets[2 * count] = len(region)
    elements = pa.Array.from_buffers(
        pa.binary(), 2 * count, [None, pa.py_buffer(offsets), pa.py_buffer(region)]
    )
    picked = elements.take(pa.array(_even_indices(count)))
    # Read where the picked bytes begin rather than assume 0: Arrow may answer with a slice.
    _, picked_offsets, data = picked.buffers()
    begin = int(np.frombuffer(picked_offsets, dtype=np.int32)[picked.offset])
    return memoryview(data)[begin : begin + total]


def _even_indices(count: int) -> npt.NDArray[np.int32]:
    return np.arange(0, 2 * count, 2, dtype=np.int32)


@dataclasses.dataclass(frozen=True, slots=True)
class BatchRecords:
    """One batch's records region ``payload[pos:end]`` and what its rows need from the batch
    header. ``base_ts`` is the max timestamp for LogAppendTime; a bound of ``None`` is open;
    ``dense`` marks a batch the Python dense loop would take (offsets ``base + i``)."""

    payload: bytes
    pos: int
    end: int
    count: int
    base: int
    base_ts: int
    log_append: bool
    low: int | None
    high: int | None
    dense: bool


def _overflowed(left: Int64s, right: Int64s, total: Int64s) -> bool:
    """Whether any int64 ``left + right`` wrapped around to give ``total``."""
    return bool(_count(((left ^ total) & (right ^ total)) < 0))


def decode_records(
    batches: list[BatchRecords], first_row: int, key_total: int, value_total: int
) -> DecodedRecords | None:
    """The kept rows of ``batches`` (in order), or ``None`` when the Python loops must
    decide; see the module docstring. Decoding many batches at once spreads numpy's fixed cost
    per call over all their records."""
    counts = [batch.count for batch in batches]
    if min(counts) <= 0:
        return None
    first = batches[0]
    # Uncompressed batches of one buffer are read in place, the batch headers between them
    # left unread; others (decompressed payloads) are copied together.
    in_place = all(b.payload is first.payload for b in batches)
    batch_starts: list[int] = []
    parts = []
    region_size = 0
    for batch in batches:
        region_start = batch.pos - first.pos if in_place else region_size
        try:
            found = _record_starts(batch.payload, batch.pos, batch.end, batch.count)
        except IndexError:
            return None
        if found is None:
            return None
        batch_starts.append(region_start)
        parts.append(found + (region_start - batch.pos))
        region_size = region_start + batch.end - batch.pos
    if region_size > _INT32_MAX:
        return None  # Arrow's int32 offsets could not address it
    if in_place:
        region = np.frombuffer(first.payload, dtype=np.uint8)[first.pos : first.pos + region_size]
    else:
        joined = b"".join([memoryview(b.payload)[b.pos : b.end] for b in batches])
        region = np.frombuffer(joined, dtype=np.uint8)
    starts = parts[0] if len(parts) == 1 else np.concatenate(parts)
    count = len(starts)
    per_batch = np.array(counts, dtype=np.int64)
    batch_last = np.cumsum(per_batch) - 1  # each batch's last record

    length = _varints(region, starts, _INT32_VARINT_BYTES)
    if length is None:
        return None
    sizes, after = length
    record_ends = after + sizes
    # Records tile each batch's region exactly: every record ends where the next starts,
    # a batch's last one where the batch ends.
    expected_ends = np.empty(count, dtype=np.int64)
    expected_ends[:-1] = starts[1:]
    expected_ends[batch_last] = [
        s + b.end - b.pos for s, b in zip(batch_starts, batches, strict=True)
    ]
    if _count(sizes <= 0) or _count(record_ends != expected_ends):
        return None
    timestamp = _varints(region, after + 1, _INT64_VARINT_BYTES)  # + 1: attributes byte
    if timestamp is None:
        return None
    ts_deltas, p = timestamp
    offset = _varints(region, p, _INT32_VARINT_BYTES)
    if offset is None:
        return None
    offset_deltas, p = offset
    key = _varints(region, p, _INT32_VARINT_BYTES)
    if key is None:
        return None
    key_lengths, key_starts = key
    key_sizes = np.maximum(key_lengths, 0)
    value = _varints(region, key_starts + key_sizes, _INT32_VARINT_BYTES)
    if value is None:
        return None
    value_lengths, value_starts = value
    value_sizes = np.maximum(value_lengths, 0)
    header_counts = value_starts + value_sizes
    # Every field advances by at least a byte, so an exact end keeps them all in the record.
    if _count(header_counts + 1 != record_ends) or _count(region.take(header_counts)):
        return None

    def each(values: list[int]) -> Int64s:
        return np.repeat(np.array(values, dtype=np.int64), per_batch)

    bases = each([b.base for b in batches])
    if any(b.dense for b in batches):
        in_batch = np.arange(count, dtype=np.int64) - each([0, *np.cumsum(counts[:-1])])
        offset_deltas = np.where(each([b.dense for b in batches]) != 0, in_batch, offset_deltas)
    offsets = bases + offset_deltas
    if _overflowed(bases, offset_deltas, offsets) or _count(offsets == _INT64_MAX):
        return None
    keep = None
    if any(b.low is not None or b.high is not None for b in batches):
        lows = each([_INT64_MIN if b.low is None else b.low for b in batches])
        highs = each([_INT64_MAX if b.high is None else b.high for b in batches])
        mask = (offsets >= lows) & (offsets < highs)
        if _count(mask) != count:
            keep = mask
    base_timestamps = each([b.base_ts for b in batches])
    timestamps = base_timestamps + ts_deltas
    types = np.repeat(np.array([b.log_append for b in batches], dtype=np.int8), per_batch)
    if any(b.log_append for b in batches):
        timestamps = np.where(types != 0, base_timestamps, timestamps)
        ts_deltas = np.where(types != 0, 0, ts_deltas)
    if _overflowed(base_timestamps, ts_deltas, timestamps):
        return None
    if keep is not None:
        offsets, timestamps, types = offsets[keep], timestamps[keep], types[keep]
        key_lengths, key_starts, key_sizes = key_lengths[keep], key_starts[keep], key_sizes[keep]
        value_lengths, value_starts = value_lengths[keep], value_starts[keep]
        value_sizes = value_sizes[keep]

    key_ends = np.cumsum(key_sizes)
    value_ends = np.cumsum(value_sizes)
    rows = len(offsets)
    if rows and (
        key_total + int(key_ends[-1]) > _INT32_MAX or value_total + int(value_ends[-1]) > _INT32_MAX
    ):
        return None
    key_data = _gather(region, key_starts, key_sizes, int(key_ends[-1]) if rows else 0)
    value_data = _gather(region, value_starts, value_sizes, int(value_ends[-1]) if rows else 0)
    return DecodedRecords(
        rows=rows,
        offsets=_raw(offsets),
        timestamps=_raw(timestamps),
        types=types.view(np.uint8).data,
        key_data=key_data,
        key_ends=_raw((key_ends + key_total).astype(np.int32)),
        key_null_rows=_raw(np.flatnonzero(key_lengths < 0) + first_row),
        value_data=value_data,
        value_ends=_raw((value_ends + value_total).astype(np.int32)),
        value_null_rows=_raw(np.flatnonzero(value_lengths < 0) + first_row),
        key_total=key_total + (int(key_ends[-1]) if rows else 0),
        value_total=value_total + (int(value_ends[-1]) if rows else 0),
    )


def validity_bitmap(null_rows: array[int] | bytes, count: int) -> bytes:
    """Arrow's validity bitmap (LSB first) for ``count`` rows with ``null_rows`` unset."""
    valid = np.ones(count, dtype=np.bool_)
    valid[np.frombuffer(null_rows, dtype=np.int64)] = False
    return np.packbits(valid, bitorder="little").tobytes()
