"""Committed offsets of the groups of one shard: OffsetCommit, OffsetFetch, OffsetDelete and
retention (``offsets.retention.minutes``).

Pure functions over a :class:`~sparklog.coordinator.rebalance.GroupShard`; like the rebalance
code they report records to append through an ``Effects`` and never do I/O.

Rules (as Apache Kafka's classic groups):

- A commit with generation -1, no member id and no instance id is a "simple" commit (a
  consumer using ``assign()``, or an admin tool); it is allowed on an Empty group and creates
  the group if it does not exist. Any other commit must come from a current member of the
  current generation, and is refused while the group completes a rebalance.
- Metadata longer than ``offset.metadata.max.bytes`` fails that partition with
  OFFSET_METADATA_TOO_LARGE; the rest of the request still commits.
- Transactional commits (TxnOffsetCommit) are kept apart, per producer id, as *pending*
  offsets: they are written to the log in the producer's transactional batch and become the
  group's committed offsets only when the COMMIT marker lands (an ABORT drops them). A fetch
  that asks for stable offsets gets UNSTABLE_OFFSET_COMMIT while one is pending. Member checks
  are those of a regular commit, except that a rebalance in progress does not refuse them.
- Retention: the offsets of an Empty group expire ``offsets.retention.minutes`` after the group
  became empty (a group that never had members: after each offset's commit); an expired offset
  gets a tombstone, and an Empty group left with no offsets is deleted.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from sparklog.coordinator.group_metadata import ClassicGroup, Effects, GroupState
from sparklog.coordinator.rebalance import GroupShard, TopicPartition
from sparklog.coordinator.records import OffsetCommitValue, offset_key, offset_value
from sparklog.protocol.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class CommitPartition:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str


NO_OFFSET = CommittedOffset(-1, -1, "")

# producer id -> group -> partition -> offset, committed by a transaction not yet decided
PendingOffsets = dict[int, dict[str, dict[TopicPartition, OffsetCommitValue]]]


def commit_error(
    shard: GroupShard,
    group_id: str,
    generation_id: int,
    member_id: str,
    instance_id: str | None,
) -> ErrorCode | None:
    """Whether this member may commit now. GROUP_ID_NOT_FOUND means the group does not exist
    and the commit came from a member (older versions answer ILLEGAL_GENERATION)."""
    group = shard.groups.get(group_id)
    if group is None:
        return None if generation_id < 0 else ErrorCode.GROUP_ID_NOT_FOUND
    if group.state is GroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if generation_id < 0 and group.state is GroupState.EMPTY:
        return None
    if generation_id >= 0 or member_id or instance_id is not None:
        error = _member_error(group, generation_id, member_id, instance_id)
        if error is not None:
            return error
    elif group.state is not GroupState.EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if group.state is GroupState.COMPLETING_REBALANCE:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return None


def _member_error(
    group: ClassicGroup, generation_id: int, member_id: str, instance_id: str | None
) -> ErrorCode | None:
    """Whether the committer is a current member of the group's current generation."""
    error = GroupShard.validate_member(group, member_id, instance_id)
    if error is not None:
        return error
    if generation_id != group.generation:
        return ErrorCode.ILLEGAL_GENERATION
    return None


def _store_offsets(
    shard: GroupShard,
    group_id: str,
    partitions: list[CommitPartition],
    now: int,
    into: dict[TopicPartition, OffsetCommitValue],
    records: list[tuple[bytes, bytes | None]],
) -> list[ErrorCode]:
    """Puts each partition's offset in ``into`` and its record in ``records``; one error per
    partition (a metadata string too long fails only its own partition)."""
    errors: list[ErrorCode] = []
    for p in partitions:
        metadata = p.metadata or ""
        if len(metadata.encode()) > shard.config.offset_metadata_max_bytes:
            errors.append(ErrorCode.OFFSET_METADATA_TOO_LARGE)
            continue
        value = OffsetCommitValue(p.offset, p.leader_epoch, metadata, now)
        into[(p.topic, p.partition)] = value
        records.append((offset_key(group_id, p.topic, p.partition), offset_value(value)))
        errors.append(ErrorCode.NONE)
    return errors


def commit_offsets(
    shard: GroupShard,
    group_id: str,
    member_id: str,
    partitions: list[CommitPartition],
    fx: Effects,
) -> list[ErrorCode]:
    """Store the offsets of a commit :func:`commit_error` accepted; one error per partition."""
    now = shard.clock()
    group = shard.groups.get(group_id)
    if group is None:
        group = ClassicGroup(group_id, now)
        shard.groups[group_id] = group
    member = group.members.get(member_id)
    if member is not None:
        member.last_heartbeat_ms = now
    stored = shard.offsets.setdefault(group_id, {})
    errors = _store_offsets(shard, group_id, partitions, now, stored, fx.records)
    if not stored:
        shard.offsets.pop(group_id, None)
    return errors


def txn_commit_error(
    shard: GroupShard,
    group_id: str,
    generation_id: int,
    member_id: str,
    instance_id: str | None,
) -> ErrorCode | None:
    """Whether a TxnOffsetCommit for a classic (or new) group is accepted now."""
    group = shard.groups.get(group_id)
    if group is None:
        return None if generation_id < 0 else ErrorCode.ILLEGAL_GENERATION
    if group.state is GroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if generation_id >= 0 or member_id or instance_id is not None:
        error = _member_error(group, generation_id, member_id, instance_id)
        if error is not None:
            return error
    return None


def stage_txn_offsets(
    shard: GroupShard,
    pending: PendingOffsets,
    producer_id: int,
    group_id: str,
    partitions: list[CommitPartition],
    records: list[tuple[bytes, bytes | None]],
) -> list[ErrorCode]:
    """Hold a transaction's offsets as pending; one error per partition. The records to write
    (in the producer's transactional batch) are appended to ``records``."""
    now = shard.clock()
    staged = pending.setdefault(producer_id, {}).setdefault(group_id, {})
    return _store_offsets(shard, group_id, partitions, now, staged, records)


def complete_txn_offsets(
    shard: GroupShard, pending: PendingOffsets, producer_id: int, committed: bool
) -> int:
    """A transaction marker landed: its pending offsets become committed (or are dropped).
    Returns how many offsets it decided."""
    decided = 0
    for group_id, staged in pending.pop(producer_id, {}).items():
        decided += len(staged)
        if not committed or not staged:
            continue
        if group_id not in shard.groups:
            shard.groups[group_id] = ClassicGroup(group_id, shard.clock())
        shard.offsets.setdefault(group_id, {}).update(staged)
    return decided


def has_pending_offset(pending: PendingOffsets, group_id: str, tp: TopicPartition) -> bool:
    return any(tp in groups.get(group_id, {}) for groups in pending.values())


def fetch_offsets(
    shard: GroupShard, group_id: str, wanted: list[TopicPartition] | None
) -> dict[TopicPartition, CommittedOffset]:
    """The committed offsets of ``wanted`` (-1 when none), or all of them when None."""
    stored = shard.offsets.get(group_id, {})
    keys = sorted(stored) if wanted is None else wanted
    out: dict[TopicPartition, CommittedOffset] = {}
    for tp in keys:
        value = stored.get(tp)
        out[tp] = (
            NO_OFFSET
            if value is None
            else CommittedOffset(value.offset, value.leader_epoch, value.metadata)
        )
    return out


def subscribed_topics(metadata: bytes) -> set[str] | None:
    """The topics of a ``consumer`` protocol subscription (ConsumerProtocolSubscription: int16
    version, then an array of int16-length strings); None when it cannot be read."""
    try:
        pos = 2
        (count,) = struct.unpack_from(">i", metadata, pos)
        pos += 4
        topics: set[str] = set()
        for _ in range(max(count, 0)):
            (length,) = struct.unpack_from(">h", metadata, pos)
            pos += 2
            topics.add(bytes(metadata[pos : pos + length]).decode())
            pos += length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None


def delete_offsets(
    shard: GroupShard, group_id: str, partitions: list[TopicPartition], fx: Effects
) -> tuple[ErrorCode, list[ErrorCode]]:
    """OffsetDelete: a group error, else one error per partition (a partition of a topic the
    active group still subscribes to is GROUP_SUBSCRIBED_TO_TOPIC)."""
    group = shard.groups.get(group_id)
    if group is None or group.state is GroupState.DEAD:
        return ErrorCode.GROUP_ID_NOT_FOUND, []
    subscribed: set[str] = set()
    if group.state is not GroupState.EMPTY:
        if group.protocol_type != "consumer":
            return ErrorCode.NON_EMPTY_GROUP, []
        for member in group.members.values():
            subscribed |= subscribed_topics(member.metadata_for(group.protocol_name)) or set()
    stored = shard.offsets.get(group_id, {})
    errors: list[ErrorCode] = []
    for topic, partition in partitions:
        if topic in subscribed:
            errors.append(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)
            continue
        if stored.pop((topic, partition), None) is not None:
            fx.records.append((offset_key(group_id, topic, partition), None))
        errors.append(ErrorCode.NONE)
    return ErrorCode.NONE, errors


def expire_offsets(shard: GroupShard, fx: Effects) -> int:
    """Tombstone the offsets past retention; delete Empty groups left without offsets.
    Returns how many offsets expired."""
    now = shard.clock()
    retention = shard.config.offsets_retention_ms
    expired = 0
    for group_id, group in list(shard.groups.items()):
        if group.state is not GroupState.EMPTY:
            continue
        stored = shard.offsets.get(group_id, {})
        for tp, value in list(stored.items()):
            base = group.state_timestamp_ms if group.protocol_type else value.commit_timestamp_ms
            if base + retention <= now:
                del stored[tp]
                fx.records.append((offset_key(group_id, *tp), None))
                expired += 1
        if not stored:
            shard.delete_group(group, fx)
    return expired
