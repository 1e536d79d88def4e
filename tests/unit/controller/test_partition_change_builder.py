"""PartitionChangeBuilder: leader election, ISR/ELR and reassignment rules, as pure functions."""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.controller.partition_change_builder import (
    Election,
    PartitionChangeBuilder,
    ReassignmentReplicas,
)
from sparklog.metadata.image import PartitionRegistration

TOPIC_ID = bytes(range(16))


def partition(
    replicas: Iterable[int] = (1, 2, 3),
    isr: Iterable[int] | None = None,
    leader: int = 1,
    elr: Iterable[int] = (),
    last_known_elr: Iterable[int] = (),
    adding: Iterable[int] = (),
    removing: Iterable[int] = (),
) -> PartitionRegistration:
    replicas = tuple(replicas)
    return PartitionRegistration(
        replicas=replicas,
        isr=replicas if isr is None else tuple(isr),
        leader=leader,
        leader_epoch=4,
        partition_epoch=9,
        elr=tuple(elr),
        last_known_elr=tuple(last_known_elr),
        adding_replicas=tuple(adding),
        removing_replicas=tuple(removing),
    )


def builder(
    p: PartitionRegistration,
    live: Iterable[int] = (1, 2, 3, 4, 5),
    *,
    min_isr: int = 1,
    elr: bool = False,
    election: Election = Election.ONLINE,
) -> PartitionChangeBuilder:
    alive = frozenset(live)
    return PartitionChangeBuilder(
        p,
        TOPIC_ID,
        0,
        alive.__contains__,
        min_isr=min_isr,
        elr_enabled=elr,
        election=election,
    )


def after(p: PartitionRegistration, b: PartitionChangeBuilder) -> PartitionRegistration:
    record = b.build()
    return p if record is None else p.merge(record.data)


def test_no_change_writes_nothing() -> None:
    assert builder(partition()).build() is None


def test_follower_leaves_isr_partition_epoch_only() -> None:
    p = partition()
    b = builder(p, live=(1, 3))
    b.target_isr = [1, 3]
    record = b.build()
    assert record is not None and "leader" not in record.data
    new = p.merge(record.data)
    assert new.isr == (1, 3) and new.leader == 1
    assert new.leader_epoch == p.leader_epoch and new.partition_epoch == p.partition_epoch + 1


def test_leader_fenced_first_live_isr_replica_in_replica_order_leads() -> None:
    p = partition(replicas=(1, 2, 3), isr=(3, 2, 1))
    b = builder(p, live=(2, 3))
    b.target_isr = [3, 2]
    new = after(p, b)
    assert new.leader == 2 and new.isr == (3, 2)
    assert new.leader_epoch == p.leader_epoch + 1


def test_isr_shrink_bumps_leader_epoch_before_3_6() -> None:
    p = partition()
    b = builder(p)
    b.metadata_version = 11
    b.target_isr = [1, 2]
    record = b.build()
    assert record is not None and record.data["leader"] == 1


def test_last_isr_member_kept_without_elr() -> None:
    p = partition(replicas=(1, 2), isr=(1,), leader=1)
    b = builder(p, live=(2,))
    b.target_isr = []
    new = after(p, b)
    assert new.leader == -1 and new.isr == (1,) and new.elr == ()


def test_unclean_election_sets_isr_and_recovering() -> None:
    p = partition(replicas=(1, 2), isr=(1,), leader=1)
    b = builder(p, live=(2,), election=Election.UNCLEAN)
    b.target_isr = []
    new = after(p, b)
    assert new.leader == 2 and new.isr == (2,) and new.leader_recovery_state == 1
    assert b.elected is not None and b.elected.unclean


def test_elr_populated_below_min_isr_and_cleared_at_min_isr() -> None:
    p = partition()
    b = builder(p, live=(1, 2), min_isr=3, elr=True)
    b.target_isr = [1, 2]
    shrunk = after(p, b)
    assert shrunk.isr == (1, 2) and shrunk.elr == (3,) and shrunk.last_known_elr == ()
    b = builder(shrunk, min_isr=3, elr=True)
    b.target_isr = [1, 2, 3]
    grown = after(shrunk, b)
    assert grown.isr == (1, 2, 3) and grown.elr == () and grown.last_known_elr == ()


def test_elr_leader_elected_when_isr_empty() -> None:
    p = partition(replicas=(1, 2, 3), isr=(1,), leader=1, elr=(2, 3))
    b = builder(p, live=(2, 3), min_isr=2, elr=True)
    b.target_isr = []
    new = after(p, b)
    # Broker 1 (fenced) joins the ELR; 2 is the first live ELR member in replica order.
    assert new.leader == 2 and new.isr == (2,) and new.elr == (1, 3)
    assert b.elected_from_elr


def test_elr_unclean_shutdown_replica_never_kept() -> None:
    p = partition(replicas=(1, 2, 3), isr=(1,), leader=1, elr=(2, 3))
    b = builder(p, live=(1, 3), min_isr=2, elr=True)
    b.unclean_shutdown_replicas = frozenset({2})
    b.target_elr = [3]
    new = after(p, b)
    assert new.elr == (3,) and 2 not in new.last_known_elr


def test_all_gone_with_elr_leaves_partition_offline_with_safe_choices() -> None:
    p = partition(replicas=(1, 2, 3), isr=(1,), leader=1, elr=(2, 3))
    b = builder(p, live=(), min_isr=2, elr=True)
    b.target_isr = []
    new = after(p, b)
    assert new.leader == -1 and new.isr == () and new.elr == (1, 2, 3)


def test_preferred_election() -> None:
    p = partition(leader=2)
    new = after(p, builder(p, election=Election.PREFERRED))
    assert new.leader == 1
    # The preferred replica is down: the current leader stays.
    assert builder(p, live=(2, 3), election=Election.PREFERRED).build() is None


def test_reassignment_waits_for_adding_then_drops_removing_and_moves_leader() -> None:
    p = partition(replicas=(1, 2, 3))
    reassignment = ReassignmentReplicas.of(p.replicas, (2, 3, 4))
    assert reassignment == ReassignmentReplicas((1,), (4,), (2, 3, 4, 1))
    b = builder(p)
    b.target_replicas = list(reassignment.replicas)
    b.target_adding = list(reassignment.adding)
    b.target_removing = list(reassignment.removing)
    started = after(p, b)
    assert started.replicas == (2, 3, 4, 1) and started.adding_replicas == (4,)
    assert started.leader == 1 and started.leader_epoch == p.leader_epoch
    # Broker 4 joins the ISR: the reassignment completes and leader 1 hands over to 2.
    b = builder(started)
    b.target_isr = [1, 2, 3, 4]
    done = after(started, b)
    assert done.replicas == (2, 3, 4) and done.isr == (2, 3, 4)
    assert done.adding_replicas == () and done.removing_replicas == ()
    assert done.leader == 2 and done.leader_epoch == started.leader_epoch + 1


def test_reassignment_removing_follower_bumps_leader_epoch() -> None:
    p = partition(replicas=(1, 2, 3), removing=(3,))
    b = builder(p)
    done = after(p, b)
    assert done.replicas == (1, 2) and done.leader == 1
    assert done.leader_epoch == p.leader_epoch + 1


# -- invariants -----------------------------------------------------------------------------

brokers = st.sets(st.integers(1, 6))


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[PartitionRegistration, PartitionChangeBuilder]:
    replicas = draw(st.lists(st.integers(1, 6), min_size=1, max_size=5, unique=True))
    isr = [r for r in replicas if draw(st.booleans())]
    elr = [r for r in replicas if r not in isr and draw(st.booleans())]
    leader = draw(st.sampled_from([-1, *isr])) if isr else -1
    p = partition(replicas=replicas, isr=isr, leader=leader, elr=sorted(elr))
    elr_on = draw(st.booleans())
    b = builder(
        p,
        live=draw(brokers),
        min_isr=draw(st.integers(1, 3)),
        elr=elr_on,
        election=draw(st.sampled_from(list(Election))),
    )
    b.target_isr = [r for r in isr if draw(st.booleans())]
    return p, b


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_a_new_leader_is_live_and_in_isr_or_elr_unless_unclean(
    scenario: tuple[PartitionRegistration, PartitionChangeBuilder],
) -> None:
    p, b = scenario
    target_isr = list(b.target_isr)
    election = b.election
    record = b.build()
    new = p if record is None else p.merge(record.data)
    if new.leader != p.leader and new.leader != -1:
        assert b.is_acceptable_leader(new.leader)
        assert new.leader in new.replicas
        # With an empty ISR an ELR member is a clean choice (ELR left over from when the
        # feature was on counts too, as in Kafka).
        clean = new.leader in target_isr or (
            not target_isr and (new.leader in p.elr or (b.elr_enabled and new.leader in p.isr))
        )
        assert clean or election is Election.UNCLEAN
        if not clean:
            assert new.isr == (new.leader,) and new.leader_recovery_state == 1
    # Epochs: the partition epoch moves on any change; the leader epoch only with the leader.
    if record is not None:
        assert new.partition_epoch == p.partition_epoch + 1
        assert new.leader_epoch == p.leader_epoch + (1 if "leader" in record.data else 0)
    # ELR is disjoint from the ISR, and empty when the feature is off.
    assert not set(new.elr) & set(new.isr)
    if not b.elr_enabled:
        assert new.elr == () and (new.isr or not p.isr)
    # A live leader never loses its leadership to a clean election (only unclean or preferred).
    if p.leader in target_isr and b.is_acceptable_leader(p.leader):
        assert new.leader == p.leader or election is Election.PREFERRED
