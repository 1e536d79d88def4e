"""KIP-848 reconciliation as librdkafka drives it: heartbeats that carry owned partitions only
when acknowledging an assignment, null vs full assignments in responses, lost responses,
revocation timeouts, fencing and static membership (leave with -2, replacement, replay)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.coordinator.consumer_group import (
    STABLE,
    STATIC_LEAVE_EPOCH,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    ConsumerConfig,
    ConsumerGroups,
    HeartbeatRequest,
    HeartbeatResult,
)
from sparklog.coordinator.consumer_records import Assignment, decode_consumer_record
from sparklog.coordinator.group_metadata import Effects
from sparklog.protocol.errors import ErrorCode
from tests.unit.coordinator.helpers import T1, T2, Clock, resolve

ALL = {(T1, p) for p in range(6)} | {(T2, p) for p in range(3)}
REBALANCE_TIMEOUT_MS = 300_000


def new_groups(clock: Clock | None = None, **config: int) -> ConsumerGroups:
    return ConsumerGroups(ConsumerConfig(**config), clock or Clock())  # type: ignore[arg-type]


def join(
    groups: ConsumerGroups,
    member: str,
    topics: tuple[str, ...] = ("t1",),
    instance_id: str | None = None,
    fx: Effects | None = None,
) -> HeartbeatResult:
    req = HeartbeatRequest(
        "g",
        member,
        0,
        instance_id=instance_id,
        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
        subscribed_topic_names=topics,
        owned={},
    )
    return groups.heartbeat(req, resolve, fx or Effects())


def beat(
    groups: ConsumerGroups,
    member: str,
    epoch: int,
    owned: Assignment | None = None,
    instance_id: str | None = None,
    fx: Effects | None = None,
) -> HeartbeatResult:
    """A steady-state heartbeat: only the fields that changed (librdkafka sends owned
    partitions only to acknowledge an assignment)."""
    req = HeartbeatRequest("g", member, epoch, instance_id=instance_id, owned=owned)
    return groups.heartbeat(req, resolve, fx or Effects())


def parts(assignment: Assignment | None) -> set[tuple[bytes, int]]:
    assert assignment is not None
    return {(t, p) for t, ps in assignment.items() for p in ps}


def ok(result: HeartbeatResult) -> HeartbeatResult:
    assert result.error == ErrorCode.NONE, result
    return result


def test_released_partitions_reach_the_waiting_member_on_its_next_heartbeat() -> None:
    """The integration scenario: a owns everything, b and c join and wait in
    UNRELEASED_PARTITIONS; once a acknowledges the revocation, b and c get the partitions in
    full in their next response, at the target epoch."""
    groups = new_groups()
    a = ok(join(groups, "a"))
    assert len(parts(a.assignment)) == 6
    b = ok(join(groups, "b"))
    c = ok(join(groups, "c"))
    assert b.assignment == {} and c.assignment == {}
    group = groups.groups["g"]
    assert group.members["b"].current.state == UNRELEASED_PARTITIONS
    # a's plain heartbeat learns of the revocation: epoch kept, assignment shrunk.
    revoke = ok(beat(groups, "a", a.member_epoch))
    assert revoke.member_epoch == a.member_epoch
    assert len(parts(revoke.assignment)) == 2
    assert group.members["a"].current.state == UNREVOKED_PARTITIONS
    # Until a acknowledges, b gets nothing new and no assignment at all (null), but it moves
    # to the target epoch.
    waiting = ok(beat(groups, "b", b.member_epoch))
    assert waiting.assignment is None and waiting.member_epoch == group.assignment_epoch
    ack = ok(beat(groups, "a", a.member_epoch, revoke.assignment))
    assert ack.member_epoch == group.assignment_epoch
    assert ack.assignment is None  # unchanged: the ack itself needs no echo
    got_b = ok(beat(groups, "b", waiting.member_epoch))
    got_c = ok(beat(groups, "c", c.member_epoch))
    assert len(parts(got_b.assignment)) == 2 and len(parts(got_c.assignment)) == 2
    assert parts(got_b.assignment) | parts(got_c.assignment) | parts(revoke.assignment) == {
        (T1, p) for p in range(6)
    }
    assert group.state == "Stable"
    assert all(m.current.state == STABLE for m in group.members.values())


def test_assignment_is_null_unless_joined_full_request_or_changed() -> None:
    groups = new_groups()
    a = ok(join(groups, "a"))
    assert a.assignment is not None
    assert ok(beat(groups, "a", a.member_epoch)).assignment is None
    # Acknowledging with owned == assigned: no change, no assignment.
    assert ok(beat(groups, "a", a.member_epoch, a.assignment)).assignment is None
    # A full request (sent by clients after an error) always gets the assignment.
    full = HeartbeatRequest(
        "g",
        "a",
        a.member_epoch,
        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
        subscribed_topic_names=("t1",),
        owned=a.assignment,
    )
    assert ok(groups.heartbeat(full, resolve, Effects())).assignment == a.assignment


def test_no_resend_while_the_member_still_owns_partitions_being_revoked() -> None:
    """A member mid-revocation reports owned != assigned; that alone must not resend the
    assignment (it made librdkafka restart its reconciliation)."""
    groups = new_groups()
    a = ok(join(groups, "a"))
    ok(join(groups, "b"))
    revoke = ok(beat(groups, "a", a.member_epoch))
    assert revoke.assignment is not None
    still_owning = ok(beat(groups, "a", a.member_epoch, a.assignment))
    assert still_owning.assignment is None
    assert groups.groups["g"].members["a"].current.state == UNREVOKED_PARTITIONS


def test_revocation_is_skipped_when_the_member_already_let_go() -> None:
    groups = new_groups()
    a = ok(join(groups, "a"))
    ok(join(groups, "b"))
    # a reports it owns only partitions 0-2 (it already dropped the others).
    kept = {T1: frozenset({0, 1, 2})}
    result = ok(beat(groups, "a", a.member_epoch, kept))
    current = groups.groups["g"].members["a"].current
    target = groups.groups["g"].target["a"]
    if parts(target) <= parts(kept):
        assert current.state == STABLE
        assert result.member_epoch == groups.groups["g"].assignment_epoch
    else:
        assert current.state == UNREVOKED_PARTITIONS
        assert parts(current.pending_revocation) <= parts(kept)


def test_epoch_validation_and_lost_bump() -> None:
    groups = new_groups()
    a = ok(join(groups, "a"))
    epoch = a.member_epoch
    assert beat(groups, "a", epoch + 1).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert beat(groups, "nobody", epoch).error == ErrorCode.UNKNOWN_MEMBER_ID
    ok(join(groups, "b"))
    revoke = ok(beat(groups, "a", epoch))
    bumped = ok(beat(groups, "a", epoch, revoke.assignment))
    assert bumped.member_epoch == epoch + 1
    # The response with the bump was lost: the previous epoch with a subset of the
    # assignment is accepted ...
    assert ok(beat(groups, "a", epoch, revoke.assignment)).member_epoch == epoch + 1
    # ... but not without owned partitions, nor with partitions it no longer has.
    assert beat(groups, "a", epoch).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert beat(groups, "a", epoch, a.assignment).error == ErrorCode.FENCED_MEMBER_EPOCH
    if epoch > 1:
        assert beat(groups, "a", epoch - 1, {}).error == ErrorCode.FENCED_MEMBER_EPOCH
    # A fenced client drops its partitions and rejoins with the same id and epoch 0.
    rejoined = ok(join(groups, "a"))
    assert rejoined.member_epoch == epoch + 1
    assert rejoined.assignment == groups.groups["g"].members["a"].current.assigned


def test_member_that_never_revokes_is_fenced_after_its_rebalance_timeout() -> None:
    clock = Clock()
    groups = new_groups(clock, session_timeout_ms=1_000_000)
    a = ok(join(groups, "a"))
    b = ok(join(groups, "b"))
    ok(beat(groups, "a", a.member_epoch))  # told to revoke; never acknowledges
    group = groups.groups["g"]
    assert group.members["a"].revoke_deadline_ms == clock.now + REBALANCE_TIMEOUT_MS
    assert groups.next_deadline_ms() == clock.now + REBALANCE_TIMEOUT_MS
    clock.now += REBALANCE_TIMEOUT_MS - 1
    ok(beat(groups, "a", a.member_epoch))  # heartbeats alone do not extend it
    assert groups.tick(Effects()) == []
    clock.now += 1
    assert groups.tick(Effects()) == ["a"]
    assert beat(groups, "a", a.member_epoch).error == ErrorCode.UNKNOWN_MEMBER_ID
    got = ok(beat(groups, "b", b.member_epoch))
    assert len(parts(got.assignment)) == 6


def test_revocation_timer_cleared_on_ack_and_rearmed_on_replay() -> None:
    clock = Clock()
    groups = new_groups(clock)
    fx = Effects()
    a = ok(join(groups, "a", fx=fx))
    ok(join(groups, "b", fx=fx))
    revoke = ok(beat(groups, "a", a.member_epoch, fx=fx))
    rebuilt = new_groups(clock)
    for key, value in fx.records:
        record = decode_consumer_record(key, value)
        assert record is not None
        rebuilt.replay(record)
    assert rebuilt.groups["g"].members["a"].revoke_deadline_ms == clock.now + (REBALANCE_TIMEOUT_MS)
    ok(beat(groups, "a", a.member_epoch, revoke.assignment))
    assert groups.groups["g"].members["a"].revoke_deadline_ms is None


def test_static_leave_is_persisted_and_the_replacement_inherits_the_partitions() -> None:
    clock = Clock()
    groups = new_groups(clock)
    fx = Effects()
    a = ok(join(groups, "a", instance_id="i1", fx=fx))
    assert join(groups, "a2", instance_id="i1").error == ErrorCode.UNRELEASED_INSTANCE_ID
    # Another member id cannot heartbeat or leave for the instance id.
    assert beat(groups, "a2", 1, instance_id="i1").error == ErrorCode.FENCED_INSTANCE_ID
    assert beat(groups, "a2", -2, instance_id="i1").error == ErrorCode.FENCED_INSTANCE_ID
    assert beat(groups, "zz", 1, instance_id="i9").error == ErrorCode.UNKNOWN_MEMBER_ID
    left = ok(beat(groups, "a", STATIC_LEAVE_EPOCH, instance_id="i1", fx=fx))
    assert left.member_epoch == STATIC_LEAVE_EPOCH
    # The old incarnation is fenced; its partitions stay owned by it.
    assert beat(groups, "a", a.member_epoch, instance_id="i1").error == (
        ErrorCode.FENCED_MEMBER_EPOCH
    )
    # A new coordinator replaying the log knows the instance id was released.
    rebuilt = new_groups(clock)
    for key, value in fx.records:
        record = decode_consumer_record(key, value)
        assert record is not None
        rebuilt.replay(record)
    assert rebuilt.groups["g"].members["a"].left_static
    for owner in (groups, rebuilt):
        again = ok(join(owner, "a2", instance_id="i1"))
        assert again.assignment == a.assignment
        assert again.member_epoch == a.member_epoch
        assert "a" not in owner.groups["g"].members
        assert not owner.groups["g"].members["a2"].left_static


def test_partitions_of_a_static_member_away_stay_owned_until_its_session_expires() -> None:
    clock = Clock()
    groups = new_groups(clock, session_timeout_ms=10_000)
    a = ok(join(groups, "a", instance_id="i1"))
    ok(beat(groups, "a", STATIC_LEAVE_EPOCH, instance_id="i1"))
    b = ok(join(groups, "b"))
    assert b.assignment == {}
    clock.now += 5_000
    b = ok(beat(groups, "b", b.member_epoch))
    assert b.assignment is None  # a's partitions are not released while it may come back
    clock.now += 5_000
    assert groups.tick(Effects()) == ["a"]
    got = ok(beat(groups, "b", b.member_epoch))
    assert parts(got.assignment) == parts(a.assignment)


def test_static_member_rejoining_under_its_own_id_and_leaving_for_good() -> None:
    groups = new_groups()
    a = ok(join(groups, "a", instance_id="i1"))
    ok(beat(groups, "a", STATIC_LEAVE_EPOCH, instance_id="i1"))
    back = ok(join(groups, "a", instance_id="i1"))
    assert back.assignment == a.assignment and back.member_epoch == a.member_epoch
    # Leaving with -1 removes a static member: its partitions are free at once.
    ok(beat(groups, "a", -1, instance_id="i1"))
    assert "a" not in groups.groups["g"].members
    b = ok(join(groups, "b"))
    assert len(parts(b.assignment)) == 6


def test_dynamic_member_leaving_with_minus_two_is_removed() -> None:
    groups = new_groups()
    ok(join(groups, "a"))
    assert ok(beat(groups, "a", STATIC_LEAVE_EPOCH)).member_epoch == STATIC_LEAVE_EPOCH
    assert "a" not in groups.groups["g"].members
    assert beat(groups, "a", -1).error == ErrorCode.UNKNOWN_MEMBER_ID


@dataclass
class Client:
    """What a librdkafka-like client knows: its epoch, what it owns, and whether its next
    heartbeat must acknowledge an assignment or be a full request (after a lost response)."""

    epoch: int = 0
    owned: Assignment = field(default_factory=dict)
    ack: bool = False
    full: bool = True


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from(["beat", "beat", "beat", "lose", "leave"])),
        min_size=1,
        max_size=90,
    )
)
def test_librdkafka_like_clients_never_double_own_and_converge(
    steps: list[tuple[int, str]],
) -> None:
    """Clients send owned partitions only to acknowledge, lose responses (then send a full
    request), get fenced (then drop everything and rejoin) and leave. No partition is ever
    held by two clients, and once all heartbeat steadily every partition is held."""
    groups = new_groups()
    clients: dict[str, Client] = {}

    def step(name: str, action: str) -> None:
        if action == "leave":
            if name in clients:
                beat(groups, name, -1)
                del clients[name]
            return
        client = clients.setdefault(name, Client())
        full = client.full or client.epoch == 0
        req = HeartbeatRequest(
            "g",
            name,
            client.epoch,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS if full else -1,
            subscribed_topic_names=("t1", "t2") if full else None,
            owned=client.owned if full or client.ack else None,
        )
        result = groups.heartbeat(req, resolve, Effects())
        if action == "lose":
            client.full = True
            return
        if result.error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            clients[name] = Client()
            return
        assert result.error == ErrorCode.NONE, result
        client.full = False
        client.ack = False
        client.epoch = result.member_epoch
        if result.assignment is not None:
            client.owned = result.assignment
            client.ack = True
        held = [tp for c in clients.values() for tp in parts(c.owned)]
        assert len(held) == len(set(held)), clients

    for index, action in steps:
        step(f"m{index}", action)
    for _ in range(6):
        for name in sorted(clients):
            step(name, "beat")
    if clients:
        assert {tp for c in clients.values() for tp in parts(c.owned)} == ALL
        assert groups.groups["g"].state == "Stable"
