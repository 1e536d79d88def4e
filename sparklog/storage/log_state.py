"""The state one partition log's components share: its segments and the offsets over them.

:class:`~sparklog.storage.log.Log` is composed of collaborators
(:class:`~sparklog.storage.log_durability.Durability`,
:class:`~sparklog.storage.log_retention.Retention`,
:class:`~sparklog.storage.log_txn.Transactions`); each is handed this :class:`LogState` (and,
where it needs them, the epoch cache, the producer state and a ``roll`` or ``append`` callable
of the log) and nothing else. Invariants every writer keeps:

- ``segments`` is sorted by base offset, never empty, and only its last (active) segment is
  written; ``bases`` holds the segments' base offsets, in the same order.
- ``log_start_offset <= high_watermark <= log_end_offset`` and
  ``recovery_point <= log_end_offset``; the log start offset only moves up (or restarts with a
  full truncation).
- Tiered storage: ``remote_storage`` is set once remote storage holds part of the log, and
  ``highest_remote_offset`` (the last offset copied) only grows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sparklog.storage.config import LogConfig
from sparklog.storage.segment import LogSegment


@dataclass(eq=False, slots=True)
class LogState:
    """The segments and offsets of one partition log, shared by its components."""

    directory: str
    topic: str
    partition: int
    config: LogConfig
    clock: Callable[[], int]
    segments: list[LogSegment]
    bases: list[int]
    log_start_offset: int
    recovery_point: int
    high_watermark: int
    # Tiered storage (set by the broker's remote log manager through Log.attach_remote).
    remote_storage: bool = False
    highest_remote_offset: int = -1

    @property
    def name(self) -> str:
        """``topic-partition``, for messages."""
        return f"{self.topic}-{self.partition}"

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def local_log_start_offset(self) -> int:
        """The first offset held in local segments (the log start offset without tiering)."""
        return max(self.log_start_offset, self.segments[0].base_offset)
