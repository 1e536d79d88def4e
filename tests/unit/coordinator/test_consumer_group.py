"""KIP-848 consumer groups: records, assignors and incremental reconciliation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.coordinator.assignors import range_assignor, uniform
from sparklog.coordinator.consumer_group import (
    STABLE,
    ConsumerConfig,
    ConsumerGroups,
    HeartbeatRequest,
    HeartbeatResult,
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
    decode_consumer_record,
    encode,
)
from sparklog.coordinator.group_metadata import Effects
from sparklog.protocol.errors import ErrorCode
from tests.unit.coordinator.helpers import T1, T2, Clock, resolve


def test_records_round_trip() -> None:
    records: list[ConsumerRecord] = [
        GroupEpochRecord("g", 4),
        GroupEpochRecord("g", None),
        TargetEpochRecord("g", 3),
        TargetMemberRecord("g", "m", {T1: frozenset({0, 5})}),
        MemberMetadataRecord("g", "m", MemberMetadata("i", None, "c", "h", ("t1",), 300, None)),
        CurrentMemberRecord(
            "g", "m", CurrentAssignment(3, 2, STABLE, {T1: frozenset({1})}, {T2: frozenset({0})})
        ),
        CurrentMemberRecord("g", "m", None),
    ]
    for record in records:
        key, value = encode(record)
        assert int.from_bytes(key[:2]) in range(3, 9)
        assert decode_consumer_record(key, value) == record


def _flatten(assignment: dict[str, Assignment]) -> list[tuple[bytes, int]]:
    return [(t, p) for a in assignment.values() for t, parts in a.items() for p in parts]


members_st = st.dictionaries(
    st.text("abcdef", min_size=1, max_size=3),
    st.sets(st.sampled_from([T1, T2]), min_size=1).map(frozenset),
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(members_st, st.integers(0, 12), st.integers(0, 12))
def test_assignors_assign_every_partition_once(
    subscriptions: dict[str, frozenset[bytes]], n1: int, n2: int
) -> None:
    topics = {T1: n1, T2: n2}
    for assignor in (uniform, range_assignor):
        result = assignor(subscriptions, topics, {})
        flat = _flatten(result)
        assert len(flat) == len(set(flat))
        wanted = {
            (t, p)
            for t, n in topics.items()
            for p in range(n)
            if any(t in s for s in subscriptions.values())
        }
        assert set(flat) == wanted
        for member, assignment in result.items():
            assert set(assignment) <= subscriptions[member]


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(0, 20))
def test_uniform_balances_and_sticks(count: int, partitions: int) -> None:
    subs = {f"m{i}": frozenset({T1}) for i in range(count)}
    first = uniform(subs, {T1: partitions}, {})
    sizes = [len(a.get(T1, ())) for a in first.values()]
    assert max(sizes) - min(sizes) <= 1
    # A new member takes partitions only from others; nobody else swaps partitions.
    subs["new"] = frozenset({T1})
    second = uniform(subs, {T1: partitions}, first)
    for member, assignment in first.items():
        kept = second[member].get(T1, frozenset())
        assert kept <= assignment.get(T1, frozenset())
    sizes = [len(a.get(T1, ())) for a in second.values()]
    assert max(sizes) - min(sizes) <= 1


def _hb(
    groups: ConsumerGroups,
    member: str,
    epoch: int,
    owned: Assignment | None,
    fx: Effects | None = None,
    **kw: object,
) -> HeartbeatResult:
    req = HeartbeatRequest("g", member, epoch, owned=owned, **kw)  # type: ignore[arg-type]
    return groups.heartbeat(req, resolve, fx or Effects())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=80))
def test_reconciliation_never_double_owns(steps: list[tuple[int, bool]]) -> None:
    """Members join, heartbeat and leave in any order; clients hold exactly what they were
    last told. No partition is ever held by two clients, and once everyone heartbeats
    repeatedly the group converges to the target with every partition owned."""
    clock = Clock()
    groups = ConsumerGroups(ConsumerConfig(), clock)
    client: dict[str, tuple[int, Assignment]] = {}  # member -> (epoch, owned)

    def beat(member: str, leave: bool = False) -> None:
        if leave and member in client:
            _hb(groups, member, -1, None)
            del client[member]
            return
        epoch, owned = client.get(member, (0, {}))
        result = _hb(
            groups,
            member,
            epoch,
            owned,
            subscribed_topic_names=("t1", "t2") if epoch == 0 else None,
        )
        assert result.error == ErrorCode.NONE, result
        new_owned = result.assignment if result.assignment is not None else owned
        client[member] = (result.member_epoch, new_owned)
        held = [(t, p) for _, a in client.values() for t, ps in a.items() for p in ps]
        assert len(held) == len(set(held)), client

    for index, leave in steps:
        beat(f"m{index}", leave=leave and index == 0)
    for _ in range(6):
        for member in sorted(client):
            beat(member)
    held = {(t, p) for _, a in client.values() for t, ps in a.items() for p in ps}
    if client:
        assert held == {(T1, p) for p in range(6)} | {(T2, p) for p in range(3)}
        group = groups.groups["g"]
        assert group.state == "Stable"


def _count(assignment: Assignment | None) -> int:
    assert assignment is not None
    return sum(len(p) for p in assignment.values())


def test_epochs_fencing_leave_and_timeout() -> None:
    clock = Clock()
    groups = ConsumerGroups(ConsumerConfig(session_timeout_ms=1000), clock)
    a = _hb(groups, "a", 0, {}, subscribed_topic_names=("t1",))
    assert a.member_epoch == 1 and a.assignment is not None
    assert _count(a.assignment) == 6
    assert _hb(groups, "a", 7, None).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert _hb(groups, "zz", 3, None).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert groups.commit_error("g", "a", 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert groups.commit_error("g", "a", 1) is None
    assert groups.commit_error("g", "b", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    b = _hb(groups, "b", 0, {}, subscribed_topic_names=("t1",))
    # b must wait until a revokes: nothing yet.
    assert b.assignment == {}
    ra = _hb(groups, "a", 1, a.assignment)
    assert _count(ra.assignment) == 3
    assert ra.member_epoch == 1  # still revoking
    ra2 = _hb(groups, "a", 1, ra.assignment)
    assert ra2.member_epoch == 2
    rb = _hb(groups, "b", b.member_epoch, {})
    assert _count(rb.assignment) == 3
    # b leaves; a gets everything back.
    assert _hb(groups, "b", -1, None).member_epoch == -1
    ra3 = _hb(groups, "a", 2, ra2.assignment)
    assert _count(ra3.assignment) == 6
    # a's session expires.
    clock.now += 2000
    fx = Effects()
    assert groups.tick(fx) == ["a"]
    assert groups.groups["g"].state == "Empty" and fx.records


def test_group_overrides_set_session_timeout_and_heartbeat_interval() -> None:
    """KIP-848 group configs (kafka-configs --entity-type groups) win over the broker's."""
    clock = Clock()
    overrides = {
        "g": {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}
    }
    config = ConsumerConfig(session_timeout_ms=45000, heartbeat_interval_ms=5000)
    groups = ConsumerGroups(config, clock, lambda group_id: overrides.get(group_id, {}))
    tuned = _hb(groups, "a", 0, {}, subscribed_topic_names=("t1",))
    other = HeartbeatRequest("other", "b", 0, owned={}, subscribed_topic_names=("t1",))
    plain = groups.heartbeat(other, resolve, Effects())
    assert (tuned.heartbeat_interval_ms, plain.heartbeat_interval_ms) == (6000, 5000)
    clock.now += 46_000
    assert groups.tick(Effects()) == ["b"]
    clock.now += 4_001
    assert groups.tick(Effects()) == ["a"]


def test_static_member_replacement_keeps_partitions() -> None:
    groups = ConsumerGroups(ConsumerConfig(), Clock())
    a = _hb(groups, "a", 0, {}, subscribed_topic_names=("t1",), instance_id="i1")
    dup = _hb(groups, "a2", 0, {}, subscribed_topic_names=("t1",), instance_id="i1")
    assert dup.error == ErrorCode.UNRELEASED_INSTANCE_ID
    assert _hb(groups, "a", -2, None).member_epoch == -2
    again = _hb(groups, "a2", 0, {}, subscribed_topic_names=("t1",), instance_id="i1")
    assert again.assignment == a.assignment
    assert set(groups.groups["g"].members) == {"a2"}


def test_replay_rebuilds_the_group() -> None:
    clock = Clock()
    groups = ConsumerGroups(ConsumerConfig(), clock)
    fx = Effects()
    first = _hb(groups, "a", 0, {}, fx, subscribed_topic_names=("t1", "t2"))
    _hb(groups, "b", 0, {}, fx, subscribed_topic_names=("t1",))
    _hb(groups, "a", first.member_epoch, first.assignment, fx)
    rebuilt = ConsumerGroups(ConsumerConfig(), clock)
    for key, value in fx.records:
        record = decode_consumer_record(key, value)
        assert record is not None
        rebuilt.replay(record)
    old, new = groups.groups["g"], rebuilt.groups["g"]
    assert (new.group_epoch, new.assignment_epoch) == (old.group_epoch, old.assignment_epoch)
    assert new.target == old.target
    assert {m: v.current for m, v in new.members.items()} == {
        m: v.current for m, v in old.members.items()
    }
    assert {m: v.metadata for m, v in new.members.items()} == {
        m: v.metadata for m, v in old.members.items()
    }
