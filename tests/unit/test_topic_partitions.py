"""DescribeTopicPartitions (75) paging and ListConfigResources (74) on a hand-made image."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from sparklog.broker.admin import handle_list_config_resources
from sparklog.broker.topic_partitions import handle_describe_topic_partitions
from sparklog.metadata.image import (
    BrokerRegistration,
    ClusterImage,
    ConfigsImage,
    Endpoint,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    TopicsImage,
)
from sparklog.protocol.headers import Request, RequestHeader
from sparklog.protocol.messages import API_BY_KEY

ELR = PartitionRegistration(
    replicas=(1, 2, 3),
    isr=(1,),
    leader=1,
    leader_epoch=4,
    partition_epoch=9,
    elr=(2,),
    last_known_elr=(3,),
)


def _image() -> MetadataImage:
    topics = {
        name: TopicImage(name, bytes([i + 1]) * 16, {p: ELR for p in range(count)})
        for i, (name, count) in enumerate((("a", 3), ("b", 2), ("c", 1)))
    }
    endpoint = Endpoint("PLAINTEXT", "h", 9092, 0)
    brokers = {b: BrokerRegistration(b, 1, b"\x00" * 16, (endpoint,), fenced=False) for b in (2, 1)}
    configs = ConfigsImage({(32, "g1"): {"consumer.session.timeout.ms": "45000"}, (2, "a"): {}})
    return MetadataImage(
        cluster=ClusterImage(brokers),
        topics=TopicsImage(by_id={t.topic_id: t for t in topics.values()}, by_name=topics),
        configs=configs,
    )


def _call(handler: Any, key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    ctx: Any = SimpleNamespace(image=_image())
    request = Request(RequestHeader(key, version, 1, "t"), API_BY_KEY[key], body)
    if key == 74:
        return asyncio.run(handler(ctx, request, "PLAINTEXT"))
    return asyncio.run(handler(ctx, request))


def describe(names: list[str], limit: int, cursor: tuple[str, int] | None) -> dict[str, Any]:
    body = {
        "topics": [{"name": n} for n in names],
        "response_partition_limit": limit,
        "cursor": None
        if cursor is None
        else {"topic_name": cursor[0], "partition_index": cursor[1]},
    }
    return _call(handle_describe_topic_partitions, 75, 0, body)


def pages(names: list[str], limit: int) -> list[list[tuple[str, int]]]:
    out: list[list[tuple[str, int]]] = []
    cursor = None
    while True:
        page = describe(names, limit, cursor)
        out.append(
            [(t["name"], p["partition_index"]) for t in page["topics"] for p in t["partitions"]]
        )
        if page["next_cursor"] is None:
            return out
        cursor = (page["next_cursor"]["topic_name"], page["next_cursor"]["partition_index"])
        assert len(out) < 10


def test_pages_cover_every_partition_once_in_name_order() -> None:
    assert pages([], 2) == [[("a", 0), ("a", 1)], [("a", 2), ("b", 0)], [("b", 1), ("c", 0)]]
    assert pages(["c", "a"], 3) == [[("a", 0), ("a", 1), ("a", 2)], [("c", 0)]]
    # More than the broker's own limit (2000) is capped, never an error.
    assert pages([], 10_000) == [[("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("c", 0)]]


def test_partitions_carry_elr_and_last_known_elr() -> None:
    [topic] = describe(["b"], 2000, None)["topics"]
    assert topic["topic_id"] == b"\x02" * 16
    assert [(p["eligible_leader_replicas"], p["last_known_elr"]) for p in topic["partitions"]] == [
        ([2], [3]),
        ([2], [3]),
    ]


def test_unknown_topics_and_bad_cursors() -> None:
    unknown = describe(["a", "zz"], 2000, None)["topics"]
    assert [(t["name"], t["error_code"]) for t in unknown] == [("a", 0), ("zz", 3)]
    for cursor in (("b", 0), ("a", -1)):
        failed = describe(["a"], 2000, cursor)
        assert [(t["name"], t["error_code"]) for t in failed["topics"]] == [("a", 42)]
        assert failed["next_cursor"] is None


@pytest.mark.parametrize(
    ("version", "types", "expected"),
    [
        (0, [], []),
        (1, [4, 2], [("1", 4), ("2", 4), ("a", 2), ("b", 2), ("c", 2)]),
        (
            1,
            [],
            [("g1", 32), ("1", 8), ("2", 8), ("1", 4), ("2", 4), ("a", 2), ("b", 2), ("c", 2)],
        ),
    ],
)
def test_list_config_resources(version: int, types: list[int], expected: list[Any]) -> None:
    # A decoded v0 request holds the v1 field at its default (the codec fills every key).
    body = {"resource_types": types if version else []}
    answer = _call(handle_list_config_resources, 74, version, body)
    assert answer["error_code"] == 0
    assert [
        (r["resource_name"], r["resource_type"]) for r in answer["config_resources"]
    ] == expected


def test_list_config_resources_refuses_unknown_types() -> None:
    answer = _call(handle_list_config_resources, 74, 1, {"resource_types": [2, 64]})
    assert (answer["error_code"], answer["config_resources"]) == (35, [])
