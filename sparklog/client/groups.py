"""Consumer groups as an admin client sees them: list, describe (classic and KIP-848) and
committed offsets, for ``sparklog consumer-groups`` and the web console.

Classic groups are described with DescribeGroups (15), KIP-848 consumer groups with
ConsumerGroupDescribe (69): which one is the group's type from ListGroups (16, v5). Committed
offsets come from OffsetFetch (9) at the coordinator. Failures are
:class:`~sparklog.client.admin.AdminError` naming the group and Kafka's error.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import cast

from sparklog.client.admin import AdminClient, AdminError, TopicPartition, kafka_error
from sparklog.client.connection import KafkaConnection
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import ListGroupsResponse, ListGroupsResponseGroups

_STATE_NAMES = {
    name.lower(): name
    for name in (
        "Empty",
        "Stable",
        "PreparingRebalance",
        "CompletingRebalance",
        "Assigning",
        "Reconciling",
        "Dead",
        "Unknown",
    )
}


def state_name(raw: str) -> str:
    """The coordinator's state string as Kafka's GroupState prints it (``Stable``)."""
    return _STATE_NAMES.get(raw.lower(), raw)


@dataclass(slots=True)
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: list[TopicPartition] = field(default_factory=list)
    epoch: int | None = None  # KIP-848 members only
    target_epoch: int | None = None
    target: list[TopicPartition] = field(default_factory=list)


@dataclass(slots=True)
class GroupDescription:
    group_id: str
    state: str
    group_type: str  # "Classic" or "Consumer"
    assignor: str
    coordinator: str  # "host:port  (id)"
    members: list[Member]


def list_groups(
    admin: AdminClient, states: list[str] | None = None, types: list[str] | None = None
) -> list[ListGroupsResponseGroups]:
    """Every broker's groups: each lists only those it coordinates, as in Kafka's admin."""
    groups: list[ListGroupsResponseGroups] = []
    for broker in sorted(admin.metadata([])["brokers"], key=lambda b: b["node_id"]):
        answer = admin.broker(broker["node_id"]).request(
            "ListGroups", {"states_filter": states or [], "types_filter": types or []}
        )
        response = cast("ListGroupsResponse", answer)
        if response["error_code"]:
            raise AdminError(
                f"listing groups on broker {broker['node_id']} failed: "
                f"{kafka_error(response['error_code'])}"
            )
        groups += response["groups"]
    return groups


def group_type(admin: AdminClient, group_id: str) -> str | None:
    """``classic``, ``consumer`` or None (no such group), from the coordinator's ListGroups."""
    response = admin.coordinator(group_id).request(
        "ListGroups", {"states_filter": [], "types_filter": []}
    )
    for group in response["groups"]:
        if group["group_id"] == group_id:
            return str(group.get("group_type") or "classic").lower()
    return None


def _classic_assignment(data: bytes) -> list[TopicPartition]:
    """Kafka's ConsumerProtocol assignment: version, [topic, [partition]], user data."""
    out: list[TopicPartition] = []
    if len(data) < 6:
        return out
    pos = 2
    (topics,) = struct.unpack_from(">i", data, pos)
    pos += 4
    for _ in range(max(topics, 0)):
        (size,) = struct.unpack_from(">h", data, pos)
        topic = data[pos + 2 : pos + 2 + size].decode()
        pos += 2 + size
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(max(count, 0)):
            out.append((topic, struct.unpack_from(">i", data, pos)[0]))
            pos += 4
    return out


def describe_group(admin: AdminClient, group_id: str) -> GroupDescription | None:
    kind = group_type(admin, group_id)
    if kind is None:
        return None
    coordinator = admin.coordinator(group_id)
    coordinator_text = f"{coordinator.host}:{coordinator.port}  ({node_id_of(admin, coordinator)})"
    if kind == "consumer":
        response = coordinator.request(
            "ConsumerGroupDescribe",
            {"group_ids": [group_id], "include_authorized_operations": False},
        )
        entry = response["groups"][0]
        if entry["error_code"]:
            raise AdminError(f"describing group {group_id}: {kafka_error(entry['error_code'])}")
        members = [
            Member(
                m["member_id"],
                m.get("instance_id"),
                m["client_id"],
                m["client_host"],
                [
                    (tp["topic_name"], p)
                    for tp in m["assignment"]["topic_partitions"]
                    for p in tp["partitions"]
                ],
                m["member_epoch"],
                entry["assignment_epoch"],
                [
                    (tp["topic_name"], p)
                    for tp in m["target_assignment"]["topic_partitions"]
                    for p in tp["partitions"]
                ],
            )
            for m in entry["members"]
        ]
        return GroupDescription(
            group_id,
            state_name(entry["group_state"]),
            "Consumer",
            entry.get("assignor_name") or "",
            coordinator_text,
            members,
        )
    response = coordinator.request(
        "DescribeGroups", {"groups": [group_id], "include_authorized_operations": False}
    )
    entry = response["groups"][0]
    if entry["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND:
        return None
    if entry["error_code"]:
        raise AdminError(f"describing group {group_id}: {kafka_error(entry['error_code'])}")
    members = [
        Member(
            m["member_id"],
            m.get("group_instance_id"),
            m["client_id"],
            m["client_host"],
            _classic_assignment(bytes(m["member_assignment"] or b"")),
        )
        for m in entry["members"]
    ]
    return GroupDescription(
        group_id,
        state_name(entry["group_state"]),
        "Classic",
        entry["protocol_data"] or "",
        coordinator_text,
        members,
    )


def node_id_of(admin: AdminClient, conn: KafkaConnection) -> int:
    for broker in admin.metadata([])["brokers"]:
        if broker["host"] == conn.host and broker["port"] == conn.port:
            return int(broker["node_id"])
    return -1


def committed_offsets(admin: AdminClient, group_id: str) -> dict[TopicPartition, int]:
    """The group's committed offsets (OffsetFetch v7, all topics)."""
    response = admin.coordinator(group_id).request(
        "OffsetFetch", {"group_id": group_id, "topics": None, "require_stable": False}, version=7
    )
    if response.get("error_code"):
        raise AdminError(f"fetching offsets of {group_id}: {kafka_error(response['error_code'])}")
    return {
        (topic["name"], p["partition_index"]): p["committed_offset"]
        for topic in response["topics"]
        for p in topic["partitions"]
        if p["error_code"] == 0 and p["committed_offset"] >= 0
    }
