"""KIP-848 consumer groups of one ``__consumer_offsets`` partition: ConsumerGroupHeartbeat,
reconciliation, session timeouts, offset-commit checks and the replay of the group's records.

Pure like :mod:`sparklog.coordinator.rebalance`: time comes from the injected clock, records
to append go to an ``Effects``; the asyncio driver is :mod:`sparklog.coordinator.coordinator`.

Epochs (as Kafka): the *group epoch* bumps whenever membership or a subscription (or the
partition count of a subscribed topic) changes; the *assignment epoch* is the group epoch the
target assignment was computed at; a *member epoch* is the assignment epoch a member has
reconciled to.

Reconciliation invariants (the step itself is :mod:`sparklog.coordinator.consumer_reconcile`):
- A member never receives a partition that another member still owns (holds in its assigned
  set or has pending revocation); it waits in UNRELEASED_PARTITIONS until it is released.
- Revocations come first: a member whose target drops partitions keeps its epoch, loses them
  from its assigned set at once (they become pending revocation), and only moves to the new
  epoch once its heartbeat shows it no longer owns them.
- A member that skips a revocation does not block the others for ever: one still holding
  partitions pending revocation after its rebalance timeout is removed (fenced), as is a member
  that misses ``group.consumer.session.timeout.ms``; either frees its partitions and bumps the
  group epoch.
- A member leaves with epoch -1. A static member (with an instance id) leaving with -2 is kept
  with member epoch -2 (persisted, so a new coordinator knows the instance id is released) and
  its partitions stay owned until its session expires or a new member with the same instance
  id takes its place, inheriting them.

Heartbeat answers follow Kafka: an epoch above the member's, or below it unless it is the
previous epoch with owned partitions a subset of the assignment (the bump was lost), is
FENCED_MEMBER_EPOCH; the response carries the full assignment only when the member joins
(epoch 0), sends a full request (rebalance timeout, subscription and owned partitions all
set), or its assigned partitions changed; otherwise ``assignment`` is null.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from sparklog.coordinator.assignors import ASSIGNORS
from sparklog.coordinator.consumer_reconcile import (
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    is_subset,
    next_assignment,
)
from sparklog.coordinator.consumer_records import (
    Assignment,
    ConsumerRecord,
    CurrentAssignment,
    CurrentMemberRecord,
    GroupEpochRecord,
    MemberMetadata,
    MemberMetadataRecord,
    TargetEpochRecord,
    TargetMemberRecord,
    encode,
)
from sparklog.coordinator.group_metadata import Effects
from sparklog.protocol.errors import ErrorCode

__all__ = [
    "LEAVE_EPOCH",
    "STABLE",
    "STATIC_LEAVE_EPOCH",
    "UNRELEASED_PARTITIONS",
    "UNREVOKED_PARTITIONS",
    "ConsumerConfig",
    "ConsumerGroup",
    "ConsumerGroups",
    "ConsumerMember",
    "HeartbeatRequest",
    "HeartbeatResult",
    "TopicResolver",
]

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

# topic name -> (topic id, partition count), None when the topic does not exist
TopicResolver = Callable[[str], tuple[bytes, int] | None]
# group id -> its dynamic config overrides (``consumer.session.timeout.ms``, ...), validated
# against the broker's bounds by the controller when set
GroupOverrides = Callable[[str], Mapping[str, str]]


def _no_overrides(group_id: str) -> Mapping[str, str]:
    return {}


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors
    max_size: int = 2**31 - 1  # group.consumer.max.size


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error: ErrorCode
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None
    message: str | None = None


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    metadata: MemberMetadata
    current: CurrentAssignment = field(
        default_factory=lambda: CurrentAssignment(0, 0, STABLE, {}, {})
    )
    deadline_ms: int = 0
    # When a member in UNREVOKED_PARTITIONS is fenced if it has not revoked yet; not persisted
    # (re-armed on load, as Kafka re-arms its timers).
    revoke_deadline_ms: int | None = None

    @property
    def left_static(self) -> bool:
        return self.current.member_epoch == STATIC_LEAVE_EPOCH


class ConsumerGroup:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerMember] = {}
        self.target: dict[str, Assignment] = {}
        self.topic_fingerprint: tuple[tuple[bytes, int], ...] | None = None

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.assignment_epoch != self.group_epoch:
            return "Assigning"
        if any(m.current.member_epoch != self.assignment_epoch for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        for member in self.members.values():
            if member.metadata.instance_id == instance_id:
                return member
        return None

    def owners(self, exclude: str) -> dict[tuple[bytes, int], str]:
        out: dict[tuple[bytes, int], str] = {}
        for member in self.members.values():
            if member.member_id == exclude:
                continue
            for assignment in (member.current.assigned, member.current.pending_revocation):
                for topic_id, parts in assignment.items():
                    for p in parts:
                        out[(topic_id, p)] = member.member_id
        return out


def _fenced_instance(instance_id: str, holder: str) -> HeartbeatResult:
    message = f"Instance id {instance_id} is held by member {holder}."
    return HeartbeatResult(ErrorCode.FENCED_INSTANCE_ID, message=message)


class ConsumerGroups:
    """The consumer groups of one shard."""

    def __init__(
        self,
        config: ConsumerConfig,
        clock: Callable[[], int],
        overrides: GroupOverrides = _no_overrides,
    ) -> None:
        self.config = config
        self.clock = clock
        self.overrides = overrides
        self.groups: dict[str, ConsumerGroup] = {}

    def session_timeout_ms(self, group_id: str) -> int:
        """The group's ``consumer.session.timeout.ms``, else group.consumer.session.timeout.ms
        (Kafka's ``GroupCoordinatorShard.consumerGroupSessionTimeoutMs``)."""
        value = self.overrides(group_id).get("consumer.session.timeout.ms")
        return self.config.session_timeout_ms if value is None else int(value)

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """The group's ``consumer.heartbeat.interval.ms``, else the broker's default."""
        value = self.overrides(group_id).get("consumer.heartbeat.interval.ms")
        return self.config.heartbeat_interval_ms if value is None else int(value)

    # -- persistence ----------------------------------------------------------------------
    @staticmethod
    def _write(fx: Effects, record: ConsumerRecord) -> None:
        fx.records.append(encode(record))

    def replay(self, record: ConsumerRecord) -> None:
        gid = record.group_id
        if isinstance(record, GroupEpochRecord):
            if record.epoch is None:
                self.groups.pop(gid, None)
            else:
                self.groups.setdefault(gid, ConsumerGroup(gid)).group_epoch = record.epoch
            return
        group = self.groups.setdefault(gid, ConsumerGroup(gid))
        deadline = self.clock() + self.session_timeout_ms(gid)
        if isinstance(record, TargetEpochRecord):
            group.assignment_epoch = record.assignment_epoch or 0
        elif isinstance(record, TargetMemberRecord):
            if record.partitions is None:
                group.target.pop(record.member_id, None)
            else:
                group.target[record.member_id] = record.partitions
        elif isinstance(record, MemberMetadataRecord):
            if record.value is None:
                group.members.pop(record.member_id, None)
            elif record.member_id in group.members:
                group.members[record.member_id].metadata = record.value
            else:
                group.members[record.member_id] = ConsumerMember(
                    record.member_id, record.value, deadline_ms=deadline
                )
        elif isinstance(record, CurrentMemberRecord):
            member = group.members.get(record.member_id)
            if member is not None and record.value is not None:
                member.current = record.value
                member.revoke_deadline_ms = (
                    self.clock() + self._rebalance_timeout_ms(gid, member)
                    if record.value.state == UNREVOKED_PARTITIONS
                    else None
                )

    def _bump_epoch(self, group: ConsumerGroup, fx: Effects) -> None:
        group.group_epoch += 1
        self._write(fx, GroupEpochRecord(group.group_id, group.group_epoch))

    def _rebalance_timeout_ms(self, group_id: str, member: ConsumerMember) -> int:
        timeout = member.metadata.rebalance_timeout_ms
        return timeout if timeout > 0 else self.session_timeout_ms(group_id)

    def _set_current(
        self, group: ConsumerGroup, member: ConsumerMember, fx: Effects, current: CurrentAssignment
    ) -> None:
        if current.state != UNREVOKED_PARTITIONS:
            member.revoke_deadline_ms = None
        elif member.current.state != UNREVOKED_PARTITIONS or member.revoke_deadline_ms is None:
            member.revoke_deadline_ms = self.clock() + self._rebalance_timeout_ms(
                group.group_id, member
            )
        member.current = current
        self._write(fx, CurrentMemberRecord(group.group_id, member.member_id, current))

    def _remove_member(self, group: ConsumerGroup, member_id: str, fx: Effects) -> None:
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        gid = group.group_id
        self._write(fx, CurrentMemberRecord(gid, member_id, None))
        self._write(fx, TargetMemberRecord(gid, member_id, None))
        self._write(fx, MemberMetadataRecord(gid, member_id, None))
        self._bump_epoch(group, fx)

    def delete(self, group_id: str, fx: Effects) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        self._write(fx, TargetEpochRecord(group_id, None))
        self._write(fx, GroupEpochRecord(group_id, None))
        del self.groups[group_id]
        return ErrorCode.NONE

    # -- heartbeat ------------------------------------------------------------------------
    def heartbeat(
        self, req: HeartbeatRequest, resolve: TopicResolver, fx: Effects
    ) -> HeartbeatResult:
        if not req.group_id:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, message="GroupId can't be empty.")
        if req.server_assignor is not None and req.server_assignor not in self.config.assignors:
            return HeartbeatResult(ErrorCode.UNSUPPORTED_ASSIGNOR, message=req.server_assignor)
        now = self.clock()
        group = self.groups.get(req.group_id)
        if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(group, req, fx)
        member = group.members.get(req.member_id) if group is not None else None
        if req.member_epoch == 0:
            if not req.member_id:
                # v0 clients let the coordinator pick the member id (KIP-1082 moved it to v1
                # clients).
                req = replace(req, member_id=str(uuid.uuid4()))
            if group is None:
                group = ConsumerGroup(req.group_id)
                self.groups[req.group_id] = group
                self._write(fx, GroupEpochRecord(group.group_id, 0))
            if member is None:
                error = self._join(group, req, fx)
                if error is not None:
                    return HeartbeatResult(error)
                member = group.members[req.member_id]
            elif member.left_static:
                # The static member that left comes back under the same member id: like a
                # replacement, it keeps its partitions and reconciles from epoch 0.
                rejoined = replace(member.current, member_epoch=0, previous_member_epoch=0)
                self._set_current(group, member, fx, rejoined)
        else:
            rejected = self._check_known_member(group, member, req)
            if rejected is not None:
                return rejected
            assert group is not None and member is not None
        member.deadline_ms = now + self.session_timeout_ms(group.group_id)
        self._update_metadata(group, member, req, fx)
        self._maybe_refresh_topics(group, resolve, fx)
        if group.assignment_epoch < group.group_epoch:
            self._compute_target(group, resolve, fx)
        before = member.current
        self._reconcile(group, member, req.owned, fx)
        # As Kafka: a member that did not join, send a full request or get a new assignment
        # gets a null assignment ("no change"); resending it on every owned/assigned mismatch
        # (a member mid-revocation always has one) restarts the client's reconciliation.
        full_request = req.member_epoch == 0 or (
            req.rebalance_timeout_ms != -1
            and req.subscribed_topic_names is not None
            and req.owned is not None
        )
        changed = before.assigned != member.current.assigned
        return HeartbeatResult(
            ErrorCode.NONE,
            member_id=member.member_id,
            member_epoch=member.current.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group.group_id),
            assignment=member.current.assigned if full_request or changed else None,
        )

    @staticmethod
    def _check_known_member(
        group: ConsumerGroup | None, member: ConsumerMember | None, req: HeartbeatRequest
    ) -> HeartbeatResult | None:
        """The error for a heartbeat with epoch > 0, or None when it is accepted."""
        if group is None:
            return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID, message="Unknown member.")
        if req.instance_id is not None:
            static = group.static_member(req.instance_id)
            if static is None:
                return HeartbeatResult(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    message=f"Instance id {req.instance_id} is unknown.",
                )
            if static.member_id != req.member_id:
                return _fenced_instance(req.instance_id, static.member_id)
        if member is None:
            return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID, message="Unknown member.")
        current = member.current
        if req.member_epoch > current.member_epoch:
            return HeartbeatResult(
                ErrorCode.FENCED_MEMBER_EPOCH,
                message=f"Member epoch {req.member_epoch} is ahead of {current.member_epoch}.",
            )
        if req.member_epoch < current.member_epoch:
            # The previous epoch is accepted when the response that bumped it may have been
            # lost: the member owns nothing it was not given since.
            lost_bump = (
                req.member_epoch == current.previous_member_epoch
                and req.owned is not None
                and is_subset(req.owned, current.assigned)
            )
            if not lost_bump:
                return HeartbeatResult(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    message=f"Member epoch {req.member_epoch} is behind {current.member_epoch}.",
                )
        return None

    def _join(self, group: ConsumerGroup, req: HeartbeatRequest, fx: Effects) -> ErrorCode | None:
        if len(group.members) >= self.config.max_size:
            return ErrorCode.GROUP_MAX_SIZE_REACHED
        previous: ConsumerMember | None = None
        if req.instance_id is not None:
            previous = group.static_member(req.instance_id)
            if previous is not None and not previous.left_static:
                return ErrorCode.UNRELEASED_INSTANCE_ID
        metadata = MemberMetadata(
            instance_id=req.instance_id,
            rack_id=req.rack_id,
            client_id=req.client_id,
            client_host=req.client_host,
            subscribed_topic_names=req.subscribed_topic_names or (),
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            server_assignor=req.server_assignor,
        )
        member = ConsumerMember(req.member_id, metadata)
        group.members[member.member_id] = member
        self._write(fx, MemberMetadataRecord(group.group_id, member.member_id, metadata))
        if previous is not None:
            # The static member's replacement inherits its assignment, so the partitions do
            # not move; from epoch 0 it reconciles to the current target epoch (as Kafka).
            target = group.target.pop(previous.member_id, {})
            group.target[member.member_id] = target
            self._write(fx, TargetMemberRecord(group.group_id, member.member_id, target))
            self._set_current(
                group,
                member,
                fx,
                replace(previous.current, member_epoch=0, previous_member_epoch=0),
            )
            gid = group.group_id
            del group.members[previous.member_id]
            self._write(fx, CurrentMemberRecord(gid, previous.member_id, None))
            self._write(fx, TargetMemberRecord(gid, previous.member_id, None))
            self._write(fx, MemberMetadataRecord(gid, previous.member_id, None))
            if metadata.subscribed_topic_names != previous.metadata.subscribed_topic_names:
                self._bump_epoch(group, fx)
        else:
            self._set_current(group, member, fx, CurrentAssignment(0, 0, STABLE, {}, {}))
            self._bump_epoch(group, fx)
        return None

    def _leave(
        self, group: ConsumerGroup | None, req: HeartbeatRequest, fx: Effects
    ) -> HeartbeatResult:
        if group is None:
            return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID, message="Unknown member.")
        if req.instance_id is not None:
            member = group.static_member(req.instance_id)
            if member is not None and member.member_id != req.member_id:
                return _fenced_instance(req.instance_id, member.member_id)
        else:
            member = group.members.get(req.member_id)
        if member is None:
            return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID, message="Unknown member.")
        if req.member_epoch == STATIC_LEAVE_EPOCH and member.metadata.instance_id is not None:
            # Kept (with its partitions) until its session expires or a replacement joins.
            self._set_current(
                group,
                member,
                fx,
                replace(
                    member.current,
                    member_epoch=STATIC_LEAVE_EPOCH,
                    previous_member_epoch=member.current.member_epoch,
                ),
            )
        else:
            self._remove_member(group, member.member_id, fx)
        return HeartbeatResult(
            ErrorCode.NONE, member_id=req.member_id, member_epoch=req.member_epoch
        )

    def _update_metadata(
        self, group: ConsumerGroup, member: ConsumerMember, req: HeartbeatRequest, fx: Effects
    ) -> None:
        old = member.metadata
        new = MemberMetadata(
            instance_id=old.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else old.rack_id,
            client_id=old.client_id,
            client_host=old.client_host,
            subscribed_topic_names=(
                tuple(req.subscribed_topic_names)
                if req.subscribed_topic_names is not None
                else old.subscribed_topic_names
            ),
            rebalance_timeout_ms=(
                req.rebalance_timeout_ms
                if req.rebalance_timeout_ms >= 0
                else old.rebalance_timeout_ms
            ),
            server_assignor=(
                req.server_assignor if req.server_assignor is not None else old.server_assignor
            ),
        )
        if new == old:
            return
        member.metadata = new
        self._write(fx, MemberMetadataRecord(group.group_id, member.member_id, new))
        if (
            set(new.subscribed_topic_names) != set(old.subscribed_topic_names)
            or new.server_assignor != old.server_assignor
        ):
            self._bump_epoch(group, fx)

    def _maybe_refresh_topics(
        self, group: ConsumerGroup, resolve: TopicResolver, fx: Effects
    ) -> None:
        names = sorted(
            {t for m in group.members.values() for t in m.metadata.subscribed_topic_names}
        )
        fingerprint = tuple(r for r in (resolve(n) for n in names) if r is not None)
        if group.topic_fingerprint is not None and group.topic_fingerprint != fingerprint:
            self._bump_epoch(group, fx)
        group.topic_fingerprint = fingerprint

    def _assignor_name(self, group: ConsumerGroup) -> str:
        chosen = sorted(
            m.metadata.server_assignor for m in group.members.values() if m.metadata.server_assignor
        )
        if chosen and chosen[0] in ASSIGNORS:
            return chosen[0]
        return next((a for a in self.config.assignors if a in ASSIGNORS), "uniform")

    def _compute_target(self, group: ConsumerGroup, resolve: TopicResolver, fx: Effects) -> None:
        topics: dict[bytes, int] = {}
        subscriptions: dict[str, frozenset[bytes]] = {}
        for member in group.members.values():
            ids = set()
            for name in member.metadata.subscribed_topic_names:
                resolved = resolve(name)
                if resolved is not None:
                    topics[resolved[0]] = resolved[1]
                    ids.add(resolved[0])
            subscriptions[member.member_id] = frozenset(ids)
        assignor = ASSIGNORS[self._assignor_name(group)]
        target = assignor(subscriptions, topics, group.target)
        for member_id, assignment in target.items():
            if group.target.get(member_id) != assignment:
                self._write(fx, TargetMemberRecord(group.group_id, member_id, assignment))
        group.target = target
        group.assignment_epoch = group.group_epoch
        self._write(fx, TargetEpochRecord(group.group_id, group.assignment_epoch))

    def _reconcile(
        self,
        group: ConsumerGroup,
        member: ConsumerMember,
        owned: Assignment | None,
        fx: Effects,
    ) -> None:
        updated = next_assignment(
            member.current,
            group.target.get(member.member_id, {}),
            group.assignment_epoch,
            lambda: group.owners(exclude=member.member_id),
            owned,
        )
        if updated is not None:
            self._set_current(group, member, fx, updated)

    # -- offsets and timers ---------------------------------------------------------------
    def commit_error(self, group_id: str, member_id: str, member_epoch: int) -> ErrorCode | None:
        """Whether a commit to a consumer group is accepted (None: yes)."""
        group = self.groups[group_id]
        if member_epoch < 0 and not member_id:
            return None if not group.members else ErrorCode.UNKNOWN_MEMBER_ID
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.current.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None

    def next_deadline_ms(self) -> int | None:
        deadlines = [
            deadline
            for g in self.groups.values()
            for m in g.members.values()
            for deadline in (m.deadline_ms, m.revoke_deadline_ms)
            if deadline is not None
        ]
        return min(deadlines) if deadlines else None

    def tick(self, fx: Effects, resolve: TopicResolver | None = None) -> list[str]:
        """Remove members past their session timeout, or still holding partitions pending
        revocation past their rebalance timeout; returns their ids."""
        now = self.clock()
        expired: list[str] = []
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                revoke_late = member.revoke_deadline_ms is not None and (
                    member.revoke_deadline_ms <= now
                )
                if member.deadline_ms <= now or revoke_late:
                    self._remove_member(group, member.member_id, fx)
                    expired.append(member.member_id)
        return expired
