"""Retention and deletion for a partition log: which whole segments go, and when their files do.

:class:`Retention`, a component of :class:`~sparklog.storage.log.Log`, is given the log's
:class:`~sparklog.storage.log_state.LogState`, its leader-epoch cache and producer state, and the
log's ``roll`` (deleting every segment first rolls a new empty one); it owns the files waiting
for ``file.delete.delay.ms``. Contract and invariants:
- Only whole segments are deleted, oldest first, and only those entirely below the high
  watermark; deletion never creates a gap below the log end offset. The active segment
  qualifies too (unless empty), in which case a new empty segment is rolled first.
- Retention (Kafka 4.x): segments wholly below the log start offset always go; with
  ``cleanup.policy`` including delete, so do those past retention.ms (by largest timestamp)
  and, oldest first, those whose removal keeps the log at or above retention.bytes.
- Tiered logs (``remote_storage``): local.retention.ms / local.retention.bytes apply instead
  (-2 means the whole-log value) and only to segments already copied to remote storage, i.e.
  whose last offset is <= ``highest_remote_offset``; the whole-log limits are the remote log
  manager's to apply. Deleting local segments then leaves the log start offset where it is,
  since the offsets below the local log start are still served from remote storage.
- Without tiering, deleting the first segments raises the log start offset (and with it the
  high watermark, recovery point and leader-epoch cache start) to the new first base offset.
- The log start offset only moves up: :meth:`Retention.increment_log_start_offset` (never
  past the LEO) and :meth:`Retention.delete_records` (never past the high watermark).
- Deleted segments are renamed ``*.deleted`` at once and their files removed only after
  ``file.delete.delay.ms`` by :meth:`Retention.delete_expired_files`, so slices handed out
  earlier stay readable meanwhile. Producer-state snapshots below the first remaining
  segment go the same way.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable

from sparklog.storage.epoch_cache import LeaderEpochCache
from sparklog.storage.errors import OffsetOutOfRangeError
from sparklog.storage.log_state import LogState
from sparklog.storage.producer_state import ProducerStateManager
from sparklog.storage.segment import LogSegment

# The logger Log itself uses, so existing logging configuration still covers these messages.
_log = logging.getLogger("sparklog.storage.log")

SegmentPredicate = Callable[[LogSegment, LogSegment | None], bool]


class Retention:
    """Log start offset, retention and deletion of one partition log."""

    def __init__(
        self,
        state: LogState,
        epoch_cache: LeaderEpochCache,
        producer_state: ProducerStateManager,
        roll: Callable[[], LogSegment],
    ) -> None:
        self._state = state
        self._epoch_cache = epoch_cache
        self._producer_state = producer_state
        self._roll = roll
        self._pending_deletes: list[tuple[int, list[str]]] = []

    def increment_log_start_offset(self, offset: int) -> bool:
        """Move the log start offset up to ``offset`` and delete segments wholly below it."""
        state = self._state
        if offset <= state.log_start_offset:
            return False
        if offset > state.log_end_offset:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {offset} of partition "
                f"{state.name} since it is larger than the log end offset "
                f"{state.log_end_offset}"
            )
        state.log_start_offset = offset
        state.high_watermark = max(state.high_watermark, offset)
        state.recovery_point = max(state.recovery_point, min(offset, state.log_end_offset))
        self._epoch_cache.truncate_from_start(offset)
        self._delete_old_segments(lambda seg, nxt: nxt is not None and nxt.base_offset <= offset)
        return True

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: raise the low watermark to ``offset`` (-1 = the high watermark).

        Offsets above the high watermark raise :class:`OffsetOutOfRangeError`. Returns the
        new low watermark (the log start offset).
        """
        state = self._state
        target = state.high_watermark if offset == -1 else offset
        if target < 0 or target > state.high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {offset} of partition "
                f"{state.name} since it is larger than the high watermark "
                f"{state.high_watermark}"
            )
        self.increment_log_start_offset(target)
        return state.log_start_offset

    def delete_retention_breached(self, now_ms: int) -> int:
        """Delete whole segments past retention.ms / retention.bytes or below the log start
        offset; returns how many were deleted.

        A tiered log applies local.retention.ms / local.retention.bytes instead (-2 means the
        whole-log value, as in Kafka), and only to segments already copied to remote storage;
        the whole-log limits are then the remote log manager's to apply.
        """
        state = self._state
        deleted = self._delete_old_segments(
            lambda seg, nxt: nxt is not None and nxt.base_offset <= state.log_start_offset
        )
        if not state.config.delete_enabled:
            return deleted
        if state.remote_storage:
            return deleted + self._delete_copied_segments(now_ms)
        retention_ms = state.config.retention_ms
        if retention_ms >= 0:
            deleted += self._delete_old_segments(
                lambda seg, nxt: now_ms - seg.largest_timestamp > retention_ms
            )
        retention_bytes = state.config.retention_bytes
        if retention_bytes >= 0:
            excess = state.size_in_bytes - retention_bytes

            def over_size(seg: LogSegment, nxt: LogSegment | None) -> bool:
                nonlocal excess
                if excess - seg.size >= 0:
                    excess -= seg.size
                    return True
                return False

            deleted += self._delete_old_segments(over_size)
        return deleted

    def _delete_copied_segments(self, now_ms: int) -> int:
        state = self._state
        config = state.config
        local_ms = (
            config.retention_ms if config.local_retention_ms == -2 else (config.local_retention_ms)
        )
        local_bytes = (
            config.retention_bytes
            if config.local_retention_bytes == -2
            else config.local_retention_bytes
        )
        excess = state.size_in_bytes - local_bytes if local_bytes >= 0 else -1

        def copied_and_expired(seg: LogSegment, nxt: LogSegment | None) -> bool:
            nonlocal excess
            if nxt is None or nxt.base_offset - 1 > state.highest_remote_offset:
                return False
            if local_ms >= 0 and now_ms - seg.largest_timestamp > local_ms:
                excess -= seg.size
                return True
            if excess >= seg.size:
                excess -= seg.size
                return True
            return False

        return self._delete_old_segments(copied_and_expired)

    def _delete_old_segments(self, predicate: SegmentPredicate) -> int:
        state = self._state
        segments = state.segments
        doomed: list[LogSegment] = []
        for i, segment in enumerate(segments):
            following = segments[i + 1] if i + 1 < len(segments) else None
            upper = following.base_offset if following is not None else state.log_end_offset
            last_and_empty = following is None and segment.size == 0
            if state.high_watermark < upper or last_and_empty or not predicate(segment, following):
                break
            doomed.append(segment)
        if not doomed:
            return 0
        if len(doomed) == len(state.segments):
            self._roll()
        for segment in doomed:
            self.schedule_delete(segment)
        del state.segments[: len(doomed)]
        del state.bases[: len(doomed)]
        first_base = state.segments[0].base_offset
        # Producer snapshots go with their segments; the one at the first base stays.
        snapshots = self._producer_state.mark_snapshots_deleted_below(first_base)
        if snapshots:
            due = state.clock() + state.config.file_delete_delay_ms
            self._pending_deletes.append((due, snapshots))
        if first_base > state.log_start_offset and not state.remote_storage:
            state.log_start_offset = first_base
            state.high_watermark = max(state.high_watermark, first_base)
            state.recovery_point = max(state.recovery_point, first_base)
            self._epoch_cache.truncate_from_start(first_base)
        return len(doomed)

    def replace_segment(self, old: LogSegment, install: Callable[[], LogSegment]) -> LogSegment:
        """Swap in a cleaned copy of the closed segment ``old`` (log compaction).

        ``old``'s files are renamed ``*.deleted`` first (removed after file.delete.delay.ms),
        then ``install()`` moves the replacement's ``*.swap`` files to the final names and
        opens it; offsets are unchanged, so only the segment object is replaced.
        """
        segments = self._state.segments
        position = segments.index(old)
        if position == len(segments) - 1:
            raise ValueError("the active segment is never replaced")
        self.schedule_delete(old)
        segment = install()
        segments[position] = segment
        return segment

    def schedule_delete(self, segment: LogSegment) -> None:
        """Rename ``segment``'s files ``*.deleted``; they go after file.delete.delay.ms."""
        _log.info("Scheduling deletion of segment %s", segment.path)
        due = self._state.clock() + self._state.config.file_delete_delay_ms
        self._pending_deletes.append((due, segment.mark_deleted()))

    def remove_expired_producers(self, now_ms: int) -> int:
        """producer.id.expiration.ms: forget producers idle that long (no open transaction)."""
        return self._producer_state.remove_expired(now_ms)

    def delete_expired_files(self, now_ms: int) -> None:
        """Remove ``*.deleted`` files whose ``file.delete.delay.ms`` has passed."""
        keep = []
        for due, paths in self._pending_deletes:
            if due > now_ms:
                keep.append((due, paths))
                continue
            for path in paths:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)
        self._pending_deletes = keep
