"""The replicated log as KRaft sees it: whole v2 record batches, epochs, truncation, flushes.

:class:`ReplicatedLog` is the seam between the consensus core and storage (Kafka's
``ReplicatedLog``). Two implementations:

- :class:`StorageReplicatedLog` adapts :class:`sparklog.storage.log.Log` (segments on disk).
- ``tests/sim/memory_log.py``'s ``MemoryLog`` keeps batches in a list for the simulator and
  the unit tests (a test double, so it lives with the tests).

Invariants every implementation keeps:

- Offsets are contiguous: batch ``n+1`` starts at batch ``n``'s next offset; the epochs of
  successive batches never decrease.
- ``flushed_offset <= log_end_offset``; everything below ``flushed_offset`` survives a crash.
  Only :meth:`flush` raises it; :meth:`truncate_to` may lower it (the truncated tail is gone).
- ``end_offset_for_epoch(e)`` answers OffsetForLeaderEpoch: ``(largest epoch <= e, the offset
  where the next epoch starts, or the LEO for the last epoch)``; ``(0, log_start_offset)`` when
  no batch has an epoch <= e.
- Snapshots (KIP-630) move the log start: :meth:`delete_before` drops whole batches below a
  snapshot's end offset; :meth:`reset_to` empties the log to restart at a snapshot the replica
  downloaded. The epoch of the last dropped record is kept as the *start epoch*: an empty log
  reports it as ``last_epoch`` and ``end_offset_for_epoch(e >= start epoch)`` answers
  ``(start epoch, log_start_offset)`` when no batch has an epoch <= e (Kafka's
  ``KafkaMetadataLog.lastFetchedEpoch``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sparklog.protocol.records import BatchHeader, iter_batches
from sparklog.storage.log import Log


@dataclass(frozen=True, slots=True)
class BatchInfo:
    base_offset: int
    last_offset: int
    epoch: int


class ReplicatedLog(Protocol):
    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def flushed_offset(self) -> int:
        """The offset below which every batch is durable."""
        ...

    @property
    def last_epoch(self) -> int:
        """The epoch of the last batch, 0 for an empty log."""
        ...

    def append_as_leader(self, batch: bytes, epoch: int) -> BatchInfo:
        """Append one batch stamped with ``epoch`` at the log end offset."""
        ...

    def append_as_follower(self, data: bytes) -> list[BatchInfo]:
        """Append batches whose offsets the leader assigned; they must start at the LEO."""
        ...

    def read(self, start_offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``start_offset``, at least one if any."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]: ...

    def truncate_to(self, offset: int) -> None: ...

    def flush(self) -> None: ...

    def delete_before(self, offset: int, epoch: int) -> None:
        """Raise the log start to ``offset`` (<= LEO), whose preceding record has ``epoch``."""
        ...

    def reset_to(self, offset: int, epoch: int) -> None:
        """Drop everything; the log restarts, empty and flushed, at ``offset``."""
        ...


def batch_infos(data: bytes) -> list[BatchInfo]:
    return [batch_info(h) for _, h in iter_batches(data)]


def batch_info(header: BatchHeader) -> BatchInfo:
    return BatchInfo(header.base_offset, header.last_offset, header.partition_leader_epoch)


class StorageReplicatedLog:
    """:class:`ReplicatedLog` over a :class:`sparklog.storage.log.Log` on disk."""

    def __init__(self, log: Log) -> None:
        self._log = log
        self._start_epoch = 0

    @property
    def log(self) -> Log:
        return self._log

    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def flushed_offset(self) -> int:
        return self._log.recovery_point

    @property
    def last_epoch(self) -> int:
        latest = self._log.latest_epoch
        return latest if latest >= 0 else self._start_epoch

    def append_as_leader(self, batch: bytes, epoch: int) -> BatchInfo:
        result = self._log.append_as_leader(batch, epoch)
        return BatchInfo(result.first_offset, result.last_offset, epoch)

    def append_as_follower(self, data: bytes) -> list[BatchInfo]:
        infos = batch_infos(data)
        if infos:
            self._log.append_as_follower(data)
        return infos

    def read(self, start_offset: int, max_bytes: int) -> bytes:
        if start_offset >= self._log.log_end_offset:
            return b""
        return self._log.read(start_offset, max_bytes, None, True).read_bytes()

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        found_epoch, end = self._log.end_offset_for_epoch(epoch)
        if found_epoch < 0:
            start = self._log.log_start_offset
            return (self._start_epoch if start > 0 and epoch >= self._start_epoch else 0), start
        return found_epoch, end

    def truncate_to(self, offset: int) -> None:
        self._log.truncate_to(offset)

    def flush(self) -> None:
        self._log.flush()

    def delete_before(self, offset: int, epoch: int) -> None:
        # At the current start too: after a restart the start epoch is known only from the
        # snapshot there, which the core installs again.
        if offset >= self._log.log_start_offset:
            self._log.increment_log_start_offset(offset)
            self._start_epoch = epoch

    def reset_to(self, offset: int, epoch: int) -> None:
        self._log.truncate_fully_and_start_at(offset)
        self._start_epoch = epoch
