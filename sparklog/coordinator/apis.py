"""Request handlers of the group coordinator APIs: JoinGroup (11), Heartbeat (12),
LeaveGroup (13), SyncGroup (14), DescribeGroups (15), ListGroups (16), OffsetCommit (8),
OffsetFetch (9), DeleteGroups (42) and OffsetDelete (47); FindCoordinator (10) is in
:mod:`.find_coordinator_api`. :data:`GROUP_HANDLERS` maps every group API key to its handler.

Handlers translate between wire bodies and :class:`GroupCoordinator` calls, and shape errors
per version as Kafka does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sparklog.coordinator.consumer_apis import CONSUMER_GROUP_HANDLERS, group_coordinator
from sparklog.coordinator.find_coordinator_api import handle_find_coordinator
from sparklog.coordinator.group_metadata import GroupState
from sparklog.coordinator.offsets import CommitPartition
from sparklog.coordinator.rebalance import JoinRequest, SyncRequest, TopicPartition
from sparklog.coordinator.runtime import CoordinatorContext, Handler
from sparklog.coordinator.share_apis import find_share_group, led_share_groups
from sparklog.coordinator.share_offsets_apis import delete_share_group
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    ApiKey,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteGroupsResponseResults,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponseGroups,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    ListGroupsResponseGroups,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponseTopics,
    OffsetCommitResponseTopicsPartitions,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchRequestGroupsTopics,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroups,
    OffsetFetchResponseGroupsTopics,
    OffsetFetchResponseGroupsTopicsPartitions,
    OffsetFetchResponseTopics,
    SyncGroupRequest,
    SyncGroupResponse,
)
from sparklog.protocol.schema import AUTHORIZED_OPERATIONS_OMITTED

log = logging.getLogger(__name__)


# -- membership -------------------------------------------------------------------------------
async def handle_join_group(
    ctx: CoordinatorContext, request: TypedRequest[JoinGroupRequest], listener: str
) -> JoinGroupResponse:
    body = request.body
    version = request.header.api_version
    req = JoinRequest(
        group_id=body["group_id"],
        member_id=body["member_id"],
        group_instance_id=body["group_instance_id"],
        protocol_type=body["protocol_type"],
        protocols=tuple((p["name"], bytes(p["metadata"])) for p in body["protocols"]),
        session_timeout_ms=body["session_timeout_ms"],
        rebalance_timeout_ms=body["rebalance_timeout_ms"] if version >= 1 else -1,
        client_id=request.header.client_id or "",
        require_known_member=version >= 4,
    )
    try:
        result = await group_coordinator(ctx).join_group(req)
    except KafkaApiError as exc:
        return _join_error(exc.code, req.member_id)
    if result.error != ErrorCode.NONE:
        return _join_error(result.error, result.member_id)
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "generation_id": result.generation_id,
        "protocol_type": result.protocol_type,
        "protocol_name": result.protocol_name,
        "leader": result.leader,
        "skip_assignment": False,
        "member_id": result.member_id,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "metadata": m.metadata,
            }
            for m in result.members
        ],
    }


def _join_error(code: ErrorCode, member_id: str) -> JoinGroupResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": int(code),
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": "",
        "leader": "",
        "skip_assignment": False,
        "member_id": member_id,
        "members": [],
    }


async def handle_sync_group(
    ctx: CoordinatorContext, request: TypedRequest[SyncGroupRequest], listener: str
) -> SyncGroupResponse:
    body = request.body
    req = SyncRequest(
        group_id=body["group_id"],
        generation_id=body["generation_id"],
        member_id=body["member_id"],
        group_instance_id=body["group_instance_id"],
        protocol_type=body["protocol_type"],
        protocol_name=body["protocol_name"],
        assignments={a["member_id"]: bytes(a["assignment"]) for a in body["assignments"]},
    )
    try:
        result = await group_coordinator(ctx).sync_group(req)
    except KafkaApiError as exc:
        return {"throttle_time_ms": 0, "error_code": int(exc.code), "assignment": b""}
    return {
        "throttle_time_ms": 0,
        "error_code": int(result.error),
        "protocol_type": result.protocol_type,
        "protocol_name": result.protocol_name,
        "assignment": result.assignment,
    }


async def handle_heartbeat(
    ctx: CoordinatorContext, request: TypedRequest[HeartbeatRequest], listener: str
) -> HeartbeatResponse:
    body = request.body
    try:
        code = await group_coordinator(ctx).heartbeat(
            body["group_id"],
            body["member_id"],
            body["group_instance_id"],
            body["generation_id"],
        )
    except KafkaApiError as exc:
        code = exc.code
    return {"throttle_time_ms": 0, "error_code": int(code)}


async def handle_leave_group(
    ctx: CoordinatorContext, request: TypedRequest[LeaveGroupRequest], listener: str
) -> LeaveGroupResponse:
    body = request.body
    version = request.header.api_version
    leaving: list[tuple[str, str | None]]
    if version >= 3:
        leaving = [(m["member_id"], m["group_instance_id"]) for m in body["members"]]
    else:
        leaving = [(body["member_id"], None)]
    try:
        outcome = await group_coordinator(ctx).leave_group(body["group_id"], leaving)
    except KafkaApiError as exc:
        outcome = exc.code
    if isinstance(outcome, ErrorCode):
        return {"throttle_time_ms": 0, "error_code": int(outcome), "members": []}
    if outcome is None:
        if version < 3:
            return {"throttle_time_ms": 0, "error_code": int(ErrorCode.UNKNOWN_MEMBER_ID)}
        outcome = [ErrorCode.UNKNOWN_MEMBER_ID] * len(leaving)
    if version < 3:
        return {"throttle_time_ms": 0, "error_code": int(outcome[0])}
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "members": [
            {"member_id": member_id, "group_instance_id": instance_id, "error_code": int(code)}
            for (member_id, instance_id), code in zip(leaving, outcome, strict=True)
        ],
    }


# -- offsets ----------------------------------------------------------------------------------
def _topic_names(
    ctx: CoordinatorContext, topics: Sequence[Mapping[str, Any]], by_id: bool
) -> list[str | None]:
    if not by_id:
        return [t["name"] for t in topics]
    return [ctx.topic_name(t["topic_id"]) for t in topics]


async def handle_offset_commit(
    ctx: CoordinatorContext, request: TypedRequest[OffsetCommitRequest], listener: str
) -> OffsetCommitResponse:
    body = request.body
    version = request.header.api_version
    by_id = version >= 10
    topics = body["topics"]
    names = _topic_names(ctx, topics, by_id)
    # Kafka 4.x's KafkaApis answers a partition missing from the metadata with
    # UNKNOWN_TOPIC_OR_PARTITION and commits only the others.
    image_topics = ctx.image.topics
    unknown: set[tuple[str, int]] = set()
    partitions: list[CommitPartition] = []
    for topic, name in zip(topics, names, strict=True):
        if name is None:
            continue
        known = image_topics.get_topic(name)
        for p in topic["partitions"]:
            if known is None or p["partition_index"] not in known.partitions:
                unknown.add((name, p["partition_index"]))
                continue
            partitions.append(
                CommitPartition(
                    name,
                    p["partition_index"],
                    p["committed_offset"],
                    p["committed_leader_epoch"],
                    p["committed_metadata"],
                )
            )
    try:
        if not partitions and unknown:
            outcome: list[ErrorCode] | ErrorCode = []
        else:
            outcome = await group_coordinator(ctx).commit_offsets(
                body["group_id"],
                body["generation_id_or_member_epoch"],
                body["member_id"],
                body["group_instance_id"],
                partitions,
            )
    except KafkaApiError as exc:
        outcome = exc.code
    if outcome == ErrorCode.GROUP_ID_NOT_FOUND and version < 9:
        outcome = ErrorCode.ILLEGAL_GENERATION
    errors = iter(outcome) if isinstance(outcome, list) else None
    group_error = outcome if isinstance(outcome, ErrorCode) else ErrorCode.NONE
    response_topics: list[OffsetCommitResponseTopics] = []
    for topic, name in zip(topics, names, strict=True):
        results: list[OffsetCommitResponseTopicsPartitions] = []
        for p in topic["partitions"]:
            if name is None:
                code = ErrorCode.UNKNOWN_TOPIC_ID
            elif (name, p["partition_index"]) in unknown:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif errors is not None:
                code = next(errors)
            else:
                code = group_error
            results.append({"partition_index": p["partition_index"], "error_code": int(code)})
        response_topics.append(
            {
                "name": topic["name"],
                "topic_id": topic["topic_id"],
                "partitions": results,
            }
        )
    return {"throttle_time_ms": 0, "topics": response_topics}


async def _fetch_group(
    ctx: CoordinatorContext,
    group_id: str,
    topics: Sequence[OffsetFetchRequestTopics | OffsetFetchRequestGroupsTopics] | None,
    by_id: bool,
    require_stable: bool = False,
) -> tuple[ErrorCode, dict[str, list[OffsetFetchResponseGroupsTopicsPartitions]]]:
    """A group's offsets by topic name (v0-7 and v8+ partitions are the same TypedDict); with
    ``require_stable`` a partition a transaction has committed to but not yet decided is
    UNSTABLE_OFFSET_COMMIT (the client retries)."""
    wanted: list[TopicPartition] | None = None
    if topics is not None:
        names = _topic_names(ctx, topics, by_id)
        wanted = [
            (name, index)
            for topic, name in zip(topics, names, strict=True)
            if name is not None
            for index in topic["partition_indexes"]
        ]
    try:
        coordinator = group_coordinator(ctx)
        offsets = await coordinator.fetch_offsets(group_id, wanted)
    except KafkaApiError as exc:
        return exc.code, {}
    by_topic: dict[str, list[OffsetFetchResponseGroupsTopicsPartitions]] = {}
    for (topic, partition), committed in offsets.items():
        unstable = require_stable and coordinator.has_pending_offset(group_id, (topic, partition))
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": -1 if unstable else committed.offset,
                "committed_leader_epoch": -1 if unstable else committed.leader_epoch,
                "metadata": "" if unstable else committed.metadata,
                "error_code": int(ErrorCode.UNSTABLE_OFFSET_COMMIT if unstable else 0),
            }
        )
    return ErrorCode.NONE, by_topic


async def handle_offset_fetch(
    ctx: CoordinatorContext, request: TypedRequest[OffsetFetchRequest], listener: str
) -> OffsetFetchResponse:
    """v8+ answers per group (``groups``; v10+ names topics by id too), v0-7 the one group's
    ``topics`` and a top-level error (v2+)."""
    body = request.body
    version = request.header.api_version
    if version >= 8:
        by_id = version >= 10
        groups: list[OffsetFetchResponseGroups] = []
        for group in body["groups"]:
            code, by_topic = await _fetch_group(
                ctx, group["group_id"], group["topics"], by_id, body["require_stable"]
            )
            ids = {t.name: t.topic_id for t in ctx.image.topics.by_name.values()} if by_id else {}
            group_topics: list[OffsetFetchResponseGroupsTopics] = [
                {"name": name, "topic_id": ids.get(name, b"\x00" * 16), "partitions": parts}
                for name, parts in by_topic.items()
            ]
            groups.append(
                {"group_id": group["group_id"], "topics": group_topics, "error_code": int(code)}
            )
        return {"throttle_time_ms": 0, "groups": groups}
    code, by_topic = await _fetch_group(
        ctx, body["group_id"], body["topics"], False, body["require_stable"]
    )
    topics: list[OffsetFetchResponseTopics] = [
        {"name": name, "partitions": parts} for name, parts in by_topic.items()
    ]
    if code != ErrorCode.NONE and version < 2:
        # v1 has no top-level error: report it on every requested partition.
        topics = [
            {
                "name": t["name"],
                "partitions": [
                    {
                        "partition_index": i,
                        "committed_offset": -1,
                        "metadata": "",
                        "error_code": int(code),
                    }
                    for i in t["partition_indexes"]
                ],
            }
            for t in body["topics"] or []
        ]
    return {"throttle_time_ms": 0, "topics": topics, "error_code": int(code)}


async def handle_offset_delete(
    ctx: CoordinatorContext, request: TypedRequest[OffsetDeleteRequest], listener: str
) -> OffsetDeleteResponse:
    body = request.body
    wanted = [(t["name"], p["partition_index"]) for t in body["topics"] for p in t["partitions"]]
    try:
        outcome = await group_coordinator(ctx).delete_offsets(body["group_id"], wanted)
    except KafkaApiError as exc:
        outcome = exc.code
    if isinstance(outcome, ErrorCode) or outcome[0] != ErrorCode.NONE:
        code = outcome if isinstance(outcome, ErrorCode) else outcome[0]
        return {"error_code": int(code), "throttle_time_ms": 0, "topics": []}
    errors = iter(outcome[1])
    return {
        "error_code": 0,
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t["name"],
                "partitions": [
                    {"partition_index": p["partition_index"], "error_code": int(next(errors))}
                    for p in t["partitions"]
                ],
            }
            for t in body["topics"]
        ],
    }


# -- admin ------------------------------------------------------------------------------------
async def handle_list_groups(
    ctx: CoordinatorContext, request: TypedRequest[ListGroupsRequest], listener: str
) -> ListGroupsResponse:
    """Classic, consumer (KIP-848) and share (KIP-932) groups, each with its type (v5) and
    state (v4+).

    Both filters match case-insensitively, as Kafka's do; an empty filter lists everything.
    """
    body = request.body
    states = {s.lower() for s in body["states_filter"]}
    types = {t.lower() for t in body["types_filter"]}
    try:
        coordinator = group_coordinator(ctx)
        classic = coordinator.groups() if not types or "classic" in types else []
        consumer = coordinator.consumer_groups() if not types or "consumer" in types else []
    except KafkaApiError as exc:
        return {"throttle_time_ms": 0, "error_code": int(exc.code), "groups": []}
    found = [(g.group_id, g.protocol_type or "", g.state.value, "classic") for g in classic]
    found += [(g.group_id, "consumer", g.state, "consumer") for g in consumer]
    if not types or "share" in types:
        found += [(g.group_id, "share", g.state, "share") for g in led_share_groups(ctx)]
    listed: list[ListGroupsResponseGroups] = [
        {"group_id": gid, "protocol_type": ptype, "group_state": state, "group_type": gtype}
        for gid, ptype, state, gtype in found
        if not states or state.lower() in states
    ]
    return {"throttle_time_ms": 0, "error_code": 0, "groups": listed}


async def handle_describe_groups(
    ctx: CoordinatorContext, request: TypedRequest[DescribeGroupsRequest], listener: str
) -> DescribeGroupsResponse:
    body = request.body
    version = request.header.api_version
    described: list[DescribeGroupsResponseGroups] = []
    for group_id in body["groups"]:
        entry: DescribeGroupsResponseGroups = {
            "error_code": 0,
            "error_message": None,
            "group_id": group_id,
            "group_state": GroupState.DEAD.value,
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
            "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        }
        try:
            group = group_coordinator(ctx).group(group_id)
        except KafkaApiError as exc:
            entry["error_code"] = int(exc.code)
            described.append(entry)
            continue
        if group is None:
            if version >= 6:
                entry["error_code"] = int(ErrorCode.GROUP_ID_NOT_FOUND)
                entry["error_message"] = (
                    f"Group {group_id} is not a classic group."
                    if find_share_group(ctx, group_id) is not None
                    else f"Group {group_id} not found."
                )
            described.append(entry)
            continue
        stable = group.state is GroupState.STABLE
        entry["group_state"] = group.state.value
        entry["protocol_type"] = group.protocol_type or ""
        entry["protocol_data"] = (group.protocol_name or "") if stable else ""
        entry["members"] = [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": m.metadata_for(group.protocol_name) if stable else b"",
                "member_assignment": m.assignment if stable else b"",
            }
            for m in group.members.values()
        ]
        described.append(entry)
    return {"throttle_time_ms": 0, "groups": described}


async def handle_delete_groups(
    ctx: CoordinatorContext, request: TypedRequest[DeleteGroupsRequest], listener: str
) -> DeleteGroupsResponse:
    results: list[DeleteGroupsResponseResults] = []
    for group_id in request.body["groups_names"]:
        try:
            share = await delete_share_group(ctx, group_id)
            if share is None:
                share = await group_coordinator(ctx).delete_group(group_id)
            code = share
        except KafkaApiError as exc:
            code = exc.code
        results.append({"group_id": group_id, "error_code": int(code)})
    return {"throttle_time_ms": 0, "results": results}


GROUP_HANDLERS: dict[int, Handler] = {
    ApiKey.OFFSET_COMMIT: handle_offset_commit,
    ApiKey.OFFSET_FETCH: handle_offset_fetch,
    ApiKey.FIND_COORDINATOR: handle_find_coordinator,
    ApiKey.JOIN_GROUP: handle_join_group,
    ApiKey.HEARTBEAT: handle_heartbeat,
    ApiKey.LEAVE_GROUP: handle_leave_group,
    ApiKey.SYNC_GROUP: handle_sync_group,
    ApiKey.DESCRIBE_GROUPS: handle_describe_groups,
    ApiKey.LIST_GROUPS: handle_list_groups,
    ApiKey.DELETE_GROUPS: handle_delete_groups,
    ApiKey.OFFSET_DELETE: handle_offset_delete,
    **CONSUMER_GROUP_HANDLERS,
}
