"""A real replica manager over temporary logs, and a scripted marker writer, for driving the
transaction and group coordinators without a node."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from sparklog.broker.partition import Partition, PartitionState
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.coordinator.runtime import TxnMarker
from sparklog.protocol.errors import ErrorCode
from sparklog.storage.config import LogConfig
from sparklog.storage.manager import LogManager


class FakeClock:
    """Starts at the wall clock: batches carry wall-clock timestamps the log checks."""

    def __init__(self) -> None:
        self.now_ms = int(time.time() * 1000)

    def __call__(self) -> int:
        return self.now_ms


def replica_manager(
    root: Path, topics: dict[str, int], clock: FakeClock, leader: int = 1
) -> ReplicaManager:
    """Broker 1 hosting ``topics`` (name -> partition count), leader ``leader`` at epoch 0."""
    config = LogConfig()
    manager = ReplicaManager(1, LogManager([str(root)], config, clock), config)
    for topic, count in topics.items():
        topic_id = topic.encode().ljust(16, b"\x00")[:16]
        for index in range(count):
            log = manager.log_manager.create_log(topic, index, topic_id, config)
            partition = Partition(topic, index, topic_id, log, 1)
            partition.apply_state(PartitionState(leader, 0, 0, (1,), (1,)))
            manager.partitions[(topic, index)] = partition
    return manager


def set_leader(manager: ReplicaManager, topic: str, leader: int, epoch: int) -> None:
    for (name, _), partition in manager.partitions.items():
        if name == topic:
            partition.apply_state(PartitionState(leader, epoch, epoch, (1,), (1,)))


class Markers:
    """Records marker requests; ``fail`` lists answers to give before succeeding."""

    def __init__(self) -> None:
        self.calls: list[TxnMarker] = []
        self.fail: list[ErrorCode] = []

    async def __call__(self, markers: Sequence[TxnMarker]) -> dict[tuple[int, str, int], ErrorCode]:
        out: dict[tuple[int, str, int], ErrorCode] = {}
        for marker in markers:
            self.calls.append(marker)
            code = self.fail.pop(0) if self.fail else ErrorCode.NONE
            for topic, index in marker.partitions:
                out[(marker.producer_id, topic, index)] = code
        return out


class ProducerIds:
    def __init__(self, first: int = 1000) -> None:
        self.next = first

    async def __call__(self) -> int:
        self.next += 1
        return self.next - 1
