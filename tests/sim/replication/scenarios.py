"""Fault scenarios for the partition replication simulator (``repl_*``).

Each scenario builds a :class:`ReplSimulation` for a seed, produces acks=all records while it
injects faults until ``heal_ms``, then heals every fault (network, pauses, crashed brokers),
keeps producing for a while and requires convergence (:func:`check_converged`). The safety
invariants are checked after every event throughout. A scenario returns :class:`ReplRunStats`
or raises.

Crashes (except in ``repl_total_failure``) never take down the last registered member of the
controller's ISR and ELR: with every copy of the committed log lost to unclean shutdowns the
partition is rightly offline for good (Kafka would need an unclean election), which is not a
liveness failure to report. Members that a shrink still in flight drops do not count: it
may land after the crash.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from tests.sim.replication.cluster import ReplSimulation
from tests.sim.replication.invariants import (
    InvariantViolation,
    LivenessViolation,
    ReplInvariants,
    check_converged,
)
from tests.sim.replication.node import DEFAULT_CONFIG, ReplConfig
from tests.sim.replication.wire import CONTROLLER_ID, PRODUCER_ID

LIVENESS_MS = 4000
PRODUCE_EVERY_MS = 15
RF5 = ReplConfig(replicas=(0, 1, 2, 3, 4), min_isr=3)


@dataclass(frozen=True, slots=True)
class ReplRunStats:
    seed: int
    events: int
    delivered: int
    dropped: int
    simulated_ms: int
    produced: int
    acked: int
    acked_after_heal: int
    leader_changes: int
    max_leader_epoch: int
    truncations: int
    isr_shrinks: int
    isr_expands: int
    fenced: int
    crashes: int
    lost_offsets: int
    pauses: int
    deletions: int
    offline: int


def new_sim(
    seed: int, config: ReplConfig = DEFAULT_CONFIG, mutation: str | None = None
) -> tuple[ReplSimulation, ReplInvariants]:
    sim = ReplSimulation(seed, config, mutation=mutation)
    invariants = ReplInvariants()
    sim.observers.append(invariants)
    return sim, invariants


def finish(
    sim: ReplSimulation, invariants: ReplInvariants, heal_ms: int, *, may_go_offline: bool = False
) -> ReplRunStats:
    sim.run_until(heal_ms)
    sim.heal()
    acked_at_heal = sim.stats.acked
    sim.workload(heal_ms, heal_ms + LIVENESS_MS // 2, PRODUCE_EVERY_MS)
    sim.run_until(heal_ms + LIVENESS_MS)
    controller = sim.controller
    offline = controller.leader < 0 and not controller.isr and not controller.elr
    if may_go_offline and offline:
        sim.stats.offline = True  # every copy of the log lost data: no clean leader, rightly
    else:
        check_converged(sim, invariants)
        if sim.stats.acked <= acked_at_heal:
            raise LivenessViolation("nothing acknowledged after healing")
    controller_stats = controller.stats
    return ReplRunStats(
        sim.seed,
        sim.events,
        sim.stats.delivered,
        sim.stats.dropped,
        sim.now,
        sim.stats.produced,
        sim.stats.acked,
        sim.stats.acked - acked_at_heal,
        sim.stats.leader_changes,
        invariants.max_leader_epoch,
        sim.stats.truncations,
        controller_stats.isr_shrinks,
        controller_stats.isr_expands,
        controller_stats.fenced,
        sim.stats.crashes,
        sim.stats.lost_offsets,
        sim.stats.pauses,
        sim.stats.deletions,
        int(sim.stats.offline),
    )


# -- fault helpers ---------------------------------------------------------------------------------
def _safe_to_crash(sim: ReplSimulation, broker_id: int) -> bool:
    controller = sim.controller
    holders = set(controller.isr) | set(controller.elr)
    for broker in sim.acting_leaders():
        pending = broker.leader.pending_proposal if broker.leader is not None else None
        if pending is not None and not pending.expand:
            # A shrink in flight may still land after the crash: who it drops may lack data.
            holders &= set(pending.isr_ids)
    # A restarted broker still in the ELR before its registration went through is about to
    # leave it (unclean shutdown): only registered incarnations count as holders.
    return any(b != broker_id and sim.brokers[b].registered for b in holders)


def crash_for(sim: ReplSimulation, broker_id: int, down_ms: int) -> bool:
    if not sim.brokers[broker_id].up or not _safe_to_crash(sim, broker_id):
        return False
    sim.crash(broker_id)
    sim.at(sim.now + down_ms, functools.partial(sim.restart, broker_id))
    return True


def pause_for(sim: ReplSimulation, broker_id: int, pause_ms: int) -> None:
    if sim.brokers[broker_id].paused:
        return
    sim.pause(broker_id)
    sim.at(sim.now + pause_ms, functools.partial(sim.resume, broker_id))


def current_leader(sim: ReplSimulation) -> int | None:
    leader = sim.controller.leader
    return leader if leader >= 0 else None


def lossy(
    sim: ReplSimulation, max_drop: float = 0.1, max_dup: float = 0.1, max_slow: float = 0.0
) -> None:
    rnd = sim.random
    sim.net.drop = rnd.uniform(0.0, max_drop)
    sim.net.duplicate = rnd.uniform(0.0, max_dup)
    sim.net.max_delay_ms = rnd.randint(5, 60)
    sim.slow_fraction = rnd.uniform(0.0, max_slow)


def repartition(sim: ReplSimulation) -> str:
    """Replace the network partition by a random new one (or none)."""
    rnd = sim.random
    sim.net.groups = {}
    sim.net.one_way = set()
    brokers = list(sim.brokers)
    leader = current_leader(sim)
    if leader is None:
        leader = rnd.choice(brokers)
    followers = [b for b in brokers if b != leader]
    kind = rnd.choice(
        ["leader_from_controller", "leader_from_followers", "leader_alone", "minority", "none"]
    )
    if kind == "leader_from_controller":
        # The zombie-leader case: clients and followers still reach it, the controller not.
        sim.cut(leader, CONTROLLER_ID)
    elif kind == "leader_from_followers":
        for follower in followers:
            sim.cut(leader, follower)
    elif kind == "leader_alone":
        sim.net.groups = {b: int(b == leader) for b in brokers}
        sim.net.groups[CONTROLLER_ID] = 0
        sim.net.groups[PRODUCER_ID] = rnd.choice([0, 1])
    elif kind == "minority":
        minority = rnd.sample(brokers, (len(brokers) - 1) // 2)
        sim.net.groups = {b: int(b in minority) for b in brokers}
        sim.net.groups[CONTROLLER_ID] = 0
        sim.net.groups[PRODUCER_ID] = rnd.choice([0, 1])
    return kind


# -- scenarios -------------------------------------------------------------------------------------
def steady_loss(seed: int) -> ReplRunStats:
    sim, invariants = new_sim(seed)
    lossy(sim, max_drop=0.15, max_dup=0.15, max_slow=0.03)
    heal = 4000
    sim.workload(100, heal, PRODUCE_EVERY_MS)
    return finish(sim, invariants, heal)


def leader_crash(seed: int) -> ReplRunStats:
    sim, invariants = new_sim(seed)
    rnd = sim.random
    lossy(sim, max_drop=0.05, max_dup=0.05)
    heal = 5000
    sim.workload(100, heal, PRODUCE_EVERY_MS)

    def crash_leader() -> None:
        leader = current_leader(sim)
        if leader is not None:
            crash_for(sim, leader, rnd.randint(100, 1500))

    for t in range(600, heal - 400, 900):
        sim.at(t + rnd.randint(0, 400), crash_leader)
    return finish(sim, invariants, heal)


def follower_crash(seed: int) -> ReplRunStats:
    sim, invariants = new_sim(seed)
    rnd = sim.random
    lossy(sim, max_drop=0.05, max_dup=0.05)
    heal = 5000

    def crash_follower() -> None:
        leader = current_leader(sim)
        followers = [b for b in sim.brokers if b != leader and sim.brokers[b].up]
        if followers:
            crash_for(sim, rnd.choice(followers), rnd.randint(100, 1500))

    sim.workload(100, heal, PRODUCE_EVERY_MS)
    for t in range(400, heal - 400, 600):
        sim.at(t + rnd.randint(0, 300), crash_follower)
    return finish(sim, invariants, heal)


def partitions(seed: int) -> ReplRunStats:
    sim, invariants = new_sim(seed)
    rnd = sim.random
    sim.net.max_delay_ms = rnd.randint(5, 30)
    heal = 5500
    sim.workload(100, heal, PRODUCE_EVERY_MS)

    def change() -> None:
        repartition(sim)

    for t in range(500, heal - 300, 800):
        sim.at(t + rnd.randint(0, 400), change)
    return finish(sim, invariants, heal)


def pauses(seed: int) -> ReplRunStats:
    sim, invariants = new_sim(seed)
    rnd = sim.random
    lossy(sim, max_drop=0.03, max_dup=0.03)
    heal = 5000
    sim.workload(100, heal, PRODUCE_EVERY_MS)

    def pause_one() -> None:
        leader = current_leader(sim)
        victim = (
            leader if leader is not None and rnd.random() < 0.6 else rnd.choice(list(sim.brokers))
        )
        # Some pauses outlast the session timeout (fenced, a new leader), some do not.
        pause_for(sim, victim, rnd.randint(50, 1200))

    for t in range(400, heal - 300, 700):
        sim.at(t + rnd.randint(0, 300), pause_one)
    return finish(sim, invariants, heal)


def double_failures_5(seed: int) -> ReplRunStats:
    """RF=5, min ISR 3: two brokers fail at nearly the same time (crashes or pauses)."""
    sim, invariants = new_sim(seed, RF5)
    rnd = sim.random
    lossy(sim, max_drop=0.05, max_dup=0.05)
    heal = 5500
    sim.workload(100, heal, PRODUCE_EVERY_MS)

    def fail_two() -> None:
        brokers = list(sim.brokers)
        leader = current_leader(sim)
        first = leader if leader is not None and rnd.random() < 0.5 else rnd.choice(brokers)
        second = rnd.choice([b for b in brokers if b != first])
        for victim, gap in ((first, 0), (second, rnd.randint(0, 150))):

            def fail(victim: int = victim) -> None:
                if rnd.random() < 0.75:
                    crash_for(sim, victim, rnd.randint(200, 1500))
                else:
                    pause_for(sim, victim, rnd.randint(200, 1000))

            sim.at(sim.now + gap, fail)

    for t in range(500, heal - 600, 1300):
        sim.at(t + rnd.randint(0, 300), fail_two)
    return finish(sim, invariants, heal)


def delete_records(seed: int) -> ReplRunStats:
    """DeleteRecords moves the leader's log start up while followers crash for long enough to
    fall behind it (OFFSET_OUT_OF_RANGE, restart at the leader's log start), and a leader
    crash makes a follower with a lower log start the leader."""
    sim, invariants = new_sim(seed)
    rnd = sim.random
    lossy(sim, max_drop=0.05, max_dup=0.05)
    heal = 5000
    sim.workload(100, heal, PRODUCE_EVERY_MS)

    def delete() -> None:
        sim.delete_records()

    def crash_follower() -> None:
        leader = current_leader(sim)
        followers = [b for b in sim.brokers if b != leader and sim.brokers[b].up]
        if followers:
            crash_for(sim, rnd.choice(followers), rnd.randint(500, 1500))

    def crash_leader() -> None:
        leader = current_leader(sim)
        if leader is not None:
            crash_for(sim, leader, rnd.randint(100, 1000))

    for t in range(300, heal, 250):
        sim.at(t + rnd.randint(0, 200), delete)
    for t in range(400, heal - 400, 900):
        sim.at(t + rnd.randint(0, 300), crash_follower)
    sim.at(rnd.randint(1500, 4000), crash_leader)
    return finish(sim, invariants, heal)


def total_failure(seed: int) -> ReplRunStats:
    """Every broker crashes at about the same time (a power cut), losing unflushed data, and
    comes back. Kafka cannot tell which copy kept every acknowledged record, so KIP-966 takes
    each broker out of the ELR when it registers after its unclean shutdown, and the partition
    must stay offline (only an unclean election could bring it back): electing any of them
    could lose acknowledged records, which the invariants would report."""
    sim, invariants = new_sim(seed)
    rnd = sim.random
    lossy(sim, max_drop=0.05, max_dup=0.05)
    heal = 4500
    sim.workload(100, heal, PRODUCE_EVERY_MS)
    cut_at = rnd.randint(800, 2500)
    for broker_id in sim.brokers:
        # Straight to the simulator: the scenarios' crash guard is what this one bypasses.
        sim.at(cut_at + rnd.randint(0, 200), functools.partial(sim.crash, broker_id))
        sim.at(cut_at + rnd.randint(300, 1500), functools.partial(sim.restart, broker_id))
    stats = finish(sim, invariants, heal, may_go_offline=True)
    if not stats.offline:
        raise InvariantViolation(
            f"a leader was elected after every replica lost unflushed data: {sim.controller.view()}"
        )
    return stats


def restart_old_metadata(seed: int, mutation: str | None = None) -> ReplRunStats:
    """Issue 16: brokers (leaders half of the time) crash and restart while leadership moves;
    every restarted broker first replays every metadata image since the start, as a loader
    replaying its metadata log would publish them, then the current one. The historical
    states name it leader or follower of epochs its log has long passed. ``mutation``
    "rewrite_epoch_cache" puts the old bug back on purpose (a replayed leadership rewrites the
    epoch cache at the log end)."""
    sim, invariants = new_sim(seed, mutation=mutation)
    sim.replay_metadata_on_restart = True
    rnd = sim.random
    lossy(sim, max_drop=0.05, max_dup=0.05, max_slow=0.02)
    heal = 6000
    sim.workload(100, heal, PRODUCE_EVERY_MS)

    def restart_one() -> None:
        leader = current_leader(sim)
        if leader is not None and rnd.random() < 0.5:
            victim = leader
        else:
            victim = rnd.choice([b for b in sim.brokers if b != leader])
        crash_for(sim, victim, rnd.randint(50, 1000))

    for t in range(400, heal - 400, 500):
        sim.at(t + rnd.randint(0, 300), restart_one)
    return finish(sim, invariants, heal)


def chaos(
    seed: int, config: ReplConfig = DEFAULT_CONFIG, mutation: str | None = None
) -> ReplRunStats:
    """Everything at once: loss, duplicates, delays, partitions, crashes, pauses,
    DeleteRecords; ``mutation``
    breaks the model controller on purpose (see :class:`ControllerModel`)."""
    sim, invariants = new_sim(seed, config, mutation)
    rnd = sim.random
    lossy(sim, max_drop=0.1, max_dup=0.1, max_slow=0.03)
    heal = 6000
    sim.workload(100, heal, PRODUCE_EVERY_MS)
    brokers = list(sim.brokers)

    def fault() -> None:
        kind = rnd.choice(
            ["crash_leader", "crash", "pause", "pause_leader", "partition", "delete_records"]
        )
        leader = current_leader(sim)
        victim = leader if leader is not None and kind.endswith("leader") else rnd.choice(brokers)
        if kind.startswith("crash"):
            crash_for(sim, victim, rnd.randint(50, 1500))
        elif kind.startswith("pause"):
            pause_for(sim, victim, rnd.randint(50, 1000))
        elif kind == "partition":
            repartition(sim)
        else:
            sim.delete_records()

    for t in range(300, heal - 300, 350):
        sim.at(t + rnd.randint(0, 200), fault)
    return finish(sim, invariants, heal)


REPL_SCENARIOS: dict[str, Callable[[int], ReplRunStats]] = {
    "repl_steady_loss": steady_loss,
    "repl_leader_crash": leader_crash,
    "repl_follower_crash": follower_crash,
    "repl_partitions": partitions,
    "repl_pauses": pauses,
    "repl_double_failures_5": double_failures_5,
    "repl_delete_records": delete_records,
    "repl_total_failure": total_failure,
    "repl_chaos": chaos,
    "repl_restart_old_metadata": restart_old_metadata,
}
