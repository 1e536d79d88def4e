"""Metadata (API key 3) and DescribeCluster (API key 60), answered from the metadata image.

Brokers are described by the endpoint of the listener the request arrived on, as Kafka does, so
a client that bootstrapped on one listener keeps using it. A Metadata request for unknown topics
creates them when both the request and ``auto.create.topics.enable`` allow it; the controller
commits the topic before we answer, so the client sees its leader in the same response.
"""

from __future__ import annotations

import logging

from sparklog.broker.context import BrokerContext
from sparklog.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseBrokers,
    DescribeTopicPartitionsResponseTopicsPartitions,
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBrokers,
    MetadataResponseTopics,
    MetadataResponseTopicsPartitions,
)
from sparklog.protocol.schema import AUTHORIZED_OPERATIONS_OMITTED

log = logging.getLogger(__name__)

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def _brokers(image: MetadataImage, listener: str) -> list[MetadataResponseBrokers]:
    brokers: list[MetadataResponseBrokers] = []
    for broker in sorted(image.cluster.brokers.values(), key=lambda b: b.broker_id):
        if broker.fenced:
            continue
        endpoint = broker.endpoint(listener)
        if endpoint is None:
            continue
        brokers.append(
            {
                "node_id": broker.broker_id,
                "host": endpoint.host,
                "port": endpoint.port,
                "rack": broker.rack,
            }
        )
    return brokers


def live_brokers(image: MetadataImage) -> set[int]:
    return {b.broker_id for b in image.cluster.brokers.values() if not b.fenced}


def partition_entry(
    index: int, registration: PartitionRegistration, live: set[int]
) -> DescribeTopicPartitionsResponseTopicsPartitions:
    """One partition as Metadata and DescribeTopicPartitions describe it (ELR included; a
    response version without those fields leaves them out). Metadata's partition TypedDict has
    a subset of the keys, so the same dict serves both."""
    leader = registration.leader if registration.leader in live else -1
    return {
        "error_code": int(ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE),
        "partition_index": index,
        "leader_id": leader,
        "leader_epoch": registration.leader_epoch,
        "replica_nodes": list(registration.replicas),
        "isr_nodes": list(registration.isr),
        "eligible_leader_replicas": list(registration.elr),
        "last_known_elr": list(registration.last_known_elr),
        "offline_replicas": [r for r in registration.replicas if r not in live],
    }


def _topic_response(topic: TopicImage, image: MetadataImage) -> MetadataResponseTopics:
    live = live_brokers(image)
    partitions: list[MetadataResponseTopicsPartitions] = [
        partition_entry(i, topic.partitions[i], live) for i in sorted(topic.partitions)
    ]
    return {
        "error_code": 0,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.name in INTERNAL_TOPICS,
        "partitions": partitions,
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def _missing_topic(name: str | None, topic_id: bytes, code: int) -> MetadataResponseTopics:
    return {
        "error_code": int(code),
        "name": name,
        "topic_id": topic_id,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


async def handle_metadata(
    ctx: BrokerContext, request: TypedRequest[MetadataRequest], listener: str
) -> MetadataResponse:
    body = request.body
    version = request.header.api_version
    requested = body["topics"]
    image = ctx.image
    all_topics = requested is None or (version == 0 and len(requested) == 0)
    topics: list[MetadataResponseTopics] = []
    if all_topics:
        topics = [_topic_response(t, image) for t in image.topics.by_name.values()]
    else:
        allow_create = body["allow_auto_topic_creation"] and bool(
            ctx.config.get("auto.create.topics.enable")
        )
        to_create: list[str] = []
        assert requested is not None  # all_topics otherwise
        for wanted in requested:
            name = wanted["name"]
            topic_id = bytes(wanted["topic_id"])
            topic = None
            if name is None and topic_id != b"\x00" * 16:
                topic = image.topics.by_id.get(topic_id)
                if topic is None:
                    topics.append(_missing_topic(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID))
                    continue
            elif name is not None:
                topic = image.topics.by_name.get(name)
            if topic is not None:
                topics.append(_topic_response(topic, image))
            elif name is not None and allow_create:
                to_create.append(name)
            else:
                topics.append(_missing_topic(name, topic_id, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        if to_create:
            topics.extend(await _auto_create(ctx, to_create))
    return {
        "throttle_time_ms": 0,
        "brokers": _brokers(ctx.image, listener),
        "cluster_id": ctx.cluster_id,
        "controller_id": ctx.controller_id,
        "topics": topics,
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        "error_code": 0,
    }


async def _auto_create(ctx: BrokerContext, names: list[str]) -> list[MetadataResponseTopics]:
    request = {
        "topics": [
            {
                "name": name,
                "num_partitions": -1,
                "replication_factor": -1,
                "assignments": [],
                "configs": [],
            }
            for name in names
        ],
        "timeout_ms": 30000,
        "validate_only": False,
    }
    response = await ctx.controller("create_topics", request, 7)
    image = ctx.image
    out: list[MetadataResponseTopics] = []
    for result in response["topics"]:
        name = result["name"]
        topic = image.topics.by_name.get(name)
        if topic is not None:
            out.append(_topic_response(topic, image))
        else:
            code = result["error_code"]
            if code == ErrorCode.TOPIC_ALREADY_EXISTS:
                code = ErrorCode.LEADER_NOT_AVAILABLE
            log.info("Auto-creation of topic %s failed: %s", name, result.get("error_message"))
            out.append(_missing_topic(name, b"\x00" * 16, code))
    return out


async def handle_describe_cluster(
    ctx: BrokerContext, request: TypedRequest[DescribeClusterRequest], listener: str
) -> DescribeClusterResponse:
    image = ctx.image
    endpoint_type = request.body["endpoint_type"]
    if endpoint_type not in (1, 2):
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.UNSUPPORTED_ENDPOINT_TYPE),
            "error_message": f"Unsupported endpoint type {endpoint_type}",
            "endpoint_type": endpoint_type,
            "cluster_id": ctx.cluster_id,
            "controller_id": -1,
            "brokers": [],
        }
    include_fenced = request.body["include_fenced_brokers"]
    brokers: list[DescribeClusterResponseBrokers] = []
    for broker in sorted(image.cluster.brokers.values(), key=lambda b: b.broker_id):
        endpoint = broker.endpoint(listener)
        if endpoint is None or (broker.fenced and not include_fenced):
            continue
        brokers.append(
            {
                "broker_id": broker.broker_id,
                "host": endpoint.host,
                "port": endpoint.port,
                "rack": broker.rack,
                "is_fenced": broker.fenced,
            }
        )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": endpoint_type,
        "cluster_id": ctx.cluster_id,
        "controller_id": ctx.controller_id,
        "brokers": brokers,
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }
