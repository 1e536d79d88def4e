"""The KIP-932 share-group records of ``__consumer_offsets``, and their replay.

Kafka's coordinator record types for share groups (Kafka 4.x group-coordinator JSON): 10
``ShareGroupMemberMetadata`` (a member's rack, client and subscription), 11
``ShareGroupMetadata`` (the group epoch and metadata hash), 12
``ShareGroupTargetAssignmentMetadata`` (the assignment epoch), 13
``ShareGroupTargetAssignmentMember`` (a member's target partitions), 14
``ShareGroupCurrentMemberAssignment`` (a member's epochs, state and assigned partitions) and 15
``ShareGroupStatePartitionMetadata`` (the topics whose share-partitions hold state). Keys are
non-flexible and carry the record type as their version; values are flexible version 0. A
null value is a tombstone. Type 9 (``ShareGroupPartitionMetadata``, no longer written by
Kafka 4.x) is not decoded.

How the coordinator uses them (the same write-ahead discipline as KIP-848 groups):

- A share group's persisted form is its *image*: the (key, value) of every record that
  describes it now (:func:`group_image`). After an operation changes the in-memory groups the
  coordinator appends :func:`image_changes` (changed or new records, then tombstones for records
  that no longer exist) to the group's partition before answering; the session clock
  (``last_seen``) is not persisted, so a plain heartbeat writes nothing.
- Replay keeps the last value of every key per group (:func:`replay_share_record`), and
  :func:`rebuild_group` turns an image back into a :class:`ShareGroup`: same members, epochs,
  assignments and target assignment, so members keep heartbeating with their epochs after a
  coordinator failover. A group exists while its ``ShareGroupMetadata`` record does. Every
  rebuilt member's session starts at the load time, so session timeouts still remove members
  that stopped heartbeating (as Kafka schedules them when a coordinator loads a group).

Invariant: ``rebuild_group(g, group_image(group, resolve), now)`` has ``group``'s epochs,
members, assignments, target and initialized topics (topics ``resolve`` knows).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast

from sparklog.coordinator.consumer_group import STABLE
from sparklog.coordinator.consumer_records import (
    GROUP_KEY,
    MEMBER_KEY,
    TARGET_MEMBER_VALUE,
    TARGET_METADATA_VALUE,
    TOPIC_PARTITIONS,
    decode_value,
    encode_value,
    from_wire_partitions,
    wire_partitions,
)
from sparklog.coordinator.record_types import (
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataValue,
)
from sparklog.coordinator.records import CoordinatorRecordError
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.schema import array, field, message
from sparklog.share.share_group import (
    Assignment,
    ShareGroup,
    ShareGroups,
    ShareMember,
    TopicResolver,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
Records = list[tuple[bytes, bytes | None]]

SHARE_MEMBER_METADATA = 10
SHARE_GROUP_METADATA = 11
SHARE_TARGET_METADATA = 12
SHARE_TARGET_MEMBER = 13
SHARE_CURRENT_MEMBER = 14
SHARE_STATE_PARTITION_METADATA = 15
SHARE_RECORD_TYPES = frozenset(range(10, 16))
_GROUP_TYPES = (SHARE_GROUP_METADATA, SHARE_TARGET_METADATA, SHARE_STATE_PARTITION_METADATA)
# Write order: a member's metadata and target before the epochs, its current assignment after.
_WRITE_ORDER = (10, 13, 12, 11, 14, 15)
# Tombstone order: a member's records before the group's (as Kafka deletes a group).
_DELETE_ORDER = (14, 13, 10, 15, 12, 11)

# The image of one group: record key -> value.
Image = dict[bytes, bytes]

_MEMBER_VALUE = message(
    "ShareGroupMemberMetadataValue",
    "0",
    "0+",
    field("rack_id", "string", nullable="0+"),
    field("client_id", "string"),
    field("client_host", "string"),
    field("subscribed_topic_names", "[]string"),
)
_GROUP_VALUE = message(
    "ShareGroupMetadataValue", "0", "0+", field("epoch", "int32"), field("metadata_hash", "int64")
)
# ShareGroupTargetAssignmentMetadata/MemberValue have the consumer group's fields exactly.
_TARGET_METADATA_VALUE = TARGET_METADATA_VALUE
_TARGET_MEMBER_VALUE = TARGET_MEMBER_VALUE
_CURRENT_VALUE = message(
    "ShareGroupCurrentMemberAssignmentValue",
    "0",
    "0+",
    field("member_epoch", "int32"),
    field("previous_member_epoch", "int32"),
    field("state", "int8"),
    array("assigned_partitions", *TOPIC_PARTITIONS),
)
_TOPIC_INFO = (field("topic_id", "uuid"), field("topic_name", "string"))
_STATE_PARTITION_VALUE = message(
    "ShareGroupStatePartitionMetadataValue",
    "0",
    "0+",
    array("initializing_topics", *_TOPIC_INFO, field("partitions", "[]int32")),
    array("initialized_topics", *_TOPIC_INFO, field("partitions", "[]int32")),
    array("deleting_topics", *_TOPIC_INFO),
)


def record_type(key: bytes) -> int:
    """The record type a coordinator key starts with (-1 for a key too short to have one)."""
    return int.from_bytes(key[:2], signed=True) if len(key) >= 2 else -1


def _group_key(kind: int, group_id: str) -> bytes:
    return encode_value(GROUP_KEY, kind, kind, {"group_id": group_id})


def _member_key(kind: int, group_id: str, member_id: str) -> bytes:
    return encode_value(MEMBER_KEY, kind, kind, {"group_id": group_id, "member_id": member_id})


def group_image(group: ShareGroup, resolve: TopicResolver) -> Image:
    """Every record describing ``group`` now; topics ``resolve`` does not know are left out
    of the state-partition metadata."""
    gid = group.group_id
    image: Image = {
        _group_key(SHARE_GROUP_METADATA, gid): encode_value(
            _GROUP_VALUE, 0, 0, {"epoch": group.group_epoch, "metadata_hash": group.metadata_hash}
        ),
        _group_key(SHARE_TARGET_METADATA, gid): encode_value(
            _TARGET_METADATA_VALUE, 0, 0, {"assignment_epoch": group.assignment_epoch}
        ),
    }
    for member_id, target in group.target.items():
        image[_member_key(SHARE_TARGET_MEMBER, gid, member_id)] = encode_value(
            _TARGET_MEMBER_VALUE, 0, 0, {"topic_partitions": wire_partitions(target)}
        )
    for m in group.members.values():
        image[_member_key(SHARE_MEMBER_METADATA, gid, m.member_id)] = encode_value(
            _MEMBER_VALUE,
            0,
            0,
            {
                "rack_id": m.rack_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
            },
        )
        image[_member_key(SHARE_CURRENT_MEMBER, gid, m.member_id)] = encode_value(
            _CURRENT_VALUE,
            0,
            0,
            {
                "member_epoch": m.member_epoch,
                "previous_member_epoch": m.previous_epoch,
                "state": STABLE,
                "assigned_partitions": wire_partitions(m.assignment),
            },
        )
    initialized = []
    for name in sorted(group.initialized_topics):
        found = resolve(name)
        if found is not None:
            topic_id, count = found
            initialized.append(
                {"topic_id": topic_id, "topic_name": name, "partitions": list(range(count))}
            )
    if initialized:
        image[_group_key(SHARE_STATE_PARTITION_METADATA, gid)] = encode_value(
            _STATE_PARTITION_VALUE,
            0,
            0,
            {"initializing_topics": [], "initialized_topics": initialized, "deleting_topics": []},
        )
    return image


def image_changes(
    old: Mapping[bytes, bytes], new: Mapping[bytes, bytes]
) -> list[tuple[bytes, bytes | None]]:
    """The records that turn the persisted image ``old`` into ``new``: new or changed
    records in Kafka's write order, then tombstones in its delete order."""
    writes = [(k, v) for k, v in new.items() if old.get(k) != v]
    deletes: list[tuple[bytes, bytes | None]] = [(k, None) for k in old if k not in new]
    writes.sort(key=lambda kv: _WRITE_ORDER.index(record_type(kv[0])))
    deletes.sort(key=lambda kv: _DELETE_ORDER.index(record_type(kv[0])))
    return [*writes, *deletes]


def group_of(key: bytes) -> str:
    """The group id of a share-group record key (types 10-15)."""
    kind = record_type(key)
    if kind not in SHARE_RECORD_TYPES:
        raise CoordinatorRecordError(f"record type {kind} is not a share-group record")
    spec = GROUP_KEY if kind in _GROUP_TYPES else MEMBER_KEY
    group_id: str = decode_value(spec, key, kind)["group_id"]
    return group_id


def replay_share_record(images: dict[str, Image], key: bytes, value: bytes | None) -> None:
    """Fold one replayed record into the per-group images (a tombstone removes its key)."""
    group_id = group_of(key)
    image = images.setdefault(group_id, {})
    if value is None:
        image.pop(key, None)
    else:
        image[key] = value
    if not image:
        del images[group_id]


def _decoded(key: bytes, value: bytes) -> tuple[int, str | None, dict[str, Any]]:
    """``(record type, member id or None, value)``: the value is the codec's plain dict of the
    type's declaration, which the caller narrows to its record type by ``kind``."""
    kind = record_type(key)
    specs = {
        SHARE_MEMBER_METADATA: _MEMBER_VALUE,
        SHARE_GROUP_METADATA: _GROUP_VALUE,
        SHARE_TARGET_METADATA: _TARGET_METADATA_VALUE,
        SHARE_TARGET_MEMBER: _TARGET_MEMBER_VALUE,
        SHARE_CURRENT_MEMBER: _CURRENT_VALUE,
        SHARE_STATE_PARTITION_METADATA: _STATE_PARTITION_VALUE,
    }
    member_id = None if kind in _GROUP_TYPES else decode_value(MEMBER_KEY, key, kind)["member_id"]
    return kind, member_id, decode_value(specs[kind], value, None)


def rebuild_group(group_id: str, image: Mapping[bytes, bytes], now_ms: int) -> ShareGroup | None:
    """The group an image describes (None without its ShareGroupMetadata record); every
    member's session starts at ``now_ms``. Raises CoordinatorRecordError on a bad record."""
    group = ShareGroup(group_id)
    found = False
    metadata: dict[str, ShareGroupMemberMetadataValue] = {}
    current: dict[str, ShareGroupCurrentMemberAssignmentValue] = {}
    initialized: dict[str, int] = {}
    for key, value in image.items():
        kind, member_id, v = _decoded(key, value)
        if kind == SHARE_GROUP_METADATA:
            group_value = cast("ShareGroupMetadataValue", v)
            group.group_epoch, found = group_value["epoch"], True
            group.metadata_hash = group_value["metadata_hash"]
        elif kind == SHARE_TARGET_METADATA:
            target = cast("ConsumerGroupTargetAssignmentMetadataValue", v)
            group.assignment_epoch = target["assignment_epoch"]
        elif kind == SHARE_STATE_PARTITION_METADATA:
            states = cast("ShareGroupStatePartitionMetadataValue", v)
            for topic in (*states["initializing_topics"], *states["initialized_topics"]):
                initialized[topic["topic_name"]] = len(topic["partitions"])
        elif member_id is not None and kind == SHARE_TARGET_MEMBER:
            member_target = cast("ConsumerGroupTargetAssignmentMemberValue", v)
            group.target[member_id] = from_wire_partitions(member_target["topic_partitions"])
        elif member_id is not None and kind == SHARE_MEMBER_METADATA:
            metadata[member_id] = cast("ShareGroupMemberMetadataValue", v)
        elif member_id is not None:
            current[member_id] = cast("ShareGroupCurrentMemberAssignmentValue", v)
    if not found:
        return None
    for member_id, meta in metadata.items():
        cur = current.get(member_id)
        if cur is None:
            continue
        assignment: Assignment = from_wire_partitions(cur["assigned_partitions"])
        group.members[member_id] = ShareMember(
            member_id,
            cur["member_epoch"],
            cur["previous_member_epoch"],
            meta["client_id"],
            meta["client_host"],
            meta["rack_id"],
            tuple(meta["subscribed_topic_names"]),
            assignment,
            now_ms,
        )
    group.initialized_topics = set(initialized)
    return group


def install_groups(
    groups: ShareGroups,
    images: Mapping[str, Image],
    owned: Callable[[str], bool],
    now_ms: int,
) -> None:
    """Replace every in-memory group ``owned`` selects (one ``__consumer_offsets`` partition's)
    with the groups ``images`` describe."""
    for group_id in [g for g in groups.groups if owned(g)]:
        del groups.groups[group_id]
    for group_id, image in images.items():
        try:
            group = rebuild_group(group_id, image, now_ms)
        except CoordinatorRecordError as exc:
            log.error("Skipping share group %s: %s", group_id, exc)
            continue
        if group is not None:
            groups.groups[group_id] = group


def owned_images(
    groups: ShareGroups, owned: Callable[[str], bool], resolve: TopicResolver
) -> dict[str, Image]:
    """The images of the in-memory groups ``owned`` selects."""
    return {gid: group_image(g, resolve) for gid, g in groups.groups.items() if owned(gid)}


def shard_changes(persisted: Mapping[str, Image], images: Mapping[str, Image]) -> Records:
    """The records turning one partition's persisted images into ``images``."""
    out: Records = []
    for group_id in sorted(persisted.keys() | images.keys()):
        out += image_changes(persisted.get(group_id, {}), images.get(group_id, {}))
    return out


def _monotonic_ms() -> int:
    # The share-group session clock (sparklog.coordinator.share_apis uses the same one).
    return int(time.monotonic() * 1000)


class ShareGroupStore:
    """The share groups of one group coordinator and, per ``__consumer_offsets`` partition it
    loaded, the images its log holds. :meth:`loaded` installs a partition's replayed groups;
    :meth:`run` runs an operation, then appends what changed in that partition's groups
    through ``append`` (the caller holds the partition's lock) and, when the append fails,
    puts the partition's groups back to what the log holds and raises the append's error."""

    def __init__(self, groups: ShareGroups, partition_for: Callable[[str], int]) -> None:
        self.groups = groups
        self._partition_for = partition_for
        self._persisted: dict[int, dict[str, Image]] = {}

    def _owned(self, index: int) -> Callable[[str], bool]:
        return lambda group_id: self._partition_for(group_id) == index

    def loaded(self, index: int, images: dict[str, Image]) -> None:
        self._persisted[index] = images
        install_groups(self.groups, images, self._owned(index), _monotonic_ms())

    async def run(
        self,
        index: int,
        op: Callable[[ShareGroups], T],
        resolve: TopicResolver,
        append: Callable[[Records], Awaitable[ErrorCode | None]],
    ) -> T:
        outcome = op(self.groups)
        persisted = self._persisted.get(index, {})
        images = owned_images(self.groups, self._owned(index), resolve)
        error = await append(shard_changes(persisted, images))
        if error is not None:
            install_groups(self.groups, persisted, self._owned(index), _monotonic_ms())
            raise KafkaApiError(error, "The share group's records were not written.")
        self._persisted[index] = images
        return outcome
