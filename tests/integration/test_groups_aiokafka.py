"""Consumer groups with aiokafka against a real sparklog node.

Three consumers share a 6-partition topic, one leaves and another joins; every record is
consumed at least once and the committed offsets reach the end of every partition; they
survive a graceful restart (SIGTERM) of the node.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

pytest.importorskip("aiokafka")
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from tests.integration.ck_helpers import create_topic
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node

pytestmark = pytest.mark.integration

PARTITIONS = 6
DEADLINE_S = 60.0


async def produce(node: Node, topic: str, start: int, count: int) -> set[str]:
    producer = AIOKafkaProducer(bootstrap_servers=node.bootstrap)
    await producer.start()
    try:
        for i in range(start, start + count):
            await producer.send(topic, value=f"v{i}".encode(), partition=i % PARTITIONS)
        await producer.flush()
    finally:
        await producer.stop()
    return {f"v{i}" for i in range(start, start + count)}


async def consumer(node: Node, group: str, topic: str) -> Any:
    c = AIOKafkaConsumer(
        topic,
        bootstrap_servers=node.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=10000,
        heartbeat_interval_ms=500,
    )
    await c.start()
    return c


async def poll_once(consumers: list[Any], seen: set[str]) -> None:
    for c in consumers:
        batches = await c.getmany(timeout_ms=50)
        for records in batches.values():
            seen.update(r.value.decode() for r in records)
        if batches:
            await c.commit()


async def poll_until(consumers: list[Any], wanted: set[str], seen: set[str]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not wanted <= seen:
        assert time.monotonic() < deadline, f"missing {sorted(wanted - seen)[:20]}"
        await poll_once(consumers, seen)


async def settle(consumers: list[Any], seen: set[str]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        owned = [tp.partition for c in consumers for tp in c.assignment()]
        if sorted(owned) == list(range(PARTITIONS)) and all(c.assignment() for c in consumers):
            return
        assert time.monotonic() < deadline, f"assignment never settled: {owned}"
        await poll_once(consumers, seen)


async def committed(node: Node, group: str, topic: str) -> list[int | None]:
    probe = AIOKafkaConsumer(bootstrap_servers=node.bootstrap, group_id=group)
    await probe.start()
    try:
        return [await probe.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)]
    finally:
        await probe.stop()


def test_three_consumers_share_then_one_leaves_and_one_joins(node_factory: NodeFactory) -> None:
    node = node_factory.create({"group.initial.rebalance.delay.ms": 0})
    topic = unique_topic("aio-grp")
    group = unique_topic("g")
    create_topic(node, topic, PARTITIONS)

    async def scenario() -> None:
        wanted = await produce(node, topic, 0, 300)
        members = [await consumer(node, group, topic) for _ in range(3)]
        seen: set[str] = set()
        await settle(members, seen)
        await poll_until(members, wanted, seen)
        await members.pop().stop()
        wanted |= await produce(node, topic, 300, 300)
        members.append(await consumer(node, group, topic))
        await settle(members, seen)
        await poll_until(members, wanted, seen)
        assert await committed(node, group, topic) == [100] * PARTITIONS
        for c in members:
            await c.stop()

    asyncio.run(scenario())


def test_committed_offsets_survive_sigterm(node_factory: NodeFactory) -> None:
    node = node_factory.create({"group.initial.rebalance.delay.ms": 0})
    topic = unique_topic("aio-restart")
    group = unique_topic("g")
    create_topic(node, topic, PARTITIONS)

    async def commit_some() -> None:
        await produce(node, topic, 0, 60)
        c = await consumer(node, group, topic)
        await settle([c], set())
        await c.commit(
            {TopicPartition(topic, p): OffsetAndMetadata(4 + p, "meta") for p in range(6)}
        )
        await c.stop()

    asyncio.run(commit_some())
    node.restart(graceful=True)
    assert asyncio.run(committed(node, group, topic)) == [4 + p for p in range(PARTITIONS)]
