"""Log compaction on a running node: a compacted topic written by confluent-kafka is cleaned by
the node's own retention duty (the segment rewriting on its cleaner thread), every key keeps
its latest value at its original offset, and the node keeps serving while it cleans."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.integration.ck_helpers import create_topic
from tests.integration.conftest import NodeFactory, unique_topic

pytestmark = pytest.mark.integration

KEYS = 20
ROUNDS = 150
VALUE = b"x" * 1000


def read_all(bootstrap: str, topic: str) -> dict[int, tuple[bytes | None, bytes | None]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    found: dict[int, tuple[bytes | None, bytes | None]] = {}
    idle_until = time.monotonic() + 3.0
    try:
        while time.monotonic() < idle_until:
            for msg in consumer.consume(500, timeout=0.5):
                offset = msg.offset()
                if msg.error() is None and offset is not None:
                    found[offset] = (msg.key(), msg.value())
                    idle_until = time.monotonic() + 3.0
    finally:
        consumer.close()
    return found


def test_a_compacted_topic_is_cleaned_by_the_running_node(node_factory: NodeFactory) -> None:
    node = node_factory.create({"log.retention.check.interval.ms": 300})
    topic = unique_topic("compacted")
    create_topic(
        node,
        topic,
        1,
        {
            "cleanup.policy": "compact",
            "min.cleanable.dirty.ratio": "0.01",
            "segment.bytes": str(1024 * 1024),
        },
    )
    producer = Producer({"bootstrap.servers": node.bootstrap, "linger.ms": 5})
    latest: dict[bytes, tuple[int, bytes]] = {}

    def acked(key: bytes) -> Any:
        def record(err: Any, msg: Any) -> None:
            assert err is None, err
            latest[key] = (msg.offset(), msg.value())

        return record

    for r in range(ROUNDS):
        for k in range(KEYS):
            key = b"key-%d" % k
            value = b"%d:" % r + VALUE
            producer.produce(
                topic,
                key=key,
                value=value,
                on_delivery=acked(key),
            )
        producer.poll(0)
    assert producer.flush(30) == 0
    written = ROUNDS * KEYS
    deadline = time.monotonic() + 60
    while True:
        records = read_all(node.bootstrap, topic)
        if len(records) < written // 2:
            break
        assert time.monotonic() < deadline, f"not compacted: {len(records)} of {written} left"
        time.sleep(1.0)
    for key, (offset, value) in latest.items():
        assert records.get(offset) == (key, value), key
    assert len(records) < written // 2
