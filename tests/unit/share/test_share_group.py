"""Share-group membership (join, heartbeat, fencing, leave, expiry), the simple assignor's rules,
and share sessions' epochs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sparklog.protocol.errors import ErrorCode
from sparklog.share.share_group import (
    ShareGroups,
    ShareHeartbeat,
    ShareHeartbeatResult,
    simple_assign,
)
from sparklog.share.share_session import ShareSessions

TOPIC = b"\x07" * 16


def resolve(name: str) -> tuple[bytes, int] | None:
    return (TOPIC, 2) if name == "t" else None


def beat(groups: ShareGroups, member: str, epoch: int, now: int = 0) -> ShareHeartbeatResult:
    return groups.heartbeat(ShareHeartbeat("g", member, epoch, None, ("t",)), resolve, now)


@given(
    members=st.integers(1, 8),
    partitions=st.integers(1, 8),
)
def test_simple_assign_covers_every_partition_and_member(members: int, partitions: int) -> None:
    subs = {f"m{i}": frozenset({TOPIC}) for i in range(members)}
    out = simple_assign(subs, {TOPIC: partitions})
    assigned = [p for a in out.values() for p in a.get(TOPIC, frozenset())]
    assert set(assigned) == set(range(partitions))
    assert all(out[m].get(TOPIC) for m in subs)
    if members <= partitions:
        assert len(assigned) == partitions  # each partition to exactly one member
    else:
        counts = [assigned.count(p) for p in range(partitions)]
        assert max(counts) - min(counts) <= 1


def test_members_join_share_and_leave() -> None:
    groups = ShareGroups(session_timeout_ms=1000, max_size=10)
    a = beat(groups, "a", 0)
    assert a.error == ErrorCode.NONE and a.assignment == {TOPIC: frozenset({0, 1})}
    b = beat(groups, "b", 0)
    assert b.error == ErrorCode.NONE and b.member_epoch == 2
    again = beat(groups, "a", a.member_epoch)
    assert again.member_epoch == 2 and again.assignment == {TOPIC: frozenset({0})}
    assert beat(groups, "a", 2).assignment is None  # unchanged: not sent again
    assert beat(groups, "zz", 5).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert beat(groups, "a", 7).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert beat(groups, "b", -1).member_epoch == -1
    assert beat(groups, "a", 2).assignment == {TOPIC: frozenset({0, 1})}


def test_silent_members_expire_and_empty_groups_delete() -> None:
    groups = ShareGroups(session_timeout_ms=1000, max_size=10)
    beat(groups, "a", 0, now=0)
    assert groups.delete("g") == ErrorCode.NON_EMPTY_GROUP
    assert groups.expire(999, resolve) == []
    assert groups.expire(1001, resolve) == [("g", "a")]
    assert groups.groups["g"].state == "Empty"
    assert groups.delete("g") == ErrorCode.NONE
    assert groups.delete("g") == ErrorCode.GROUP_ID_NOT_FOUND


def test_group_max_size() -> None:
    groups = ShareGroups(session_timeout_ms=1000, max_size=1)
    beat(groups, "a", 0)
    assert beat(groups, "b", 0).error == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_share_session_epochs() -> None:
    sessions = ShareSessions()
    assert sessions.begin("g", "m", 1, [], [])[0] == ErrorCode.SHARE_SESSION_NOT_FOUND
    code, session = sessions.begin("g", "m", 0, [(TOPIC, 0)], [])
    assert code == ErrorCode.NONE and session is not None and session.epoch == 1
    assert sessions.begin("g", "m", 2, [], [])[0] == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert sessions.begin("g", "m", 1, [(TOPIC, 1)], [(TOPIC, 0)])[1] is session
    assert session.partitions == [(TOPIC, 1)]
    assert sessions.acknowledge("g", "m", 2)[0] == ErrorCode.NONE
    assert sessions.acknowledge("g", "m", 2)[0] == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    code, closed = sessions.acknowledge("g", "m", -1)
    assert code == ErrorCode.NONE and closed is session
    assert sessions.acknowledge("g", "m", 3)[0] == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_a_topic_metadata_change_reassigns_by_hash() -> None:
    """KIP-1101: the group keeps its subscribed topics' metadata hash; a heartbeat that finds
    another hash (a partition added, a topic recreated, racks moved) bumps the group epoch and
    reassigns, the same hash changes nothing."""
    partitions = {"count": 2}
    groups = ShareGroups(session_timeout_ms=1000, max_size=10)
    groups.subscription_hash = lambda names: hash((tuple(sorted(names)), partitions["count"]))

    def grown(name: str) -> tuple[bytes, int] | None:
        return (TOPIC, partitions["count"]) if name == "t" else None

    def heartbeat(epoch: int) -> ShareHeartbeatResult:
        return groups.heartbeat(ShareHeartbeat("g", "a", epoch, None, ("t",)), grown, 0)

    joined = heartbeat(0)
    assert joined.assignment == {TOPIC: frozenset({0, 1})}
    group = groups.groups["g"]
    assert group.metadata_hash == hash((("t",), 2))
    assert heartbeat(joined.member_epoch).member_epoch == joined.member_epoch  # no change
    partitions["count"] = 3
    moved = heartbeat(joined.member_epoch)
    assert moved.member_epoch == joined.member_epoch + 1
    assert moved.assignment == {TOPIC: frozenset({0, 1, 2})}
    assert group.metadata_hash == hash((("t",), 3))
