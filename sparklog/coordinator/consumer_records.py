"""The KIP-848 consumer group records of ``__consumer_offsets``.

Kafka's coordinator record types (the int16 that starts every key) for consumer groups:
3 ``ConsumerGroupMetadata`` (the group epoch), 5 ``ConsumerGroupMemberMetadata`` (a member's
subscription and client data), 6 ``ConsumerGroupTargetAssignmentMetadata`` (the assignment
epoch), 7 ``ConsumerGroupTargetAssignmentMember`` (a member's target partitions) and 8
``ConsumerGroupCurrentMemberAssignment`` (a member's epochs, state, owned and
pending-revocation partitions). Keys are non-flexible, values are flexible version 0, as in
Apache Kafka 4.x's group-coordinator JSON files. A null value is a tombstone. Type 4
(partition metadata, no longer written by Kafka 4.x) is read and ignored.

Invariant: ``decode_consumer_record(*encode(record))`` gives back the record; malformed
payloads raise :class:`~sparklog.coordinator.records.CoordinatorRecordError`. The key schemas
and the value/partition-list helpers (:func:`encode_value`, :func:`decode_value`,
:func:`wire_partitions`) are shared with the share-group records
(:mod:`sparklog.coordinator.share_records`), whose keys have the same fields.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from sparklog.coordinator.records import CoordinatorRecordError
from sparklog.protocol.codec import decode_from, encode_bytes
from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.schema import MessageSpec, array, field, message
from sparklog.protocol.schema import struct as struct_field
from sparklog.protocol.types import Reader

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_METADATA = 6
TARGET_MEMBER = 7
CURRENT_MEMBER = 8
CONSUMER_RECORD_TYPES = frozenset(range(3, 9))

# topic id -> partitions
Assignment = dict[bytes, frozenset[int]]

GROUP_KEY = message("ConsumerGroupKey", "0+", "none", field("group_id", "string"))
MEMBER_KEY = message(
    "ConsumerGroupMemberKey",
    "0+",
    "none",
    field("group_id", "string"),
    field("member_id", "string"),
)
TOPIC_PARTITIONS = (field("topic_id", "uuid"), field("partitions", "[]int32"))

_GROUP_VALUE = message(
    "ConsumerGroupMetadataValue",
    "0",
    "0+",
    field("epoch", "int32"),
    field("metadata_hash", "int64", tag=0, default=0),
)
_MEMBER_VALUE = message(
    "ConsumerGroupMemberMetadataValue",
    "0",
    "0+",
    field("instance_id", "string", nullable="0+"),
    field("rack_id", "string", nullable="0+"),
    field("client_id", "string"),
    field("client_host", "string"),
    field("subscribed_topic_names", "[]string"),
    field("subscribed_topic_regex", "string", nullable="0+"),
    field("rebalance_timeout_ms", "int32", default=-1),
    field("server_assignor", "string", nullable="0+"),
    struct_field(
        "classic_member_metadata",
        field("session_timeout_ms", "int32"),
        array("supported_protocols", field("name", "string"), field("metadata", "bytes")),
        nullable="0+",
        tag=0,
        default=None,
    ),
)
TARGET_METADATA_VALUE = message(
    "ConsumerGroupTargetAssignmentMetadataValue", "0", "0+", field("assignment_epoch", "int32")
)
TARGET_MEMBER_VALUE = message(
    "ConsumerGroupTargetAssignmentMemberValue",
    "0",
    "0+",
    array("topic_partitions", *TOPIC_PARTITIONS),
)
_CURRENT_MEMBER_VALUE = message(
    "ConsumerGroupCurrentMemberAssignmentValue",
    "0",
    "0+",
    field("member_epoch", "int32"),
    field("previous_member_epoch", "int32"),
    field("state", "int8"),
    array("assigned_partitions", *TOPIC_PARTITIONS),
    array("partitions_pending_revocation", *TOPIC_PARTITIONS),
)

_VERSION = struct.Struct(">h")
_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class GroupEpochRecord:
    group_id: str
    epoch: int | None  # None: tombstone


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True, slots=True)
class MemberMetadataRecord:
    group_id: str
    member_id: str
    value: MemberMetadata | None


@dataclass(frozen=True, slots=True)
class TargetEpochRecord:
    group_id: str
    assignment_epoch: int | None


@dataclass(frozen=True, slots=True)
class TargetMemberRecord:
    group_id: str
    member_id: str
    partitions: Assignment | None


@dataclass(frozen=True, slots=True)
class CurrentAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Assignment
    pending_revocation: Assignment


@dataclass(frozen=True, slots=True)
class CurrentMemberRecord:
    group_id: str
    member_id: str
    value: CurrentAssignment | None


ConsumerRecord = (
    GroupEpochRecord
    | MemberMetadataRecord
    | TargetEpochRecord
    | TargetMemberRecord
    | CurrentMemberRecord
)


def encode_value(spec: MessageSpec, version: int, prefix: int, body: dict[str, Any]) -> bytes:
    return _VERSION.pack(prefix) + encode_bytes(spec, version, body)


def wire_partitions(assignment: Assignment) -> list[dict[str, Any]]:
    return [
        {"topic_id": topic_id, "partitions": sorted(parts)}
        for topic_id, parts in sorted(assignment.items())
        if parts
    ]


def from_wire_partitions(items: Iterable[Mapping[str, Any]]) -> Assignment:
    """An assignment from records' ``{topic_id, partitions}`` entries (any record type's)."""
    out: Assignment = {}
    for item in items:
        parts = frozenset(item["partitions"])
        if parts:
            out[bytes(item["topic_id"])] = out.get(bytes(item["topic_id"]), frozenset()) | parts
    return out


def encode(record: ConsumerRecord) -> tuple[bytes, bytes | None]:
    """The (key, value) of a record; the value is None for a tombstone."""
    if isinstance(record, GroupEpochRecord):
        key = encode_value(GROUP_KEY, GROUP_METADATA, GROUP_METADATA, {"group_id": record.group_id})
        if record.epoch is None:
            return key, None
        return key, encode_value(_GROUP_VALUE, 0, 0, {"epoch": record.epoch})
    if isinstance(record, TargetEpochRecord):
        key = encode_value(
            GROUP_KEY, TARGET_METADATA, TARGET_METADATA, {"group_id": record.group_id}
        )
        if record.assignment_epoch is None:
            return key, None
        return key, encode_value(
            TARGET_METADATA_VALUE, 0, 0, {"assignment_epoch": record.assignment_epoch}
        )
    ids = {"group_id": record.group_id, "member_id": record.member_id}
    if isinstance(record, MemberMetadataRecord):
        key = encode_value(MEMBER_KEY, MEMBER_METADATA, MEMBER_METADATA, ids)
        m = record.value
        if m is None:
            return key, None
        body: dict[str, Any] = {
            "instance_id": m.instance_id,
            "rack_id": m.rack_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": None,
            "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "server_assignor": m.server_assignor,
        }
        return key, encode_value(_MEMBER_VALUE, 0, 0, body)
    if isinstance(record, TargetMemberRecord):
        key = encode_value(MEMBER_KEY, TARGET_MEMBER, TARGET_MEMBER, ids)
        if record.partitions is None:
            return key, None
        return key, encode_value(
            TARGET_MEMBER_VALUE, 0, 0, {"topic_partitions": wire_partitions(record.partitions)}
        )
    key = encode_value(MEMBER_KEY, CURRENT_MEMBER, CURRENT_MEMBER, ids)
    c = record.value
    if c is None:
        return key, None
    body = {
        "member_epoch": c.member_epoch,
        "previous_member_epoch": c.previous_member_epoch,
        "state": c.state,
        "assigned_partitions": wire_partitions(c.assigned),
        "partitions_pending_revocation": wire_partitions(c.pending_revocation),
    }
    return key, encode_value(_CURRENT_MEMBER_VALUE, 0, 0, body)


def decode_value(spec: MessageSpec, data: bytes, key_type: int | None) -> dict[str, Any]:
    if len(data) < 2:
        raise CoordinatorRecordError(f"{spec.name}: {len(data)} bytes, no version")
    (version,) = _VERSION.unpack_from(data)
    # Keys are declared at the record type's own number; values are version 0.
    expected = key_type if key_type is not None else 0
    if version != expected:
        raise CoordinatorRecordError(f"{spec.name}: unknown version {version}")
    reader = Reader(data, 2)
    try:
        decoded = decode_from(spec, version, reader)
    except (ProtocolError, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise CoordinatorRecordError(f"{spec.name} v{version}: {exc}") from exc
    if reader.pos != reader.end:
        raise CoordinatorRecordError(f"{spec.name} v{version}: trailing bytes")
    return decoded


def _value_or_tombstone(
    spec: MessageSpec, value: bytes | None, build: Callable[[dict[str, Any]], _V]
) -> _V | None:
    """A record's value: None for a tombstone, else ``build`` over the decoded ``spec``."""
    return None if value is None else build(decode_value(spec, value, None))


def _member_metadata(v: dict[str, Any]) -> MemberMetadata:
    return MemberMetadata(
        instance_id=v["instance_id"],
        rack_id=v["rack_id"],
        client_id=v["client_id"],
        client_host=v["client_host"],
        subscribed_topic_names=tuple(v["subscribed_topic_names"]),
        rebalance_timeout_ms=v["rebalance_timeout_ms"],
        server_assignor=v["server_assignor"],
    )


def _current_assignment(v: dict[str, Any]) -> CurrentAssignment:
    return CurrentAssignment(
        member_epoch=v["member_epoch"],
        previous_member_epoch=v["previous_member_epoch"],
        state=v["state"],
        assigned=from_wire_partitions(v["assigned_partitions"]),
        pending_revocation=from_wire_partitions(v["partitions_pending_revocation"]),
    )


def decode_consumer_record(key: bytes, value: bytes | None) -> ConsumerRecord | None:
    """Decode a consumer group record (types 3-8); None for types this module ignores."""
    if len(key) < 2:
        raise CoordinatorRecordError("record without a versioned key")
    (key_type,) = _VERSION.unpack_from(key)
    if key_type in (GROUP_METADATA, TARGET_METADATA):
        group_id = decode_value(GROUP_KEY, key, key_type)["group_id"]
        if key_type == GROUP_METADATA:
            epoch = _value_or_tombstone(_GROUP_VALUE, value, lambda v: int(v["epoch"]))
            return GroupEpochRecord(group_id, epoch)
        target = _value_or_tombstone(
            TARGET_METADATA_VALUE, value, lambda v: int(v["assignment_epoch"])
        )
        return TargetEpochRecord(group_id, target)
    if key_type not in (MEMBER_METADATA, TARGET_MEMBER, CURRENT_MEMBER):
        return None
    k = decode_value(MEMBER_KEY, key, key_type)
    group_id, member_id = k["group_id"], k["member_id"]
    if key_type == MEMBER_METADATA:
        metadata = _value_or_tombstone(_MEMBER_VALUE, value, _member_metadata)
        return MemberMetadataRecord(group_id, member_id, metadata)
    if key_type == TARGET_MEMBER:
        target_partitions = _value_or_tombstone(
            TARGET_MEMBER_VALUE, value, lambda v: from_wire_partitions(v["topic_partitions"])
        )
        return TargetMemberRecord(group_id, member_id, target_partitions)
    current = _value_or_tombstone(_CURRENT_MEMBER_VALUE, value, _current_assignment)
    return CurrentMemberRecord(group_id, member_id, current)
