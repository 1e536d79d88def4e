"""The transaction API handlers, called through the wire codec at each version: error
shaping per version (PRODUCER_FENCED before v2), the v4+ batched AddPartitionsToTxn form,
unknown partitions, InitProducerId routing and OffsetFetch's require_stable."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sparklog.broker.apis import HANDLERS
from sparklog.broker.context import BrokerContext
from sparklog.broker.producer_ids import ProducerIdManager
from sparklog.config import ServerConfig
from sparklog.coordinator.coordinator import OFFSETS_TOPIC, GroupCoordinator
from sparklog.coordinator.group_metadata import GroupConfig
from sparklog.coordinator.txn_coordinator import (
    TRANSACTION_STATE_TOPIC,
    TransactionCoordinator,
    TxnConfig,
)
from sparklog.metadata.image import (
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    TopicsImage,
)
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from sparklog.protocol.messages import API_BY_KEY, API_BY_NAME
from sparklog.protocol.types import join_chunks
from tests.unit.coordinator.txn_support import FakeClock, Markers, ProducerIds, replica_manager

PROPS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.bootstrap.servers": "localhost:9093",
    "offsets.topic.num.partitions": "2",
    "transaction.state.log.num.partitions": "2",
}


def _image() -> MetadataImage:
    registration = PartitionRegistration((1,), (1,), 1, 0, 0)
    topic = TopicImage("a", b"a" * 16, {0: registration, 1: registration})
    return MetadataImage(topics=TopicsImage({topic.topic_id: topic}, {"a": topic}))


def context(root: Path) -> BrokerContext:
    clock = FakeClock()
    replicas = replica_manager(root, {TRANSACTION_STATE_TOPIC: 2, OFFSETS_TOPIC: 2}, clock)

    async def no_blocks() -> tuple[int, int]:
        return 5000, 100

    ctx = BrokerContext(
        config=ServerConfig.from_props(PROPS),
        cluster_id="c",
        replica_manager=replicas,
        controller=None,  # type: ignore[arg-type]
        image_supplier=_image,
        producer_ids=ProducerIdManager(no_blocks),
    )
    ctx.groups = GroupCoordinator(GroupConfig(), 2, ctx.coordinator_runtime, clock=clock)
    ctx.transactions = TransactionCoordinator(
        TxnConfig(num_partitions=2), ctx.coordinator_runtime, ProducerIds(), Markers(), clock=clock
    )
    return ctx


async def call(ctx: BrokerContext, name: str, version: int, body: dict[str, Any]) -> Any:
    api = API_BY_NAME[name]
    frame = join_chunks(encode_request(api, version, 7, "test", body))[4:]
    request = decode_request(frame, API_BY_KEY)
    response = await HANDLERS[api.key](ctx, request, "PLAINTEXT")
    assert response is not None
    encoded = join_chunks(encode_response(api, version, 7, response))[4:]
    return decode_response(api, version, encoded)[1]


async def init(ctx: BrokerContext, version: int = 4, tid: str = "tx") -> tuple[int, int]:
    body = {"transactional_id": tid, "transaction_timeout_ms": 60_000}
    response = await call(ctx, "InitProducerId", version, body)
    assert response["error_code"] == 0, response
    return response["producer_id"], response["producer_epoch"]


def add_v3(version: int, pid: int, epoch: int, topics: dict[str, list[int]]) -> dict[str, Any]:
    return {
        "v3_and_below_transactional_id": "tx",
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }


def errors_v3(response: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {
        (t["name"], p["partition_index"]): p["partition_error_code"]
        for t in response["results_by_topic_v3_and_below"]
        for p in t["results_by_partition"]
    }


def test_init_producer_id_routes_transactional_ids(tmp_path: Path) -> None:
    async def run() -> None:
        ctx = context(tmp_path)
        assert await init(ctx) == (1000, 0)
        assert await init(ctx) == (1000, 1)
        plain = await call(ctx, "InitProducerId", 4, {"transactional_id": None})
        assert (plain["error_code"], plain["producer_id"]) == (0, 5000)
        bad = await call(
            ctx, "InitProducerId", 4, {"transactional_id": "tx", "transaction_timeout_ms": 10**9}
        )
        assert bad["error_code"] == ErrorCode.INVALID_TRANSACTION_TIMEOUT

    asyncio.run(run())


@pytest.mark.parametrize(("version", "fenced"), [(1, 47), (2, 90), (3, 90)])
def test_add_partitions_v0_3(tmp_path: Path, version: int, fenced: int) -> None:
    async def run() -> None:
        ctx = context(tmp_path)
        pid, epoch = await init(ctx)
        ok = await call(
            ctx, "AddPartitionsToTxn", version, add_v3(version, pid, epoch, {"a": [0, 1]})
        )
        assert errors_v3(ok) == {("a", 0): 0, ("a", 1): 0}
        unknown = await call(
            ctx,
            "AddPartitionsToTxn",
            version,
            add_v3(version, pid, epoch, {"a": [0, 7], "zz": [0]}),
        )
        assert errors_v3(unknown) == {
            ("a", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
            ("a", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("zz", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        stale = await call(
            ctx, "AddPartitionsToTxn", version, add_v3(version, pid, epoch + 5, {"a": [0]})
        )
        assert errors_v3(stale) == {("a", 0): fenced}  # INVALID_PRODUCER_EPOCH before v2
        end = await call(
            ctx,
            "EndTxn",
            version,
            {
                "transactional_id": "tx",
                "producer_id": pid,
                "producer_epoch": epoch + 5,
                "committed": True,
            },
        )
        assert end["error_code"] == fenced

    asyncio.run(run())


def test_add_partitions_v4_batched_and_verify_only(tmp_path: Path) -> None:
    async def run() -> None:
        ctx = context(tmp_path)
        pid, epoch = await init(ctx)
        body = {
            "transactions": [
                {
                    "transactional_id": "tx",
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "verify_only": False,
                    "topics": [{"name": "a", "partitions": [0]}],
                },
                {
                    "transactional_id": "other",
                    "producer_id": 1,
                    "producer_epoch": 0,
                    "verify_only": False,
                    "topics": [{"name": "a", "partitions": [1]}],
                },
            ]
        }
        response = await call(ctx, "AddPartitionsToTxn", 5, body)
        codes = {
            r["transactional_id"]: r["topic_results"][0]["results_by_partition"][0][
                "partition_error_code"
            ]
            for r in response["results_by_transaction"]
        }
        assert codes == {"tx": 0, "other": ErrorCode.INVALID_PRODUCER_ID_MAPPING}
        verify = {
            "transactions": [
                {
                    "transactional_id": "tx",
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "verify_only": True,
                    "topics": [{"name": "a", "partitions": [0, 1]}],
                }
            ]
        }
        response = await call(ctx, "AddPartitionsToTxn", 5, verify)
        [result] = response["results_by_transaction"]
        assert {
            p["partition_index"]: p["partition_error_code"]
            for p in result["topic_results"][0]["results_by_partition"]
        } == {0: 0, 1: ErrorCode.TRANSACTION_ABORTABLE}

    asyncio.run(run())


def test_offsets_in_a_transaction_through_the_apis(tmp_path: Path) -> None:
    async def run() -> None:
        ctx = context(tmp_path)
        pid, epoch = await init(ctx)
        ids = {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch}
        added = await call(ctx, "AddOffsetsToTxn", 3, {**ids, "group_id": "g"})
        assert added["error_code"] == 0
        commit = {
            **ids,
            "group_id": "g",
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": "a",
                    "partitions": [
                        {"partition_index": 0, "committed_offset": 42, "committed_metadata": ""},
                        {"partition_index": 9, "committed_offset": 1, "committed_metadata": ""},
                    ],
                }
            ],
        }
        response = await call(ctx, "TxnOffsetCommit", 3, commit)
        assert [p["error_code"] for p in response["topics"][0]["partitions"]] == [
            0,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ]
        fetch = {
            "groups": [
                {
                    "group_id": "g",
                    "member_id": None,
                    "member_epoch": -1,
                    "topics": [{"name": "a", "partition_indexes": [0]}],
                }
            ],
            "require_stable": True,
        }
        unstable = await call(ctx, "OffsetFetch", 8, fetch)
        [partition] = unstable["groups"][0]["topics"][0]["partitions"]
        assert partition["error_code"] == ErrorCode.UNSTABLE_OFFSET_COMMIT
        described = await call(ctx, "DescribeTransactions", 0, {"transactional_ids": ["tx"]})
        [state] = described["transaction_states"]
        assert state["transaction_state"] == "Ongoing"
        assert ctx.groups is not None
        assert state["topics"] == [
            {"topic": OFFSETS_TOPIC, "partitions": [ctx.groups.partition_for("g")]}
        ]
        listed = await call(
            ctx,
            "ListTransactions",
            1,
            {
                "state_filters": ["Ongoing", "Bogus"],
                "producer_id_filters": [],
                "duration_filter": -1,
            },
        )
        assert listed["unknown_state_filters"] == ["Bogus"]
        assert [t["transactional_id"] for t in listed["transaction_states"]] == ["tx"]

    asyncio.run(run())
