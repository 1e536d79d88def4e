"""Authorization rules of the share-group and SCRAM APIs (see :mod:`sparklog.broker.authz`).

Kafka 4.x's operations: ShareGroupHeartbeat needs READ on the group and DESCRIBE on the
subscribed topics; ShareFetch and ShareAcknowledge READ on the group
(GROUP_AUTHORIZATION_FAILED) and on each topic (TOPIC_AUTHORIZATION_FAILED per partition);
ShareGroupDescribe and DescribeShareGroupOffsets DESCRIBE on each group; AlterShareGroupOffsets
READ and DeleteShareGroupOffsets DELETE on the group. The share-group state RPCs between
brokers need CLUSTER_ACTION. DescribeUserScramCredentials needs DESCRIBE and
AlterUserScramCredentials ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED per user).
"""

from __future__ import annotations

from collections.abc import Mapping

from sparklog.broker.authz_groups import consumer_group_heartbeat, per_group
from sparklog.broker.authz_support import (
    Check,
    ClusterRule,
    Rule,
    Serve,
    Served,
    per_topic,
    serve_allowed,
    split,
)
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    AlterShareGroupOffsetsRequest,
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupStateRequest,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponseGroups,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    WriteShareGroupStateRequest,
)
from sparklog.security.acls import AclOperation as Op
from sparklog.security.acls import ResourceType as Res

GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def _share_topics(extra: Mapping[str, object]) -> Rule:
    """ShareFetch / ShareAcknowledge: READ on the group, then READ per topic (by id)."""

    async def rule(
        check: Check,
        request: TypedRequest[ShareFetchRequest | ShareAcknowledgeRequest],
        serve: Serve,
    ) -> Served:
        if not check.allowed(Op.READ, Res.GROUP, request.body["group_id"]):
            return {"throttle_time_ms": 0, "error_code": int(GROUP_DENIED), "responses": []}
        return await per_topic(
            check,
            request,
            serve,
            Op.READ,
            req_partitions="partitions",
            req_index="partition_index",
            rsp_topics="responses",
            rsp_index="partition_index",
            extra=extra,
        )

    return rule


def _group_top_level(operation: Op, rsp_key: str) -> Rule:
    async def rule(
        check: Check,
        request: TypedRequest[AlterShareGroupOffsetsRequest | DeleteShareGroupOffsetsRequest],
        serve: Serve,
    ) -> Served:
        if check.allowed(operation, Res.GROUP, request.body["group_id"]):
            return await serve(request)
        return {"throttle_time_ms": 0, "error_code": int(GROUP_DENIED), rsp_key: []}

    return rule


async def _describe_share_offsets(
    check: Check, request: TypedRequest[DescribeShareGroupOffsetsRequest], serve: Serve
) -> Served:
    body = request.body
    groups = list(body.get("groups") or ())
    allowed, denied = split(groups, lambda g: check.allowed(Op.DESCRIBE, Res.GROUP, g["group_id"]))
    refused: list[DescribeShareGroupOffsetsResponseGroups] = [
        {"group_id": group["group_id"], "topics": [], "error_code": int(GROUP_DENIED)}
        for group in denied
    ]
    return await serve_allowed(request, serve, {"groups": allowed}, "groups", refused)


# The share-group state RPCs: each answers per partition of each topic id under "results".
_StateRequest = (
    InitializeShareGroupStateRequest
    | ReadShareGroupStateRequest
    | WriteShareGroupStateRequest
    | DeleteShareGroupStateRequest
    | ReadShareGroupStateSummaryRequest
)


async def _cluster_action_state(
    check: Check, request: TypedRequest[_StateRequest], serve: Serve
) -> Served:
    if check.cluster(Op.CLUSTER_ACTION):
        return await serve(request)
    return {
        "results": [
            {
                "topic_id": t["topic_id"],
                "partitions": [
                    {"partition": p["partition"], "error_code": int(CLUSTER_DENIED)}
                    for p in t.get("partitions") or ()
                ],
            }
            for t in request.body.get("topics") or ()
        ]
    }


async def _alter_scram(
    check: Check, request: TypedRequest[AlterUserScramCredentialsRequest], serve: Serve
) -> Served:
    if check.cluster(Op.ALTER):
        return await serve(request)
    body = request.body
    users = [d["name"] for d in body.get("deletions") or ()]
    users += [u["name"] for u in body.get("upsertions") or ()]
    response: AlterUserScramCredentialsResponse = {
        "throttle_time_ms": 0,
        "results": [
            {"user": user, "error_code": int(CLUSTER_DENIED), "error_message": None}
            for user in dict.fromkeys(users)
        ],
    }
    return response


SHARE_RULES: dict[int, Rule] = {
    50: ClusterRule(Op.DESCRIBE, listed="results"),
    51: _alter_scram,
    76: consumer_group_heartbeat,
    77: per_group(Op.DESCRIBE, "group_ids", "groups"),
    78: _share_topics({"records": b"", "acquired_records": []}),
    79: _share_topics({}),
    83: _cluster_action_state,
    84: _cluster_action_state,
    85: _cluster_action_state,
    86: _cluster_action_state,
    87: _cluster_action_state,
    90: _describe_share_offsets,
    91: _group_top_level(Op.READ, "responses"),
    92: _group_top_level(Op.DELETE, "responses"),
}
