"""Share-group membership and assignment as a group coordinator keeps it (KIP-932), sans-IO.

Rules kept here:

- A member joins with epoch 0 under the member id it generated, heartbeats with the epoch it
  was last given, and leaves with epoch -1. An unknown member with a non-zero epoch is
  UNKNOWN_MEMBER_ID; a known member whose epoch is neither its current nor its previous one is
  FENCED_MEMBER_EPOCH (it rejoins with epoch 0).
- Any change of members or subscriptions, or of the subscribed topics' metadata, bumps the
  group epoch and recomputes the target assignment with :func:`simple_assign`. The topics'
  metadata is compared by hash, as Kafka 4.2 does (KIP-1101): the group keeps the hash of its
  subscribed topics at its last assignment (``ShareGroupMetadata.MetadataHash``) and compares
  it with :attr:`ShareGroups.subscription_hash` of them now
  (:func:`sparklog.metadata.topic_hash.subscription_hash` over the coordinator's image), so a
  topic created, deleted or recreated, a partition added or a replica moved to another rack
  reassigns. Share groups
  revoke nothing (many members may fetch from one partition), so a member takes its target
  assignment and the group epoch at its next heartbeat; the assignment is sent when its epoch
  changes and on join.
- A member not heard from for its group's ``share.session.timeout.ms`` (else the broker's
  ``group.share.session.timeout.ms``) is removed (:meth:`ShareGroups.expire`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sparklog.protocol.errors import ErrorCode

Assignment = dict[bytes, frozenset[int]]
# topic name -> (topic id, partition count), or None when the topic does not exist
TopicResolver = Callable[[str], "tuple[bytes, int] | None"]


def simple_assign(
    subscriptions: Mapping[str, frozenset[bytes]], topics: Mapping[bytes, int]
) -> dict[str, Assignment]:
    """Kafka's share-group SimpleAssignor, homogeneous case per topic: with no more members
    than partitions each partition goes to one member, round-robin; with more members than
    partitions each member gets one partition and each partition ``ceil(members/partitions)``
    or one fewer members. Every partition of a subscribed topic has a member and every
    subscribed member a partition; deterministic in its inputs."""
    out: dict[str, dict[bytes, set[int]]] = {m: {} for m in subscriptions}
    for topic_id in sorted(topics):
        count = topics[topic_id]
        members = sorted(m for m, subs in subscriptions.items() if topic_id in subs)
        if not members or count <= 0:
            continue
        if len(members) <= count:
            for p in range(count):
                out[members[p % len(members)]].setdefault(topic_id, set()).add(p)
        else:
            for i, member in enumerate(members):
                out[member].setdefault(topic_id, set()).add(i % count)
    return {m: {t: frozenset(p) for t, p in parts.items()} for m, parts in out.items()}


@dataclass(slots=True)
class ShareMember:
    member_id: str
    member_epoch: int
    previous_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...]
    assignment: Assignment
    last_seen_ms: int


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    # KIP-1101: hash of the subscribed topics' metadata at the last assignment
    metadata_hash: int = 0
    # topics whose share-partitions may hold state (subscribed once, or offsets altered)
    initialized_topics: set[str] = field(default_factory=set)

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}


@dataclass(frozen=True, slots=True)
class ShareHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ShareHeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    assignment: Assignment | None = None


class ShareGroups:
    """Every share group of one coordinator; see the module docstring."""

    def __init__(self, session_timeout_ms: int, max_size: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.max_size = max_size
        self.groups: dict[str, ShareGroup] = {}
        # the metadata hash of a set of topics in the current metadata image; the coordinator
        # sets it to sparklog.metadata.topic_hash.subscription_hash over its image
        self.subscription_hash: Callable[[set[str]], int] = lambda names: 0
        # a group's dynamic configs (``share.session.timeout.ms``, ...); the coordinator reads
        # them from its image
        self.overrides: Callable[[str], Mapping[str, str]] = lambda group_id: {}

    def session_timeout_for(self, group_id: str) -> int:
        """The group's ``share.session.timeout.ms``, else group.share.session.timeout.ms."""
        value = self.overrides(group_id).get("share.session.timeout.ms")
        return self.session_timeout_ms if value is None else int(value)

    def heartbeat(
        self, req: ShareHeartbeat, resolve: TopicResolver, now_ms: int
    ) -> ShareHeartbeatResult:
        if not req.member_id:
            return ShareHeartbeatResult(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        group = self.groups.get(req.group_id)
        member = group.members.get(req.member_id) if group is not None else None
        if req.member_epoch == -1:
            if group is not None and member is not None:
                del group.members[req.member_id]
                self._reassign(group, resolve)
            return ShareHeartbeatResult(ErrorCode.NONE, member_id=req.member_id, member_epoch=-1)
        if member is None:
            if req.member_epoch != 0:
                return ShareHeartbeatResult(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {req.member_id} is not a member of group {req.group_id}.",
                )
            if not req.subscribed_topic_names:
                return ShareHeartbeatResult(
                    ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."
                )
            group = self.groups.setdefault(req.group_id, ShareGroup(req.group_id))
            if len(group.members) >= self.max_size:
                return ShareHeartbeatResult(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
                    f"The share group has reached its maximum capacity of {self.max_size} members.",
                )
            member = ShareMember(
                req.member_id, 0, -1, req.client_id, req.client_host, req.rack_id, (), {}, now_ms
            )
            group.members[req.member_id] = member
        elif req.member_epoch not in (member.member_epoch, member.previous_epoch, 0):
            return ShareHeartbeatResult(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a different epoch ({req.member_epoch}) than "
                f"the coordinator ({member.member_epoch}).",
            )
        assert group is not None
        member.last_seen_ms = now_ms
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        changed = req.member_epoch == 0 and member.member_epoch != 0
        if req.subscribed_topic_names is not None:
            names = tuple(sorted(set(req.subscribed_topic_names)))
            changed = changed or names != member.subscribed_topic_names
            member.subscribed_topic_names = names
        if changed or member.member_epoch == 0 or self._topics_changed(group, resolve):
            self._reassign(group, resolve)
        send = req.member_epoch != group.group_epoch or member.member_epoch != group.group_epoch
        if member.member_epoch != group.group_epoch:
            member.previous_epoch = member.member_epoch
            member.member_epoch = group.group_epoch
            member.assignment = group.target.get(member.member_id, {})
        return ShareHeartbeatResult(
            ErrorCode.NONE,
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            assignment=member.assignment if send else None,
        )

    def expire(self, now_ms: int, resolve: TopicResolver) -> list[tuple[str, str]]:
        """Remove members whose session timed out; returns ``(group, member)`` removed."""
        removed: list[tuple[str, str]] = []
        for group in self.groups.values():
            timeout_ms = self.session_timeout_for(group.group_id)
            gone = [
                m
                for m, member in group.members.items()
                if now_ms - member.last_seen_ms > timeout_ms
            ]
            for member_id in gone:
                del group.members[member_id]
                removed.append((group.group_id, member_id))
            if gone:
                self._reassign(group, resolve)
        return removed

    def delete(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        return ErrorCode.NONE

    def _topics_changed(self, group: ShareGroup, resolve: TopicResolver) -> bool:
        return self.subscription_hash(group.subscribed_topics()) != group.metadata_hash

    def _reassign(self, group: ShareGroup, resolve: TopicResolver) -> None:
        ids: dict[str, bytes] = {}
        counts: dict[bytes, int] = {}
        group.metadata_hash = self.subscription_hash(group.subscribed_topics())
        group.initialized_topics |= group.subscribed_topics()
        for name in group.subscribed_topics():
            found = resolve(name)
            if found is not None:
                ids[name], counts[found[0]] = found[0], found[1]
        subscriptions = {
            m.member_id: frozenset(ids[n] for n in m.subscribed_topic_names if n in ids)
            for m in group.members.values()
        }
        group.group_epoch += 1
        group.target = simple_assign(subscriptions, counts)
        group.assignment_epoch = group.group_epoch
