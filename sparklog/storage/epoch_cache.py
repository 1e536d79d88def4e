"""Leader-epoch cache: which leader epoch started at which offset (KIP-101/279).

Contract and invariants (Kafka's ``LeaderEpochFileCache``):
- Entries ``(epoch, start_offset)`` are strictly increasing in both fields.
- :meth:`assign` adds an entry for a new epoch; entries it contradicts (an epoch >= the new one
  or a start offset >= the new one) are removed first, so the invariant always holds.
- :meth:`assign` never lets an older epoch rewrite newer history: an epoch below the latest is
  ignored with a warning (a stale leadership replayed from old metadata must not drop the
  entries of the leaders that came after it). Only truncation (:meth:`truncate_from_end`,
  :meth:`clear`) removes newer entries.
- :meth:`end_offset_for_epoch` answers OffsetForLeaderEpoch: the end offset of the largest
  epoch <= the requested one (the start of the next epoch, or the log end offset for the
  latest epoch); ``(-1, -1)`` when the epoch is unknown.
- Every change is persisted at once to ``leader-epoch-checkpoint`` (atomic rename), because
  followers truncate by it after a crash.
"""

from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Callable, Sequence

from sparklog.storage.checkpoint import (
    CheckpointError,
    read_epoch_checkpoint,
    write_epoch_checkpoint,
)

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

_log = logging.getLogger(__name__)


def end_offset_for_epoch(
    epochs: Sequence[int],
    starts: Sequence[int],
    requested_epoch: int,
    log_end_offset: Callable[[], int],
) -> tuple[int, int]:
    """OffsetForLeaderEpoch over the parallel entry lists ``epochs`` / ``starts`` (strictly
    increasing): ``(epoch, end_offset)`` of the largest known epoch <= ``requested_epoch``, its
    end being the next entry's start, or ``log_end_offset()`` (called only then) for the latest
    epoch; ``(-1, -1)`` when the epoch is undefined, above the latest or nothing is known.
    Pure: the storage cache and the simulator's in-memory cache both answer with it."""
    if requested_epoch == UNDEFINED_EPOCH or not epochs:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if requested_epoch == epochs[-1]:
        return requested_epoch, log_end_offset()
    higher = bisect.bisect_right(epochs, requested_epoch)
    if higher == len(epochs):
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if higher == 0:
        # Older than anything we know: the answer is where our history begins.
        return requested_epoch, starts[0]
    return epochs[higher - 1], starts[higher]


class LeaderEpochCache:
    """The epoch -> start offset map of one partition, persisted in ``directory``."""

    def __init__(self, directory: str, log_end_offset: Callable[[], int]) -> None:
        self._path = os.path.join(directory, LEADER_EPOCH_CHECKPOINT)
        self._log_end_offset = log_end_offset
        self._epochs: list[int] = []
        self._starts: list[int] = []
        try:
            entries = read_epoch_checkpoint(self._path)
        except FileNotFoundError:
            entries = []
        except (CheckpointError, OSError) as exc:
            # Rebuilt from the batches during recovery; a bad file must not stop the log.
            _log.warning("Ignoring unreadable %s: %s", self._path, exc)
            entries = []
        for epoch, start in entries:
            self._assign(epoch, start)

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    def start_offset_of(self, epoch: int) -> int | None:
        i = bisect.bisect_left(self._epochs, epoch)
        if i < len(self._epochs) and self._epochs[i] == epoch:
            return self._starts[i]
        return None

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch that covers ``offset`` (the last entry starting at or before it)."""
        i = bisect.bisect_right(self._starts, offset) - 1
        return self._epochs[i] if i >= 0 else UNDEFINED_EPOCH

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid epoch entry ({epoch}, {start_offset})")
        if self._epochs and self._epochs[-1] == epoch and start_offset >= self._starts[-1]:
            return False
        if self._epochs and epoch < self._epochs[-1]:
            _log.warning(
                "Ignoring leader epoch %d at offset %d for %s: older than the latest epoch %d "
                "(starting at %d)",
                epoch,
                start_offset,
                self._path,
                self._epochs[-1],
                self._starts[-1],
            )
            return False
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start_offset):
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        return True

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (no-op if already known)."""
        if self._assign(epoch, start_offset):
            self.flush()

    def assign_many(self, entries: list[tuple[int, int]]) -> None:
        """Assign several entries and persist once (used by recovery)."""
        changed = False
        for epoch, start in entries:
            changed = self._assign(epoch, start) or changed
        if changed:
            self.flush()

    def recover(
        self, epoch_starts: list[tuple[int, int]], log_start_offset: int, log_end_offset: int
    ) -> None:
        """After the log's recovery: assign the epochs its recovered batches start (only those
        above the cached latest, as Kafka does while recovering), then keep the entries within
        ``[log_start_offset, log_end_offset)``."""
        latest = self.latest_epoch
        new_epochs = []
        for epoch, offset in epoch_starts:
            if epoch >= 0 and epoch > latest:
                new_epochs.append((epoch, offset))
                latest = epoch
        self.assign_many(new_epochs)
        self.truncate_from_end(log_end_offset)
        self.truncate_from_start(log_start_offset)

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: ``(epoch, end_offset)`` or ``(-1, -1)`` if unknown."""
        return end_offset_for_epoch(
            self._epochs, self._starts, requested_epoch, self._log_end_offset
        )

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after ``end_offset`` (the log was truncated there)."""
        if not self._starts or self._starts[-1] < end_offset:
            return
        keep = bisect.bisect_left(self._starts, end_offset)
        del self._epochs[keep:]
        del self._starts[keep:]
        self.flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget history below ``start_offset``; the covering entry moves up to it."""
        covering = bisect.bisect_right(self._starts, start_offset) - 1
        if covering < 0 or (covering == 0 and self._starts[0] == start_offset):
            return
        del self._epochs[:covering]
        del self._starts[:covering]
        self._starts[0] = start_offset
        self.flush()

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()
        self.flush()

    def flush(self) -> None:
        write_epoch_checkpoint(self._path, self.entries)
