"""aiokafka against a real sparklog node.

Same scenarios as the confluent-kafka module through aiokafka's producer, consumer (assign +
seek, no group) and AIOKafkaAdminClient. aiokafka's admin returns raw responses for topic
creation and deletion, so the error codes are read from them (36 TOPIC_ALREADY_EXISTS,
3 UNKNOWN_TOPIC_OR_PARTITION).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

aiokafka = pytest.importorskip("aiokafka")
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka import errors as aiokafka_errors  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic, RecordsToDelete  # noqa: E402

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
TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC_OR_PARTITION = 3


def run(coroutine_fn: Callable[[], Awaitable[None]], timeout_s: float = 150.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(coroutine_fn(), timeout_s)

    asyncio.run(bounded())


async def with_admin(node: Node, action: Callable[[Any], Awaitable[Any]]) -> Any:
    admin = AIOKafkaAdminClient(bootstrap_servers=node.bootstrap, request_timeout_ms=TIMEOUT_MS)
    await admin.start()
    try:
        return await action(admin)
    finally:
        await admin.close()


async def create_topic(node: Node, topic: str, partitions: int) -> int:
    """Create ``topic``; return the error code (0 on success) and wait for its leaders."""

    async def action(admin: Any) -> int:
        response = await admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=1)],
            timeout_ms=TIMEOUT_MS,
        )
        (entry,) = response.topic_errors
        return int(entry[1])

    code: int = await with_admin(node, action)
    if code == 0:
        await wait_for_partitions(node, topic, partitions)
    return code


async def wait_for_partitions(node: Node, topic: str, partitions: int) -> None:
    async def action(admin: Any) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            described = await admin.describe_topics([topic])
            if described and described[0]["error_code"] == 0:
                leaders = [p["leader"] for p in described[0]["partitions"]]
                if len(leaders) == partitions and all(leader >= 0 for leader in leaders):
                    return
            await asyncio.sleep(0.1)
        raise AssertionError(f"topic {topic} never showed {partitions} partitions with leaders")

    await with_admin(node, action)


def make_consumer(node: Node, reset: str = "none") -> Any:
    return AIOKafkaConsumer(
        bootstrap_servers=node.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset=reset,
        request_timeout_ms=TIMEOUT_MS + 5_000,
    )


async def consume_exactly(consumer: Any, count: int, deadline_s: float = 90.0) -> list[Consumed]:
    got: list[Consumed] = []
    deadline = time.monotonic() + deadline_s
    while len(got) < count and time.monotonic() < deadline:
        batches = await consumer.getmany(timeout_ms=500, max_records=10_000)
        for records in batches.values():
            got.extend(
                Consumed(r.partition, r.offset, r.key, r.value, normalize_headers(r.headers))
                for r in records
            )
    assert len(got) >= count, f"consumed {len(got)} of {count} records in {deadline_s}s"
    extra = [r for rs in (await consumer.getmany(timeout_ms=500)).values() for r in rs]
    assert not extra, f"unexpected extra records from offset {extra[0].offset}"
    return got


async def produce_values(node: Node, topic: str, count: int, base_ms: int | None = None) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=node.bootstrap, linger_ms=50, acks=1)
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic,
                value=b"%d" % index,
                partition=0,
                timestamp_ms=None if base_ms is None else base_ms + 10 * index,
            )
            for index in range(count)
        ]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def expect_out_of_range(consumer: Any, deadline_s: float = 20.0) -> None:
    with pytest.raises(aiokafka_errors.OffsetOutOfRangeError):
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            assert not any(batches.values()), "read records from an out-of-range position"


@pytest.mark.timeout(240)
@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_per_codec(module_node: Node, codec: str) -> None:
    topic = unique_topic(f"ak-{codec}")

    async def scenario() -> None:
        assert await create_topic(module_node, topic, PARTITIONS) == 0
        producer = AIOKafkaProducer(
            bootstrap_servers=module_node.bootstrap,
            compression_type=None if codec == "none" else codec,
            linger_ms=5,
            max_batch_size=256 * 1024,
            acks=1,
        )
        await producer.start()
        try:
            futures = []
            for index in range(RECORDS_PER_CODEC):
                want = expected(codec, index)
                futures.append(
                    await producer.send(
                        topic,
                        value=want.value,
                        key=want.key,
                        partition=want.partition,
                        headers=list(want.headers),
                    )
                )
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

        consumer = make_consumer(module_node)
        await consumer.start()
        try:
            partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            consumer.assign(partitions)
            for tp in partitions:
                consumer.seek(tp, 0)
            consumed = await consume_exactly(consumer, RECORDS_PER_CODEC)
            assert await consumer.end_offsets(partitions) == {
                tp: len(range(tp.partition, RECORDS_PER_CODEC, PARTITIONS)) for tp in partitions
            }
            assert await consumer.beginning_offsets(partitions) == {tp: 0 for tp in partitions}
        finally:
            await consumer.stop()
        verify(codec, RECORDS_PER_CODEC, consumed)

    run(scenario, timeout_s=220)


def test_offsets_for_times(module_node: Node) -> None:
    topic = unique_topic("ak-times")
    base_ms = int(time.time() * 1000) - 600_000

    async def scenario() -> None:
        assert await create_topic(module_node, topic, 1) == 0
        await produce_values(module_node, topic, 50, base_ms)
        tp = TopicPartition(topic, 0)
        consumer = make_consumer(module_node)
        await consumer.start()
        try:
            for timestamp, offset in {
                base_ms - 1_000: 0,
                base_ms: 0,
                base_ms + 170: 17,
                base_ms + 175: 18,
                base_ms + 490: 49,
            }.items():
                found = (await consumer.offsets_for_times({tp: timestamp}))[tp]
                assert found is not None and found.offset == offset, (timestamp - base_ms, found)
                assert found.timestamp == base_ms + 10 * offset
            assert (await consumer.offsets_for_times({tp: base_ms + 10_000}))[tp] is None
        finally:
            await consumer.stop()

    run(scenario)


def test_delete_records_moves_low_watermark(module_node: Node) -> None:
    topic = unique_topic("ak-delrec")

    async def scenario() -> None:
        assert await create_topic(module_node, topic, 1) == 0
        await produce_values(module_node, topic, 100)
        tp = TopicPartition(topic, 0)

        async def delete(admin: Any) -> Any:
            return await admin.delete_records({tp: RecordsToDelete(40)}, timeout_ms=TIMEOUT_MS)

        assert await with_admin(module_node, delete) == {tp: 40}

        consumer = make_consumer(module_node, reset="earliest")
        await consumer.start()
        try:
            assert await consumer.beginning_offsets([tp]) == {tp: 40}
            assert await consumer.end_offsets([tp]) == {tp: 100}
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            records = await consume_exactly(consumer, 60)
            assert [r.offset for r in records] == list(range(40, 100))
            assert [r.value for r in records] == [b"%d" % i for i in range(40, 100)]
        finally:
            await consumer.stop()

        strict = make_consumer(module_node, reset="none")
        await strict.start()
        try:
            strict.assign([tp])
            strict.seek(tp, 5)
            await expect_out_of_range(strict)
        finally:
            await strict.stop()

    run(scenario)


def test_offset_past_end_resets_per_policy(module_node: Node) -> None:
    topic = unique_topic("ak-oor")

    async def scenario() -> None:
        assert await create_topic(module_node, topic, 1) == 0
        await produce_values(module_node, topic, 10)
        tp = TopicPartition(topic, 0)
        strict = make_consumer(module_node, reset="none")
        await strict.start()
        try:
            strict.assign([tp])
            strict.seek(tp, 1_000)
            await expect_out_of_range(strict)
        finally:
            await strict.stop()

        lenient = make_consumer(module_node, reset="earliest")
        await lenient.start()
        try:
            lenient.assign([tp])
            lenient.seek(tp, 1_000)
            records = await consume_exactly(lenient, 10)
            assert [r.offset for r in records] == list(range(10))
        finally:
            await lenient.stop()

    run(scenario)


def test_create_existing_topic_fails(module_node: Node) -> None:
    topic = unique_topic("ak-dup")

    async def scenario() -> None:
        assert await create_topic(module_node, topic, 3) == 0
        assert await create_topic(module_node, topic, 3) == TOPIC_ALREADY_EXISTS

    run(scenario)


def test_delete_topic(module_node: Node) -> None:
    topic = unique_topic("ak-del")

    async def scenario() -> None:
        assert await create_topic(module_node, topic, 3) == 0

        async def delete(admin: Any) -> list[int]:
            response = await admin.delete_topics([topic], timeout_ms=TIMEOUT_MS)
            return [int(entry[1]) for entry in response.topic_error_codes]

        assert await with_admin(module_node, delete) == [0]

        async def wait_gone(admin: Any) -> None:
            deadline = time.monotonic() + 30
            while topic in await admin.list_topics():
                assert time.monotonic() < deadline, f"{topic} still listed after deletion"
                await asyncio.sleep(0.1)

        await with_admin(module_node, wait_gone)
        assert await with_admin(module_node, delete) == [UNKNOWN_TOPIC_OR_PARTITION]

    run(scenario)
