"""kafka-python against a real sparklog node.

Same scenarios as the confluent-kafka module, through kafka-python's own producer, consumer
(assign + seek, no group) and KafkaAdminClient, asserting kafka-python's exception types.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

kafka = pytest.importorskip("kafka")
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka import errors as kafka_errors  # noqa: E402
from kafka.codec import has_lz4, has_snappy, has_zstd  # noqa: E402

from tests.integration.conftest import unique_topic  # noqa: E402
from tests.integration.dataset import (  # noqa: E402
    CODECS,
    PARTITIONS,
    RECORDS_PER_CODEC,
    Consumed,
    expected,
    normalize_headers,
    verify,
)
from tests.integration.node_harness import Node  # noqa: E402

pytestmark = pytest.mark.integration

TIMEOUT_MS = 30_000
CODEC_AVAILABLE = {
    "none": True,
    "gzip": True,
    "snappy": has_snappy(),
    "lz4": has_lz4(),
    "zstd": has_zstd(),
}


def admin_for(node: Node) -> Any:
    return KafkaAdminClient(bootstrap_servers=node.bootstrap, request_timeout_ms=TIMEOUT_MS)


def create_topic(node: Node, topic: str, partitions: int) -> None:
    admin = admin_for(node)
    try:
        admin.create_topics(
            {topic: {"num_partitions": partitions, "replication_factor": 1}},
            timeout_ms=TIMEOUT_MS,
            wait_for_metadata=True,
        )
    finally:
        admin.close()


def make_consumer(node: Node, reset: str = "none") -> Any:
    return KafkaConsumer(
        bootstrap_servers=node.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset=reset,
        request_timeout_ms=TIMEOUT_MS + 5_000,
        max_poll_records=10_000,
    )


def consume_exactly(consumer: Any, count: int, deadline_s: float = 90.0) -> list[Consumed]:
    got: list[Consumed] = []
    deadline = time.monotonic() + deadline_s
    while len(got) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(
                Consumed(r.partition, r.offset, r.key, r.value, normalize_headers(r.headers))
                for r in records
            )
    assert len(got) >= count, f"consumed {len(got)} of {count} records in {deadline_s}s"
    extra = [r for records in consumer.poll(timeout_ms=500).values() for r in records]
    assert not extra, f"unexpected extra records from offset {extra[0].offset}"
    return got


@pytest.mark.timeout(240)
@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_per_codec(module_node: Node, codec: str) -> None:
    if not CODEC_AVAILABLE[codec]:
        pytest.skip(f"kafka-python has no {codec} codec here (python-snappy is not installed)")
    topic = unique_topic(f"kp-{codec}")
    create_topic(module_node, topic, PARTITIONS)
    producer = KafkaProducer(
        bootstrap_servers=module_node.bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
        batch_size=256 * 1024,
        acks=1,
        enable_idempotence=False,
    )
    try:
        futures = []
        for index in range(RECORDS_PER_CODEC):
            want = expected(codec, index)
            futures.append(
                producer.send(
                    topic,
                    value=want.value,
                    key=want.key,
                    headers=list(want.headers),
                    partition=want.partition,
                )
            )
        producer.flush(timeout=90)
        for future in futures:
            future.get(timeout=1)  # raises the delivery error, if any
    finally:
        producer.close(timeout=10)

    consumer = make_consumer(module_node)
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        for tp in partitions:
            consumer.seek(tp, 0)
        consumed = consume_exactly(consumer, RECORDS_PER_CODEC)
        ends = consumer.end_offsets(partitions)
        assert ends == {
            tp: len(range(tp.partition, RECORDS_PER_CODEC, PARTITIONS)) for tp in partitions
        }
        assert consumer.beginning_offsets(partitions) == {tp: 0 for tp in partitions}
    finally:
        consumer.close()
    verify(codec, RECORDS_PER_CODEC, consumed)


def produce_values(node: Node, topic: str, count: int, base_ms: int | None = None) -> None:
    producer = KafkaProducer(bootstrap_servers=node.bootstrap, linger_ms=50, acks=1)
    try:
        futures = [
            producer.send(
                topic,
                value=b"%d" % index,
                partition=0,
                timestamp_ms=None if base_ms is None else base_ms + 10 * index,
            )
            for index in range(count)
        ]
        producer.flush(timeout=30)
        for future in futures:
            future.get(timeout=1)
    finally:
        producer.close(timeout=10)


def test_offsets_for_times(module_node: Node) -> None:
    topic = unique_topic("kp-times")
    create_topic(module_node, topic, 1)
    base_ms = int(time.time() * 1000) - 600_000
    produce_values(module_node, topic, 50, base_ms)
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(module_node)
    try:
        for timestamp, offset in {
            base_ms - 1_000: 0,
            base_ms: 0,
            base_ms + 170: 17,
            base_ms + 175: 18,
            base_ms + 490: 49,
        }.items():
            found = consumer.offsets_for_times({tp: timestamp})[tp]
            assert found is not None and found.offset == offset, (timestamp - base_ms, found)
            assert found.timestamp == base_ms + 10 * offset
        assert consumer.offsets_for_times({tp: base_ms + 10_000})[tp] is None
    finally:
        consumer.close()


def test_delete_records_moves_low_watermark(module_node: Node) -> None:
    topic = unique_topic("kp-delrec")
    create_topic(module_node, topic, 1)
    produce_values(module_node, topic, 100)
    tp = TopicPartition(topic, 0)
    admin = admin_for(module_node)
    try:
        result = admin.delete_records({tp: 40}, timeout_ms=TIMEOUT_MS)
    finally:
        admin.close()
    assert result[tp]["low_watermark"] == 40

    consumer = make_consumer(module_node, reset="earliest")
    try:
        assert consumer.beginning_offsets([tp]) == {tp: 40}
        assert consumer.end_offsets([tp]) == {tp: 100}
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        records = consume_exactly(consumer, 60)
        assert [r.offset for r in records] == list(range(40, 100))
        assert [r.value for r in records] == [b"%d" % i for i in range(40, 100)]
    finally:
        consumer.close()

    strict = make_consumer(module_node, reset="none")
    try:
        strict.assign([tp])
        strict.seek(tp, 5)
        with pytest.raises(kafka_errors.OffsetOutOfRangeError):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                assert not strict.poll(timeout_ms=500), "read records below the log start"
    finally:
        strict.close()


def test_offset_past_end_resets_per_policy(module_node: Node) -> None:
    topic = unique_topic("kp-oor")
    create_topic(module_node, topic, 1)
    produce_values(module_node, topic, 10)
    tp = TopicPartition(topic, 0)

    strict = make_consumer(module_node, reset="none")
    try:
        strict.assign([tp])
        strict.seek(tp, 1_000)
        with pytest.raises(kafka_errors.OffsetOutOfRangeError):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                assert not strict.poll(timeout_ms=500)
    finally:
        strict.close()

    lenient = make_consumer(module_node, reset="earliest")
    try:
        lenient.assign([tp])
        lenient.seek(tp, 1_000)
        assert [r.offset for r in consume_exactly(lenient, 10)] == list(range(10))
    finally:
        lenient.close()


def test_create_existing_topic_fails(module_node: Node) -> None:
    topic = unique_topic("kp-dup")
    create_topic(module_node, topic, 3)
    with pytest.raises(kafka_errors.TopicAlreadyExistsError):
        create_topic(module_node, topic, 3)


def test_delete_topic(module_node: Node) -> None:
    topic = unique_topic("kp-del")
    create_topic(module_node, topic, 3)
    admin = admin_for(module_node)
    try:
        admin.delete_topics([topic], timeout_ms=TIMEOUT_MS)
        deadline = time.monotonic() + 30
        while topic in admin.list_topics():
            assert time.monotonic() < deadline, f"{topic} still listed after deletion"
            time.sleep(0.1)
        with pytest.raises(kafka_errors.UnknownTopicOrPartitionError):
            admin.delete_topics([topic], timeout_ms=TIMEOUT_MS)
    finally:
        admin.close()
