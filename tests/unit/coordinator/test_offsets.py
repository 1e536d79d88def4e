"""Committed offsets: commit validation, fetch, delete, retention and replay."""

from __future__ import annotations

import struct

from sparklog.coordinator.group_metadata import Effects, GroupState
from sparklog.coordinator.offsets import (
    NO_OFFSET,
    CommitPartition,
    CommittedOffset,
    commit_error,
    commit_offsets,
    delete_offsets,
    expire_offsets,
    fetch_offsets,
    subscribed_topics,
)
from sparklog.coordinator.rebalance import GroupShard
from sparklog.protocol.errors import ErrorCode
from tests.unit.coordinator.helpers import Harness
from tests.unit.coordinator.test_rebalance import stable_group


def commit(
    h: Harness,
    group: str,
    generation: int,
    member: str,
    *parts: tuple[str, int, int],
    metadata: str = "",
) -> ErrorCode | list[ErrorCode]:
    error = commit_error(h.shard, group, generation, member, None)
    if error is not None:
        return error
    fx = Effects()
    out = commit_offsets(
        h.shard, group, member, [CommitPartition(t, p, o, -1, metadata) for t, p, o in parts], fx
    )
    h.run(fx)
    return out


def test_simple_commit_creates_empty_group_and_fetch_reads_it() -> None:
    h = Harness()
    assert commit(h, "s", -1, "", ("t", 0, 5), ("t", 1, 7)) == [ErrorCode.NONE] * 2
    assert h.shard.groups["s"].state is GroupState.EMPTY
    got = fetch_offsets(h.shard, "s", [("t", 0), ("t", 2)])
    assert got == {("t", 0): CommittedOffset(5, -1, ""), ("t", 2): NO_OFFSET}
    assert set(fetch_offsets(h.shard, "s", None)) == {("t", 0), ("t", 1)}
    assert fetch_offsets(h.shard, "unknown", [("t", 0)]) == {("t", 0): NO_OFFSET}


def test_member_commit_checks_generation_and_membership() -> None:
    h = Harness()
    _leader, follower = stable_group(h, 2)
    assert commit(h, "g", 1, follower, ("t", 0, 3)) == [ErrorCode.NONE]
    assert commit(h, "g", 0, follower, ("t", 0, 3)) == ErrorCode.ILLEGAL_GENERATION
    assert commit(h, "g", 1, "ghost", ("t", 0, 3)) == ErrorCode.UNKNOWN_MEMBER_ID
    # a simple commit is refused while the group has members
    assert commit(h, "g", -1, "", ("t", 0, 3)) == ErrorCode.UNKNOWN_MEMBER_ID
    # a member commit to a group that does not exist
    assert commit(h, "nope", 3, "m", ("t", 0, 3)) == ErrorCode.GROUP_ID_NOT_FOUND


def test_commit_refused_while_completing_rebalance() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    h.join(member_id=leader, protocols=(("range", b"v2"),))
    h.join(member_id=follower)
    assert h.shard.groups["g"].state is GroupState.COMPLETING_REBALANCE
    assert commit(h, "g", 2, follower, ("t", 0, 1)) == ErrorCode.REBALANCE_IN_PROGRESS


def test_metadata_too_large_fails_only_that_commit() -> None:
    h = Harness(offset_metadata_max_bytes=4)
    out = commit(h, "s", -1, "", ("t", 0, 1), metadata="12345")
    assert out == [ErrorCode.OFFSET_METADATA_TOO_LARGE]
    assert fetch_offsets(h.shard, "s", [("t", 0)])[("t", 0)] == NO_OFFSET


def test_offsets_replay_after_restart() -> None:
    h = Harness()
    commit(h, "s", -1, "", ("t", 0, 5), ("t", 1, 7))
    commit(h, "s", -1, "", ("t", 0, 9))
    fx = Effects()
    delete_offsets(h.shard, "s", [("t", 1)], fx)
    h.run(fx)
    other = GroupShard(h.shard.config, h.clock)
    h.replay_into(other)
    assert fetch_offsets(other, "s", None) == {("t", 0): CommittedOffset(9, -1, "")}


def test_offset_delete_rules() -> None:
    h = Harness()
    fx = Effects()
    assert delete_offsets(h.shard, "none", [("t", 0)], fx) == (ErrorCode.GROUP_ID_NOT_FOUND, [])
    stable_group(h, 1)
    member = next(iter(h.shard.groups["g"].members.values()))
    subscription = struct.pack(">hi", 0, 1) + struct.pack(">h", 1) + b"a"
    member.protocols = (("range", subscription),)
    outcome = delete_offsets(h.shard, "g", [("a", 0), ("b", 0)], fx)
    assert outcome == (ErrorCode.NONE, [ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.NONE])


def test_subscribed_topics_parser() -> None:
    data = struct.pack(">hi", 1, 2) + struct.pack(">h", 1) + b"a" + struct.pack(">h", 2) + b"bc"
    assert subscribed_topics(data + b"\xff\xff\xff\xff") == {"a", "bc"}
    assert subscribed_topics(b"\x00") is None


def test_retention_expires_offsets_of_empty_groups_then_deletes_group() -> None:
    h = Harness(offsets_retention_ms=60_000)
    commit(h, "s", -1, "", ("t", 0, 5))
    h.clock.advance(30_000)
    commit(h, "s", -1, "", ("t", 1, 5))
    h.clock.advance(30_000)
    fx = Effects()
    assert expire_offsets(h.shard, fx) == 1
    assert set(fetch_offsets(h.shard, "s", None)) == {("t", 1)}
    h.clock.advance(30_000)
    assert expire_offsets(h.shard, fx) == 1
    assert "s" not in h.shard.groups
    h.run(fx)
    other = GroupShard(h.shard.config, h.clock)
    h.replay_into(other)
    assert "s" not in other.groups and not fetch_offsets(other, "s", None)


def test_retention_keeps_offsets_of_active_groups() -> None:
    h = Harness(offsets_retention_ms=1000)
    leader, _ = stable_group(h, 2)
    commit(h, "g", 1, leader, ("t", 0, 5))
    h.clock.advance(5000)
    assert expire_offsets(h.shard, Effects()) == 0
