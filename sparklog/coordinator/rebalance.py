"""The classic rebalance protocol over the groups of one ``__consumer_offsets`` partition.

Everything that changes a group's membership or state lives here: JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, the timers (session expiry, join and sync deadlines, the initial
rebalance delay) and the replay of the partition's records. :class:`GroupShard` is pure: time
comes from the injected clock, and every operation reports what must happen next through an
:class:`~sparklog.coordinator.group_metadata.Effects` (records to append, then answers to
deliver), so the asyncio driver in :mod:`sparklog.coordinator.coordinator` and the unit tests
run the same code.

The state machine (as Apache Kafka's classic groups):

- Empty -> PreparingRebalance when a member joins. The first rebalance of an empty group waits
  ``group.initial.rebalance.delay.ms``, extended while members keep arriving, up to the
  rebalance timeout; later ones complete as soon as every member has rejoined, or at the
  rebalance timeout, when members that did not rejoin are removed.
- PreparingRebalance -> CompletingRebalance: the generation increments, a protocol is chosen,
  every joined member is answered and the leader receives the members' metadata.
- CompletingRebalance -> Stable when the leader's SyncGroup brings the assignment; the group is
  persisted, then every waiting member gets its assignment.
- Any state with members -> PreparingRebalance when a member joins, changes its protocols,
  leaves, or misses its session timeout; a group whose last member goes becomes Empty.
- Dead: the group was deleted; it is dropped from the shard.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from sparklog.coordinator.group_metadata import (
    ClassicGroup,
    Effects,
    GroupConfig,
    GroupState,
    JoinResult,
    Member,
    Responder,
    SyncResult,
)
from sparklog.coordinator.records import (
    CoordinatorRecord,
    GroupRecord,
    OffsetCommitValue,
    OffsetRecord,
    group_key,
    group_value,
    offset_key,
)
from sparklog.protocol.errors import ErrorCode

TopicPartition = tuple[str, int]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str = ""
    client_host: str = ""
    require_known_member: bool = True


@dataclass(frozen=True, slots=True)
class SyncRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]


def _default_member_id(client_id: str) -> str:
    return f"{client_id}-{uuid.uuid4()}"


class GroupShard:
    """The groups and committed offsets of one ``__consumer_offsets`` partition."""

    def __init__(
        self,
        config: GroupConfig,
        clock: Callable[[], int],
        new_member_id: Callable[[str], str] = _default_member_id,
    ) -> None:
        self.config = config
        self.clock = clock
        self.new_member_id = new_member_id
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets: dict[str, dict[TopicPartition, OffsetCommitValue]] = {}

    # -- persistence ----------------------------------------------------------------------
    def store_group(self, group: ClassicGroup, fx: Effects) -> None:
        fx.records.append((group_key(group.group_id), group_value(group.to_record())))

    def delete_group(self, group: ClassicGroup, fx: Effects) -> None:
        """Tombstone the group and its offsets and drop it (it becomes Dead)."""
        for topic, partition in self.offsets.pop(group.group_id, {}):
            fx.records.append((offset_key(group.group_id, topic, partition), None))
        fx.records.append((group_key(group.group_id), None))
        group.transition(GroupState.DEAD, self.clock())
        for member in list(group.members.values()):
            self._remove_member(group, member, fx)
        self.groups.pop(group.group_id, None)

    def replay(self, record: CoordinatorRecord) -> None:
        """Apply one record read back from the partition (loading after a restart or a
        leadership change)."""
        now = self.clock()
        if isinstance(record, OffsetRecord):
            offsets = self.offsets.setdefault(record.group, {})
            if record.value is None:
                offsets.pop((record.topic, record.partition), None)
            else:
                offsets[(record.topic, record.partition)] = record.value
                self.groups.setdefault(record.group, ClassicGroup(record.group, now))
        elif isinstance(record, GroupRecord):
            if record.value is None:
                self.groups.pop(record.group, None)
            else:
                self.groups[record.group] = ClassicGroup.from_record(
                    record.group, record.value, now
                )

    # -- JoinGroup ------------------------------------------------------------------------
    def join_group(self, req: JoinRequest, responder: Responder, fx: Effects) -> None:
        now = self.clock()
        if not req.group_id:
            fx.reply(responder, JoinResult(ErrorCode.INVALID_GROUP_ID, member_id=req.member_id))
            return
        if not (
            self.config.min_session_timeout_ms
            <= req.session_timeout_ms
            <= self.config.max_session_timeout_ms
        ):
            fx.reply(
                responder, JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=req.member_id)
            )
            return
        group = self.groups.get(req.group_id)
        if group is None:
            if req.member_id:
                fx.reply(
                    responder, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=req.member_id)
                )
                return
            group = ClassicGroup(req.group_id, now)
            self.groups[req.group_id] = group
        error = self._join_error(group, req)
        if error is not None:
            fx.reply(responder, JoinResult(error, member_id=req.member_id))
            self._drop_if_unused(group)
            return
        if not req.member_id:
            self._join_new_member(group, req, responder, fx)
        else:
            self._join_known_member(group, req, responder, fx)

    def _join_error(self, group: ClassicGroup, req: JoinRequest) -> ErrorCode | None:
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        names = tuple(name for name, _ in req.protocols)
        if not group.supports(req.protocol_type, names):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _drop_if_unused(self, group: ClassicGroup) -> None:
        if (
            group.state is GroupState.EMPTY
            and not group.members
            and not group.pending_members
            and group.generation == 0
            and not self.offsets.get(group.group_id)
        ):
            self.groups.pop(group.group_id, None)

    def _new_member(self, member_id: str, req: JoinRequest, responder: Responder) -> Member:
        rebalance_timeout = req.rebalance_timeout_ms
        if rebalance_timeout < 0:
            rebalance_timeout = req.session_timeout_ms
        return Member(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout,
            protocol_type=req.protocol_type,
            protocols=req.protocols,
            last_heartbeat_ms=self.clock(),
            join_responder=responder,
        )

    def _join_new_member(
        self, group: ClassicGroup, req: JoinRequest, responder: Responder, fx: Effects
    ) -> None:
        member_id = self.new_member_id(req.client_id)
        if req.group_instance_id is not None:
            old_id = group.static_members.get(req.group_instance_id)
            if old_id is not None and old_id in group.members:
                self._replace_static_member(group, old_id, member_id, req, responder, fx)
                return
        if len(group.members) + len(group.pending_members) >= self.config.max_size:
            fx.reply(responder, JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id=member_id))
            self._drop_if_unused(group)
            return
        if req.group_instance_id is None and req.require_known_member:
            # KIP-394: the member must come back with this id, so a client that times out on
            # its first join does not leave an orphan member behind.
            group.pending_members[member_id] = self.clock() + req.session_timeout_ms
            fx.reply(
                responder,
                JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id),
            )
            return
        self._add_member_and_rebalance(group, self._new_member(member_id, req, responder), fx)

    def _replace_static_member(
        self,
        group: ClassicGroup,
        old_id: str,
        member_id: str,
        req: JoinRequest,
        responder: Responder,
        fx: Effects,
    ) -> None:
        """A static member restarted: it takes over its old slot under a new member id, and
        the old incarnation is fenced. A Stable group keeps its assignment (no rebalance)
        unless the member was the leader or changed its protocols."""
        old = group.members[old_id]
        fenced = JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id)
        fx.reply(old.join_responder, fenced)
        fx.reply(old.sync_responder, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        was_leader = group.leader_id == old_id
        group.remove(old_id)
        member = self._new_member(member_id, req, responder)
        member.assignment = old.assignment
        group.add(member)
        if was_leader:
            group.leader_id = member_id
        if group.state is GroupState.STABLE and not was_leader and old.protocols == req.protocols:
            member.join_responder = None
            self.store_group(group, fx)
            fx.reply(responder, group.join_result(member))
            return
        if group.state is GroupState.PREPARING_REBALANCE:
            self._try_complete_join(group, fx)
        else:
            self._prepare_rebalance(group, fx, f"static member {member_id} rejoined")

    def _join_known_member(
        self, group: ClassicGroup, req: JoinRequest, responder: Responder, fx: Effects
    ) -> None:
        if req.member_id in group.pending_members:
            self._add_member_and_rebalance(
                group, self._new_member(req.member_id, req, responder), fx
            )
            return
        member = group.members.get(req.member_id)
        if member is None:
            fx.reply(responder, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=req.member_id))
            return
        if self._fenced(group, req.member_id, req.group_instance_id):
            fx.reply(responder, JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=req.member_id))
            return
        changed = member.protocols != req.protocols
        member.protocols = req.protocols
        member.session_timeout_ms = req.session_timeout_ms
        if req.rebalance_timeout_ms >= 0:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.last_heartbeat_ms = self.clock()
        if member.join_responder is not None and member.join_responder is not responder:
            # A retried join replaces the one the client gave up on.
            fx.reply(member.join_responder, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID))
        member.join_responder = responder
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._try_complete_join(group, fx)
        elif state is GroupState.COMPLETING_REBALANCE and not changed:
            # The member lost our answer: give it again.
            member.join_responder = None
            fx.reply(responder, group.join_result(member))
        elif state is GroupState.STABLE and not changed and member.member_id != group.leader_id:
            member.join_responder = None
            fx.reply(responder, group.join_result(member))
        else:
            reason = "changed its protocols" if changed else "rejoined"
            self._prepare_rebalance(group, fx, f"member {member.member_id} {reason}")

    @staticmethod
    def validate_member(
        group: ClassicGroup, member_id: str, instance_id: str | None
    ) -> ErrorCode | None:
        """A static member is named by its instance id: an instance we do not know is
        UNKNOWN_MEMBER_ID, a known one under another member id is FENCED_INSTANCE_ID."""
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def _fenced(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> bool:
        if instance_id is None:
            return False
        return group.static_members.get(instance_id) != member_id

    def _add_member_and_rebalance(self, group: ClassicGroup, member: Member, fx: Effects) -> None:
        group.add(member)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._try_complete_join(group, fx)
        else:
            self._prepare_rebalance(group, fx, f"member {member.member_id} joined")

    def _prepare_rebalance(self, group: ClassicGroup, fx: Effects, reason: str) -> None:
        now = self.clock()
        log.info(
            "Preparing to rebalance group %s in state %s with old generation %d (reason: %s)",
            group.group_id,
            group.state.value,
            group.generation,
            reason,
        )
        if group.state is GroupState.COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
                fx.reply(member.sync_responder, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
                member.sync_responder = None
        was_empty = group.state is GroupState.EMPTY
        group.transition(GroupState.PREPARING_REBALANCE, now)
        group.sync_deadline_ms = None
        rebalance_timeout = group.max_rebalance_timeout_ms()
        if was_empty and self.config.initial_rebalance_delay_ms > 0:
            delay = min(self.config.initial_rebalance_delay_ms, rebalance_timeout)
            group.initial_delay_active = True
            group.initial_delay_remaining_ms = max(rebalance_timeout - delay, 0)
            group.new_member_added = False
            group.join_deadline_ms = now + delay
        else:
            group.join_deadline_ms = now + rebalance_timeout
            self._try_complete_join(group, fx)

    def _try_complete_join(self, group: ClassicGroup, fx: Effects) -> None:
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        if group.initial_delay_active and group.members:
            return
        if group.all_joined():
            self._complete_join(group, fx)

    def _complete_join(self, group: ClassicGroup, fx: Effects) -> None:
        now = self.clock()
        group.initial_delay_active = False
        group.join_deadline_ms = None
        for member in list(group.members.values()):
            if member.join_responder is None and member.group_instance_id is None:
                self._remove_member(group, member, fx)
        group.generation += 1
        if not group.members:
            group.protocol_name = None
            group.leader_id = None
            group.transition(GroupState.EMPTY, now)
            self.store_group(group, fx)
            return
        group.protocol_name = group.select_protocol()
        if group.leader_id is None or group.members[group.leader_id].join_responder is None:
            joined = [m for m in group.members.values() if m.join_responder is not None]
            if joined:
                group.leader_id = joined[0].member_id
        group.transition(GroupState.COMPLETING_REBALANCE, now)
        log.info(
            "Stabilized group %s generation %d (protocol %s) with %d member(s)",
            group.group_id,
            group.generation,
            group.protocol_name,
            len(group.members),
        )
        group.sync_deadline_ms = now + group.max_rebalance_timeout_ms()
        for member in group.members.values():
            member.last_heartbeat_ms = now
            if member.join_responder is not None:
                fx.reply(member.join_responder, group.join_result(member))
                member.join_responder = None

    def _remove_member(self, group: ClassicGroup, member: Member, fx: Effects) -> None:
        group.remove(member.member_id)
        fx.reply(
            member.join_responder,
            JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member.member_id),
        )
        fx.reply(member.sync_responder, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        member.join_responder = member.sync_responder = None

    def _remove_member_and_rebalance(
        self, group: ClassicGroup, member: Member, fx: Effects, reason: str
    ) -> None:
        self._remove_member(group, member, fx)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, fx, f"member {member.member_id} {reason}")
        elif group.state is GroupState.PREPARING_REBALANCE:
            self._try_complete_join(group, fx)

    # -- SyncGroup ------------------------------------------------------------------------
    def sync_group(self, req: SyncRequest, responder: Responder, fx: Effects) -> None:
        group = self.groups.get(req.group_id)
        error = self._member_error(group, req.member_id, req.group_instance_id, req.generation_id)
        if error is None and group is not None:
            if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or (
                req.protocol_name is not None and req.protocol_name != group.protocol_name
            ):
                error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
            elif group.state is GroupState.PREPARING_REBALANCE:
                error = ErrorCode.REBALANCE_IN_PROGRESS
        if error is not None or group is None:
            fx.reply(responder, SyncResult(error or ErrorCode.UNKNOWN_MEMBER_ID))
            return
        member = group.members[req.member_id]
        member.last_heartbeat_ms = self.clock()
        if group.state is GroupState.STABLE:
            fx.reply(responder, self._sync_result(group, member))
            return
        fx.reply(member.sync_responder, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_responder = responder
        if req.member_id != group.leader_id:
            return
        for m in group.members.values():
            m.assignment = req.assignments.get(m.member_id, b"")
        group.transition(GroupState.STABLE, self.clock())
        group.sync_deadline_ms = None
        self.store_group(group, fx)
        for m in group.members.values():
            fx.reply(m.sync_responder, self._sync_result(group, m))
            m.sync_responder = None

    @staticmethod
    def _sync_result(group: ClassicGroup, member: Member) -> SyncResult:
        return SyncResult(
            ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
        )

    def _member_error(
        self,
        group: ClassicGroup | None,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
    ) -> ErrorCode | None:
        """The checks SyncGroup and Heartbeat share, in Kafka's order."""
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self.validate_member(group, member_id, instance_id)
        if error is not None:
            return error
        if generation_id != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    # -- Heartbeat ------------------------------------------------------------------------
    def heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        group = self.groups.get(group_id)
        error = self._member_error(group, member_id, instance_id, generation_id)
        if error is not None or group is None:
            return error or ErrorCode.UNKNOWN_MEMBER_ID
        group.members[member_id].last_heartbeat_ms = self.clock()
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # -- LeaveGroup -----------------------------------------------------------------------
    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]], fx: Effects
    ) -> list[ErrorCode] | None:
        """Remove members given as (member id, group instance id); a static member may be
        named by its instance id alone. None when the group does not exist."""
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return None
        errors: list[ErrorCode] = []
        for member_id, instance_id in leaving:
            if instance_id is not None:
                current = group.static_members.get(instance_id)
                if current is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                if member_id and member_id != current:
                    errors.append(ErrorCode.FENCED_INSTANCE_ID)
                    continue
                member_id = current
            if member_id in group.pending_members:
                del group.pending_members[member_id]
                self._try_complete_join(group, fx)
                errors.append(ErrorCode.NONE)
                continue
            member = group.members.get(member_id)
            if member is None:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            self._remove_member_and_rebalance(group, member, fx, "left the group")
            errors.append(ErrorCode.NONE)
        return errors

    # -- timers ---------------------------------------------------------------------------
    def next_deadline_ms(self) -> int | None:
        deadlines: list[int] = []
        for group in self.groups.values():
            if group.join_deadline_ms is not None:
                deadlines.append(group.join_deadline_ms)
            if group.sync_deadline_ms is not None:
                deadlines.append(group.sync_deadline_ms)
            deadlines.extend(group.pending_members.values())
            for m in group.members.values():
                if m.join_responder is None and m.sync_responder is None:
                    deadlines.append(m.last_heartbeat_ms + m.session_timeout_ms)
        return min(deadlines, default=None)

    def tick(self, fx: Effects) -> None:
        """Fire every deadline that has passed."""
        now = self.clock()
        for group in list(self.groups.values()):
            for member_id, deadline in list(group.pending_members.items()):
                if deadline <= now:
                    del group.pending_members[member_id]
                    self._try_complete_join(group, fx)
            for member in list(group.members.values()):
                idle = member.join_responder is None and member.sync_responder is None
                expired = member.last_heartbeat_ms + member.session_timeout_ms <= now
                # an earlier removal in this loop may have completed a join and removed it
                if idle and expired and member.member_id in group.members:
                    self._remove_member_and_rebalance(group, member, fx, "session expired")
            if (
                group.state is GroupState.PREPARING_REBALANCE
                and group.join_deadline_ms is not None
                and group.join_deadline_ms <= now
            ):
                self._join_deadline(group, fx)
            if (
                group.state is GroupState.COMPLETING_REBALANCE
                and group.sync_deadline_ms is not None
                and group.sync_deadline_ms <= now
            ):
                # The leader never sent the assignment: drop whoever did not sync, try again.
                for member in list(group.members.values()):
                    if member.sync_responder is None:
                        self._remove_member(group, member, fx)
                self._prepare_rebalance(group, fx, "the leader's SyncGroup did not arrive")

    def _join_deadline(self, group: ClassicGroup, fx: Effects) -> None:
        now = self.clock()
        if (
            group.initial_delay_active
            and group.new_member_added
            and group.initial_delay_remaining_ms > 0
        ):
            delay = min(self.config.initial_rebalance_delay_ms, group.initial_delay_remaining_ms)
            group.initial_delay_remaining_ms -= delay
            group.new_member_added = False
            group.join_deadline_ms = now + delay
            return
        self._complete_join(group, fx)

    def fail_all_waiters(self, fx: Effects, error: ErrorCode) -> None:
        """Answer every parked join and sync with ``error`` (we stop being the coordinator)."""
        for group in self.groups.values():
            for member in group.members.values():
                fx.reply(member.join_responder, JoinResult(error, member_id=member.member_id))
                fx.reply(member.sync_responder, SyncResult(error))
                member.join_responder = member.sync_responder = None
