"""Reads of one partition log: fetches by offset and ListOffsets by timestamp.

Contract:
- :meth:`LogReader.read` returns batch-aligned :class:`FileSlice` objects from a single
  segment, never copies, starting at the batch that holds ``start_offset`` (which may begin
  before it); an offset below the log start or above the log end is OFFSET_OUT_OF_RANGE, one
  below the local log start (tiered storage) is
  :class:`~sparklog.storage.errors.OffsetMovedToTieredStorageError`.
- Reads never change the log: the reader holds only the shared
  :class:`~sparklog.storage.log_state.LogState`.
"""

from __future__ import annotations

import bisect

from sparklog.storage.errors import OffsetMovedToTieredStorageError, OffsetOutOfRangeError
from sparklog.storage.log_state import LogState
from sparklog.storage.segment import LogSegment
from sparklog.storage.slices import FileSlice, LogReadResult, TimestampAndOffset

__all__ = ["LogReader"]


class LogReader:
    """The read side of a :class:`~sparklog.storage.log.Log`."""

    def __init__(self, state: LogState) -> None:
        self._state = state

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> LogReadResult:
        """Batch-aligned slices from the batch holding ``start_offset`` (which may begin
        before it), stopping before any batch reaching ``max_offset`` and within
        ``max_bytes`` (but at least one batch if ``min_one_batch``)."""
        leo = self._state.log_end_offset
        if start_offset < self._state.log_start_offset or start_offset > leo:
            raise OffsetOutOfRangeError(
                f"Received request for offset {start_offset} for partition "
                f"{self._state.name}, but we only have log segments from offset "
                f"{self._state.log_start_offset} up to {leo}."
            )
        if start_offset < self._state.local_log_start_offset:
            raise OffsetMovedToTieredStorageError(
                f"Offset {start_offset} of {self._state.name} is in remote storage "
                f"(local log starts at {self._state.local_log_start_offset})"
            )

        def result(slices: tuple[FileSlice, ...] = (), first: int = -1) -> LogReadResult:
            state = self._state
            return LogReadResult(slices, first, state.log_start_offset, leo, state.high_watermark)

        if start_offset == leo or (max_offset is not None and start_offset >= max_offset):
            return result()
        index = max(bisect.bisect_right(self._state.bases, start_offset) - 1, 0)
        for segment in self._state.segments[index:]:
            found = segment.read(start_offset, max_bytes, max_offset, min_one_batch)
            if found is None:
                continue
            file_slice, first = found
            if file_slice.length == 0:
                return result()
            return result((file_slice,), first)
        return result()

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets by time: the first record at or above log start with a timestamp >=
        ``timestamp``, or ``None`` if there is none. Special negative targets (-1 latest,
        -2 earliest, -3 max timestamp) are the caller's; see :meth:`max_timestamp_offset`."""
        if timestamp < 0:
            raise ValueError(f"timestamp must be >= 0, got {timestamp}")
        for segment in self._state.segments:
            if segment.next_offset <= self._state.log_start_offset or segment.size == 0:
                continue
            if segment.max_timestamp < timestamp:
                continue
            found = segment.find_offset_by_timestamp(timestamp, self._state.log_start_offset)
            if found is not None:
                return found
        return None

    def max_timestamp_offset(self) -> TimestampAndOffset | None:
        """ListOffsets MAX_TIMESTAMP (-3): the first record with the largest timestamp."""
        best: LogSegment | None = None
        for segment in self._state.segments:
            if segment.size and (best is None or segment.max_timestamp > best.max_timestamp):
                best = segment
        if best is None or best.max_timestamp < 0:
            return None
        return best.max_timestamp_record()
