"""The broker side of :class:`sparklog.coordinator.runtime.CoordinatorRuntime`: the
coordinators' internal-topic partitions served by the :class:`ReplicaManager`.

Contract: the same as the interface's; appends are leader appends with ``acks=all`` (the
replica manager's produce path), reads go to the leader's log directly (up to the given end,
past the high watermark), and a partition counts as led only while this node is its leader.
"""

from __future__ import annotations

from collections.abc import Callable

from sparklog.broker.partition import Partition
from sparklog.broker.replica_manager import DEFAULT_ACKS_TIMEOUT_MS, ReplicaManager
from sparklog.metadata.image import MetadataImage

_ACKS_ALL = -1


class ReplicaManagerRuntime:
    """:class:`~sparklog.coordinator.runtime.CoordinatorRuntime` over a replica manager."""

    __slots__ = ("replica_manager",)

    def __init__(self, replica_manager: ReplicaManager) -> None:
        self.replica_manager = replica_manager

    @property
    def image(self) -> MetadataImage | None:
        return self.replica_manager.image

    def leader_partition(self, topic: str, index: int) -> Partition | None:
        partition = self.replica_manager.partitions.get((topic, index))
        if partition is None or not partition.is_leader:
            return None
        return partition

    async def append(
        self, topic: str, index: int, records: bytearray, timeout_ms: int | None = None
    ) -> int:
        wait_ms = DEFAULT_ACKS_TIMEOUT_MS if timeout_ms is None else timeout_ms
        outcome = await self.replica_manager.append(topic, index, records, _ACKS_ALL, wait_ms)
        return outcome.base_offset

    def read(self, topic: str, index: int, offset: int, max_bytes: int, end: int) -> bytes:
        partition = self.replica_manager.partitions.get((topic, index))
        if partition is None:
            return b""
        return partition.log.read(offset, max_bytes, end, True).read_bytes()

    def producer_entry(self, topic: str, index: int, producer_id: int) -> tuple[int, int] | None:
        partition = self.leader_partition(topic, index)
        entry = partition.log.producer_state.entry(producer_id) if partition else None
        return None if entry is None else (entry.epoch, entry.last_seq)

    async def wait_until(
        self, topic: str, index: int, condition: Callable[[], bool], timeout_s: float
    ) -> bool:
        waiters = self.replica_manager.produce_waiters
        return await waiters.wait_until([(topic, index)], condition, timeout_s)

    def delete_records(self, topic: str, index: int, offset: int) -> int:
        return self.replica_manager.delete_records(topic, index, offset)
