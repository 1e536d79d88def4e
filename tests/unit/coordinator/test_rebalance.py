"""The classic group state machine, driven with a fake clock."""

from __future__ import annotations

from sparklog.coordinator.group_metadata import GroupState
from sparklog.coordinator.rebalance import GroupShard
from sparklog.protocol.errors import ErrorCode
from tests.unit.coordinator.helpers import Harness


def stable_group(h: Harness, n: int) -> list[str]:
    """n members joined and synced (generation 1); returns member ids, leader first."""
    answers = [h.join(), *[h.join() for _ in range(n - 1)]]
    ids = [a.join.member_id for a in answers]
    joins = [h.join(member_id=m) for m in ids]
    assert not any(j.done for j in joins)  # the initial delay holds the first rebalance
    for _ in range(10):  # each delay that saw a new member is extended by another one
        if all(j.done for j in joins):
            break
        h.tick(3000)
    assert all(j.done and j.join.error == ErrorCode.NONE for j in joins)
    leader = joins[0].join.leader
    syncs = {m: h.sync(m, 1, {x: x.encode() for x in ids} if m == leader else None) for m in ids}
    assert all(s.sync.error == ErrorCode.NONE for s in syncs.values())
    assert h.shard.groups["g"].state is GroupState.STABLE
    return [leader, *[m for m in ids if m != leader]]


def test_first_join_requires_member_id() -> None:
    h = Harness()
    first = h.join()
    assert first.join.error == ErrorCode.MEMBER_ID_REQUIRED
    assert first.join.member_id.startswith("c-")
    assert h.shard.groups["g"].pending_members


def test_old_clients_join_without_member_id_round() -> None:
    h = Harness(initial_rebalance_delay_ms=0)
    answer = h.join(require_known=False)
    assert answer.join.error == ErrorCode.NONE
    assert answer.join.generation_id == 1
    assert answer.join.leader == answer.join.member_id
    assert [m.metadata for m in answer.join.members] == [b"m"]


def test_join_sync_cycle_leader_gets_members_others_do_not() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    group = h.shard.groups["g"]
    assert group.generation == 1
    assert group.protocol_name == "range"
    assert group.members[leader].assignment == leader.encode()
    assert group.members[follower].assignment == follower.encode()
    # the group is persisted when it becomes Stable
    assert any(value is not None and key.startswith(b"\x00\x02") for key, value in h.log)


def test_initial_delay_extends_while_members_arrive() -> None:
    h = Harness(initial_rebalance_delay_ms=3000)
    a = h.join_new(rebalance_ms=10_000)
    h.tick(2000)
    b = h.join_new(rebalance_ms=10_000)
    h.tick(1000)  # first delay over, but a member arrived: wait another delay
    assert not a.done and not b.done
    h.tick(3000)
    assert a.join.error == ErrorCode.NONE and b.join.error == ErrorCode.NONE
    assert a.join.generation_id == b.join.generation_id == 1


def test_heartbeat_errors() -> None:
    h = Harness()
    _leader, follower = stable_group(h, 2)
    hb = h.shard.heartbeat
    assert hb("g", follower, None, 1) == ErrorCode.NONE
    assert hb("g", follower, None, 0) == ErrorCode.ILLEGAL_GENERATION
    assert hb("g", "nobody", None, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert hb("other", follower, None, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    # a new member triggers a rebalance; current members learn of it by heartbeat
    newcomer = h.join_new()
    assert not newcomer.done
    assert hb("g", follower, None, 1) == ErrorCode.REBALANCE_IN_PROGRESS


def test_rebalance_after_new_member_completes_when_all_rejoin() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    newcomer = h.join_new()
    rejoin_leader = h.join(member_id=leader)
    assert not newcomer.done
    rejoin_follower = h.join(member_id=follower)
    for answer in (newcomer, rejoin_leader, rejoin_follower):
        assert answer.join.error == ErrorCode.NONE
        assert answer.join.generation_id == 2
    assert len(rejoin_leader.join.members) == 3
    assert rejoin_follower.join.members == ()
    # syncs of non-leaders wait for the leader's assignment
    s = h.sync(newcomer.join.member_id, 2)
    assert not s.done
    h.sync(leader, 2, {newcomer.join.member_id: b"x"})
    assert s.sync.assignment == b"x"


def test_members_that_do_not_rejoin_are_removed_at_rebalance_timeout() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    rejoin = h.join(member_id=leader, protocols=(("range", b"changed"),))
    assert not rejoin.done
    h.tick(30_000)
    assert rejoin.join.error == ErrorCode.NONE
    assert rejoin.join.generation_id == 2
    assert [m.member_id for m in rejoin.join.members] == [leader]
    assert follower not in h.shard.groups["g"].members


def test_session_timeout_expires_silent_member() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    h.tick(5000)
    assert h.shard.heartbeat("g", leader, None, 1) == ErrorCode.NONE
    h.tick(5000)  # follower silent for 10s = its session timeout
    group = h.shard.groups["g"]
    assert follower not in group.members
    assert group.state is GroupState.PREPARING_REBALANCE
    assert h.shard.heartbeat("g", leader, None, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoin = h.join(member_id=leader)
    assert rejoin.join.generation_id == 2


def test_leave_group_triggers_rebalance_and_empty_group() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    assert h.leave("g", (follower, None)) == [ErrorCode.NONE]
    assert h.shard.groups["g"].state is GroupState.PREPARING_REBALANCE
    assert h.leave("g", ("ghost", None)) == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert h.leave("nope", (leader, None)) is None
    assert h.leave("g", (leader, None)) == [ErrorCode.NONE]
    group = h.shard.groups["g"]
    assert group.state is GroupState.EMPTY
    assert group.generation == 2


def test_leave_while_other_waits_in_join_completes_rebalance() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    rejoin = h.join(member_id=leader, protocols=(("range", b"v2"),))
    assert not rejoin.done
    h.leave("g", (follower, None))
    assert rejoin.join.error == ErrorCode.NONE and rejoin.join.generation_id == 2


def test_sync_errors() -> None:
    h = Harness()
    _leader, follower = stable_group(h, 2)
    assert h.sync(follower, 7).sync.error == ErrorCode.ILLEGAL_GENERATION
    assert h.sync("ghost", 1).sync.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync(follower, 1).sync.assignment == follower.encode()
    h.join_new()
    assert h.sync(follower, 1).sync.error == ErrorCode.REBALANCE_IN_PROGRESS


def test_rebalance_during_completing_fails_pending_syncs() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    h.join(member_id=leader, protocols=(("range", b"v2"),))
    h.join(member_id=follower)
    waiting = h.sync(follower, 2)
    assert not waiting.done
    h.join_new()
    assert waiting.sync.error == ErrorCode.REBALANCE_IN_PROGRESS


def test_inconsistent_protocols_are_refused() -> None:
    h = Harness()
    stable_group(h, 1)
    other = h.join(protocols=(("roundrobin", b""),))
    assert other.join.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    other_type = h.join(protocol_type="connect")
    assert other_type.join.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_protocol_selection_by_vote() -> None:
    h = Harness(initial_rebalance_delay_ms=0)
    both = (("cooperative-sticky", b"c"), ("range", b"r"))
    a = h.join(require_known=False, protocols=both)
    assert a.join.protocol_name == "cooperative-sticky"
    b = h.join(require_known=False, protocols=(("range", b"r"), ("cooperative-sticky", b"c")))
    rejoin = h.join(member_id=a.join.member_id, protocols=both)
    assert rejoin.join.generation_id == b.join.generation_id == 2
    # one vote each; the candidate set is both protocols, and a tie goes to the first voter
    assert rejoin.join.protocol_name in ("cooperative-sticky", "range")
    assert h.shard.groups["g"].candidate_protocols() == {"cooperative-sticky", "range"}


def test_invalid_session_timeout_and_group_id() -> None:
    h = Harness()
    assert h.join(session_ms=10).join.error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert h.join(group="").join.error == ErrorCode.INVALID_GROUP_ID
    assert h.join(member_id="made-up").join.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert "g" not in h.shard.groups


def test_group_max_size() -> None:
    h = Harness(max_size=1, initial_rebalance_delay_ms=0)
    h.join(require_known=False)
    assert h.join().join.error == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_pending_member_expires() -> None:
    h = Harness()
    first = h.join()
    h.tick(10_000)
    assert not h.shard.groups.get("g") or not h.shard.groups["g"].pending_members
    late = h.join(member_id=first.join.member_id)
    assert late.join.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_static_member_restart_keeps_assignment_without_rebalance() -> None:
    h = Harness(initial_rebalance_delay_ms=0)
    a = h.join(instance_id="i-a")
    b = h.join(instance_id="i-b")
    ra = h.join(member_id=a.join.member_id, instance_id="i-a")
    assert b.join.generation_id == ra.join.generation_id == 2
    leader = ra.join.leader
    follower_answer = b if b.join.member_id != leader else ra
    follower = follower_answer.join.member_id
    h.sync(leader, 2, {leader: b"L", follower: b"F"}, instance_id=None)
    h.sync(follower, 2)
    follower_instance = "i-b" if follower == b.join.member_id else "i-a"
    restarted = h.join(instance_id=follower_instance)
    assert restarted.join.error == ErrorCode.NONE
    assert restarted.join.generation_id == 2
    new_id = restarted.join.member_id
    assert new_id != follower
    group = h.shard.groups["g"]
    assert group.state is GroupState.STABLE
    assert h.sync(new_id, 2, instance_id=follower_instance).sync.assignment == b"F"
    # the old incarnation is fenced
    assert h.shard.heartbeat("g", follower, follower_instance, 2) == ErrorCode.FENCED_INSTANCE_ID
    assert h.leave("g", (follower, follower_instance)) == [ErrorCode.FENCED_INSTANCE_ID]
    assert h.leave("g", ("", follower_instance)) == [ErrorCode.NONE]


def test_replay_rebuilds_stable_group() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    other = GroupShard(h.shard.config, h.clock)
    h.replay_into(other)
    group = other.groups["g"]
    assert group.state is GroupState.STABLE
    assert group.generation == 1
    assert group.leader_id == leader
    assert set(group.members) == {leader, follower}
    assert group.members[follower].assignment == follower.encode()
    assert other.heartbeat("g", follower, None, 1) == ErrorCode.NONE


def test_next_deadline_tracks_session_timeouts() -> None:
    h = Harness()
    stable_group(h, 1)
    deadline = h.shard.next_deadline_ms()
    assert deadline == h.clock.now_ms + 10_000


def test_fail_all_waiters() -> None:
    h = Harness()
    pending = h.join_new()
    from sparklog.coordinator.group_metadata import Effects

    fx = Effects()
    h.shard.fail_all_waiters(fx, ErrorCode.NOT_COORDINATOR)
    h.run(fx)
    assert pending.join.error == ErrorCode.NOT_COORDINATOR
