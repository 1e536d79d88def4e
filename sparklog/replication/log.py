"""The partition log as the replication cores see it.

``sparklog.storage.log.Log`` satisfies :class:`ReplicaLog` structurally, and so does the
in-memory test log. The cores only need offsets, the high watermark, the leader-epoch cache and
the three ways a follower changes its log (append the leader's batches as they are, truncate to
an offset, restart empty at an offset). Reading is the driver's job: the leader core only says
from which offset a follower may read.

Contract the cores rely on:
- ``log_end_offset`` is the offset of the next batch to append; ``append_as_follower`` takes
  whole v2 batches whose base offset is the LEO, keeps their offsets and leader epochs, and
  records a new leader epoch in the epoch cache when a batch carries one above the latest.
- Setting ``high_watermark`` clamps it to ``[log_start_offset, log_end_offset]``.
- ``truncate_to(offset)`` removes every batch at or above ``offset`` and the epoch-cache entries
  starting there; it lowers the HW to the new LEO. When ``offset >= log_end_offset`` it may
  leave the epoch cache alone, so the follower core also cuts the cache at the LEO (an epoch
  a former leader assigned but never wrote must not survive as our latest epoch).
- ``end_offset_for_epoch(epoch)`` is OffsetForLeaderEpoch: ``(largest epoch <= epoch, its end
  offset)`` or ``(-1, -1)``.
"""

from __future__ import annotations

from typing import Protocol

Records = bytes | bytearray | memoryview


class EpochCacheLike(Protocol):
    def assign(self, epoch: int, start_offset: int) -> None: ...

    def start_offset_of(self, epoch: int) -> int | None: ...

    def truncate_from_end(self, end_offset: int) -> None: ...


class ReplicaLog(Protocol):
    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None: ...

    @property
    def latest_epoch(self) -> int: ...

    @property
    def epoch_cache(self) -> EpochCacheLike: ...

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]: ...

    def truncate_to(self, offset: int) -> bool: ...

    def truncate_fully_and_start_at(self, offset: int) -> None: ...

    def append_as_follower(self, records: Records, now_ms: int | None = None) -> object: ...

    def increment_log_start_offset(self, offset: int) -> bool: ...
