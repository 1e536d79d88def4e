"""Request handlers of the KIP-848 consumer group APIs: ConsumerGroupHeartbeat (68) and
ConsumerGroupDescribe (69).

They translate wire bodies (topic ids) to :class:`GroupCoordinator` calls; topic names are
resolved against the broker's current metadata image, so a subscription to a topic that does
not exist yet assigns nothing until the topic appears.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypedDict

from sparklog.coordinator.consumer_group import HeartbeatRequest
from sparklog.coordinator.consumer_records import Assignment
from sparklog.coordinator.coordinator import GroupCoordinator
from sparklog.coordinator.runtime import CoordinatorContext, Handler
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    ApiKey,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponseGroups,
    ConsumerGroupDescribeResponseGroupsMembersAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponseAssignment,
    ConsumerGroupHeartbeatResponseAssignmentTopicPartitions,
)
from sparklog.protocol.schema import AUTHORIZED_OPERATIONS_OMITTED


def group_coordinator(ctx: CoordinatorContext) -> GroupCoordinator:
    """The node's group coordinator, or COORDINATOR_NOT_AVAILABLE when it has none."""
    groups = ctx.groups
    if groups is None:
        raise KafkaApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "No group coordinator")
    assert isinstance(groups, GroupCoordinator)
    return groups


def _resolver(ctx: CoordinatorContext) -> Any:
    image = ctx.image

    def resolve(name: str) -> tuple[bytes, int] | None:
        topic = image.topics.by_name.get(name)
        if topic is None or not topic.partitions:
            return None
        return bytes(topic.topic_id), len(topic.partitions)

    return resolve


def _owned(items: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None) -> Assignment | None:
    if items is None:
        return None
    out: Assignment = {}
    for item in items:
        parts = frozenset(item["partitions"])
        if parts:
            out[bytes(item["topic_id"])] = parts
    return out


def wire_assignment(
    assignment: Assignment,
) -> list[ConsumerGroupHeartbeatResponseAssignmentTopicPartitions]:
    """An assignment as the KIP-848 and KIP-932 heartbeat responses carry it."""
    return [
        {"topic_id": topic_id, "partitions": sorted(parts)}
        for topic_id, parts in sorted(assignment.items())
        if parts
    ]


def heartbeat_response(
    error: int,
    message: str | None,
    member_id: str | None,
    member_epoch: int,
    interval_ms: int,
    assignment: Assignment | None,
) -> ConsumerGroupHeartbeatResponse:
    """A KIP-848 or KIP-932 heartbeat response (the two have the same fields); the assignment
    is sent only with no error."""
    wire: ConsumerGroupHeartbeatResponseAssignment | None = None
    if error == ErrorCode.NONE and assignment is not None:
        wire = {"topic_partitions": wire_assignment(assignment)}
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "error_message": message,
        "member_id": member_id,
        "member_epoch": member_epoch,
        "heartbeat_interval_ms": interval_ms,
        "assignment": wire,
    }


async def handle_consumer_group_heartbeat(
    ctx: CoordinatorContext, request: TypedRequest[ConsumerGroupHeartbeatRequest], listener: str
) -> ConsumerGroupHeartbeatResponse:
    body = request.body
    names = body["subscribed_topic_names"]
    req = HeartbeatRequest(
        group_id=body["group_id"],
        member_id=body["member_id"],
        member_epoch=body["member_epoch"],
        instance_id=body["instance_id"],
        rack_id=body["rack_id"],
        rebalance_timeout_ms=body["rebalance_timeout_ms"],
        subscribed_topic_names=tuple(names) if names is not None else None,
        server_assignor=body["server_assignor"],
        owned=_owned(body["topic_partitions"]),
        client_id=request.header.client_id or "",
    )
    try:
        result = await group_coordinator(ctx).consumer_heartbeat(req, _resolver(ctx))
    except KafkaApiError as exc:
        return heartbeat_response(exc.code, exc.message, None, -1, 0, None)
    return heartbeat_response(
        result.error,
        result.message,
        result.member_id,
        result.member_epoch,
        result.heartbeat_interval_ms,
        result.assignment,
    )


def assignment_describer(
    ctx: CoordinatorContext,
) -> Callable[
    [Mapping[bytes, Iterable[int]]], ConsumerGroupDescribeResponseGroupsMembersAssignment
]:
    """An assignment (topic id -> partitions) as ConsumerGroupDescribe / ShareGroupDescribe
    write it, topic names from the current image."""
    names = {bytes(t.topic_id): name for name, t in ctx.image.topics.by_name.items()}

    def described(
        assignment: Mapping[bytes, Iterable[int]],
    ) -> ConsumerGroupDescribeResponseGroupsMembersAssignment:
        return {
            "topic_partitions": [
                {"topic_id": t, "topic_name": names.get(t, ""), "partitions": sorted(p)}
                for t, p in sorted(assignment.items())
                if p
            ]
        }

    return described


class DeadGroupEntry(TypedDict):
    """The fields ConsumerGroupDescribe's and ShareGroupDescribe's group entries share (all but
    ``members``, whose member TypedDicts differ)."""

    error_code: int
    error_message: str | None
    group_id: str
    group_state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    authorized_operations: int


def dead_group_entry(group_id: str) -> DeadGroupEntry:
    """A describe entry for a group before (or without) its state: Dead (the caller adds its
    empty ``members``)."""
    return {
        "error_code": 0,
        "error_message": None,
        "group_id": group_id,
        "group_state": "Dead",
        "group_epoch": -1,
        "assignment_epoch": -1,
        "assignor_name": "",
        "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


async def handle_consumer_group_describe(
    ctx: CoordinatorContext, request: TypedRequest[ConsumerGroupDescribeRequest], listener: str
) -> ConsumerGroupDescribeResponse:
    described = assignment_describer(ctx)
    out: list[ConsumerGroupDescribeResponseGroups] = []
    for group_id in request.body["group_ids"]:
        entry: ConsumerGroupDescribeResponseGroups = {**dead_group_entry(group_id), "members": []}
        try:
            coordinator = group_coordinator(ctx)
            group = coordinator.consumer_group(group_id)
        except KafkaApiError as exc:
            entry["error_code"] = int(exc.code)
            out.append(entry)
            continue
        if group is None:
            entry["error_code"] = int(ErrorCode.GROUP_ID_NOT_FOUND)
            entry["error_message"] = f"Group {group_id} not found."
            out.append(entry)
            continue
        entry["group_state"] = group.state
        entry["group_epoch"] = group.group_epoch
        entry["assignment_epoch"] = group.assignment_epoch
        assignors = coordinator.consumer_config.assignors
        entry["assignor_name"] = assignors[0] if assignors else "uniform"
        entry["members"] = [
            {
                "member_id": m.member_id,
                "instance_id": m.metadata.instance_id,
                "rack_id": m.metadata.rack_id,
                "member_epoch": m.current.member_epoch,
                "client_id": m.metadata.client_id,
                "client_host": m.metadata.client_host,
                "subscribed_topic_names": list(m.metadata.subscribed_topic_names),
                "subscribed_topic_regex": None,
                "assignment": described(m.current.assigned),
                "target_assignment": described(group.target.get(m.member_id, {})),
                "member_type": 1,
            }
            for m in group.members.values()
        ]
        out.append(entry)
    return {"throttle_time_ms": 0, "groups": out}


CONSUMER_GROUP_HANDLERS: dict[int, Handler] = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: handle_consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: handle_consumer_group_describe,
}
