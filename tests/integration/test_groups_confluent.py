"""Consumer groups with confluent-kafka (librdkafka) against a real sparklog node.

Three consumers share a 6-partition topic; one leaves and another joins; every produced record
is consumed at least once and committed offsets reach the end of every partition. Committed
offsets survive a restart of the node, graceful (SIGTERM) or not (SIGKILL). Both the eager
(range) and the cooperative (cooperative-sticky) assignors work: the server does not care.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.ck_helpers import create_topic, make_producer
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node

pytestmark = pytest.mark.integration

FAST_GROUPS = {"group.initial.rebalance.delay.ms": 0}
PARTITIONS = 6
DEADLINE_S = 60.0


def produce(node: Node, topic: str, start: int, count: int) -> set[str]:
    producer = make_producer(node)
    values = {f"v{i}" for i in range(start, start + count)}
    for i in range(start, start + count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return values


def consumer(node: Node, group: str, strategy: str) -> Any:
    return Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "partition.assignment.strategy": strategy,
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500,
        }
    )


def poll_once(consumers: list[Any], seen: set[str]) -> None:
    """One poll of every consumer; what it processed is recorded and committed
    (at-least-once)."""
    for c in consumers:
        msg = c.poll(0.05)
        if msg is None or msg.error() is not None:
            continue
        seen.add(msg.value().decode())
        c.commit(message=msg, asynchronous=True)


def poll_until(consumers: list[Any], wanted: set[str], seen: set[str]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not wanted <= seen:
        assert time.monotonic() < deadline, f"missing {sorted(wanted - seen)[:20]}"
        poll_once(consumers, seen)


def settle(consumers: list[Any], seen: set[str]) -> None:
    """Poll until the group's assignment covers every partition exactly once."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        owned = [tp.partition for c in consumers for tp in c.assignment()]
        if sorted(owned) == list(range(PARTITIONS)) and all(c.assignment() for c in consumers):
            return
        assert time.monotonic() < deadline, f"assignment never settled: {owned}"
        poll_once(consumers, seen)


def commit_sync(c: Any) -> None:
    try:
        c.commit(asynchronous=False)
    except KafkaException as exc:
        # nothing consumed since the last commit
        assert exc.args[0].code() == KafkaError._NO_OFFSET, exc


def committed(node: Node, group: str, topic: str) -> list[int]:
    probe = Consumer({"bootstrap.servers": node.bootstrap, "group.id": group})
    try:
        tps = probe.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
        return [tp.offset for tp in tps]
    finally:
        probe.close()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_three_consumers_share_then_one_leaves_and_one_joins(
    node_factory: NodeFactory, strategy: str
) -> None:
    node = node_factory.create(FAST_GROUPS)
    topic = unique_topic("grp")
    group = unique_topic("g")
    create_topic(node, topic, PARTITIONS)
    wanted = produce(node, topic, 0, 300)
    members = [consumer(node, group, strategy) for _ in range(3)]
    for c in members:
        c.subscribe([topic])
    seen: set[str] = set()
    settle(members, seen)
    poll_until(members, wanted, seen)
    leaving = members.pop()
    commit_sync(leaving)
    leaving.close()
    wanted |= produce(node, topic, 300, 300)
    newcomer = consumer(node, group, strategy)
    newcomer.subscribe([topic])
    members.append(newcomer)
    settle(members, seen)
    poll_until(members, wanted, seen)
    for c in members:
        commit_sync(c)
    assert committed(node, group, topic) == [100] * PARTITIONS
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    deadline = time.monotonic() + DEADLINE_S
    while True:
        described = admin.describe_consumer_groups([group])[group].result(timeout=30)
        if str(described.state).endswith("STABLE"):
            break
        assert time.monotonic() < deadline, described
        poll_once(members, seen)
    assert len(described.members) == 3
    for c in members:
        c.close()


@pytest.mark.parametrize("graceful", [True, False], ids=["sigterm", "sigkill"])
def test_committed_offsets_survive_restart(node_factory: NodeFactory, graceful: bool) -> None:
    node = node_factory.create(FAST_GROUPS)
    topic = unique_topic("grp-restart")
    group = unique_topic("g")
    create_topic(node, topic, PARTITIONS)
    produce(node, topic, 0, 60)
    c = consumer(node, group, "range")
    c.subscribe([topic])
    seen: set[str] = set()
    poll_until([c], {f"v{i}" for i in range(60)}, seen)
    c.commit(
        offsets=[TopicPartition(topic, p, 2 + p) for p in range(PARTITIONS)], asynchronous=False
    )
    c.close()
    assert committed(node, group, topic) == [2 + p for p in range(PARTITIONS)]
    node.restart(graceful=graceful)
    assert committed(node, group, topic) == [2 + p for p in range(PARTITIONS)]
    # a consumer of the group resumes from the committed offsets
    resumed = consumer(node, group, "range")
    resumed.subscribe([topic])
    first: dict[int, int] = {}
    deadline = time.monotonic() + DEADLINE_S
    while len(first) < PARTITIONS:
        assert time.monotonic() < deadline, f"resumed only {first}"
        msg = resumed.poll(0.2)
        if msg is not None and msg.error() is None:
            first.setdefault(msg.partition(), msg.offset())
    assert first == {p: 2 + p for p in range(PARTITIONS)}
    resumed.close()
