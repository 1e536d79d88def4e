"""Fetch sessions through the broker's Fetch handler and the wire codec, over a real replica
manager: a full fetch opens a session, incremental fetches carry and return only what changed,
forgotten partitions leave, and the session errors come back with Kafka's codes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from sparklog.broker.apis import HANDLERS
from sparklog.broker.context import BrokerContext
from sparklog.broker.producer_ids import ProducerIdManager
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.config import ServerConfig
from sparklog.metadata.image import MetadataImage, PartitionRegistration, TopicImage, TopicsImage
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from sparklog.protocol.messages import API_BY_KEY, API_BY_NAME
from sparklog.protocol.record_codec import build_batch
from sparklog.protocol.types import join_chunks
from tests.unit.coordinator.test_txn_apis import PROPS
from tests.unit.coordinator.txn_support import FakeClock, replica_manager
from tests.unit.replication.helpers import batch

TOPIC = "a"
TOPIC_ID = TOPIC.encode().ljust(16, b"\x00")  # txn_support's ids


def make_context(root: Path, partitions: int = 3) -> BrokerContext:
    registration = PartitionRegistration((1,), (1,), 1, 0, 0)
    topic = TopicImage(TOPIC, TOPIC_ID, dict.fromkeys(range(partitions), registration))
    image = MetadataImage(topics=TopicsImage({TOPIC_ID: topic}, {TOPIC: topic}))

    async def no_blocks() -> tuple[int, int]:
        return 5000, 100

    return BrokerContext(
        config=ServerConfig.from_props(PROPS),
        cluster_id="c",
        replica_manager=replica_manager(root, {TOPIC: partitions}, FakeClock()),
        controller=None,  # type: ignore[arg-type]
        image_supplier=lambda: image,
        producer_ids=ProducerIdManager(no_blocks),
    )


def fetch_body(
    session_id: int,
    epoch: int,
    offsets: dict[int, int],
    forgotten: list[int] | None = None,
    version: int = 17,
) -> dict[str, Any]:
    key = {"topic_id": TOPIC_ID} if version >= 13 else {"topic": TOPIC}
    partitions = [
        {"partition": index, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
        for index, offset in offsets.items()
    ]
    return {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": [{**key, "partitions": partitions}] if partitions else [],
        "forgotten_topics_data": [{**key, "partitions": forgotten}] if forgotten else [],
    }


async def fetch(ctx: BrokerContext, body: dict[str, Any], version: int = 17) -> dict[str, Any]:
    api = API_BY_NAME["Fetch"]
    frame = join_chunks(encode_request(api, version, 7, "test", body))[4:]
    response = await HANDLERS[api.key](ctx, decode_request(frame, API_BY_KEY), "PLAINTEXT")
    assert response is not None
    encoded = join_chunks(encode_response(api, version, 7, response))[4:]
    decoded: dict[str, Any] = decode_response(api, version, encoded)[1]
    return decoded


def partitions_of(response: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {p["partition_index"]: p for t in response["responses"] for p in t["partitions"]}


async def append(rm: ReplicaManager, index: int, count: int) -> None:
    await rm.append(TOPIC, index, bytearray(batch(count)), 1)


def test_incremental_session_over_the_handler(tmp_path: Path) -> None:
    async def scenario() -> None:
        ctx = make_context(tmp_path)
        await append(ctx.replica_manager, 0, 2)
        full = await fetch(ctx, fetch_body(0, 0, {0: 0, 1: 0, 2: 0}))
        session_id = full["session_id"]
        assert full["error_code"] == 0 and session_id > 0
        assert sorted(partitions_of(full)) == [0, 1, 2]
        assert partitions_of(full)[0]["records"]
        # The consumer moved partition 0 to offset 2: nothing changed anywhere.
        quiet = await fetch(ctx, fetch_body(session_id, 1, {0: 2}))
        assert (quiet["error_code"], quiet["session_id"], quiet["responses"]) == (0, session_id, [])
        # New records on partition 1 only: the answer carries partition 1 alone.
        await append(ctx.replica_manager, 1, 3)
        news = partitions_of(await fetch(ctx, fetch_body(session_id, 2, {})))
        assert list(news) == [1] and news[1]["records"] and news[1]["high_watermark"] == 3
        # Partition 2 is forgotten; its new records are not sent, partition 1's offset moved.
        await append(ctx.replica_manager, 2, 1)
        after = await fetch(ctx, fetch_body(session_id, 3, {1: 3}, forgotten=[2]))
        assert after["responses"] == []
        assert ctx.fetch_sessions.total_partitions == 2
        # Errors: a stale epoch, an unknown session, a topic-name request on an id session.
        stale = await fetch(ctx, fetch_body(session_id, 3, {}))
        assert stale["error_code"] == ErrorCode.INVALID_FETCH_SESSION_EPOCH
        assert stale["responses"] == []
        unknown = await fetch(ctx, fetch_body(session_id + 1, 1, {}))
        assert unknown["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        by_name = await fetch(ctx, fetch_body(session_id, 4, {}, version=12), version=12)
        assert by_name["error_code"] == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
        # The session still works at its epoch; FINAL closes it and answers in full.
        assert (await fetch(ctx, fetch_body(session_id, 4, {})))["error_code"] == 0
        final = await fetch(ctx, fetch_body(session_id, -1, {0: 0, 1: 0}))
        assert final["session_id"] == 0 and sorted(partitions_of(final)) == [0, 1]
        assert len(ctx.fetch_sessions) == 0
        assert ctx.fetch_sessions.incremental_fetches == 4

    asyncio.run(scenario())


def test_sessionless_and_name_sessions(tmp_path: Path) -> None:
    async def scenario() -> None:
        ctx = make_context(tmp_path, partitions=2)
        legacy = await fetch(ctx, fetch_body(0, -1, {0: 0, 1: 0}))
        assert legacy["session_id"] == 0 and len(ctx.fetch_sessions) == 0
        # Before v13 a session keys partitions by topic name.
        full = await fetch(ctx, fetch_body(0, 0, {0: 0, 1: 0}, version=12), version=12)
        session_id = full["session_id"]
        assert session_id > 0
        await append(ctx.replica_manager, 1, 1)
        body = fetch_body(session_id, 1, {}, forgotten=[0], version=12)
        news = partitions_of(await fetch(ctx, body, version=12))
        assert list(news) == [1] and news[1]["high_watermark"] == 1

    asyncio.run(scenario())


def test_incremental_long_poll_wakes_on_new_records(tmp_path: Path) -> None:
    async def scenario() -> None:
        ctx = make_context(tmp_path, partitions=2)
        session_id = (await fetch(ctx, fetch_body(0, 0, {0: 0, 1: 0})))["session_id"]
        body = {**fetch_body(session_id, 1, {}), "max_wait_ms": 5_000, "min_bytes": 1}
        waiting = asyncio.create_task(fetch(ctx, body))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await append(ctx.replica_manager, 1, 1)
        answer = await asyncio.wait_for(waiting, 2.0)
        assert list(partitions_of(answer)) == [1]

    asyncio.run(scenario())


def committed(session_id: int, epoch: int, offsets: dict[int, int]) -> dict[str, Any]:
    return {**fetch_body(session_id, epoch, offsets), "isolation_level": 1}


def test_read_committed_session_reports_the_lso(tmp_path: Path) -> None:
    """An open transaction holds the LSO; its commit moves the LSO, which the incremental
    answer reports with the committed records."""

    async def scenario() -> None:
        ctx = make_context(tmp_path, partitions=2)
        rm = ctx.replica_manager
        records = build_batch(
            [(None, b"txn")],
            producer_id=5,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        )
        await rm.append(TOPIC, 0, bytearray(records), 1)
        body = committed(0, 0, {0: 0, 1: 0})
        full = await fetch(ctx, body)
        session_id = full["session_id"]
        assert partitions_of(full)[0]["last_stable_offset"] == 0
        assert not partitions_of(full)[0]["records"]
        quiet = await fetch(ctx, committed(session_id, 1, {}))
        assert quiet["responses"] == []
        await rm.append_control_marker(TOPIC, 0, 5, 0, 0, committed=True)
        news = partitions_of(await fetch(ctx, committed(session_id, 2, {})))
        assert list(news) == [0] and news[0]["last_stable_offset"] == 2 and news[0]["records"]

    asyncio.run(scenario())
