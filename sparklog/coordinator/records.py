"""The records of ``__consumer_offsets``: Kafka's coordinator key/value schemas.

Every record key starts with an int16 version that names the record type (Kafka's
``apiKey`` of the coordinator record): 0 and 1 are offset commits (``OffsetCommitKey``), 2 is
group metadata (``GroupMetadataKey``). The value starts with its own int16 schema version and
is null for a tombstone. Declarations follow Apache Kafka's ``OffsetCommitKey/Value`` and
``GroupMetadataKey/Value`` JSON files; we write the versions Kafka 4.x writes (offset value v3,
group value v3) so a log written here reads back in Kafka's tools, and read every version.

Invariants: ``decode_record(*encode_...)`` gives back what was encoded; a record with an
unknown key version or a malformed payload raises :class:`CoordinatorRecordError` (the
loader skips it with a log line; it never takes a node down).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from sparklog.protocol.codec import decode_from, encode_bytes
from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.schema import array, field, message
from sparklog.protocol.types import Reader

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3

OFFSET_COMMIT_KEY = message(
    "OffsetCommitKey",
    "0-1",
    "none",
    field("group", "string"),
    field("topic", "string"),
    field("partition", "int32"),
)

OFFSET_COMMIT_VALUE = message(
    "OffsetCommitValue",
    "0-4",
    "4+",
    field("offset", "int64"),
    field("leader_epoch", "int32", "3+", default=-1, ignorable=True),
    field("metadata", "string"),
    field("commit_timestamp", "int64"),
    field("expire_timestamp", "int64", "1", default=-1, ignorable=True),
    field("topic_id", "uuid", "4+", tag=0, ignorable=True),
)

GROUP_METADATA_KEY = message("GroupMetadataKey", "2", "none", field("group", "string"))

GROUP_METADATA_VALUE = message(
    "GroupMetadataValue",
    "0-4",
    "4+",
    field("protocol_type", "string"),
    field("generation", "int32"),
    field("protocol", "string", nullable="0+"),
    field("leader", "string", nullable="0+"),
    field("current_state_timestamp", "int64", "2+", default=-1, ignorable=True),
    array(
        "members",
        field("member_id", "string"),
        field("group_instance_id", "string", "3+", nullable="3+", default=None, ignorable=True),
        field("client_id", "string"),
        field("client_host", "string"),
        field("rebalance_timeout", "int32", "1+", default=-1, ignorable=True),
        field("session_timeout", "int32"),
        field("subscription", "bytes"),
        field("assignment", "bytes"),
    ),
)

_VERSION = struct.Struct(">h")


class CoordinatorRecordError(ValueError):
    """A ``__consumer_offsets`` record we cannot read."""


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberRecord, ...]


@dataclass(frozen=True, slots=True)
class OffsetRecord:
    """An offset commit (``value`` None: the offset was deleted)."""

    group: str
    topic: str
    partition: int
    value: OffsetCommitValue | None


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """A group's metadata (``value`` None: the group was deleted)."""

    group: str
    value: GroupMetadataValue | None


CoordinatorRecord = OffsetRecord | GroupRecord


def _versioned(version: int, body: bytes) -> bytes:
    return _VERSION.pack(version) + body


def offset_key(group: str, topic: str, partition: int) -> bytes:
    body = {"group": group, "topic": topic, "partition": partition}
    return _versioned(
        OFFSET_COMMIT_KEY_VERSION,
        encode_bytes(OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY_VERSION, body),
    )


def offset_value(value: OffsetCommitValue) -> bytes:
    body = {
        "offset": value.offset,
        "leader_epoch": value.leader_epoch,
        "metadata": value.metadata,
        "commit_timestamp": value.commit_timestamp_ms,
    }
    return _versioned(
        OFFSET_COMMIT_VALUE_VERSION,
        encode_bytes(OFFSET_COMMIT_VALUE, OFFSET_COMMIT_VALUE_VERSION, body),
    )


def group_key(group: str) -> bytes:
    return _versioned(
        GROUP_METADATA_KEY_VERSION,
        encode_bytes(GROUP_METADATA_KEY, GROUP_METADATA_KEY_VERSION, {"group": group}),
    )


def group_value(value: GroupMetadataValue) -> bytes:
    body: dict[str, Any] = {
        "protocol_type": value.protocol_type,
        "generation": value.generation,
        "protocol": value.protocol,
        "leader": value.leader,
        "current_state_timestamp": value.current_state_timestamp_ms,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "rebalance_timeout": m.rebalance_timeout_ms,
                "session_timeout": m.session_timeout_ms,
                "subscription": m.subscription,
                "assignment": m.assignment,
            }
            for m in value.members
        ],
    }
    return _versioned(
        GROUP_METADATA_VALUE_VERSION,
        encode_bytes(GROUP_METADATA_VALUE, GROUP_METADATA_VALUE_VERSION, body),
    )


def _decode_versioned(spec_name: str, data: bytes, specs: dict[int, Any]) -> dict[str, Any]:
    if len(data) < 2:
        raise CoordinatorRecordError(f"{spec_name}: {len(data)} bytes, no version")
    (version,) = _VERSION.unpack_from(data)
    spec = specs.get(version)
    if spec is None:
        raise CoordinatorRecordError(f"{spec_name}: unknown version {version}")
    reader = Reader(data, 2)
    try:
        decoded = decode_from(spec, version, reader)
    except (ProtocolError, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise CoordinatorRecordError(f"{spec_name} v{version}: {exc}") from exc
    if reader.pos != reader.end:
        raise CoordinatorRecordError(f"{spec_name} v{version}: trailing bytes")
    return decoded


_OFFSET_VALUE_SPECS = {v: OFFSET_COMMIT_VALUE for v in range(5)}
_GROUP_VALUE_SPECS = {v: GROUP_METADATA_VALUE for v in range(5)}


def decode_record(key: bytes | None, value: bytes | None) -> CoordinatorRecord | None:
    """Decode one record of ``__consumer_offsets``; None for record types this coordinator
    does not keep (e.g. KIP-848 consumer group records)."""
    if key is None or len(key) < 2:
        raise CoordinatorRecordError("record without a versioned key")
    (key_version,) = _VERSION.unpack_from(key)
    if key_version in (0, 1):
        k = _decode_versioned("OffsetCommitKey", key, {0: OFFSET_COMMIT_KEY, 1: OFFSET_COMMIT_KEY})
        if value is None:
            return OffsetRecord(k["group"], k["topic"], k["partition"], None)
        v = _decode_versioned("OffsetCommitValue", value, _OFFSET_VALUE_SPECS)
        return OffsetRecord(
            k["group"],
            k["topic"],
            k["partition"],
            OffsetCommitValue(
                offset=v["offset"],
                leader_epoch=v["leader_epoch"],
                metadata=v["metadata"],
                commit_timestamp_ms=v["commit_timestamp"],
            ),
        )
    if key_version == GROUP_METADATA_KEY_VERSION:
        group = _decode_versioned("GroupMetadataKey", key, {2: GROUP_METADATA_KEY})["group"]
        if value is None:
            return GroupRecord(group, None)
        v = _decode_versioned("GroupMetadataValue", value, _GROUP_VALUE_SPECS)
        members = tuple(
            MemberRecord(
                member_id=m["member_id"],
                group_instance_id=m["group_instance_id"],
                client_id=m["client_id"],
                client_host=m["client_host"],
                rebalance_timeout_ms=m["rebalance_timeout"],
                session_timeout_ms=m["session_timeout"],
                subscription=bytes(m["subscription"]),
                assignment=bytes(m["assignment"]),
            )
            for m in v["members"]
        )
        return GroupRecord(
            group,
            GroupMetadataValue(
                protocol_type=v["protocol_type"],
                generation=v["generation"],
                protocol=v["protocol"],
                leader=v["leader"],
                current_state_timestamp_ms=v["current_state_timestamp"],
                members=members,
            ),
        )
    return None
