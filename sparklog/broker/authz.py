"""Every client API's authorization, as Kafka's ``KafkaApis`` does it, around the handlers.

When ``authorizer.class.name`` is set, :func:`authorized_call` runs before a request's handler
(the handlers themselves know nothing of principals). Per API it either

- refuses the whole request with the code a Kafka client expects (GROUP_AUTHORIZATION_FAILED for
  JoinGroup without READ on the group, CLUSTER_AUTHORIZATION_FAILED for ElectLeaders without
  ALTER on the cluster, TRANSACTIONAL_ID_AUTHORIZATION_FAILED for EndTxn without WRITE on the
  transactional id, ...), or
- removes the resources the principal may not touch from the request, lets the handler serve
  the rest, and adds those resources back to the response with TOPIC_AUTHORIZATION_FAILED (or
  the resource's code), in Kafka's places: per partition for Produce, Fetch, ListOffsets,
  OffsetCommit; per topic for CreateTopics, DeleteTopics; per resource for DescribeConfigs;
- or filters what the response lists: Metadata and DescribeTopicPartitions leave out topics the
  principal may not DESCRIBE (a topic asked for by name answers TOPIC_AUTHORIZATION_FAILED),
  ListGroups / ListTransactions list only describable groups / transactional ids.

Inter-broker requests need CLUSTER_ACTION on the cluster: a replica's Fetch or
OffsetForLeaderEpoch, WriteTxnMarkers, AddPartitionsToTxn v4+ (verification). An API this module
has no rule for is refused unless the principal may ALTER the cluster (fail closed).

Checks cost a few dictionary look-ups per topic or group, never per record. The operations per
API are those of Kafka 4.x's ``KafkaApis`` / ``AuthHelper`` (see the tables below).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, cast

from sparklog.broker.authz_groups import GROUP_RULES
from sparklog.broker.authz_share import SHARE_RULES
from sparklog.broker.authz_support import (
    Check,
    ClusterRule,
    Rule,
    Serve,
    Served,
    ShapeBody,
    error_response,
    per_topic,
    serve_allowed,
    split,
)
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponseTopics,
    FetchRequest,
    FetchResponse,
    FetchResponseResponsesPartitions,
    MetadataRequest,
    MetadataRequestTopics,
    MetadataResponse,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    ProduceRequestTopicData,
    ProduceResponse,
)
from sparklog.security.acls import CLUSTER_NAME
from sparklog.security.acls import AclOperation as Op
from sparklog.security.acls import ResourceType as Res
from sparklog.security.authorizer import StandardAuthorizer
from sparklog.security.principal import SessionContext

TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


async def _produce(check: Check, request: TypedRequest[ProduceRequest], serve: Serve) -> Served:
    body = request.body
    txn = body.get("transactional_id")
    if txn is not None and not check.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, txn):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return _produce_errors(request, body["topic_data"], code, everything=True)
    return await per_topic(
        check,
        request,
        serve,
        Op.WRITE,
        req_topics="topic_data",
        req_partitions="partition_data",
        req_index="index",
        rsp_topics="responses",
        rsp_partitions="partition_responses",
        rsp_index="index",
        extra={"base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1},
    )


def _produce_errors(
    request: TypedRequest[ProduceRequest],
    topics: list[ProduceRequestTopicData],
    code: ErrorCode,
    everything: bool,
) -> ProduceResponse | None:
    if request.body.get("acks", -1) == 0:
        return None
    return {
        "throttle_time_ms": 0,
        "responses": [
            {
                "name": t.get("name", ""),
                "topic_id": t.get("topic_id"),
                "partition_responses": [
                    {"index": p["index"], "error_code": int(code), "base_offset": -1}
                    for p in t["partition_data"]
                ],
            }
            for t in topics
        ],
    }


def is_replica_fetch(body: FetchRequest) -> bool:
    """A follower's Fetch (replica_id before v15, replica_state from v15), not a consumer's."""
    if int(body.get("replica_id", -1)) >= 0:
        return True
    state = body.get("replica_state")
    return state is not None and int(state.get("replica_id", -1)) >= 0


_REPLICA_FETCH = ClusterRule(Op.CLUSTER_ACTION, listed="responses")
# Kafka sends empty records, not null, with an error: librdkafka rejects a null set.
_DENIED_FETCH_PARTITION: FetchResponseResponsesPartitions = {
    "high_watermark": -1,
    "last_stable_offset": -1,
    "log_start_offset": -1,
    "preferred_read_replica": -1,
    "records": b"",
}


async def _fetch(check: Check, request: TypedRequest[FetchRequest], serve: Serve) -> Served:
    if is_replica_fetch(request.body):
        return await _REPLICA_FETCH(check, request, serve)
    served = await per_topic(
        check,
        request,
        serve,
        Op.READ,
        name_key="topic",
        req_partitions="partitions",
        req_index="partition",
        rsp_topics="responses",
        rsp_name="topic",
        rsp_partitions="partitions",
        rsp_index="partition_index",
        extra=_DENIED_FETCH_PARTITION,
    )
    response = cast("FetchResponse | None", served)
    if response is not None and request.body.get("session_epoch", -1) > 0:
        # An incremental fetch answers for partitions of its session the request does not
        # name: an ACL removed since they were added still applies (Kafka checks them all).
        for topic in response.get("responses") or ():
            if not check.topic(Op.READ, topic, "topic", quiet=True):
                topic["partitions"] = [
                    {
                        **_DENIED_FETCH_PARTITION,
                        "partition_index": p["partition_index"],
                        "error_code": int(TOPIC_DENIED),
                    }
                    for p in topic.get("partitions") or ()
                ]
    return response


async def _offset_for_leader_epoch(
    check: Check, request: TypedRequest[OffsetForLeaderEpochRequest], serve: Serve
) -> Served:
    if int(request.body.get("replica_id", -1)) >= 0:
        if check.cluster(Op.CLUSTER_ACTION):
            return await serve(request)
        return error_response(request, CLUSTER_DENIED)
    return await per_topic(
        check,
        request,
        serve,
        Op.DESCRIBE,
        name_key="topic",
        req_partitions="partitions",
        req_index="partition",
        rsp_name="topic",
        rsp_partitions="partitions",
        rsp_index="partition",
        extra={"leader_epoch": -1, "end_offset": -1},
    )


def _topic_partitions_rule(
    operation: Op,
    req_partitions: str,
    req_index: str | None,
    rsp_index: str,
    extra: Mapping[str, object] | None = None,
) -> Rule:
    async def rule(check: Check, request: TypedRequest[Any], serve: Serve) -> Served:
        return await per_topic(
            check,
            request,
            serve,
            operation,
            req_partitions=req_partitions,
            req_index=req_index,
            rsp_index=rsp_index,
            extra=extra or {},
        )

    return rule


async def _metadata(check: Check, request: TypedRequest[MetadataRequest], serve: Serve) -> Served:
    body = request.body
    requested = body.get("topics")
    denied: list[MetadataRequestTopics] = []
    if requested:
        allowed, denied = split(requested, lambda t: check.topic(Op.DESCRIBE, t, "name"))
        if request.header.api_version > 0:
            request = replace(request, body={**body, "topics": allowed})
    response = cast("MetadataResponse | None", await serve(request))
    if response is None:
        return None
    denied_names = {t.get("name") for t in denied}
    response["topics"] = [
        t
        for t in response.get("topics") or ()
        if t.get("name") not in denied_names and check.topic(Op.DESCRIBE, t, "name", quiet=True)
    ]
    if body.get("include_topic_authorized_operations"):
        for listed in response["topics"]:
            name = listed.get("name")
            if name:
                listed["topic_authorized_operations"] = check.authorized_operations(Res.TOPIC, name)
    if body.get("include_cluster_authorized_operations"):
        response["cluster_authorized_operations"] = check.authorized_operations(
            Res.CLUSTER, CLUSTER_NAME
        )
    for topic in denied:
        response["topics"].append(
            {
                "error_code": int(TOPIC_DENIED),
                "name": topic.get("name"),
                "topic_id": topic.get("topic_id") or bytes(16),
                "is_internal": False,
                "partitions": [],
            }
        )
    return response


async def _describe_topic_partitions(
    check: Check, request: TypedRequest[DescribeTopicPartitionsRequest], serve: Serve
) -> Served:
    response = cast("DescribeTopicPartitionsResponse | None", await serve(request))
    if response is None:
        return None
    topics: list[DescribeTopicPartitionsResponseTopics] = []
    for topic in response.get("topics") or ():
        if check.topic(Op.DESCRIBE, topic, "name", quiet=True):
            topics.append(topic)
        elif request.body.get("topics"):
            topics.append({**topic, "error_code": int(TOPIC_DENIED), "partitions": []})
    response["topics"] = topics
    return response


def _per_topic_named(operation: Op, rsp_topics: str, alt_create: bool = False) -> Rule:
    """CreateTopics / DeleteTopics / CreatePartitions: one result per topic name."""

    async def rule(check: Check, request: TypedRequest[Any], serve: Serve) -> Served:
        body: ShapeBody = request.body

        def ok(topic: ShapeBody) -> bool:
            if alt_create and check.cluster(Op.CREATE, quiet=True):
                return True
            return check.topic(operation, topic, "name")

        topics = list(body.get("topics") or ())
        allowed, denied = split(topics, ok)
        names = list(body.get("topic_names") or ())
        allowed_names = [n for n in names if ok({"name": n})]
        denied += [{"name": n} for n in names if n not in allowed_names]
        return await serve_allowed(
            request,
            serve,
            {"topics": allowed, "topic_names": allowed_names},
            rsp_topics,
            [
                {
                    "name": topic.get("name"),
                    "topic_id": topic.get("topic_id") or bytes(16),
                    "error_code": int(TOPIC_DENIED),
                    "error_message": None,
                }
                for topic in denied
            ],
        )

    return rule


_CONFIG_RESOURCES = {2: Res.TOPIC, 4: Res.CLUSTER, 8: Res.CLUSTER, 32: Res.GROUP}
_CONFIG_DENIED = {
    Res.TOPIC: TOPIC_DENIED,
    Res.CLUSTER: CLUSTER_DENIED,
    Res.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
}


def _configs_rule(operation: Op, rsp_key: str) -> Rule:
    """DescribeConfigs / AlterConfigs / IncrementalAlterConfigs: per resource."""

    async def rule(check: Check, request: TypedRequest[Any], serve: Serve) -> Served:
        body: ShapeBody = request.body
        denied: list[tuple[ShapeBody, ErrorCode]] = []
        allowed = []
        for resource in body.get("resources") or ():
            rtype = _CONFIG_RESOURCES.get(int(resource["resource_type"]))
            if rtype is None:
                allowed.append(resource)  # the handler answers an unsupported type
                continue
            name = resource["resource_name"] if rtype != Res.CLUSTER else None
            if check.allowed(operation, rtype, name):
                allowed.append(resource)
            else:
                denied.append((resource, _CONFIG_DENIED[rtype]))
        return await serve_allowed(
            request,
            serve,
            {"resources": allowed},
            rsp_key,
            [
                {
                    "error_code": int(code),
                    "error_message": None,
                    "resource_type": resource["resource_type"],
                    "resource_name": resource["resource_name"],
                    "configs": [],
                }
                for resource, code in denied
            ],
        )

    return rule


async def _unrestricted(check: Check, request: TypedRequest[Any], serve: Serve) -> Served:
    return await serve(request)


async def _describe_cluster(
    check: Check, request: TypedRequest[DescribeClusterRequest], serve: Serve
) -> Served:
    response = cast("DescribeClusterResponse | None", await serve(request))
    if response is not None and request.body.get("include_cluster_authorized_operations"):
        response["cluster_authorized_operations"] = check.authorized_operations(
            Res.CLUSTER, CLUSTER_NAME
        )
    return response


RULES: dict[int, Rule] = {
    0: _produce,
    1: _fetch,
    2: _topic_partitions_rule(
        Op.DESCRIBE,
        "partitions",
        "partition_index",
        "partition_index",
        {"timestamp": -1, "offset": -1, "leader_epoch": -1},
    ),
    3: _metadata,
    19: _per_topic_named(Op.CREATE, "topics", alt_create=True),
    20: _per_topic_named(Op.DELETE, "responses"),
    21: _topic_partitions_rule(Op.DELETE, "partitions", "partition_index", "partition_index"),
    23: _offset_for_leader_epoch,
    27: ClusterRule(Op.CLUSTER_ACTION),
    29: ClusterRule(Op.DESCRIBE),
    30: ClusterRule(Op.ALTER),
    31: ClusterRule(Op.ALTER),
    32: _configs_rule(Op.DESCRIBE_CONFIGS, "results"),
    33: _configs_rule(Op.ALTER_CONFIGS, "responses"),
    35: ClusterRule(Op.DESCRIBE, listed="results"),
    37: _per_topic_named(Op.ALTER, "results"),
    43: ClusterRule(Op.ALTER),
    44: _configs_rule(Op.ALTER_CONFIGS, "responses"),
    45: ClusterRule(Op.ALTER),
    46: ClusterRule(Op.DESCRIBE),
    48: ClusterRule(Op.DESCRIBE_CONFIGS),
    49: ClusterRule(Op.ALTER_CONFIGS),
    55: ClusterRule(Op.DESCRIBE),
    60: _describe_cluster,
    61: _topic_partitions_rule(Op.READ, "partition_indexes", None, "partition_index"),
    74: ClusterRule(Op.DESCRIBE_CONFIGS),
    75: _describe_topic_partitions,
    80: ClusterRule(Op.ALTER),
    81: ClusterRule(Op.ALTER),
    # SaslHandshake, SaslAuthenticate, ApiVersions: before or without authorization.
    17: _unrestricted,
    36: _unrestricted,
    18: _unrestricted,
}
RULES.update(GROUP_RULES)
RULES.update(SHARE_RULES)
_FAIL_CLOSED = ClusterRule(Op.ALTER)


async def authorized_call(
    authorizer: StandardAuthorizer,
    session: SessionContext,
    request: TypedRequest[Any],
    serve: Serve,
    topic_name: Callable[[bytes], str | None],
) -> Served:
    """Serve ``request`` for ``session``'s principal as the module docstring says."""
    check = Check(authorizer, session.principal, session.client_host, topic_name, request.api.name)
    if authorizer.is_super_user(session.principal):
        return await serve(request)
    rule = RULES.get(request.api.key, _FAIL_CLOSED)
    return await rule(check, request, serve)
