"""The one vectorised decoder of Kafka v2 records into Arrow arrays, shared by the tier
(segment -> Parquet, :mod:`.transcode`) and the Spark connector (:mod:`sparklog.connector.
arrow_decode`). It lives here because the connector already depends on the tier.

Contract of :func:`decode_records`: given a run of batches (:class:`BatchRecords`: each one's
records region, already decompressed, and the header fields its rows need, in log order), it
returns their rows with ``low <= offset < high`` as :class:`RecordArrays`, equal record for
record to what :func:`sparklog.protocol.record_codec.decode_records` decodes (offsets
``base + offsetDelta``; LogAppendTime rows take the batch's max timestamp, others
``base + timestampDelta``; a length of -1 is null). Damage raises
:class:`~sparklog.protocol.records.CorruptRecordError` and nothing else.

Invariants that make the vector path and the exact path give identical rows:

- The vector path (:func:`_vector`) takes a run only when every record is in the shape every
  producer writes: a positive length, records tiling each batch's region exactly, int32
  varints of at most 5 bytes and timestamp deltas of at most 9, offsets and timestamps that
  fit an int64, and (when headers are wanted) non-negative header counts and key sizes, UTF-8
  header keys and headers ending exactly where their record does (checked even when the
  caller does not want the headers).
- Anything else makes it answer ``None``; the run is then split in halves down to single
  batches, and a single batch it still declines goes to the exact path, record_codec's
  record loop, which is the authority on every edge case (and raises for damage). So only
  odd batches cost a Python step per record.

How: only record starts depend on each other (each on the previous record's length); runs
of equal-sized records are found at once and only records of varying sizes are walked in
Python (:func:`_run_starts`). Every other field is decoded for all records of all the
batches at once, so numpy's fixed cost per call is paid once per run, not per batch. A varint
column is read one byte per record when every value is below 0x80, two when below 0x4000,
and otherwise through a window with a continuation mask. Headers are read in rounds (round
``j`` reads the ``j``-th header of every record that has one). Keys and values are copied out
by Arrow from the records region (:mod:`.region_arrays`), or pointed at in it as binary_view.
"""

from __future__ import annotations

import dataclasses
import itertools
from array import array
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from sparklog.protocol.record_codec import Record
from sparklog.protocol.record_codec import decode_records as decode_records_exactly
from sparklog.protocol.records import (
    MAGIC_V2,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    CorruptRecordError,
)

from .region_arrays import binary_array, view_array

__all__ = ["BatchRecords", "RecordArrays", "decode_records", "empty_arrays"]

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
_BINARY_VIEW: Final = pa.binary_view()
_CHECK_HEADERS_TYPE: Final = pa.list_(
    pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())])
)

Int64s = npt.NDArray[np.int64]
Bytes = npt.NDArray[np.uint8]


@dataclasses.dataclass(frozen=True, slots=True)
class BatchRecords:
    """One batch's records region ``payload[pos:end]`` (decompressed, or in place in the
    log for codec none) and what its rows need from the batch header. ``low``/``high`` cut
    the rows to ``low <= offset < high`` (``None`` is open)."""

    payload: bytes | bytearray | memoryview
    pos: int
    end: int
    count: int
    base_offset: int
    base_timestamp: int
    max_timestamp: int
    log_append: bool
    low: int | None = None
    high: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class RecordArrays:
    """The kept rows of a run: ``batch_rows[i]`` rows came from the run's ``i``-th batch.
    ``headers`` is None when headers were not asked for, else a list array of the asked type,
    null for a record without headers."""

    rows: int
    batch_rows: Int64s
    offsets: Int64s
    timestamps: Int64s
    keys: pa.Array
    values: pa.Array
    headers: pa.Array | None


def empty_arrays(batches: int, headers_type: pa.DataType | None) -> RecordArrays:
    return RecordArrays(
        rows=0,
        batch_rows=np.zeros(batches, dtype=np.int64),
        offsets=np.zeros(0, dtype=np.int64),
        timestamps=np.zeros(0, dtype=np.int64),
        keys=pa.array([], pa.binary()),
        values=pa.array([], pa.binary()),
        headers=None if headers_type is None else pa.array([], headers_type),
    )


def decode_records(
    batches: list[BatchRecords],
    headers_type: pa.DataType | None = None,
    *,
    min_vector_records: int = 0,
    views: bool = False,
) -> RecordArrays:
    """The kept rows of ``batches`` in order; see the module docstring. ``headers_type``
    (a ``list<struct<key: string, value: binary>>``) asks for the headers column. Runs of
    fewer than ``min_vector_records`` records take the exact path, where numpy's fixed cost
    per call (about 150 us) would outweigh what it saves. ``views`` asks for keys and values
    as ``binary_view`` arrays that point into the batches' records regions (no copy of the
    bytes; the arrays keep the regions alive) instead of ``binary`` arrays."""
    decoded = _decode(batches, headers_type, min_vector_records, views)
    if views and decoded.keys.type != _BINARY_VIEW:
        return _as_views(decoded)
    return decoded


def _decode(
    batches: list[BatchRecords],
    headers_type: pa.DataType | None,
    min_vector_records: int,
    views: bool,
) -> RecordArrays:
    nonempty = [b for b in batches if b.count > 0]
    if len(nonempty) != len(batches):
        if any(b.count < 0 for b in batches):
            raise CorruptRecordError("Record batch declares a negative record count")
        decoded = _decode(nonempty, headers_type, min_vector_records, views) if nonempty else None
        return _spread(decoded, [b.count > 0 for b in batches], headers_type)
    if not batches:
        return empty_arrays(0, headers_type)
    if sum(b.count for b in batches) < min_vector_records:
        return concat([_exact(b, headers_type) for b in batches])
    try:
        fast = _vector(batches, headers_type, views)
    except (IndexError, ValueError, OverflowError, pa.ArrowException):
        fast = None
    if fast is not None:
        return fast
    if len(batches) == 1:
        return _exact(batches[0], headers_type)
    half = len(batches) // 2
    parts = (batches[:half], batches[half:])
    return concat([_decode(part, headers_type, min_vector_records, views) for part in parts])


def _spread(
    decoded: RecordArrays | None, present: list[bool], headers_type: pa.DataType | None
) -> RecordArrays:
    """``decoded`` of the non-empty batches, with zero rows for the empty ones."""
    if decoded is None:
        return empty_arrays(len(present), headers_type)
    batch_rows = np.zeros(len(present), dtype=np.int64)
    batch_rows[np.flatnonzero(present)] = decoded.batch_rows
    return dataclasses.replace(decoded, batch_rows=batch_rows)


def concat(parts: list[RecordArrays]) -> RecordArrays:
    """The runs ``parts`` as one (as views if any part has views)."""
    if len(parts) == 1:
        return parts[0]
    if len({p.keys.type for p in parts}) > 1:
        parts = [_as_views(p) for p in parts]
    headers = [p.headers for p in parts]
    return RecordArrays(
        rows=sum(p.rows for p in parts),
        batch_rows=np.concatenate([p.batch_rows for p in parts]),
        offsets=np.concatenate([p.offsets for p in parts]),
        timestamps=np.concatenate([p.timestamps for p in parts]),
        keys=pa.concat_arrays([p.keys for p in parts]),
        values=pa.concat_arrays([p.values for p in parts]),
        headers=None if headers[0] is None else pa.concat_arrays(headers),
    )


def _as_views(arrays: RecordArrays) -> RecordArrays:
    """``arrays`` with binary_view keys and values (Arrow's cast points into the same bytes)."""
    if arrays.keys.type == _BINARY_VIEW:
        return arrays
    return dataclasses.replace(
        arrays, keys=arrays.keys.cast(_BINARY_VIEW), values=arrays.values.cast(_BINARY_VIEW)
    )


def _exact(batch: BatchRecords, headers_type: pa.DataType | None) -> RecordArrays:
    """One batch through record_codec's record loop (the reference; raises for damage)."""
    header = BatchHeader(
        base_offset=batch.base_offset,
        batch_length=0,
        partition_leader_epoch=-1,
        magic=MAGIC_V2,
        crc=0,
        attributes=TIMESTAMP_TYPE_MASK if batch.log_append else 0,
        last_offset_delta=0,
        base_timestamp=batch.base_timestamp,
        max_timestamp=batch.max_timestamp,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records_count=batch.count,
    )
    assert header.timestamp_type == (TIMESTAMP_LOG_APPEND_TIME if batch.log_append else 0)
    data = bytes(memoryview(batch.payload)[batch.pos : batch.end])
    records: list[Record] = [
        r
        for r in decode_records_exactly(data, header)
        if (batch.low is None or r.offset >= batch.low)
        and (batch.high is None or r.offset < batch.high)
    ]
    try:
        offsets = np.array([r.offset for r in records], dtype=np.int64)
        timestamps = np.array([r.timestamp for r in records], dtype=np.int64)
    except OverflowError as exc:
        raise CorruptRecordError(f"Record offset or timestamp out of range: {exc}") from exc
    headers = None
    if headers_type is not None:
        headers = pa.array(
            [[{"key": k, "value": v} for k, v in r.headers] or None for r in records],
            headers_type,
        )
    return RecordArrays(
        rows=len(records),
        batch_rows=np.array([len(records)], dtype=np.int64),
        offsets=offsets,
        timestamps=timestamps,
        keys=pa.array([r.key for r in records], pa.binary()),
        values=pa.array([r.value for r in records], pa.binary()),
        headers=headers,
    )


def _record_starts(
    data: bytes | bytearray | memoryview, pos: int, end: int, count: int
) -> Int64s | None:
    """Where each of the ``count`` records of ``data[pos:end]`` starts: :func:`_run_starts`
    for one batch."""
    u8 = np.frombuffer(data, dtype=np.uint8)
    one = np.array([pos], dtype=np.int64)
    return _run_starts(u8, one, np.array([end], dtype=np.int64), np.array([count], np.int64))


def _run_starts(region: Bytes, begins: Int64s, ends: Int64s, counts: Int64s) -> Int64s | None:
    """Where each record of every batch starts (batch ``i`` holds ``counts[i]`` records from
    ``region[begins[i]]``, up to ``ends[i]``), batch after batch, following the length
    varints; ``None`` for a length varint of 4 bytes or more (records of 1 MiB and up, where
    this is not what costs).

    Runs of records of one size (the usual case: fixed-width keys and values, and the offset
    and timestamp deltas of a batch change width at most a few times) are found with numpy,
    for all the batches at once: guess that each batch's records from its current position
    all have the size of the one there, and keep the guesses up to the first one whose length
    varint differs from that one's bytes. That check is exact: a record starting at a kept
    guess has the first one's length, so the next one starts at the next guess. A batch whose
    run is short (variable sizes) or whose length varint is long or negative hands its rest
    to :func:`_walk`."""
    # Batches lie in increasing order in the region, so the starts found (a sorted piece per
    # round, then the walked ones) are put in order by a merge of those sorted pieces.
    pieces: list[Int64s] = []
    pos = begins.astype(np.int64, copy=True)
    found = np.zeros(len(counts), dtype=np.int64)
    active = np.flatnonzero(counts > 0)
    for _ in range(_MAX_RUNS):
        if not len(active):
            break
        at = pos[active]
        first = region.take(at, mode="clip").astype(np.int64)
        second = region.take(at + 1, mode="clip").astype(np.int64)
        two = first >= 0x80
        raw = np.where(two, (first & 0x7F) | (second << 7), first)
        # Three-byte or negative lengths: the walk steps over them (the vector check rejects
        # a negative one).
        usable = ~(two & (second >= 0x80)) & ((raw & 1) == 0) & (at < ends[active])
        if not _count(usable):
            break
        active, at, first, second, two = (
            active[usable],
            at[usable],
            first[usable],
            second[usable],
            two[usable],
        )
        stride = two + 1 + (raw[usable] >> 1)
        # Guesses only up to the batch's end (one past it would not match anyway).
        left = np.minimum(counts[active] - found[active], (ends[active] - at - 1) // stride + 1)
        segment_end = np.cumsum(left)
        segment_start = segment_end - left
        guesses = np.repeat(at - segment_start * stride, left)
        guesses += np.arange(int(segment_end[-1]), dtype=np.int64) * np.repeat(stride, left)
        same = region.take(guesses, mode="clip") == np.repeat(first, left)
        if _count(two):
            seconds = region.take(guesses + 1, mode="clip")
            same &= ~np.repeat(two, left) | (seconds == np.repeat(second, left))
        bad = np.flatnonzero(~same)
        if len(bad):
            first_bad = np.append(bad, len(guesses))[np.searchsorted(bad, segment_start)]
            run = np.minimum(first_bad, segment_end) - segment_start
            kept = np.arange(len(guesses), dtype=np.int64) < np.repeat(segment_start + run, left)
            pieces.append(guesses[kept])
        else:
            run = left
            pieces.append(guesses)
        found[active] += run
        pos[active] = at + run * stride
        active = active[(run >= _SHORT_RUN) & (found[active] < counts[active])]
    rest = np.flatnonzero(found < counts)
    if len(rest):
        data = region.data
        for i in rest.tolist():
            walked = _walk(data, int(pos[i]), int(counts[i] - found[i]))
            if walked is None:
                return None
            pieces.append(walked)
    if len(pieces) == 1:
        return pieces[0]
    # Timsort merges the sorted pieces in about linear time.
    return np.sort(np.concatenate(pieces), kind="stable")


def _walk(data: bytes | bytearray | memoryview, pos: int, count: int) -> Int64s | None:
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
    """Non-zero elements; ``ndarray.any`` costs several times more per call."""
    return int(np.count_nonzero(values))


def _zigzag(raw: Int64s) -> Int64s:
    result: Int64s = (raw >> 1) ^ -(raw & 1)
    return result


def _short_varints(u8: Bytes, pos: Int64s) -> tuple[Int64s, Int64s] | None:
    """:func:`_varints` when every varint is one or two bytes (what producers write for
    lengths, deltas and counts of ordinary records), else ``None``; int32 arithmetic."""
    first = u8.take(pos, mode="clip").astype(np.int32)
    long_first = first >= 0x80
    if not _count(long_first):
        raw = first
        after = pos + 1
    else:
        second = u8.take(pos + 1, mode="clip").astype(np.int32)
        if _count(long_first & (second >= 0x80)):
            return None
        raw = np.where(long_first, (first & 0x7F) | (second << 7), first)
        after = pos + 1 + long_first
    values: Int64s = ((raw >> 1) ^ -(raw & 1)).astype(np.int64)
    return values, after


def _varints(u8: Bytes, pos: Int64s, max_bytes: int) -> tuple[Int64s, Int64s] | None:
    """Zigzag varints starting at ``pos`` (positions may be garbage; reads are clipped):
    values and the positions after them, or ``None`` if one is longer than ``max_bytes``."""
    short = _short_varints(u8, pos)
    if short is not None:
        return short
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


def _may_overflow(bases: list[int], deltas: Int64s) -> bool:
    """Whether some ``bases[i] + deltas[j]`` could leave int64: a bound from the extremes
    (two passes over ``deltas``), so :func:`_overflowed` runs only when one is near."""
    if not len(deltas):
        return False
    return (
        max(bases) + int(deltas.max()) > _INT64_MAX or min(bases) + int(deltas.min()) < _INT64_MIN
    )


def _overflowed(left: Int64s, right: Int64s, total: Int64s) -> bool:
    """Whether any int64 ``left + right`` wrapped around to give ``total``."""
    return bool(_count(((left ^ total) & (right ^ total)) < 0))


def _vector(
    batches: list[BatchRecords], headers_type: pa.DataType | None, views: bool = False
) -> RecordArrays | None:
    counts = [batch.count for batch in batches]
    first = batches[0]
    # Batches of one buffer (uncompressed ones in the log, or payloads decompressed into one
    # buffer) are read in place, whatever lies between them left unread; others are copied
    # together.
    in_place = all(b.payload is first.payload for b in batches) and all(
        a.end <= b.pos for a, b in itertools.pairwise(batches)
    )
    if in_place:
        begins = np.array([b.pos - first.pos for b in batches], dtype=np.int64)
        ends = np.array([b.end - first.pos for b in batches], dtype=np.int64)
    else:
        ends = np.cumsum([b.end - b.pos for b in batches], dtype=np.int64)
        begins = np.concatenate([np.zeros(1, dtype=np.int64), ends[:-1]])
    region_size = int(ends[-1])
    if region_size > _INT32_MAX:
        return None  # Arrow's int32 offsets could not address it
    if in_place:
        region = np.frombuffer(first.payload, dtype=np.uint8)[first.pos : first.pos + region_size]
    else:
        joined = b"".join([memoryview(b.payload)[b.pos : b.end] for b in batches])
        region = np.frombuffer(joined, dtype=np.uint8)
    per_batch = np.array(counts, dtype=np.int64)
    found = _run_starts(region, begins, ends, per_batch)
    if found is None:
        return None
    starts = found
    count = len(starts)
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
    expected_ends[batch_last] = ends
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
    value = _varints(region, key_starts + np.maximum(key_lengths, 0), _INT32_VARINT_BYTES)
    if value is None:
        return None
    value_lengths, value_starts = value
    header_counts = value_starts + np.maximum(value_lengths, 0)
    # Every field advances by at least a byte, so fields that end inside the record (or
    # exactly at its end) all lie inside it.
    # Headers are checked even when not wanted, so the vector path accepts only what the
    # exact path accepts.
    header_lists = None
    if _count(region.take(header_counts, mode="clip")) or _count(header_counts >= record_ends):
        header_lists = _headers(
            region, header_counts, record_ends, headers_type or _CHECK_HEADERS_TYPE
        )
        if header_lists is None:
            return None
        if headers_type is None:
            header_lists = None
    elif _count(header_counts + 1 != record_ends):
        return None

    def each(values: list[int]) -> Int64s:
        return np.repeat(np.array(values, dtype=np.int64), per_batch)

    base_offsets = [b.base_offset for b in batches]
    bases = each(base_offsets)
    offsets = bases + offset_deltas
    if _may_overflow(base_offsets, offset_deltas) and _overflowed(bases, offset_deltas, offsets):
        return None
    base_values = [b.max_timestamp if b.log_append else b.base_timestamp for b in batches]
    base_timestamps = each(base_values)
    if any(b.log_append for b in batches):
        ts_deltas = np.where(each([b.log_append for b in batches]) != 0, 0, ts_deltas)
    timestamps = base_timestamps + ts_deltas
    if _may_overflow(base_values, ts_deltas) and _overflowed(
        base_timestamps, ts_deltas, timestamps
    ):
        return None
    batch_rows = per_batch
    if any(b.low is not None or b.high is not None for b in batches):
        lows = each([_INT64_MIN if b.low is None else b.low for b in batches])
        highs = each([_INT64_MAX if b.high is None else b.high for b in batches])
        keep = (offsets >= lows) & (offsets < highs)
        if _count(keep) != count:
            batch_index = np.repeat(np.arange(len(batches), dtype=np.int64), per_batch)[keep]
            batch_rows = np.bincount(batch_index, minlength=len(batches)).astype(np.int64)
            offsets, timestamps = offsets[keep], timestamps[keep]
            key_lengths, key_starts = key_lengths[keep], key_starts[keep]
            value_lengths, value_starts = value_lengths[keep], value_starts[keep]
            if header_lists is not None:
                header_lists = header_lists.filter(pa.array(keep))
    if headers_type is not None and header_lists is None:
        header_lists = pa.nulls(len(offsets), headers_type)
    return RecordArrays(
        rows=len(offsets),
        batch_rows=batch_rows,
        offsets=offsets,
        timestamps=timestamps,
        keys=(view_array if views else binary_array)(region, key_starts, key_lengths),
        values=(view_array if views else binary_array)(region, value_starts, value_lengths),
        headers=header_lists,
    )


def _headers(
    region: Bytes, count_pos: Int64s, record_ends: Int64s, headers_type: pa.DataType
) -> pa.Array | None:
    """The headers of every record (count varint at ``count_pos``) as a list array of
    ``headers_type``, null for none; ``None`` unless they end exactly at ``record_ends``."""
    decoded = _varints(region, count_pos, _INT32_VARINT_BYTES)
    if decoded is None:
        return None
    header_counts, cursor = decoded
    # Each header takes at least two bytes, which bounds the rounds below by the record size.
    if _count(header_counts < 0) or _count(2 * header_counts > record_ends - cursor):
        return None
    list_offsets = np.zeros(len(count_pos) + 1, dtype=np.int64)
    np.cumsum(header_counts, out=list_offsets[1:])
    entries = int(list_offsets[-1])
    key_starts = np.empty(entries, dtype=np.int64)
    key_lengths = np.empty(entries, dtype=np.int64)
    value_starts = np.empty(entries, dtype=np.int64)
    value_lengths = np.empty(entries, dtype=np.int64)
    having = np.flatnonzero(header_counts > 0)
    round_ = 0
    while len(having):
        at = list_offsets[having] + round_
        key = _varints(region, cursor[having], _INT32_VARINT_BYTES)
        if key is None:
            return None
        lengths, key_at = key
        if _count(lengths < 0):
            return None
        value = _varints(region, key_at + lengths, _INT32_VARINT_BYTES)
        if value is None:
            return None
        value_len, value_at = value
        key_starts[at], key_lengths[at] = key_at, lengths
        value_starts[at], value_lengths[at] = value_at, value_len
        cursor[having] = value_at + np.maximum(value_len, 0)
        round_ += 1
        having = having[header_counts[having] > round_]
    if _count(cursor != record_ends):
        return None
    struct_type = headers_type.value_type
    keys = binary_array(region, key_starts, key_lengths, struct_type.field("key").type)
    keys.validate(full=True)  # UTF-8; ArrowInvalid sends the run to the exact path
    values = binary_array(region, value_starts, value_lengths, struct_type.field("value").type)
    structs = pa.StructArray.from_arrays([keys, values], fields=list(struct_type))
    return pa.ListArray.from_arrays(
        pa.array(list_offsets.astype(np.int32)),
        structs,
        type=headers_type,
        mask=pa.array(header_counts == 0),
    )
