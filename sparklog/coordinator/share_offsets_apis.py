"""Share-group offsets on the group coordinator (KIP-932): DescribeShareGroupOffsets (90),
AlterShareGroupOffsets (91), DeleteShareGroupOffsets (92), and the state cleanup of
DeleteGroups for a share group.

The start offsets live with the share coordinator (``__share_group_state``); these handlers
reach it through the broker's Persister (ReadShareGroupStateSummary, InitializeShareGroupState
with the next state epoch, DeleteShareGroupState). Altering or deleting offsets needs an empty
group (NON_EMPTY_GROUP otherwise); a partition leader that still holds the old state drops it
when the next member opens a session on it (the state epoch moved) or when its next write is
FENCED_STATE_EPOCH. Altering the offsets of a group that does not exist creates it, empty.

DescribeShareGroupOffsets answers, per partition, the start offset and leader epoch of the
state summary and (v1, KIP-1226) the share-partition lag as Kafka 4.2's GroupCoordinatorService
computes it: the partition's latest offset (its high watermark, from the leader) minus the start
offset minus the delivery complete count the share-partition leader last wrote. The lag is -1
when there is no state, no start offset or no delivery complete count (a v0 writer); a latest
offset that cannot be read is the partition's error (the start offset is still answered).
"""

from __future__ import annotations

from collections.abc import Iterable

from sparklog.coordinator.runtime import CoordinatorContext, Handler
from sparklog.coordinator.share_apis import (
    described_share_group,
    find_share_group,
    persist_share_group,
    share_groups,
)
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponseResponses,
    AlterShareGroupOffsetsResponseResponsesPartitions,
    ApiKey,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponseResponses,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponseGroups,
    DescribeShareGroupOffsetsResponseGroupsTopics,
    DescribeShareGroupOffsetsResponseGroupsTopicsPartitions,
)
from sparklog.share.share_group import ShareGroup

_NO_TOPIC = b"\x00" * 16


def _topic(ctx: CoordinatorContext, name: str) -> tuple[bytes, int] | None:
    topic = ctx.image.topics.by_name.get(name)
    if topic is None:
        return None
    return bytes(topic.topic_id), len(topic.partitions)


async def handle_describe_share_group_offsets(
    ctx: CoordinatorContext, request: TypedRequest[DescribeShareGroupOffsetsRequest], listener: str
) -> DescribeShareGroupOffsetsResponse:
    persister = ctx.share_persister
    groups: list[DescribeShareGroupOffsetsResponseGroups] = []
    for wanted in request.body["groups"]:
        group_id = wanted["group_id"]
        entry: DescribeShareGroupOffsetsResponseGroups = {
            "group_id": group_id,
            "topics": [],
            "error_code": 0,
            "error_message": None,
        }
        group, code, message = described_share_group(ctx, group_id)
        if group is None:
            entry["error_code"], entry["error_message"] = code, message
            groups.append(entry)
            continue
        # (topic, partition) -> (its row, start offset + delivery complete count), for the lag
        completed: dict[
            tuple[str, int], tuple[DescribeShareGroupOffsetsResponseGroupsTopicsPartitions, int]
        ] = {}
        # null topics: every partition of each topic the group has state for
        listed: list[tuple[str, list[int] | None]] = (
            [(name, None) for name in sorted(group.initialized_topics)]
            if wanted["topics"] is None
            else [(t["topic_name"], t["partitions"]) for t in wanted["topics"]]
        )
        topics: list[DescribeShareGroupOffsetsResponseGroupsTopics] = []
        entry["topics"] = topics
        for name, wanted_indexes in listed:
            found = _topic(ctx, name)
            parts: list[DescribeShareGroupOffsetsResponseGroupsTopicsPartitions] = []
            indexes: Iterable[int] = wanted_indexes if wanted_indexes is not None else []
            if wanted_indexes is None and found is not None:
                indexes = range(found[1])
            for index in indexes:
                row: DescribeShareGroupOffsetsResponseGroupsTopicsPartitions = {
                    "partition_index": index,
                    "start_offset": -1,
                    "leader_epoch": -1,
                    "lag": -1,
                    "error_code": 0,
                    "error_message": None,
                }
                if found is None or index >= found[1]:
                    row["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                else:
                    code, state = await persister.call(group_id, found[0], index, "summary")
                    row["error_code"] = int(code)
                    if state is not None:
                        row["start_offset"] = state.start_offset
                        row["leader_epoch"] = state.leader_epoch
                        if state.start_offset >= 0 and state.delivery_complete_count >= 0:
                            completed[(name, index)] = (
                                row,
                                state.start_offset + state.delivery_complete_count,
                            )
                parts.append(row)
            topics.append(
                {
                    "topic_name": name,
                    "topic_id": found[0] if found else _NO_TOPIC,
                    "partitions": parts,
                }
            )
        if completed and request.header.api_version >= 1:
            latest = await persister.latest_offsets(list(completed))
            for tp, (row, done) in completed.items():
                code, offset = latest[tp]
                if code == ErrorCode.NONE:
                    row["lag"] = offset - done
                else:
                    row["error_code"] = int(code)
        groups.append(entry)
    return {"throttle_time_ms": 0, "groups": groups}


def _empty_group(ctx: CoordinatorContext, group_id: str, create: bool) -> ShareGroup:
    group = find_share_group(ctx, group_id)
    if group is None:
        if not create:
            raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        group = share_groups(ctx).groups.setdefault(group_id, ShareGroup(group_id))
    if group.members:
        raise KafkaApiError(
            ErrorCode.NON_EMPTY_GROUP,
            f"The group {group_id} is not empty: its members must leave first.",
        )
    return group


async def handle_alter_share_group_offsets(
    ctx: CoordinatorContext, request: TypedRequest[AlterShareGroupOffsetsRequest], listener: str
) -> AlterShareGroupOffsetsResponse:
    body = request.body
    group_id = body["group_id"]
    try:
        group = _empty_group(ctx, group_id, create=True)
    except KafkaApiError as exc:
        return {
            "throttle_time_ms": 0,
            "error_code": int(exc.code),
            "error_message": exc.message,
            "responses": [],
        }
    persister = ctx.share_persister
    responses: list[AlterShareGroupOffsetsResponseResponses] = []
    for topic in body["topics"]:
        found = _topic(ctx, topic["topic_name"])
        parts: list[AlterShareGroupOffsetsResponseResponsesPartitions] = []
        for p in topic["partitions"]:
            index = p["partition_index"]
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if found is not None and index < found[1]:
                code, state = await persister.call(group_id, found[0], index, "summary")
                if code == ErrorCode.NONE:
                    epoch = (state.state_epoch if state is not None else 0) + 1
                    code, _ = await persister.call(
                        group_id,
                        found[0],
                        index,
                        "initialize",
                        state_epoch=epoch,
                        start_offset=p["start_offset"],
                    )
            parts.append({"partition_index": index, "error_code": int(code), "error_message": None})
        if found is not None:
            group.initialized_topics.add(topic["topic_name"])
        responses.append(
            {
                "topic_name": topic["topic_name"],
                "topic_id": found[0] if found else _NO_TOPIC,
                "partitions": parts,
            }
        )
    error = await persist_share_group(ctx, group_id)
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "error_message": None,
        "responses": responses,
    }


async def delete_topic_state(ctx: CoordinatorContext, group: ShareGroup, name: str) -> ErrorCode:
    """Delete the persisted state of ``group``'s partitions of topic ``name``."""
    found = _topic(ctx, name)
    if found is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    persister = ctx.share_persister
    worst = ErrorCode.NONE
    for index in range(found[1]):
        code, _ = await persister.call(group.group_id, found[0], index, "delete")
        if code != ErrorCode.NONE:
            worst = code
    group.initialized_topics.discard(name)
    return worst


async def handle_delete_share_group_offsets(
    ctx: CoordinatorContext, request: TypedRequest[DeleteShareGroupOffsetsRequest], listener: str
) -> DeleteShareGroupOffsetsResponse:
    body = request.body
    try:
        group = _empty_group(ctx, body["group_id"], create=False)
    except KafkaApiError as exc:
        return {
            "throttle_time_ms": 0,
            "error_code": int(exc.code),
            "error_message": exc.message,
            "responses": [],
        }
    responses: list[DeleteShareGroupOffsetsResponseResponses] = []
    for topic in body["topics"]:
        name = topic["topic_name"]
        code = await delete_topic_state(ctx, group, name)
        found = _topic(ctx, name)
        responses.append(
            {
                "topic_name": name,
                "topic_id": found[0] if found else _NO_TOPIC,
                "error_code": int(code),
                "error_message": None,
            }
        )
    error = await persist_share_group(ctx, body["group_id"])
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "error_message": None,
        "responses": responses,
    }


async def delete_share_group(ctx: CoordinatorContext, group_id: str) -> ErrorCode | None:
    """DeleteGroups for a share group (its state included); None when ``group_id`` is not a
    share group of this coordinator."""
    group = find_share_group(ctx, group_id)
    if group is None:
        return None
    if group.members:
        return ErrorCode.NON_EMPTY_GROUP
    for name in sorted(group.initialized_topics):
        await delete_topic_state(ctx, group, name)
    code = share_groups(ctx).delete(group_id)
    if code != ErrorCode.NONE:
        return code
    return await persist_share_group(ctx, group_id)


SHARE_OFFSETS_HANDLERS: dict[int, Handler] = {
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: handle_describe_share_group_offsets,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: handle_alter_share_group_offsets,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: handle_delete_share_group_offsets,
}
