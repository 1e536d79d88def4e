"""confluent-kafka (librdkafka) against a real sparklog node.

Covers: CreateTopics through the admin client, 100k records with keys and headers across every
compression codec, consumption by assign + offset (no groups) checking content, per-partition
order and dense offsets, ListOffsets by timestamp, DeleteRecords and the low watermark, topic
deletion, and the errors a user sees for an existing topic, a bad topic name, an unknown topic
and an out-of-range fetch offset.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import (  # noqa: E402
    OFFSET_BEGINNING,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.cimpl import NewTopic  # noqa: E402

from tests.integration.ck_helpers import (  # noqa: E402
    CLIENT_TIMEOUT_S,
    admin_for,
    consume_exactly,
    create_topic,
    first_error,
    make_consumer,
    make_producer,
)
from tests.integration.conftest import unique_topic  # noqa: E402
from tests.integration.dataset import (  # noqa: E402
    CODECS,
    PARTITIONS,
    RECORDS_PER_CODEC,
    expected,
    verify,
)
from tests.integration.node_harness import Node  # noqa: E402

pytestmark = pytest.mark.integration


def produce_all(producer: Any, topic: str, codec: str, count: int) -> None:
    errors: list[str] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    for index in range(count):
        want = expected(codec, index)
        while True:
            try:
                producer.produce(
                    topic,
                    value=want.value,
                    key=want.key,
                    partition=want.partition,
                    headers=list(want.headers),
                    on_delivery=on_delivery,
                )
                break
            except BufferError:
                producer.poll(0.05)
        if index % 1000 == 0:
            producer.poll(0)
    remaining = producer.flush(60)
    assert remaining == 0, f"{remaining} records still undelivered after 60s"
    assert not errors, f"{len(errors)} delivery failures, first: {errors[0]}"


@pytest.mark.timeout(180)
@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_per_codec(module_node: Node, codec: str) -> None:
    topic = unique_topic(f"ck-{codec}")
    create_topic(module_node, topic, PARTITIONS)
    producer = make_producer(module_node, **{"compression.type": codec})
    produce_all(producer, topic, codec, RECORDS_PER_CODEC)

    consumer = make_consumer(module_node)
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        consumed = consume_exactly(consumer, RECORDS_PER_CODEC)
    finally:
        consumer.close()
    verify(codec, RECORDS_PER_CODEC, consumed)

    watermarks = make_consumer(module_node)
    try:
        for p in range(PARTITIONS):
            low, high = watermarks.get_watermark_offsets(
                TopicPartition(topic, p), timeout=CLIENT_TIMEOUT_S
            )
            assert (low, high) == (0, len(range(p, RECORDS_PER_CODEC, PARTITIONS)))
    finally:
        watermarks.close()


def test_offsets_for_times(module_node: Node) -> None:
    topic = unique_topic("ck-times")
    create_topic(module_node, topic, 1)
    base_ms = int(time.time() * 1000) - 600_000
    producer = make_producer(module_node, **{"linger.ms": 50})
    for index in range(50):
        producer.produce(topic, value=b"v%d" % index, partition=0, timestamp=base_ms + 10 * index)
    assert producer.flush(30) == 0

    consumer = make_consumer(module_node)
    try:
        queries = {
            base_ms - 1_000: 0,
            base_ms: 0,
            base_ms + 170: 17,
            base_ms + 175: 18,
            base_ms + 490: 49,
        }
        for timestamp, offset in queries.items():
            (found,) = consumer.offsets_for_times(
                [TopicPartition(topic, 0, timestamp)], timeout=CLIENT_TIMEOUT_S
            )
            assert found.error is None
            assert found.offset == offset, f"timestamp base+{timestamp - base_ms}"
        (beyond,) = consumer.offsets_for_times(
            [TopicPartition(topic, 0, base_ms + 10_000)], timeout=CLIENT_TIMEOUT_S
        )
        assert beyond.offset == -1  # Kafka answers "no such offset" as -1 / OFFSET_END
    finally:
        consumer.close()


def test_delete_records_moves_low_watermark(module_node: Node) -> None:
    topic = unique_topic("ck-delrec")
    create_topic(module_node, topic, 1)
    producer = make_producer(module_node)
    for index in range(100):
        producer.produce(topic, value=b"%d" % index, partition=0)
    assert producer.flush(30) == 0

    admin = admin_for(module_node)  # must outlive its futures
    futures = admin.delete_records(
        [TopicPartition(topic, 0, 40)], operation_timeout=CLIENT_TIMEOUT_S
    )
    (future,) = futures.values()
    assert future.result(timeout=CLIENT_TIMEOUT_S).low_watermark == 40

    consumer = make_consumer(module_node, **{"auto.offset.reset": "earliest"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        assert (low, high) == (40, 100)
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        records = consume_exactly(consumer, 60)
        assert [r.offset for r in records] == list(range(40, 100))
        assert [r.value for r in records] == [b"%d" % i for i in range(40, 100)]
    finally:
        consumer.close()

    # Seeking below the log start is out of range: with auto.offset.reset=error the client
    # reports it rather than silently skipping.
    strict = make_consumer(module_node, **{"auto.offset.reset": "error"})
    try:
        strict.assign([TopicPartition(topic, 0, 5)])
        error = first_error(strict)
        assert error.code() == KafkaError._AUTO_OFFSET_RESET, str(error)
    finally:
        strict.close()


def test_offset_past_end_resets_per_policy(module_node: Node) -> None:
    topic = unique_topic("ck-oor")
    create_topic(module_node, topic, 1)
    producer = make_producer(module_node)
    for index in range(10):
        producer.produce(topic, value=b"%d" % index, partition=0)
    assert producer.flush(30) == 0

    strict = make_consumer(module_node)
    try:
        strict.assign([TopicPartition(topic, 0, 1_000)])
        error = first_error(strict)
        assert error.code() == KafkaError._AUTO_OFFSET_RESET, str(error)
    finally:
        strict.close()

    lenient = make_consumer(module_node, **{"auto.offset.reset": "earliest"})
    try:
        lenient.assign([TopicPartition(topic, 0, 1_000)])
        records = consume_exactly(lenient, 10)
        assert [r.offset for r in records] == list(range(10))
    finally:
        lenient.close()


def create_error(node: Node, topic: NewTopic) -> Any:
    admin = admin_for(node)  # must outlive its futures
    futures = admin.create_topics([topic], operation_timeout=CLIENT_TIMEOUT_S)
    with pytest.raises(KafkaException) as info:
        futures[topic.topic].result(timeout=CLIENT_TIMEOUT_S)
    return info.value.args[0]


def test_create_existing_topic_fails(module_node: Node) -> None:
    topic = unique_topic("ck-dup")
    create_topic(module_node, topic, 3)
    error = create_error(module_node, NewTopic(topic, num_partitions=3, replication_factor=1))
    assert error.code() == KafkaError.TOPIC_ALREADY_EXISTS, str(error)


def test_create_topic_with_invalid_name_fails(module_node: Node) -> None:
    error = create_error(module_node, NewTopic("bad name!", num_partitions=1, replication_factor=1))
    assert error.code() == KafkaError.TOPIC_EXCEPTION, str(error)


def test_delete_topic(module_node: Node) -> None:
    topic = unique_topic("ck-del")
    create_topic(module_node, topic, 3)
    admin = admin_for(module_node)
    admin.delete_topics([topic], operation_timeout=CLIENT_TIMEOUT_S)[topic].result(
        timeout=CLIENT_TIMEOUT_S
    )
    deadline = time.monotonic() + CLIENT_TIMEOUT_S
    while topic in admin.list_topics(timeout=5).topics:
        assert time.monotonic() < deadline, f"{topic} still listed after deletion"
        time.sleep(0.1)

    missing = admin.delete_topics([topic], operation_timeout=CLIENT_TIMEOUT_S)[topic]
    with pytest.raises(KafkaException) as info:
        missing.result(timeout=CLIENT_TIMEOUT_S)
    assert info.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
