"""WriteTxnMarkers on a partition leader, through the wire codec, over real logs with
followers: a marker is answered once the ISR has it (acks=all), partitions are written
concurrently, and the errors a coordinator reacts to (min ISR, timeout, stale coordinator
or producer epoch, not the leader, not hosted) come back per partition."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from sparklog.broker.context import BrokerContext
from sparklog.broker.partition import Partition, PartitionState
from sparklog.broker.producer_ids import ProducerIdManager
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.config import ServerConfig
from sparklog.metadata.image import MetadataImage
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.messages import API_BY_NAME
from sparklog.replication.messages import FollowerFetch
from sparklog.storage.config import LogConfig
from sparklog.storage.manager import LogManager
from tests.unit.coordinator.test_txn_apis import PROPS, call

PARTITIONS = 3


def context(root: Path, request_timeout_ms: int = 5_000) -> BrokerContext:
    """Broker 1 leading ``t``-0 and ``t``-1 (replicas 1, 2, 3, min ISR 2) and following
    ``t``-2."""
    config = LogConfig().with_overrides({"min.insync.replicas": "2"})
    rm = ReplicaManager(1, LogManager([str(root)], config, lambda: int(time.time() * 1000)), config)
    for index in range(PARTITIONS):
        log = rm.log_manager.create_log("t", index, b"t" * 16, config)
        partition = Partition("t", index, b"t" * 16, log, 1)
        leader = 1 if index < 2 else 2
        partition.apply_state(PartitionState(leader, 0, 0, (1, 2, 3), (1, 2, 3)))
        rm.partitions[("t", index)] = partition

    async def no_blocks() -> tuple[int, int]:
        return 5000, 100

    return BrokerContext(
        config=ServerConfig.from_props({**PROPS, "request.timeout.ms": str(request_timeout_ms)}),
        cluster_id="c",
        replica_manager=rm,
        controller=None,  # type: ignore[arg-type]
        image_supplier=MetadataImage,
        producer_ids=ProducerIdManager(no_blocks),
    )


def body(*markers: tuple[int, int, int, list[int]], topic: str = "t") -> dict[str, Any]:
    """(producer id, producer epoch, coordinator epoch, partitions) per COMMIT marker."""
    return {
        "markers": [
            {
                "producer_id": pid,
                "producer_epoch": epoch,
                "transaction_result": True,
                "topics": [{"name": topic, "partition_indexes": partitions}],
                "coordinator_epoch": coordinator_epoch,
            }
            for pid, epoch, coordinator_epoch, partitions in markers
        ]
    }


def codes(response: dict[str, Any]) -> list[dict[tuple[str, int], int]]:
    return [
        {
            (t["name"], p["partition_index"]): p["error_code"]
            for t in marker["topics"]
            for p in t["partitions"]
        }
        for marker in response["markers"]
    ]


def replicate(ctx: BrokerContext, index: int) -> None:
    """Both followers fetch ``t``-``index`` up to the leader's log end."""
    partition = ctx.replica_manager.partitions[("t", index)]
    for follower in (2, 3):
        ctx.replica_manager.follower_fetch(
            partition, FollowerFetch(follower, partition.log_end_offset)
        )


def test_served_versions_are_kafka_4s() -> None:
    api = API_BY_NAME["WriteTxnMarkers"]
    assert (api.min_version, api.max_version) == (1, 1)


def test_markers_are_answered_once_the_isr_has_them(tmp_path: Path) -> None:
    async def scenario() -> None:
        ctx = context(tmp_path)
        rm = ctx.replica_manager
        pending = asyncio.ensure_future(
            call(ctx, "WriteTxnMarkers", 1, body((7, 0, 0, [0, 1]), (8, 0, 0, [0])))
        )
        await asyncio.sleep(0.05)
        # Every marker is in its log at once (partitions written concurrently)...
        assert [rm.partitions[("t", i)].log_end_offset for i in range(2)] == [2, 1]
        # ...and none is answered before the followers have it.
        assert not pending.done()
        replicate(ctx, 1)
        await asyncio.sleep(0.05)
        assert not pending.done()
        replicate(ctx, 0)
        response = await asyncio.wait_for(pending, 1)
        assert codes(response) == [{("t", 0): 0, ("t", 1): 0}, {("t", 0): 0}]
        assert [m["producer_id"] for m in response["markers"]] == [7, 8]
        assert [rm.partitions[("t", i)].high_watermark for i in range(2)] == [2, 1]

    asyncio.run(scenario())


def test_min_isr_and_replication_timeout(tmp_path: Path) -> None:
    async def scenario() -> None:
        ctx = context(tmp_path, request_timeout_ms=100)
        rm = ctx.replica_manager
        shrunk = rm.partitions[("t", 0)]
        shrunk.apply_state(PartitionState(1, 0, 1, (1, 2, 3), (1,)))
        response = await call(ctx, "WriteTxnMarkers", 1, body((7, 0, 0, [0, 1])))
        assert codes(response) == [
            {
                ("t", 0): ErrorCode.NOT_ENOUGH_REPLICAS,
                ("t", 1): ErrorCode.REQUEST_TIMED_OUT,
            }
        ]
        assert shrunk.log_end_offset == 0, "refused before the append"

    asyncio.run(scenario())


def test_fenced_markers_and_partitions_led_elsewhere(tmp_path: Path) -> None:
    async def scenario() -> None:
        ctx = context(tmp_path)
        first = asyncio.ensure_future(call(ctx, "WriteTxnMarkers", 1, body((7, 2, 5, [0]))))
        await asyncio.sleep(0.01)
        replicate(ctx, 0)
        assert codes(await asyncio.wait_for(first, 1)) == [{("t", 0): 0}]
        response = await call(
            ctx,
            "WriteTxnMarkers",
            1,
            body((7, 2, 4, [0]), (7, 1, 5, [0]), (9, 0, 0, [2, 5])),
        )
        assert codes(response) == [
            {("t", 0): ErrorCode.TRANSACTION_COORDINATOR_FENCED},
            {("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH},
            {
                ("t", 2): ErrorCode.NOT_LEADER_OR_FOLLOWER,
                ("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            },
        ]
        assert ctx.replica_manager.partitions[("t", 0)].log_end_offset == 1

    asyncio.run(scenario())
