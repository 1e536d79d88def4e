"""An in-memory :class:`~sparklog.raft.log.ReplicatedLog` for the simulator and unit tests.

:meth:`MemoryLog.crash` drops every batch that was never flushed, as a power cut drops the
page cache (Kafka's MockLog). It keeps the invariants listed in :mod:`sparklog.raft.log`.
"""

from __future__ import annotations

import bisect

from sparklog.protocol.records import iter_batches
from sparklog.raft.log import BatchInfo, batch_info


class MemoryLog:
    """An in-memory :class:`ReplicatedLog` that can lose unflushed batches on a crash."""

    def __init__(self) -> None:
        self._bases: list[int] = []
        self._infos: list[BatchInfo] = []
        self._data: list[bytes] = []
        self._flushed = 0
        self._start = 0
        self._start_epoch = 0

    @property
    def log_start_offset(self) -> int:
        return self._start

    @property
    def log_end_offset(self) -> int:
        return self._infos[-1].last_offset + 1 if self._infos else self._start

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    @property
    def last_epoch(self) -> int:
        return self._infos[-1].epoch if self._infos else self._start_epoch

    def _push(self, info: BatchInfo, data: bytes) -> None:
        if info.base_offset != self.log_end_offset:
            raise ValueError(f"append at {info.base_offset} but the LEO is {self.log_end_offset}")
        if info.epoch < self.last_epoch:
            raise ValueError(f"epoch {info.epoch} below the last epoch {self.last_epoch}")
        self._bases.append(info.base_offset)
        self._infos.append(info)
        self._data.append(data)

    def append_as_leader(self, batch: bytes, epoch: int) -> BatchInfo:
        [(_, header)] = list(iter_batches(batch))
        if header.base_offset != self.log_end_offset or header.partition_leader_epoch != epoch:
            raise ValueError("a leader batch must be built at the LEO with the leader's epoch")
        info = batch_info(header)
        self._push(info, batch)
        return info

    def append_as_follower(self, data: bytes) -> list[BatchInfo]:
        appended: list[BatchInfo] = []
        for pos, header in iter_batches(data):
            info = batch_info(header)
            self._push(info, bytes(data[pos : pos + header.size_in_bytes]))
            appended.append(info)
        return appended

    def read(self, start_offset: int, max_bytes: int) -> bytes:
        index = bisect.bisect_right(self._bases, start_offset) - 1
        if index < 0 or start_offset >= self.log_end_offset:
            return b""
        out: list[bytes] = []
        size = 0
        for data in self._data[index:]:
            if out and size + len(data) > max_bytes:
                break
            out.append(data)
            size += len(data)
        return b"".join(out)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        found = -1
        for i, info in enumerate(self._infos):
            if info.epoch > epoch:
                break
            found = i
        if found < 0:
            if self._start > 0 and epoch >= self._start_epoch:
                return self._start_epoch, self._start
            return 0, 0
        if found == len(self._infos) - 1:
            return self._infos[found].epoch, self.log_end_offset
        # The epoch ends where the first batch of a later epoch begins.
        epoch_found = self._infos[found].epoch
        for info in self._infos[found + 1 :]:
            if info.epoch != epoch_found:
                return epoch_found, info.base_offset
        return epoch_found, self.log_end_offset

    def truncate_to(self, offset: int) -> None:
        """Drop every batch holding an offset >= ``offset`` (a whole batch at a time)."""
        if offset < self._start:
            raise ValueError(f"cannot truncate to {offset} below the log start {self._start}")
        keep = len(self._infos)
        while keep > 0 and self._infos[keep - 1].last_offset >= offset:
            keep -= 1
        del self._bases[keep:], self._infos[keep:], self._data[keep:]
        self._flushed = min(self._flushed, self.log_end_offset)

    def flush(self) -> None:
        self._flushed = self.log_end_offset

    def delete_before(self, offset: int, epoch: int) -> None:
        if offset == self._start:
            self._start_epoch = epoch
        if offset <= self._start:
            return
        if offset > self.log_end_offset:
            raise ValueError(f"log start {offset} beyond the log end {self.log_end_offset}")
        drop = 0
        while drop < len(self._infos) and self._infos[drop].last_offset < offset:
            drop += 1
        del self._bases[:drop], self._infos[:drop], self._data[:drop]
        self._start = offset
        self._start_epoch = epoch
        self._flushed = max(self._flushed, offset)

    def reset_to(self, offset: int, epoch: int) -> None:
        self._bases.clear()
        self._infos.clear()
        self._data.clear()
        self._start = self._flushed = offset
        self._start_epoch = epoch

    def crash(self) -> None:
        """Lose every batch that was not flushed (the simulator's power cut)."""
        self.truncate_to(max(self._flushed, self._start))

    def index_of(self, base_offset: int) -> int | None:
        """The index (for :meth:`batch`) of the batch starting at ``base_offset``, if held."""
        index = bisect.bisect_left(self._bases, base_offset)
        if index < len(self._bases) and self._bases[index] == base_offset:
            return index
        return None

    def first_index_from(self, offset: int) -> int:
        """The index of the first batch whose base offset is >= ``offset``."""
        return bisect.bisect_left(self._bases, offset)

    def batches(self) -> list[tuple[BatchInfo, bytes]]:
        return list(zip(self._infos, self._data, strict=True))

    @property
    def batch_count(self) -> int:
        return len(self._infos)

    def batch(self, index: int) -> tuple[BatchInfo, bytes]:
        return self._infos[index], self._data[index]
