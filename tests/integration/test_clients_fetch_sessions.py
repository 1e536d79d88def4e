"""Fetch sessions (KIP-227) with real consumers against a real node.

kafka-python opens a session as soon as the broker returns a session id and then sends
incremental fetches: every record of a many-partition topic is consumed, the node's
``kafka.server:type=FetchSessionCache`` gauges show the session and sparklog's
``incremental-fetches`` counter moves. librdkafka and aiokafka send the sessionless epoch (-1):
they consume the same topic and open no session.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from sparklog.cli.metrics_tool import fetch_metrics
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node, free_port

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")
aiokafka = pytest.importorskip("aiokafka")

pytestmark = pytest.mark.integration

PARTITIONS = 24
PER_PARTITION = 20
CACHE = "kafka.server:type=FetchSessionCache"
OWN = "sparklog:type=fetch-sessions"


def metrics(url: str) -> dict[str, dict[str, Any]]:
    return fetch_metrics(url, timeout_s=5.0)


def filled_topic(node: Node, prefix: str) -> str:
    """A new topic of PARTITIONS partitions holding PER_PARTITION records each."""
    topic = unique_topic(prefix)
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": node.bootstrap})
    new = confluent_kafka.admin.NewTopic(topic, PARTITIONS, 1)
    for future in admin.create_topics([new]).values():
        future.result(30)
    produce(node, topic)
    return topic


def produce(node: Node, topic: str) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": node.bootstrap, "linger.ms": 5})
    for partition in range(PARTITIONS):
        for i in range(PER_PARTITION):
            producer.produce(topic, value=f"{partition}-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def consume_all(poll: Callable[[], list[tuple[int, bytes]]], deadline_s: float = 60.0) -> set[Any]:
    got: set[tuple[int, bytes]] = set()
    deadline = time.monotonic() + deadline_s
    while len(got) < PARTITIONS * PER_PARTITION and time.monotonic() < deadline:
        got.update(poll())
    return got


def expected() -> set[tuple[int, bytes]]:
    return {(p, f"{p}-{i}".encode()) for p in range(PARTITIONS) for i in range(PER_PARTITION)}


@pytest.fixture
def node_with_metrics(node_factory: NodeFactory) -> tuple[Node, str]:
    port = free_port()
    node = node_factory.create({"sparklog.metrics.listener": f"127.0.0.1:{port}"})
    return node, f"http://127.0.0.1:{port}"


def test_kafka_python_consumes_through_an_incremental_session(
    node_with_metrics: tuple[Node, str],
) -> None:
    node, url = node_with_metrics
    topic = filled_topic(node, "sessions")
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=node.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        max_partition_fetch_bytes=256,  # a few records per partition and fetch: many fetches
    )
    try:
        consumer.assign([kafka.TopicPartition(topic, p) for p in range(PARTITIONS)])

        def poll() -> list[tuple[int, bytes]]:
            return [
                (r.partition, r.value)
                for records in consumer.poll(timeout_ms=200).values()
                for r in records
            ]

        assert consume_all(poll) == expected()
        during = metrics(url)
    finally:
        consumer.close()
    assert during[CACHE + ",name=NumIncrementalFetchSessions"]["Value"] >= 1
    assert during[CACHE + ",name=NumIncrementalFetchPartitionsCached"]["Value"] >= PARTITIONS
    assert during[OWN]["incremental-fetches"] > 0
    assert during[CACHE + ",name=IncrementalFetchSessionEvictionsPerSec"]["Count"] == 0


def test_sessionless_clients_open_no_session(node_with_metrics: tuple[Node, str]) -> None:
    node, url = node_with_metrics
    topic = filled_topic(node, "sessionless")
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": unique_topic("g"),
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(PARTITIONS)])

        def poll() -> list[tuple[int, bytes]]:
            return [
                (m.partition(), m.value() or b"")
                for m in consumer.consume(500, 0.2)
                if m.error() is None
            ]

        assert consume_all(poll) == expected()
    finally:
        consumer.close()

    async def with_aiokafka() -> set[tuple[int, bytes]]:
        reader = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=node.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await reader.start()
        try:
            reader.assign([aiokafka.TopicPartition(topic, p) for p in range(PARTITIONS)])
            got: set[tuple[int, bytes]] = set()
            deadline = time.monotonic() + 60
            while len(got) < PARTITIONS * PER_PARTITION and time.monotonic() < deadline:
                batches = await reader.getmany(timeout_ms=200)
                got.update((r.partition, r.value) for rs in batches.values() for r in rs)
            return got
        finally:
            await reader.stop()

    assert asyncio.run(with_aiokafka()) == expected()
    after = metrics(url)
    assert after[CACHE + ",name=NumIncrementalFetchSessions"]["Value"] == 0
    assert after[OWN]["incremental-fetches"] == 0
