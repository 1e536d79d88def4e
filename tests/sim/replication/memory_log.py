"""An in-memory partition log for replication tests and the deterministic simulator (a test
double: it lives under tests/, not in the package).

It satisfies :class:`~sparklog.replication.log.ReplicaLog` with the same semantics as the
storage engine's ``Log`` for everything the cores use, and adds what a test driver needs on the
leader side: :meth:`InMemoryLog.append_as_leader` (assign offsets and the epoch in place) and
:meth:`InMemoryLog.read` (whole batches from an offset up to a bound). Batches are real v2
record batches kept as bytes; only their headers are parsed.

Invariants: batches are contiguous from ``log_start_offset``-covering base to the LEO; the epoch
cache entries are strictly increasing in epoch and start offset; ``log_start_offset <=
high_watermark <= log_end_offset``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

from sparklog.protocol.records import (
    BatchHeader,
    CorruptRecordError,
    assign_offsets,
    iter_batches,
)
from sparklog.replication.log import Records
from sparklog.storage.epoch_cache import end_offset_for_epoch

UNDEFINED = -1


class InMemoryEpochCache:
    """Leader epoch -> start offset, with Kafka's ``LeaderEpochFileCache`` rules."""

    def __init__(self, log_end_offset: Callable[[], int]) -> None:
        self._end = log_end_offset
        self.epochs: list[int] = []
        self.starts: list[int] = []

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self.epochs, self.starts, strict=True))

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1] if self.epochs else UNDEFINED

    def assign(self, epoch: int, start_offset: int) -> None:
        if self.epochs and self.epochs[-1] == epoch and start_offset >= self.starts[-1]:
            return
        if self.epochs and epoch < self.epochs[-1]:
            return  # an older epoch never rewrites newer history (only truncation does)
        while self.epochs and (self.epochs[-1] >= epoch or self.starts[-1] >= start_offset):
            self.epochs.pop()
            self.starts.pop()
        self.epochs.append(epoch)
        self.starts.append(start_offset)

    def start_offset_of(self, epoch: int) -> int | None:
        i = bisect.bisect_left(self.epochs, epoch)
        if i < len(self.epochs) and self.epochs[i] == epoch:
            return self.starts[i]
        return None

    def end_offset_for_epoch(self, requested: int) -> tuple[int, int]:
        return end_offset_for_epoch(self.epochs, self.starts, requested, self._end)

    def truncate_from_end(self, end_offset: int) -> None:
        keep = bisect.bisect_left(self.starts, end_offset)
        del self.epochs[keep:]
        del self.starts[keep:]

    def truncate_from_start(self, start_offset: int) -> None:
        covering = bisect.bisect_right(self.starts, start_offset) - 1
        if covering < 0:
            return
        del self.epochs[:covering]
        del self.starts[:covering]
        self.starts[0] = start_offset

    def clear(self) -> None:
        self.epochs.clear()
        self.starts.clear()


@dataclass(frozen=True, slots=True)
class StoredBatch:
    header: BatchHeader
    data: bytes


class InMemoryLog:
    def __init__(self, start_offset: int = 0) -> None:
        self.batches: list[StoredBatch] = []
        self._bases: list[int] = []
        self._log_start_offset = start_offset
        self._next_offset = start_offset
        self._high_watermark = start_offset
        self._epoch_cache = InMemoryEpochCache(lambda: self._next_offset)

    # -- ReplicaLog ------------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._next_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        self._high_watermark = min(max(offset, self._log_start_offset), self._next_offset)

    @property
    def latest_epoch(self) -> int:
        return self._epoch_cache.latest_epoch

    @property
    def epoch_cache(self) -> InMemoryEpochCache:
        return self._epoch_cache

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self._epoch_cache.end_offset_for_epoch(epoch)

    def append_as_follower(self, records: Records, now_ms: int | None = None) -> object:
        buf = bytes(records)
        found = list(iter_batches(buf))
        expected = self._next_offset
        for _, header in found:
            if header.base_offset != expected:
                raise CorruptRecordError(
                    f"batch at {header.base_offset} does not start at the LEO {expected}"
                )
            expected = header.next_offset
        for pos, header in found:
            self._store(header, buf[pos : pos + header.size_in_bytes])
        return len(found)

    def truncate_to(self, offset: int) -> bool:
        if offset >= self._next_offset:
            return False
        if offset < self._log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        # Whole batches only: a batch holding ``offset`` goes entirely, as in a segment file.
        keep = bisect.bisect_left(self._bases, offset)
        del self.batches[keep:]
        del self._bases[keep:]
        self._next_offset = self.batches[-1].header.next_offset if self.batches else offset
        self._next_offset = max(self._next_offset, self._log_start_offset)
        self._high_watermark = min(self._high_watermark, self._next_offset)
        self._epoch_cache.truncate_from_end(self._next_offset)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.batches.clear()
        self._bases.clear()
        self._log_start_offset = self._next_offset = self._high_watermark = offset
        self._epoch_cache.clear()

    def increment_log_start_offset(self, offset: int) -> bool:
        if offset <= self._log_start_offset:
            return False
        if offset > self._next_offset:
            raise ValueError(f"log start {offset} beyond the LEO {self._next_offset}")
        self._log_start_offset = offset
        self._high_watermark = max(self._high_watermark, offset)
        while self.batches and self.batches[0].header.next_offset <= offset:
            self.batches.pop(0)
            self._bases.pop(0)
        self._epoch_cache.truncate_from_start(offset)
        return True

    # -- leader side, for drivers ----------------------------------------------------------------
    def append_as_leader(self, records: Records, leader_epoch: int) -> tuple[int, int]:
        """Assign offsets from the LEO and ``leader_epoch`` in place; ``(first, last)``."""
        buf = bytearray(records)
        found = list(iter_batches(buf))
        if not found:
            raise CorruptRecordError("no batch to append")
        first = self._next_offset
        next_offset = first
        for pos, _ in found:
            header = assign_offsets(buf, pos, next_offset, leader_epoch)
            self._store(header, bytes(buf[pos : pos + header.size_in_bytes]))
            next_offset = header.next_offset
        return first, next_offset - 1

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None) -> bytes:
        """Whole batches from the one holding ``offset``, below ``max_offset``, within
        ``max_bytes`` but at least one batch."""
        bound = self._next_offset if max_offset is None else max_offset
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        out = bytearray()
        for batch in self.batches[i:]:
            if batch.header.last_offset < offset:
                continue
            if batch.header.next_offset > bound:
                break
            if out and len(out) + len(batch.data) > max_bytes:
                break
            out += batch.data
        return bytes(out)

    def _store(self, header: BatchHeader, data: bytes) -> None:
        self.batches.append(StoredBatch(header, data))
        self._bases.append(header.base_offset)
        self._next_offset = header.next_offset
        epoch = header.partition_leader_epoch
        if epoch >= 0 and epoch > self._epoch_cache.latest_epoch:
            self._epoch_cache.assign(epoch, header.base_offset)

    def offsets_and_epochs(self) -> list[tuple[int, int, int]]:
        """``(base_offset, last_offset, leader_epoch)`` per batch: what logs are compared by."""
        return [
            (b.header.base_offset, b.header.last_offset, b.header.partition_leader_epoch)
            for b in self.batches
        ]
