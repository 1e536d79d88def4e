"""Authorization rules of the group and transaction APIs (see :mod:`sparklog.broker.authz`).

Kafka 4.x's operations: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
ConsumerGroupHeartbeat need READ on the group (GROUP_AUTHORIZATION_FAILED); OffsetFetch,
DescribeGroups, ConsumerGroupDescribe, FindCoordinator DESCRIBE; DeleteGroups and OffsetDelete
DELETE. ListGroups lists every group with DESCRIBE on the cluster, else the describable ones.
Committed or fetched offsets of a topic need READ / DESCRIBE on it (TOPIC_AUTHORIZATION_FAILED).
Transactions: WRITE on the transactional id for InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, TxnOffsetCommit, and for a transactional Produce
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED); DESCRIBE for FindCoordinator, DescribeTransactions,
ListTransactions. An idempotent producer's InitProducerId needs IDEMPOTENT_WRITE on the cluster
or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeVar, cast

from sparklog.broker.authz_support import (
    Check,
    Rule,
    Serve,
    Served,
    ShapeBody,
    per_topic,
    serve_allowed,
    split,
)
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponseTransactionStates,
    EndTxnRequest,
    EndTxnResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    InitProducerIdRequest,
    InitProducerIdResponse,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    ListGroupsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    OffsetCommitRequest,
    OffsetCommitRequestTopics,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroupsTopics,
    OffsetFetchResponseTopics,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestTopics,
)
from sparklog.security.acls import AclOperation as Op
from sparklog.security.acls import ResourceType as Res

GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


# The group APIs whose response has a top-level error_code and nothing else required.
_GroupRequest = JoinGroupRequest | HeartbeatRequest | LeaveGroupRequest | SyncGroupRequest


def _group_top_level(operation: Op) -> Rule:
    async def rule(check: Check, request: TypedRequest[_GroupRequest], serve: Serve) -> Served:
        if check.allowed(operation, Res.GROUP, request.body["group_id"]):
            return await serve(request)
        return {"throttle_time_ms": 0, "error_code": int(GROUP_DENIED)}

    return rule


def _all_partitions(
    topics: Sequence[OffsetCommitRequestTopics | TxnOffsetCommitRequestTopics], code: ErrorCode
) -> OffsetCommitResponse:
    """OffsetCommit's (and TxnOffsetCommit's, the same fields) every partition denied."""
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t.get("name", ""),
                "topic_id": cast("bytes | None", t.get("topic_id")) or bytes(16),
                "partitions": [
                    {"partition_index": p["partition_index"], "error_code": int(code)}
                    for p in t.get("partitions") or ()
                ],
            }
            for t in topics
        ],
    }


async def _topics_read(
    check: Check,
    request: TypedRequest[OffsetCommitRequest | TxnOffsetCommitRequest | OffsetDeleteRequest],
    serve: Serve,
) -> Served:
    """Committed or deleted offsets of a topic need READ on it (per partition)."""
    return await per_topic(
        check,
        request,
        serve,
        Op.READ,
        req_partitions="partitions",
        req_index="partition_index",
        rsp_index="partition_index",
        extra={},
    )


def _offset_commit(txn: bool) -> Rule:
    async def rule(
        check: Check,
        request: TypedRequest[OffsetCommitRequest | TxnOffsetCommitRequest],
        serve: Serve,
    ) -> Served:
        body = request.body
        topics = list(body.get("topics") or ())
        txn_id = cast("TxnOffsetCommitRequest", body)["transactional_id"] if txn else None
        if txn and not check.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, txn_id):
            return _all_partitions(topics, TXN_DENIED)
        if not check.allowed(Op.READ, Res.GROUP, body["group_id"]):
            return _all_partitions(topics, GROUP_DENIED)
        return await _topics_read(check, request, serve)

    return rule


# OffsetFetch's topics: v0-7's or a v8+ group's (the same fields but the group's topic_id).
_FetchedTopic = TypeVar("_FetchedTopic", OffsetFetchResponseTopics, OffsetFetchResponseGroupsTopics)


def _filter_fetched_topics(
    check: Check, topics: list[_FetchedTopic], requested: bool
) -> list[_FetchedTopic]:
    """``topics`` without the undescribable ones (denied per partition when ``requested``)."""
    kept: list[_FetchedTopic] = []
    for topic in topics:
        if check.topic(Op.DESCRIBE, topic, quiet=True):
            kept.append(topic)
        elif requested:
            denied: _FetchedTopic = {
                **topic,
                "partitions": [
                    {
                        **p,
                        "committed_offset": -1,
                        "committed_leader_epoch": -1,
                        "metadata": "",
                        "error_code": int(TOPIC_DENIED),
                    }
                    for p in topic.get("partitions") or ()
                ],
            }
            kept.append(denied)
    return kept


async def _offset_fetch(
    check: Check, request: TypedRequest[OffsetFetchRequest], serve: Serve
) -> Served:
    body = request.body
    response: OffsetFetchResponse | None
    if request.header.api_version < 8:
        if not check.allowed(Op.DESCRIBE, Res.GROUP, body["group_id"]):
            return {"throttle_time_ms": 0, "error_code": int(GROUP_DENIED), "topics": []}
        response = cast("OffsetFetchResponse | None", await serve(request))
        if response is not None:
            requested = body.get("topics") is not None
            response["topics"] = _filter_fetched_topics(
                check, list(response.get("topics") or ()), requested
            )
        return response
    groups = list(body.get("groups") or ())
    allowed, denied = split(groups, lambda g: check.allowed(Op.DESCRIBE, Res.GROUP, g["group_id"]))
    if allowed:
        served = await serve(replace(request, body={**body, "groups": allowed}))
        response = cast("OffsetFetchResponse | None", served)
    else:
        response = {"throttle_time_ms": 0, "groups": []}
    if response is None:
        return None
    named = {g["group_id"]: g.get("topics") is not None for g in allowed}
    for answered in response.get("groups") or ():
        answered["topics"] = _filter_fetched_topics(
            check, list(answered.get("topics") or ()), named.get(answered["group_id"], False)
        )
    for group in denied:
        response.setdefault("groups", []).append(
            {"group_id": group["group_id"], "topics": [], "error_code": int(GROUP_DENIED)}
        )
    return response


async def _find_coordinator(
    check: Check, request: TypedRequest[FindCoordinatorRequest], serve: Serve
) -> Served:
    body = request.body
    resource = Res.TRANSACTIONAL_ID if int(body.get("key_type", 0)) == 1 else Res.GROUP
    code = TXN_DENIED if resource == Res.TRANSACTIONAL_ID else GROUP_DENIED
    if request.header.api_version < 4:
        if check.allowed(Op.DESCRIBE, resource, body["key"]):
            return await serve(request)
        return {"throttle_time_ms": 0, "error_code": int(code), "node_id": -1, "port": -1}
    keys = list(body.get("coordinator_keys") or ())
    allowed, denied = split(keys, lambda k: check.allowed(Op.DESCRIBE, resource, k))
    response: FindCoordinatorResponse | None
    if allowed:
        served = await serve(replace(request, body={**body, "coordinator_keys": allowed}))
        response = cast("FindCoordinatorResponse | None", served)
    else:
        response = {"throttle_time_ms": 0, "coordinators": []}
    if response is None:
        return None
    for key in denied:
        response.setdefault("coordinators", []).append(
            {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": int(code)}
        )
    return response


def per_group(operation: Op, req_key: str, rsp_key: str) -> Rule:
    """DescribeGroups, ConsumerGroupDescribe, DeleteGroups: a result per group id."""

    async def rule(check: Check, request: TypedRequest[Any], serve: Serve) -> Served:
        body: ShapeBody = request.body
        ids: list[str] = list(body.get(req_key) or ())
        allowed, denied = split(ids, lambda g: check.allowed(operation, Res.GROUP, g))
        response: ShapeBody | None
        if allowed or not denied:
            served = await serve(replace(request, body={**body, req_key: allowed}))
            response = cast("ShapeBody | None", served)
        else:
            response = {"throttle_time_ms": 0, rsp_key: []}
        if response is None:
            return None
        if body.get("include_authorized_operations"):
            for group in response.get(rsp_key) or ():
                group["authorized_operations"] = check.authorized_operations(
                    Res.GROUP, group["group_id"]
                )
        for group_id in denied:
            response.setdefault(rsp_key, []).append(
                {"group_id": group_id, "error_code": int(GROUP_DENIED), "error_message": None}
            )
        return response

    return rule


async def _list_groups(
    check: Check, request: TypedRequest[ListGroupsRequest], serve: Serve
) -> Served:
    response = cast("ListGroupsResponse | None", await serve(request))
    if response is not None and not check.cluster(Op.DESCRIBE, quiet=True):
        response["groups"] = [
            g
            for g in response.get("groups") or ()
            if check.allowed(Op.DESCRIBE, Res.GROUP, g["group_id"], quiet=True)
        ]
    return response


async def _offset_delete(
    check: Check, request: TypedRequest[OffsetDeleteRequest], serve: Serve
) -> Served:
    if not check.allowed(Op.DELETE, Res.GROUP, request.body["group_id"]):
        denied: OffsetDeleteResponse = {
            "throttle_time_ms": 0,
            "error_code": int(GROUP_DENIED),
            "topics": [],
        }
        return denied
    return await _topics_read(check, request, serve)


async def consumer_group_heartbeat(
    check: Check,
    request: TypedRequest[ConsumerGroupHeartbeatRequest | ShareGroupHeartbeatRequest],
    serve: Serve,
) -> Served:
    """ConsumerGroupHeartbeat and ShareGroupHeartbeat (their error fields are the same)."""
    body = request.body
    response: ConsumerGroupHeartbeatResponse | ShareGroupHeartbeatResponse
    if not check.allowed(Op.READ, Res.GROUP, body["group_id"]):
        response = {"throttle_time_ms": 0, "error_code": int(GROUP_DENIED), "member_epoch": -1}
        return response
    names = body.get("subscribed_topic_names") or ()
    denied = sorted(n for n in names if not check.allowed(Op.DESCRIBE, Res.TOPIC, n))
    if denied:
        response = {
            "throttle_time_ms": 0,
            "error_code": int(TOPIC_DENIED),
            "error_message": f"Topics {denied} are not authorized.",
            "member_epoch": -1,
        }
        return response
    return await serve(request)


async def _init_producer_id(
    check: Check, request: TypedRequest[InitProducerIdRequest], serve: Serve
) -> Served:
    txn = request.body.get("transactional_id")
    if txn is not None:
        if check.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, txn):
            return await serve(request)
        code = TXN_DENIED
    elif check.cluster(Op.IDEMPOTENT_WRITE, quiet=True) or check.by_type(Op.WRITE, Res.TOPIC):
        return await serve(request)
    else:
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    response: InitProducerIdResponse = {
        "throttle_time_ms": 0,
        "error_code": int(code),
        "producer_id": -1,
        "producer_epoch": -1,
    }
    return response


async def _add_partitions_to_txn(
    check: Check, request: TypedRequest[AddPartitionsToTxnRequest], serve: Serve
) -> Served:
    body = request.body
    response: AddPartitionsToTxnResponse
    if request.header.api_version >= 4:
        if check.cluster(Op.CLUSTER_ACTION):
            return await serve(request)
        response = {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
        }
        return response
    topics = list(body.get("v3_and_below_topics") or ())
    txn = body["v3_and_below_transactional_id"]
    txn_ok = check.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, txn)
    denied = set() if not txn_ok else {t["name"] for t in topics if not check.topic(Op.WRITE, t)}
    if txn_ok and not denied:
        return await serve(request)

    def code(topic: str) -> int:
        if not txn_ok:
            return int(TXN_DENIED)
        return int(TOPIC_DENIED if topic in denied else ErrorCode.OPERATION_NOT_ATTEMPTED)

    response = {
        "throttle_time_ms": 0,
        "results_by_topic_v3_and_below": [
            {
                "name": t["name"],
                "results_by_partition": [
                    {"partition_index": p, "partition_error_code": code(t["name"])}
                    for p in t["partitions"]
                ],
            }
            for t in topics
        ],
    }
    return response


async def _add_offsets_to_txn(
    check: Check, request: TypedRequest[AddOffsetsToTxnRequest], serve: Serve
) -> Served:
    body = request.body
    response: AddOffsetsToTxnResponse
    if not check.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, body["transactional_id"]):
        response = {"throttle_time_ms": 0, "error_code": int(TXN_DENIED)}
        return response
    if not check.allowed(Op.READ, Res.GROUP, body["group_id"]):
        response = {"throttle_time_ms": 0, "error_code": int(GROUP_DENIED)}
        return response
    return await serve(request)


async def _end_txn(check: Check, request: TypedRequest[EndTxnRequest], serve: Serve) -> Served:
    if check.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, request.body["transactional_id"]):
        return await serve(request)
    response: EndTxnResponse = {
        "throttle_time_ms": 0,
        "error_code": int(TXN_DENIED),
        "producer_id": -1,
    }
    return response


async def _describe_transactions(
    check: Check, request: TypedRequest[DescribeTransactionsRequest], serve: Serve
) -> Served:
    body = request.body
    ids = list(body.get("transactional_ids") or ())
    allowed, denied = split(ids, lambda t: check.allowed(Op.DESCRIBE, Res.TRANSACTIONAL_ID, t))
    refused: list[DescribeTransactionsResponseTransactionStates] = [
        {"transactional_id": txn, "error_code": int(TXN_DENIED), "producer_id": -1}
        for txn in denied
    ]
    return await serve_allowed(
        request, serve, {"transactional_ids": allowed}, "transaction_states", refused
    )


async def _list_transactions(
    check: Check, request: TypedRequest[ListTransactionsRequest], serve: Serve
) -> Served:
    response = cast("ListTransactionsResponse | None", await serve(request))
    if response is not None:
        response["transaction_states"] = [
            t
            for t in response.get("transaction_states") or ()
            if check.allowed(Op.DESCRIBE, Res.TRANSACTIONAL_ID, t["transactional_id"], quiet=True)
        ]
    return response


GROUP_RULES: dict[int, Rule] = {
    8: _offset_commit(txn=False),
    9: _offset_fetch,
    10: _find_coordinator,
    11: _group_top_level(Op.READ),
    12: _group_top_level(Op.READ),
    13: _group_top_level(Op.READ),
    14: _group_top_level(Op.READ),
    15: per_group(Op.DESCRIBE, "groups", "groups"),
    16: _list_groups,
    22: _init_producer_id,
    24: _add_partitions_to_txn,
    25: _add_offsets_to_txn,
    26: _end_txn,
    28: _offset_commit(txn=True),
    42: per_group(Op.DELETE, "groups_names", "results"),
    47: _offset_delete,
    65: _describe_transactions,
    66: _list_transactions,
    68: consumer_group_heartbeat,
    69: per_group(Op.DESCRIBE, "group_ids", "groups"),
}
