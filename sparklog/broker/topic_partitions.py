"""DescribeTopicPartitions (API key 75, KIP-966): partition metadata in pages, from the image.

Contract (Kafka's ``DescribeTopicPartitionsRequestHandler``):
- An empty ``topics`` lists every topic; otherwise the named ones (an unknown name is answered
  with UNKNOWN_TOPIC_OR_PARTITION and no partitions). Topics are described in name order.
- ``cursor`` (topic, partition) resumes a listing: topics before the cursor's are skipped and
  the cursor's topic starts at its partition. A cursor naming a topic outside the requested
  ones, or a negative partition, fails the request: every requested topic is answered with
  INVALID_REQUEST.
- At most ``min(response_partition_limit, 2000)`` partitions are returned (Kafka's
  ``max.request.partition.size.limit`` default); when more remain, ``next_cursor`` names the
  first partition left out, else it is null.
- Each partition carries its ELR and last known ELR (``eligible_leader_replicas`` /
  ``last_known_elr``), as the controller recorded them.
"""

from __future__ import annotations

from sparklog.broker.context import BrokerContext
from sparklog.broker.metadata_apis import INTERNAL_TOPICS, live_brokers, partition_entry
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponseNextCursor,
    DescribeTopicPartitionsResponseTopics,
)
from sparklog.protocol.schema import AUTHORIZED_OPERATIONS_OMITTED

MAX_PARTITIONS_PER_RESPONSE = 2000


def _unknown(name: str) -> DescribeTopicPartitionsResponseTopics:
    return {
        "error_code": int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        "name": name,
        "topic_id": b"\x00" * 16,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def _start(
    body: DescribeTopicPartitionsRequest, names: list[str], fetch_all: bool
) -> tuple[str, int]:
    cursor = body["cursor"]
    if cursor is None:
        return "", 0
    topic, index = cursor["topic_name"], cursor["partition_index"]
    if index < 0:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Cursor partition index is negative.")
    if not fetch_all and topic not in names:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            f"Requested cursor topic {topic} is not in the requested topics.",
        )
    return topic, index


async def handle_describe_topic_partitions(
    ctx: BrokerContext, request: TypedRequest[DescribeTopicPartitionsRequest]
) -> DescribeTopicPartitionsResponse:
    body = request.body
    image = ctx.image
    requested = [t["name"] for t in body["topics"]]
    fetch_all = not requested
    names = sorted(image.topics.by_name) if fetch_all else sorted(set(requested))
    try:
        cursor_topic, cursor_index = _start(body, names, fetch_all)
    except KafkaApiError as exc:
        # As Kafka's error response: every requested topic carries the error.
        failed = [_unknown(name) for name in requested]
        for topic_error in failed:
            topic_error["error_code"] = int(exc.code)
        return {"throttle_time_ms": 0, "topics": failed, "next_cursor": None}
    remaining = max(0, min(int(body["response_partition_limit"]), MAX_PARTITIONS_PER_RESPONSE))
    live = live_brokers(image)
    topics: list[DescribeTopicPartitionsResponseTopics] = []
    next_cursor: DescribeTopicPartitionsResponseNextCursor | None = None
    for name in names:
        if name < cursor_topic:
            continue
        topic = image.topics.by_name.get(name)
        if topic is None:
            topics.append(_unknown(name))
            continue
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        start = cursor_index if name == cursor_topic else 0
        indexes = [i for i in sorted(topic.partitions) if i >= start]
        taken, left = indexes[:remaining], indexes[remaining:]
        remaining -= len(taken)
        topics.append(
            {
                "error_code": 0,
                "name": name,
                "topic_id": topic.topic_id,
                "is_internal": name in INTERNAL_TOPICS,
                "partitions": [partition_entry(i, topic.partitions[i], live) for i in taken],
                "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
            }
        )
        if left:
            next_cursor = {"topic_name": name, "partition_index": left[0]}
            break
    return {"throttle_time_ms": 0, "topics": topics, "next_cursor": next_cursor}
