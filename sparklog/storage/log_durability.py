"""Durability of a partition log: when and how appended offsets are fsynced.

:class:`Durability`, a component of :class:`~sparklog.storage.log.Log`, is given the log's
:class:`~sparklog.storage.log_state.LogState`; it owns the time of the last flush and is the one
writer that advances the recovery point over appended data. Contract and invariants:
- Everything below ``recovery_point`` has been fsynced and it never passes the LEO. Over
  appended data only a completed flush advances it; moving the log start offset (retention,
  DeleteRecords, truncating fully) raises it only past offsets no longer held locally.
- A flush is two halves plus the fsyncs between them: :meth:`Durability.begin_flush` picks the
  segments holding ``[recovery_point, target)`` and returns a :class:`FlushPlan`;
  :meth:`FlushPlan.run` fsyncs them and the directory; :meth:`Durability.complete_flush`
  advances the recovery point to the plan's target. The halves run on the thread that owns the
  log; only ``run`` may run elsewhere, concurrently with appends, and plans may complete out of
  order (the recovery point takes the maximum).
- flush.messages (:attr:`Durability.needs_flush`) and flush.ms
  (:meth:`Durability.flush_if_due`) decide when a flush is due; the log does not fsync on
  any other schedule.
- Sans-IO apart from plain file fsyncs; time comes from the log's injected clock.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from sparklog.storage.checkpoint import fsync_dir
from sparklog.storage.log_state import LogState
from sparklog.storage.segment import LogSegment


@dataclass(frozen=True, slots=True)
class FlushPlan:
    """The fsyncs that make offsets below ``target`` durable; :meth:`run` blocks."""

    directory: str
    target: int
    segments: tuple[LogSegment, ...]

    def run(self) -> None:
        for segment in self.segments:
            segment.flush()
        fsync_dir(self.directory)


class Durability:
    """Flush planning and the recovery point of one partition log."""

    def __init__(self, state: LogState) -> None:
        self._state = state
        self.last_flush_ms = state.clock()

    @property
    def needs_flush(self) -> bool:
        """flush.messages: at least that many messages are not yet fsynced."""
        state = self._state
        return state.log_end_offset - state.recovery_point >= state.config.flush_messages

    def flush(self, up_to_offset: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery_point, up_to_offset) (default:
        the LEO), then advance the recovery point to ``up_to_offset``."""
        plan = self.begin_flush(up_to_offset)
        if plan is not None:
            plan.run()
            self.complete_flush(plan)

    def begin_flush(self, up_to_offset: int | None = None) -> FlushPlan | None:
        """The first half of :meth:`flush`, for callers that fsync on another thread.

        Call this and :meth:`complete_flush` on the thread that owns the log; only
        :meth:`FlushPlan.run` (the fsyncs) may run elsewhere, concurrently with appends.
        """
        state = self._state
        leo = state.log_end_offset
        target = leo if up_to_offset is None else min(up_to_offset, leo)
        self.last_flush_ms = state.clock()
        if target <= state.recovery_point:
            return None
        first = max(bisect.bisect_right(state.bases, state.recovery_point) - 1, 0)
        segments = []
        for segment in state.segments[first:]:
            if segment.base_offset >= target and segment is not state.active_segment:
                break
            segments.append(segment)
        return FlushPlan(state.directory, target, tuple(segments))

    def complete_flush(self, plan: FlushPlan) -> None:
        """Advance the recovery point once ``plan`` has run (plans may finish out of order)."""
        state = self._state
        state.recovery_point = max(state.recovery_point, min(plan.target, state.log_end_offset))

    def flush_if_due(self, now_ms: int) -> bool:
        """Honour flush.ms: flush if unflushed data is older than it. True if flushed."""
        state = self._state
        if state.log_end_offset <= state.recovery_point:
            return False
        if now_ms - self.last_flush_ms < state.config.flush_ms:
            return False
        self.flush()
        return True
