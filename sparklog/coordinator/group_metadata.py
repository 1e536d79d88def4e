"""The state of one classic group: members, generation, protocol, leader, and the results
the group hands back to members.

This module holds data and the small rules that need nothing but the group itself (protocol
selection, membership bookkeeping, the record that persists the group). The transitions
between states live in :mod:`sparklog.coordinator.rebalance`; nothing here reads a clock or
does I/O.

Invariants:
- ``leader_id`` is None exactly when the group has no members, else it names a member.
- ``static_members`` maps each static member's ``group.instance.id`` to its current member id,
  and every member with an instance id is in it.
- ``protocol_type`` is set from the first member that joins an empty group; every member
  shares it and the group's candidate protocols (those every member supports) are non-empty.
- A member waits for at most one JoinGroup and one SyncGroup answer (``join_responder`` /
  ``sync_responder``); a responder is called exactly once, through :class:`Effects`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sparklog.coordinator.records import GroupMetadataValue, MemberRecord
from sparklog.protocol.errors import ErrorCode

# Called once with a JoinResult/SyncResult, or with an ErrorCode when the answer could not be
# made durable.
Responder = Callable[[Any], None]


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinMember, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """The broker settings a group coordinator obeys (Kafka's names in the docstrings)."""

    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    max_size: int = 2**31 - 1  # group.max.size
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000  # offsets.retention.minutes
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    last_heartbeat_ms: int
    assignment: bytes = b""
    join_responder: Responder | None = None
    sync_responder: Responder | None = None

    def protocol_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.protocols)

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""


@dataclass
class Effects:
    """What one operation asks the driver to do: records to append to the group's
    ``__consumer_offsets`` partition, then answers to deliver (in that order)."""

    records: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    replies: list[tuple[Responder, Any]] = field(default_factory=list)

    def reply(self, responder: Responder | None, result: Any) -> None:
        if responder is not None:
            self.replies.append((responder, result))


class ClassicGroup:
    def __init__(self, group_id: str, now_ms: int) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.state_timestamp_ms = now_ms
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        # member ids handed out with MEMBER_ID_REQUIRED -> deadline to rejoin with them
        self.pending_members: dict[str, int] = {}
        self.join_deadline_ms: int | None = None
        self.sync_deadline_ms: int | None = None
        # group.initial.rebalance.delay.ms: the first rebalance of an empty group waits for
        # more members, extending by the delay while members keep arriving.
        self.initial_delay_active = False
        self.initial_delay_remaining_ms = 0
        self.new_member_added = False

    def __repr__(self) -> str:
        return f"ClassicGroup({self.group_id}, {self.state.value}, gen={self.generation})"

    def transition(self, state: GroupState, now_ms: int) -> None:
        self.state = state
        self.state_timestamp_ms = now_ms

    # -- protocols ------------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        names: set[str] | None = None
        for member in self.members.values():
            mine = set(member.protocol_names())
            names = mine if names is None else names & mine
        return names or set()

    def supports(self, protocol_type: str, protocols: tuple[str, ...]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        return protocol_type == self.protocol_type and bool(
            self.candidate_protocols() & set(protocols)
        )

    def select_protocol(self) -> str:
        """Each member votes for its most preferred candidate; the most votes win (ties go to
        the protocol listed first by the earliest member)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = next(n for n in member.protocol_names() if n in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    # -- membership -----------------------------------------------------------------------
    def add(self, member: Member) -> None:
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.pop(member.member_id, None)
        if len(self.members) == 1:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.new_member_added = True

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        instance_id = member.group_instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def all_joined(self) -> bool:
        return not self.pending_members and all(
            m.join_responder is not None for m in self.members.values()
        )

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def join_result(self, member: Member) -> JoinResult:
        """The JoinGroup answer of the current generation; only the leader sees the members."""
        members: tuple[JoinMember, ...] = ()
        if member.member_id == self.leader_id:
            members = tuple(
                JoinMember(m.member_id, m.group_instance_id, m.metadata_for(self.protocol_name))
                for m in self.members.values()
            )
        return JoinResult(
            error=ErrorCode.NONE,
            generation_id=self.generation,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader=self.leader_id or "",
            member_id=member.member_id,
            members=members,
        )

    # -- persistence ----------------------------------------------------------------------
    def to_record(self) -> GroupMetadataValue:
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation,
            protocol=self.protocol_name,
            leader=self.leader_id,
            current_state_timestamp_ms=self.state_timestamp_ms,
            members=tuple(
                MemberRecord(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    session_timeout_ms=m.session_timeout_ms,
                    subscription=m.metadata_for(self.protocol_name),
                    assignment=m.assignment,
                )
                for m in self.members.values()
            ),
        )

    @staticmethod
    def from_record(group_id: str, value: GroupMetadataValue, now_ms: int) -> ClassicGroup:
        """A group as loaded from the log: Stable with its members (who must heartbeat within
        their session timeout from now), or Empty."""
        group = ClassicGroup(group_id, now_ms)
        group.generation = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        for m in value.members:
            group.add(
                Member(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    session_timeout_ms=m.session_timeout_ms,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    protocol_type=value.protocol_type,
                    protocols=((value.protocol or "", m.subscription),),
                    last_heartbeat_ms=now_ms,
                    assignment=m.assignment,
                )
            )
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        group.new_member_added = False
        if group.members:
            group.state = GroupState.STABLE
        if value.current_state_timestamp_ms >= 0:
            group.state_timestamp_ms = value.current_state_timestamp_ms
        return group
