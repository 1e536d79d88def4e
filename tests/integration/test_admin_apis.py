"""Admin APIs through programs we did not write: kafka-python, aiokafka and confluent-kafka.

AlterConfigs (33, the legacy whole-resource replace) from aiokafka (which sends the keys as
given, so a key left out is reset) and kafka-python (``incremental=False``, which re-adds the
other modified keys itself); DescribeTopicPartitions (75) paging with kafka-python's cursor;
DescribeLogDirs (35), DescribeProducers (61) and ListConfigResources (74) from kafka-python;
ListGroups (16) from confluent-kafka showing a KIP-848 group with its type next to a classic
one; and ApiVersions advertising each of them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("kafka")
pytest.importorskip("aiokafka")
pytest.importorskip("confluent_kafka")
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource as AioConfigResource
from aiokafka.admin.config_resource import ConfigResourceType as AioType
from confluent_kafka import Consumer, ConsumerGroupType
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType

from tests.integration.ck_helpers import admin_for, create_topic, make_producer
from tests.integration.conftest import unique_topic
from tests.integration.node_harness import Node

pytestmark = pytest.mark.integration

TIMEOUT_MS = 30_000


@pytest.fixture
def kp_admin(module_node: Node) -> Iterator[Any]:
    admin = KafkaAdminClient(bootstrap_servers=module_node.bootstrap, request_timeout_ms=TIMEOUT_MS)
    try:
        yield admin
    finally:
        admin.close()


def topic_overrides(admin: Any, topic: str) -> dict[str, str]:
    """The topic's overrides (config source TOPIC_CONFIG), as DescribeConfigs reports them."""
    described = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="modified"
    )
    return {key: entry["value"] for key, entry in described["topic"][topic].items()}


def test_aiokafka_alter_configs_resets_keys_left_out(module_node: Node, kp_admin: Any) -> None:
    topic = unique_topic("alter-aio")
    create_topic(module_node, topic, 1, {"retention.ms": "5000", "segment.bytes": "1048576"})
    assert topic_overrides(kp_admin, topic) == {"retention.ms": "5000", "segment.bytes": "1048576"}

    async def alter() -> Any:
        admin = AIOKafkaAdminClient(
            bootstrap_servers=module_node.bootstrap, request_timeout_ms=TIMEOUT_MS
        )
        await admin.start()
        try:
            resource = AioConfigResource(AioType.TOPIC, topic, {"cleanup.policy": "compact"})
            return await admin.alter_configs([resource])
        finally:
            await admin.close()

    [response] = asyncio.run(asyncio.wait_for(alter(), 60))
    [(code, message, _, name)] = response.resources
    assert (code, name) == (0, topic), message
    # Whole-resource replace: the two overrides not listed are back to their defaults.
    assert topic_overrides(kp_admin, topic) == {"cleanup.policy": "compact"}


def test_kafka_python_legacy_alter_configs(module_node: Node, kp_admin: Any) -> None:
    topic = unique_topic("alter-kp")
    create_topic(module_node, topic, 1, {"retention.ms": "5000"})
    resource = ConfigResource(ConfigResourceType.TOPIC, topic, {"max.message.bytes": "200000"})
    checked = kp_admin.alter_configs([resource], validate_only=True, incremental=False)
    assert checked == {"topic": {topic: "OK"}}
    assert topic_overrides(kp_admin, topic) == {"retention.ms": "5000"}

    resource = ConfigResource(ConfigResourceType.TOPIC, topic, {"max.message.bytes": "200000"})
    result = kp_admin.alter_configs([resource], incremental=False)
    assert result == {"topic": {topic: "OK"}}
    # kafka-python re-sends the other modified keys, so nothing it did not name is lost.
    assert topic_overrides(kp_admin, topic) == {
        "retention.ms": "5000",
        "max.message.bytes": "200000",
    }

    bad = ConfigResource(ConfigResourceType.TOPIC, topic, {"retention.ms": "not-a-number"})
    result = kp_admin.alter_configs([bad], incremental=False)
    assert "InvalidConfiguration" in result["topic"][topic], result
    assert topic_overrides(kp_admin, topic)["retention.ms"] == "5000"


def test_kafka_python_describe_topic_partitions_pages(module_node: Node, kp_admin: Any) -> None:
    first, second = sorted([unique_topic("dtp"), unique_topic("dtp")])
    create_topic(module_node, first, 3)
    create_topic(module_node, second, 2)
    seen: list[tuple[str, int]] = []
    cursor = None
    pages = 0
    while True:
        page = kp_admin.describe_topic_partitions(
            [second, first], response_partition_limit=2, cursor=cursor
        )
        pages += 1
        for topic in page["topics"]:
            assert topic["error_code"] == 0
            for p in topic["partitions"]:
                assert p["leader_id"] == module_node.node_id
                assert p["isr_nodes"] == [module_node.node_id]
                # No ELR on one replica; kafka-python turns an empty list into None.
                assert not p["eligible_leader_replicas"] and not p["last_known_elr"]
                seen.append((topic["name"], p["partition_index"]))
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert pages < 5
    assert pages == 3
    assert seen == [(first, 0), (first, 1), (first, 2), (second, 0), (second, 1)]

    unknown = kp_admin.describe_topic_partitions([f"missing-{uuid.uuid4().hex[:6]}"])
    assert [t["error_code"] for t in unknown["topics"]] == [3]  # UNKNOWN_TOPIC_OR_PARTITION


def test_kafka_python_describe_log_dirs_and_producers(module_node: Node, kp_admin: Any) -> None:
    topic = unique_topic("dirs")
    create_topic(module_node, topic, 2)
    producer = make_producer(module_node, **{"enable.idempotence": True, "acks": "all"})
    for _ in range(50):
        producer.produce(topic, value=b"x" * 100, partition=0)
    assert producer.flush(30) == 0

    [broker] = kp_admin.describe_log_dirs({topic: [0, 1]})
    [log_dir] = broker["log_dirs"]
    assert log_dir["error_code"] == 0
    assert log_dir["total_bytes"] > 0 and 0 <= log_dir["usable_bytes"] <= log_dir["total_bytes"]
    [entry] = [t for t in log_dir["topics"] if t["name"] == topic]
    sizes = {p["partition_index"]: p["partition_size"] for p in entry["partitions"]}
    assert sizes[0] > 50 * 100 and sizes[1] == 0
    assert all(p["offset_lag"] == 0 and not p["is_future_key"] for p in entry["partitions"])

    states = kp_admin.describe_producers([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    [active] = states[TopicPartition(topic, 0)].active_producers
    assert active.producer_id >= 0 and active.last_sequence == 49
    assert states[TopicPartition(topic, 1)].active_producers == []


def test_kafka_python_list_config_resources(module_node: Node, kp_admin: Any) -> None:
    topic = unique_topic("lcr")
    create_topic(module_node, topic, 1)
    listed = kp_admin.list_config_resources(["TOPIC", "BROKER"])
    assert topic in listed["topic"]
    assert listed["broker"] == [str(module_node.node_id)]


def test_api_versions_advertise_the_new_apis(kp_admin: Any) -> None:
    served = {int(key): value for key, value in kp_admin.api_versions().items()}
    for key, (low, high) in {33: (0, 2), 35: (1, 4), 61: (0, 0), 74: (0, 1), 75: (0, 0)}.items():
        assert tuple(served[key]) == (low, high), key


def test_confluent_lists_a_kip848_group_with_its_type(module_node: Node) -> None:
    topic = unique_topic("groups")
    create_topic(module_node, topic, 2)
    consumer_group, classic_group = f"g848-{uuid.uuid4().hex[:6]}", f"gcl-{uuid.uuid4().hex[:6]}"
    consumers = [
        Consumer(
            {
                "bootstrap.servers": module_node.bootstrap,
                "group.id": group,
                "group.protocol": protocol,
                "auto.offset.reset": "earliest",
            }
        )
        for group, protocol in ((consumer_group, "consumer"), (classic_group, "classic"))
    ]
    admin = admin_for(module_node)
    try:
        for c in consumers:
            c.subscribe([topic])
        deadline = time.monotonic() + 60
        while not all(c.assignment() for c in consumers):
            assert time.monotonic() < deadline, "no assignment"
            for c in consumers:
                c.poll(0.1)
        listed = admin.list_consumer_groups(request_timeout=30).result()
        types = {g.group_id: g.type for g in listed.valid}
        assert types[consumer_group] == ConsumerGroupType.CONSUMER
        assert types[classic_group] == ConsumerGroupType.CLASSIC
        only = admin.list_consumer_groups(
            request_timeout=30, types={ConsumerGroupType.CONSUMER}
        ).result()
        ids = {g.group_id for g in only.valid}
        assert consumer_group in ids and classic_group not in ids
    finally:
        for c in consumers:
            c.close()
