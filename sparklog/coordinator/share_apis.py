"""Request handlers of the KIP-932 share-group APIs on the group coordinator:
ShareGroupHeartbeat (76) and ShareGroupDescribe (77), and the lookups ListGroups, DescribeGroups
and the share-group offset APIs (:mod:`sparklog.coordinator.share_offsets_apis`) use.

The coordinator of a share group is the group coordinator of its id (the leader of its
``__consumer_offsets`` partition, found with FindCoordinator key type GROUP); any other broker
answers NOT_COORDINATOR. Membership lives in the group coordinator's
:class:`~sparklog.share.share_group.ShareGroups`; every change is written to the group's
``__consumer_offsets`` partition before it is answered
(:meth:`~sparklog.coordinator.coordinator.GroupCoordinator.run_share_op`), so after a
coordinator moves the new one replays the members, their epochs and assignments and they go
on heartbeating. Sessions that time out (``group.share.session.timeout.ms``) are expired on
every call (a replayed member's session starts when its partition is loaded).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from sparklog.coordinator.consumer_apis import (
    assignment_describer,
    dead_group_entry,
    group_coordinator,
    heartbeat_response,
)
from sparklog.coordinator.coordinator import OFFSETS_TOPIC
from sparklog.coordinator.runtime import CoordinatorContext, Handler
from sparklog.metadata.topic_hash import subscription_hash
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    ApiKey,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupDescribeResponseGroups,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from sparklog.share.share_group import (
    ShareGroup,
    ShareGroups,
    ShareHeartbeat,
    TopicResolver,
)

T = TypeVar("T")


def share_groups(ctx: CoordinatorContext) -> ShareGroups:
    """The share groups of every ``__consumer_offsets`` partition we lead (loaded)."""
    coordinator = group_coordinator(ctx)
    coordinator.load_led_shards()
    return coordinator.share_groups


def _check_coordinator(ctx: CoordinatorContext, group_id: str) -> None:
    index = group_coordinator(ctx).partition_for(group_id)
    if ctx.coordinator_runtime.leader_partition(OFFSETS_TOPIC, index) is None:
        raise KafkaApiError(ErrorCode.NOT_COORDINATOR, "This is not the correct coordinator.")


async def run_share_op(ctx: CoordinatorContext, group_id: str, op: Callable[[ShareGroups], T]) -> T:
    """``op`` on the share groups, its changes persisted before it returns (NOT_COORDINATOR
    or COORDINATOR_NOT_AVAILABLE raised when they could not be written)."""
    _check_coordinator(ctx, group_id)
    resolve = _resolver(ctx)
    # KIP-1101: the share groups compare their topics' metadata hash over the current image
    group_coordinator(ctx).share_groups.subscription_hash = lambda names: subscription_hash(
        ctx.image, names
    )

    def expire_then(groups: ShareGroups) -> T:
        groups.expire(_now_ms(), resolve)
        return op(groups)

    return await group_coordinator(ctx).run_share_op(group_id, expire_then, resolve)


async def persist_share_group(ctx: CoordinatorContext, group_id: str) -> ErrorCode:
    """Write what changed in ``group_id``'s partition's share groups outside
    :func:`run_share_op` (offsets altered or deleted, a group deleted)."""
    try:
        await run_share_op(ctx, group_id, lambda groups: None)
    except KafkaApiError as exc:
        return exc.code
    return ErrorCode.NONE


def _resolver(ctx: CoordinatorContext) -> TopicResolver:
    image = ctx.image

    def resolve(name: str) -> tuple[bytes, int] | None:
        topic = image.topics.by_name.get(name)
        if topic is None or not topic.partitions:
            return None
        return bytes(topic.topic_id), len(topic.partitions)

    return resolve


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


def led_share_groups(ctx: CoordinatorContext) -> list[ShareGroup]:
    """The share groups this broker coordinates now (expired members removed)."""
    groups = share_groups(ctx)
    groups.expire(_now_ms(), _resolver(ctx))
    out = []
    for group in groups.groups.values():
        try:
            _check_coordinator(ctx, group.group_id)
        except KafkaApiError:
            continue
        out.append(group)
    return out


def find_share_group(ctx: CoordinatorContext, group_id: str) -> ShareGroup | None:
    """The share group ``group_id`` if we coordinate it (raises NOT_COORDINATOR if not ours)."""
    _check_coordinator(ctx, group_id)
    groups = share_groups(ctx)
    groups.expire(_now_ms(), _resolver(ctx))
    return groups.groups.get(group_id)


def described_share_group(
    ctx: CoordinatorContext, group_id: str
) -> tuple[ShareGroup | None, int, str | None]:
    """The share group a describe names, or why there is none: (group, error code, message)
    with NOT_COORDINATOR and the like, or GROUP_ID_NOT_FOUND."""
    try:
        group = find_share_group(ctx, group_id)
    except KafkaApiError as exc:
        return None, int(exc.code), None
    if group is None:
        return None, int(ErrorCode.GROUP_ID_NOT_FOUND), f"Group {group_id} not found."
    return group, int(ErrorCode.NONE), None


async def handle_share_group_heartbeat(
    ctx: CoordinatorContext, request: TypedRequest[ShareGroupHeartbeatRequest], listener: str
) -> ShareGroupHeartbeatResponse:
    body = request.body
    names = body["subscribed_topic_names"]
    interval = int(
        ctx.image.configs.group_config(body["group_id"]).get(
            "share.heartbeat.interval.ms", ctx.config.get("group.share.heartbeat.interval.ms")
        )
    )
    try:
        _check_coordinator(ctx, body["group_id"])
        if body["group_id"] == "":
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        resolve = _resolver(ctx)
        heartbeat = ShareHeartbeat(
            group_id=body["group_id"],
            member_id=body["member_id"],
            member_epoch=body["member_epoch"],
            rack_id=body["rack_id"],
            subscribed_topic_names=tuple(names) if names is not None else None,
            client_id=request.header.client_id or "",
            client_host="",
        )
        result = await run_share_op(
            ctx, body["group_id"], lambda groups: groups.heartbeat(heartbeat, resolve, _now_ms())
        )
    except KafkaApiError as exc:
        return heartbeat_response(exc.code, exc.message, None, -1, 0, None)
    return heartbeat_response(
        result.error,
        result.message,
        result.member_id,
        result.member_epoch,
        interval if result.error == ErrorCode.NONE else 0,
        result.assignment,
    )


async def handle_share_group_describe(
    ctx: CoordinatorContext, request: TypedRequest[ShareGroupDescribeRequest], listener: str
) -> ShareGroupDescribeResponse:
    described = assignment_describer(ctx)
    out: list[ShareGroupDescribeResponseGroups] = []
    for group_id in request.body["group_ids"]:
        entry: ShareGroupDescribeResponseGroups = {**dead_group_entry(group_id), "members": []}
        group, code, message = described_share_group(ctx, group_id)
        if group is None:
            entry["error_code"], entry["error_message"] = code, message
            out.append(entry)
            continue
        entry["group_state"] = group.state
        entry["group_epoch"] = group.group_epoch
        entry["assignment_epoch"] = group.assignment_epoch
        entry["assignor_name"] = "simple"
        entry["members"] = [
            {
                "member_id": m.member_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "assignment": described(m.assignment),
            }
            for m in group.members.values()
        ]
        out.append(entry)
    return {"throttle_time_ms": 0, "groups": out}


SHARE_GROUP_HANDLERS: dict[int, Handler] = {
    ApiKey.SHARE_GROUP_HEARTBEAT: handle_share_group_heartbeat,
    ApiKey.SHARE_GROUP_DESCRIBE: handle_share_group_describe,
}
