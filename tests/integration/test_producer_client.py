"""The blocking producer against a real node, read back with librdkafka.

Keyed records land on the partition librdkafka's ``murmur2_random`` picks for the same key;
null-key records stick and rotate; headers, null values, timestamps and every compression
survive; a restarted node is retried through; errors a user can hit say what went wrong.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import pytest

from sparklog.client.producer import ProduceError, Producer, ProducerConfig, default_partition
from tests.integration.ck_helpers import (
    consume_exactly,
    create_topic,
    make_consumer,
    make_producer,
)
from tests.integration.dataset import Consumed
from tests.integration.node_harness import Node

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    node = Node(tmp_path_factory.mktemp("producer") / "node")
    node.start()
    try:
        yield node
    finally:
        node.close()


def _consume(node: Node, topic: str, partitions: int, count: int) -> list[Consumed]:
    from confluent_kafka import TopicPartition

    consumer = make_consumer(node)
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        return consume_exactly(consumer, count)
    finally:
        consumer.close()


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_keyed_records_land_where_librdkafka_puts_them(node: Node, compression: str) -> None:
    ours, theirs = f"ours-{compression}", f"theirs-{compression}"
    for topic in (ours, theirs):
        create_topic(node, topic, 3)
    keys = [b"key-%d" % i for i in range(300)]
    with Producer(node.bootstrap, ProducerConfig(compression=compression)) as producer:
        for i, key in enumerate(keys):
            headers = [("i", b"%d" % i), ("none", None)] if i % 2 else []
            producer.send(ours, b"value-%d" % i, key=key, headers=headers, timestamp_ms=1000 + i)
        producer.flush()
        assert sum(m.record_count for m in producer.acknowledged) == len(keys)
    reference = make_producer(node, partitioner="murmur2_random")
    for key in keys:
        reference.produce(theirs, key=key, value=b"x")
    assert reference.flush(30) == 0

    got = _consume(node, ours, 3, len(keys))
    where = {c.key: c.partition for c in _consume(node, theirs, 3, len(keys))}
    assert {c.key: c.partition for c in got} == where
    assert all(c.partition == default_partition(c.key or b"", 3) for c in got)
    by_key = {c.key: c for c in got}
    for i, key in enumerate(keys):
        record = by_key[key]
        assert record.value == b"value-%d" % i
        assert record.headers == ((("i", b"%d" % i), ("none", None)) if i % 2 else ())
    # Offsets per partition follow send order.
    for partition in range(3):
        values = [int((c.value or b"").split(b"-")[1]) for c in got if c.partition == partition]
        assert values == sorted(values)


def test_null_keys_stick_then_rotate(node: Node) -> None:
    topic = "null-keys"
    create_topic(node, topic, 3)
    with Producer(node.bootstrap, ProducerConfig(batch_size=2000)) as producer:
        for i in range(600):
            producer.send(topic, b"v%04d" % i + b"x" * 60)
        producer.flush()
        partitions_in_order = [m.partition for m in producer.acknowledged]
    got = _consume(node, topic, 3, 600)
    assert {c.partition for c in got} == {0, 1, 2}
    # Each full batch went to one partition; the next batch to another one.
    assert all(a != b for a, b in itertools.pairwise(partitions_in_order))
    assert len(partitions_in_order) < 600 // 10


def test_null_value_and_explicit_partition(node: Node) -> None:
    topic = "explicit"
    create_topic(node, topic, 2)
    with Producer(node.bootstrap) as producer:
        producer.send(topic, None, key=b"k", partition=1)
        producer.flush()
        with pytest.raises(ValueError, match=r"Invalid partition given with record: 5"):
            producer.send(topic, b"v", partition=5)
    (record,) = _consume(node, topic, 2, 1)
    assert (record.partition, record.key, record.value) == (1, b"k", None)


def test_retries_through_a_node_restart(node: Node) -> None:
    topic = "restart"
    create_topic(node, topic, 1)
    config = ProducerConfig(retries=200, retry_backoff_ms=100, request_timeout_ms=5000)
    with Producer(node.bootstrap, config) as producer:
        producer.send(topic, b"before")
        producer.flush()
        node.stop()
        errors: list[BaseException] = []

        def produce_while_down() -> None:
            try:
                producer.send(topic, b"after")
                producer.flush()
            except BaseException as exc:
                errors.append(exc)

        # The node restarts on this thread: the harness ties a node's life to the thread that
        # started it (PR_SET_PDEATHSIG), so the producer is the one that runs aside.
        sender = threading.Thread(target=produce_while_down)
        sender.start()
        time.sleep(1.0)
        node.start()
        sender.join(60)
        assert not sender.is_alive() and not errors, errors
    values = [c.value for c in _consume(node, topic, 1, 2)]
    assert values == [b"before", b"after"]


def test_non_retriable_error_names_topic_partition_and_code(node: Node) -> None:
    topic = "small-messages"
    create_topic(node, topic, 1, {"max.message.bytes": "1024"})
    with Producer(node.bootstrap) as producer:
        producer.send(topic, b"x" * 5000)
        with pytest.raises(ProduceError, match=r"small-messages-0.*MESSAGE_TOO_LARGE"):
            producer.flush()


def test_unreachable_broker_is_a_clear_error() -> None:
    from tests.integration.node_harness import free_port

    config = ProducerConfig(request_timeout_ms=500, retry_backoff_ms=50)
    with (
        Producer(f"127.0.0.1:{free_port()}", config) as producer,
        pytest.raises(ProduceError, match=r"NETWORK_EXCEPTION.*no broker reachable"),
    ):
        producer.send("t", b"v")
