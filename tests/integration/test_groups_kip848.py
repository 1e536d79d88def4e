"""The KIP-848 consumer protocol (``group.protocol=consumer``) with confluent-kafka.

Three consumers share a 6-partition topic through ConsumerGroupHeartbeat with the server-side
assignor; one leaves and its partitions move to the other two; a new member joins and is given
partitions the others release, and fetches from them; nothing is lost on the way (every
message produced is delivered and committed) and committed offsets survive a restart of the
node. A static member (``group.instance.id``) that closes and comes back under a new client
gets its partitions back.

Every message a consumer delivers, including while waiting for the assignment to settle, is
recorded: a message polled and dropped is never delivered again, which would look like loss.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from sparklog.client.connection import KafkaConnection
from tests.integration.ck_helpers import create_topic, make_producer
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node

pytestmark = pytest.mark.integration

PARTITIONS = 6
BATCH = 120
DEADLINE_S = 60.0


class Delivered:
    """Message values seen, and which consumer delivered each partition's messages."""

    def __init__(self) -> None:
        self.values: set[str] = set()
        self.by_consumer: dict[int, set[int]] = {}


def produce(node: Node, topic: str, start: int, count: int) -> set[str]:
    producer = make_producer(node)
    for i in range(start, start + count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return {f"v{i}" for i in range(start, start + count)}


def consumer(node: Node, group: str, **extra: Any) -> Any:
    config = {
        "bootstrap.servers": node.bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    config.update(extra)
    return Consumer(config)


def poll_once(consumers: list[Any], delivered: Delivered) -> None:
    for c in consumers:
        msg = c.poll(0.05)
        if msg is None or msg.error() is not None:
            continue
        delivered.values.add(msg.value().decode())
        delivered.by_consumer.setdefault(id(c), set()).add(msg.partition())
        c.commit(message=msg, asynchronous=False)


def poll_until(consumers: list[Any], wanted: set[str], delivered: Delivered) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not wanted <= delivered.values:
        missing = sorted(wanted - delivered.values)
        assert time.monotonic() < deadline, f"missing {missing[:20]}"
        poll_once(consumers, delivered)


def owned(c: Any) -> set[int]:
    return {tp.partition for tp in c.assignment()}


def settle(consumers: list[Any], delivered: Delivered) -> list[set[int]]:
    """Poll until every partition is owned exactly once and every consumer owns some."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        assignments = [owned(c) for c in consumers]
        flat = sorted(p for a in assignments for p in a)
        if flat == list(range(PARTITIONS)) and all(assignments):
            return assignments
        assert time.monotonic() < deadline, f"assignment never settled: {assignments}"
        poll_once(consumers, delivered)


@contextmanager
def closing(consumers: list[Any]) -> Iterator[list[Any]]:
    try:
        yield consumers
    finally:
        for c in consumers:
            c.close()


def test_kip848_share_leave_join_and_restart(node_factory: NodeFactory) -> None:
    node = node_factory.create()
    topic = unique_topic("kip848")
    group = unique_topic("g")
    create_topic(node, topic, PARTITIONS)
    delivered = Delivered()
    wanted = produce(node, topic, 0, BATCH)
    members = [consumer(node, group) for _ in range(3)]
    with closing(members):
        for c in members:
            c.subscribe([topic])
        settle(members, delivered)
        poll_until(members, wanted, delivered)

        leaving = members.pop()
        released = owned(leaving)
        leaving.close()
        wanted |= produce(node, topic, BATCH, BATCH)
        after_leave = settle(members, delivered)
        assert released <= set().union(*after_leave)
        poll_until(members, wanted, delivered)

        # The newcomer only gets partitions another member revoked first; it must then
        # fetch from them (the symptom of issue 5 was an assignment without fetching).
        newcomer = consumer(node, group)
        newcomer.subscribe([topic])
        members.append(newcomer)
        before_join = set().union(*(owned(c) for c in members[:2]))
        settle(members, delivered)
        gained = owned(newcomer)
        assert gained and gained <= before_join
        # Produced once it owns them, so only the newcomer can deliver these.
        wanted |= produce(node, topic, 2 * BATCH, BATCH)
        poll_until(members, wanted, delivered)
        assert gained <= delivered.by_consumer.get(id(newcomer), set())

    node.restart(graceful=True)
    probe = Consumer({"bootstrap.servers": node.bootstrap, "group.id": group})
    try:
        tps = probe.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        probe.close()
    assert [tp.offset for tp in tps] == [3 * BATCH // PARTITIONS] * PARTITIONS


def test_kip848_static_member_comes_back_to_its_partitions(node_factory: NodeFactory) -> None:
    node = node_factory.create()
    topic = unique_topic("kip848s")
    group = unique_topic("g")
    create_topic(node, topic, PARTITIONS)
    delivered = Delivered()
    wanted = produce(node, topic, 0, BATCH)
    static = {"group.instance.id": "static-1"}
    members = [consumer(node, group, **static), consumer(node, group)]
    with closing(members):
        for c in members:
            c.subscribe([topic])
        first = settle(members, delivered)[0]
        poll_until(members, wanted, delivered)
        # The static member closes (leaves with epoch -2): its partitions are kept for it.
        members.pop(0).close()
        back = consumer(node, group, **static)
        members.insert(0, back)
        back.subscribe([topic])
        wanted |= produce(node, topic, BATCH, BATCH)
        assert settle(members, delivered)[0] == first
        poll_until(members, wanted, delivered)


def test_group_configs_set_the_heartbeat_interval_of_one_group(node: Node) -> None:
    """consumer.heartbeat.interval.ms set on a GROUP (kafka-configs --entity-type groups)
    is what ConsumerGroupHeartbeat hands that group's members; other groups keep the
    broker's group.consumer.heartbeat.interval.ms."""
    topic = unique_topic("kip848c")
    create_topic(node, topic, 1)
    tuned, plain = unique_topic("g"), unique_topic("g")
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    entry = ConfigEntry(
        "consumer.heartbeat.interval.ms", "7000", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ResourceType.GROUP, tuned, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)
    broker_default = int(node.properties.get("group.consumer.heartbeat.interval.ms", "5000"))

    def first_heartbeat(connection: KafkaConnection, group: str) -> Any:
        body = {
            "group_id": group,
            "member_id": f"member-of-{group}",
            "member_epoch": 0,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout_ms": 30000,
            "subscribed_topic_names": [topic],
            "subscribed_topic_regex": None,
            "server_assignor": None,
            "topic_partitions": [],
        }
        deadline = time.monotonic() + DEADLINE_S
        # Retried while __consumer_offsets is created and loaded (COORDINATOR_* errors) and
        # until the controller's config record reaches the broker's image.
        while True:
            connection.request("FindCoordinator", {"key_type": 0, "coordinator_keys": [group]})
            response = connection.request("ConsumerGroupHeartbeat", body)
            assert response["error_code"] in (0, 14, 15, 16), response
            if response["error_code"] == 0 and (
                group != tuned or response["heartbeat_interval_ms"] == 7000
            ):
                return response
            assert time.monotonic() < deadline, response
            time.sleep(0.2)

    with KafkaConnection(node.host, node.port) as connection:
        assert first_heartbeat(connection, tuned)["heartbeat_interval_ms"] == 7000
        assert first_heartbeat(connection, plain)["heartbeat_interval_ms"] == broker_default
