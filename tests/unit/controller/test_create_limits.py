"""Bounded user operations: CreateTopics / CreatePartitions over MAX_RECORDS_PER_USER_OP.

Kafka's QuorumController collects one operation's records in a ``BoundedList`` of 10,000 and
answers an overflow with POLICY_VIOLATION "Unable to perform excessively large batch
operation." for every topic of the request; nothing is written.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from sparklog.controller.topics import MAX_RECORDS_PER_USER_OP
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    CreatePartitionsRequest,
    CreateTopicsRequestTopicsConfigs,
)
from tests.unit.controller.test_quorum_controller import Node, create, topic

EXCESSIVE = "Unable to perform excessively large batch operation."


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


def partitions(node: Node, name: str) -> int:
    found = node.controller.image.topics.get_topic(name)
    assert found is not None
    return len(found.partitions)


def grow(node: Node, name: str, count: int, validate_only: bool = False) -> list[dict[str, Any]]:
    request: CreatePartitionsRequest = {
        "topics": [{"name": name, "count": count, "assignments": None}],
        "timeout_ms": 1000,
        "validate_only": validate_only,
    }
    response = node.controller.run(node.controller.create_partitions(request, 3))
    return [{**result} for result in response["results"]]


def test_the_bound_is_kafkas() -> None:
    assert MAX_RECORDS_PER_USER_OP == 10_000


def test_a_topic_of_9999_partitions_fits_one_operation(node: Node) -> None:
    (result,) = create(node, topic("fits", 9_999, 1))
    assert result["error_code"] == 0
    assert partitions(node, "fits") == 9_999


def test_a_topic_of_10000_partitions_is_refused_whole(node: Node) -> None:
    offset = node.controller.image.provenance.last_offset
    (result,) = create(node, topic("big", 10_000, 1))
    assert result["error_code"] == ErrorCode.POLICY_VIOLATION
    assert result["error_message"].startswith(EXCESSIVE)
    assert "at least 10001 metadata records" in result["error_message"]
    assert "at most 10000" in result["error_message"]
    assert node.controller.image.topics.get_topic("big") is None
    assert node.controller.image.provenance.last_offset == offset  # nothing written


def test_a_million_partitions_are_refused_at_once(node: Node) -> None:
    started = time.monotonic()
    (result,) = create(node, topic("huge", 1_000_000, 1))
    assert result["error_code"] == ErrorCode.POLICY_VIOLATION
    assert EXCESSIVE in result["error_message"]
    # Refused before any replica is placed: well under what placing a million would take.
    assert time.monotonic() - started < 1.0


def test_the_bound_counts_the_whole_request_and_fails_every_topic(node: Node) -> None:
    results = create(
        node,
        topic("a", 6_000, 1),
        topic("b", 3_000, 1),
        topic("bad/name", 1, 1),  # an error of its own; Kafka overwrites it too
        topic("c", 2_000, 1),
    )
    assert [r["error_code"] for r in results] == [ErrorCode.POLICY_VIOLATION] * 4
    assert all(EXCESSIVE in r["error_message"] for r in results)
    assert node.controller.image.topics.get_topic("b") is None


def test_configs_count_towards_the_bound(node: Node) -> None:
    configs: list[CreateTopicsRequestTopicsConfigs] = [{"name": "retention.ms", "value": "1000"}]
    (refused,) = create(node, topic("cfg", 9_999, 1, configs=configs))
    assert refused["error_code"] == ErrorCode.POLICY_VIOLATION
    (fits,) = create(node, topic("cfg", 9_998, 1, configs=configs))
    assert fits["error_code"] == 0


def test_validate_only_is_bounded_too(node: Node) -> None:
    (result,) = create(node, topic("v", 20_000, 1), validate_only=True)
    assert result["error_code"] == ErrorCode.POLICY_VIOLATION


def test_create_partitions_adds_at_most_the_bound_per_operation(node: Node) -> None:
    assert create(node, topic("grow", 5, 1))[0]["error_code"] == 0
    (refused,) = grow(node, "grow", 5 + MAX_RECORDS_PER_USER_OP + 1)
    assert refused["error_code"] == ErrorCode.POLICY_VIOLATION
    assert EXCESSIVE in refused["error_message"]
    assert partitions(node, "grow") == 5
    (accepted,) = grow(node, "grow", 5 + MAX_RECORDS_PER_USER_OP)
    assert accepted["error_code"] == 0
    assert partitions(node, "grow") == 10_005


def test_ordinary_errors_still_come_first(node: Node) -> None:
    (bad,) = create(node, topic("neg", 0, 1))
    assert bad["error_code"] == ErrorCode.INVALID_PARTITIONS
    (missing,) = grow(node, "nope", 20_000)
    assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
