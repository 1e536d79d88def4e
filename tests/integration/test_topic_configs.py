"""Topic configs on a running node: retention deletes whole segments, configs survive a restart,
and bad configs get the error a Kafka admin client expects."""

from __future__ import annotations

import time
from typing import cast

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from tests.integration.ck_helpers import admin_for, create_topic, make_consumer, make_producer
from tests.integration.conftest import NodeFactory, unique_topic

pytestmark = pytest.mark.integration


def _produce(node: object, topic: str, count: int, start: int = 0) -> None:
    producer = make_producer(node)  # type: ignore[arg-type]
    for i in range(start, start + count):
        producer.produce(topic, value=f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0


def _low_watermark(node: object, topic: str) -> int:
    consumer = make_consumer(node)  # type: ignore[arg-type]
    try:
        low, _high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low)
    finally:
        consumer.close()


def _describe(node: object, topic: str) -> dict[str, ConfigEntry]:
    admin = admin_for(node)  # type: ignore[arg-type]
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    result: dict[str, ConfigEntry] = admin.describe_configs([resource])[resource].result(30)
    return result


def test_retention_ms_deletes_old_segments(node_factory: NodeFactory) -> None:
    node = node_factory.create({"log.retention.check.interval.ms": 200})
    topic = unique_topic("retention")
    create_topic(node, topic, 1, {"segment.ms": "100", "retention.ms": "-1"})
    _produce(node, topic, 100)
    time.sleep(0.3)
    _produce(node, topic, 100, start=100)  # rolls: the first segment is now closed
    time.sleep(0.5)
    assert _low_watermark(node, topic) == 0  # infinite retention keeps everything
    admin = admin_for(node)
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(30)
    deadline = time.monotonic() + 20
    while _low_watermark(node, topic) == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    low = _low_watermark(node, topic)
    # Whole segments went; as in Kafka, an expired active segment is rolled and deleted too.
    assert 0 < low <= 200, f"retention should have deleted old segments, low={low}"
    _produce(node, topic, 1, start=200)
    consumer = make_consumer(node)
    consumer.assign([TopicPartition(topic, 0, low)])
    message = consumer.consume(1, timeout=10)[0]
    assert message.error() is None and message.offset() == low
    consumer.close()


def test_topic_configs_survive_restart_and_alter(node_factory: NodeFactory) -> None:
    node = node_factory.create()
    topic = unique_topic("configs")
    create_topic(node, topic, 1, {"retention.ms": "123456", "cleanup.policy": "delete"})
    node.restart(graceful=False)
    configs = _describe(node, topic)
    assert configs["retention.ms"].value == "123456"
    # The client's type hints say ConfigSource; at run time it hands back the wire's int.
    sources = {name: cast(int, entry.source) for name, entry in configs.items()}
    assert sources["retention.ms"] == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert sources["segment.bytes"] == ConfigSource.DEFAULT_CONFIG.value
    assert configs["segment.bytes"].value == "1073741824"
    admin = admin_for(node)
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "99", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(30)
    assert _describe(node, topic)["retention.ms"].value == "99"


def test_bad_topic_configs_are_rejected_with_invalid_config(node_factory: NodeFactory) -> None:
    node = node_factory.create()
    admin = admin_for(node)
    for config, fragment in (
        ({"retention.mss": "1"}, "Did you mean 'retention.ms'"),
        ({"retention.ms": "soon"}, "retention.ms"),
        ({"cleanup.policy": "shred"}, "cleanup.policy"),
        ({"remote.storage.enable": "true"}, "Tiered Storage functionality is disabled"),
    ):
        topic = unique_topic("badconfig")
        future = admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic]
        with pytest.raises(KafkaException) as info:
            future.result(30)
        error = info.value.args[0]
        assert error.name() == "INVALID_CONFIG", error
        assert fragment in error.str()
