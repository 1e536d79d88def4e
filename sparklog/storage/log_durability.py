"""Durability of a partition log: when and how appended offsets are fsynced.

Contract and invariants (for :class:`~sparklog.storage.log.Log`, which mixes this in):
- Everything below ``recovery_point`` has been fsynced and it never passes the LEO. Over
  appended data only a completed flush advances it; moving the log start offset (retention,
  DeleteRecords, truncating fully) raises it only past offsets no longer held locally.
- A flush is two halves plus the fsyncs between them: :meth:`LogDurability.begin_flush` picks the
  segments holding ``[recovery_point, target)`` and returns a :class:`FlushPlan`;
  :meth:`FlushPlan.run` fsyncs them and the directory; :meth:`LogDurability.complete_flush`
  advances the recovery point to the plan's target. The halves run on the thread that owns the
  log; only ``run`` may run elsewhere, concurrently with appends, and plans may complete out of
  order (the recovery point takes the maximum).
- flush.messages (:attr:`LogDurability.needs_flush`) and flush.ms
  (:meth:`LogDurability.flush_if_due`) decide when a flush is due; the log does not fsync on
  any other schedule.
- Sans-IO apart from plain file fsyncs; time comes from the log's injected clock.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparklog.storage.checkpoint import fsync_dir
from sparklog.storage.config import LogConfig
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


class LogDurability:
    """Mixin for :class:`~sparklog.storage.log.Log`: flush planning and the recovery point."""

    # State owned and initialised by Log.__init__.
    directory: str
    config: LogConfig
    _clock: Callable[[], int]
    _segments: list[LogSegment]
    _bases: list[int]
    _recovery_point: int
    _last_flush_ms: int

    if TYPE_CHECKING:
        # Implemented by Log; declared so the mixin type-checks on its own.
        @property
        def log_end_offset(self) -> int: ...

        @property
        def active_segment(self) -> LogSegment: ...

    @property
    def last_flush_ms(self) -> int:
        return self._last_flush_ms

    @property
    def needs_flush(self) -> bool:
        """flush.messages: at least that many messages are not yet fsynced."""
        return self.log_end_offset - self._recovery_point >= self.config.flush_messages

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
        target = (
            self.log_end_offset if up_to_offset is None else min(up_to_offset, self.log_end_offset)
        )
        self._last_flush_ms = self._clock()
        if target <= self._recovery_point:
            return None
        first = max(bisect.bisect_right(self._bases, self._recovery_point) - 1, 0)
        segments = []
        for segment in self._segments[first:]:
            if segment.base_offset >= target and segment is not self.active_segment:
                break
            segments.append(segment)
        return FlushPlan(self.directory, target, tuple(segments))

    def complete_flush(self, plan: FlushPlan) -> None:
        """Advance the recovery point once ``plan`` has run (plans may finish out of order)."""
        self._recovery_point = max(self._recovery_point, min(plan.target, self.log_end_offset))

    def flush_if_due(self, now_ms: int) -> bool:
        """Honour flush.ms: flush if unflushed data is older than it. True if flushed."""
        if self.log_end_offset <= self._recovery_point:
            return False
        if now_ms - self._last_flush_ms < self.config.flush_ms:
            return False
        self.flush()
        return True
