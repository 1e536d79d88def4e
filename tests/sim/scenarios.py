"""Fault scenarios for the KRaft simulator (the ``RaftEventSimulationTest`` set, plus KIP-853).

Each scenario builds a :class:`~tests.sim.cluster.Simulation` for a seed, runs a workload with
faults until ``heal_ms``, removes every fault, and then requires liveness: within
``LIVENESS_MS`` a single leader exists and the committed log grows. Safety invariants are checked
after every event throughout. A scenario returns a :class:`RunStats` or raises.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from sparklog.protocol.errors import ErrorCode
from sparklog.raft import rpc
from tests.sim.cluster import Simulation, directory_of
from tests.sim.invariants import Invariants, InvariantViolation

LIVENESS_MS = 3000


@dataclass(frozen=True)
class RunStats:
    seed: int
    events: int
    delivered: int
    dropped: int
    simulated_ms: int
    max_epoch: int
    committed_end: int
    time_to_elect_ms: int
    snapshots_created: int = 0
    snapshots_downloaded: int = 0


def _finish(sim: Simulation, invariants: Invariants, heal_ms: int) -> RunStats:
    sim.run_until(heal_ms)
    sim.net.drop = sim.net.duplicate = 0.0
    sim.net.groups = {}
    sim.net.one_way = set()
    for node_id in sim.nodes:
        sim.restart(node_id)
    committed_at_heal = invariants.committed_end
    sim.workload(heal_ms, heal_ms + LIVENESS_MS, 100)
    elected_at = -1
    step = 100
    t = heal_ms
    while t < heal_ms + LIVENESS_MS:
        t += step
        sim.run_until(t)
        if elected_at < 0 and sim.leaders():
            elected_at = t - heal_ms
    leaders = sim.leaders()
    if len(leaders) != 1:
        raise InvariantViolation(f"no single leader {LIVENESS_MS} ms after healing: {leaders}")
    if invariants.committed_end <= committed_at_heal:
        raise InvariantViolation("nothing committed after healing")
    # Everyone that is up and follows should have caught up to a recent HW.
    return RunStats(
        sim.seed,
        sim.events,
        sim.delivered,
        sim.dropped,
        sim.now,
        invariants.max_epoch,
        invariants.committed_end,
        elected_at,
        invariants.snapshots_created,
        invariants.snapshots_downloaded,
    )


def _new(
    seed: int, voters: int, observers: int = 0, spares: int = 0
) -> tuple[Simulation, Invariants]:
    sim = Simulation(seed, voters, observers, spares)
    invariants = Invariants()
    sim.checkers.append(invariants)
    return sim, invariants


def steady(seed: int) -> RunStats:
    sim, invariants = _new(seed, 3, 1)
    sim.workload(500, 3000, 50)
    stats = _finish(sim, invariants, 3000)
    values = {
        n.node_id: n.recorder.values
        for n in sim.nodes.values()
        if n.recorder is not None and n.replica is not None
    }
    lengths = {len(v) for v in values.values()}
    if min(lengths) == 0:
        raise InvariantViolation(f"a replica's listener got nothing: {lengths}")
    return stats


def leader_crash(seed: int, voters: int = 3, observers: int = 1) -> RunStats:
    sim, invariants = _new(seed, voters, observers)
    heal = 4500
    sim.workload(200, heal, 100)
    rnd = sim.random

    def crash_leader() -> None:
        for node in sim.leaders():
            sim.crash(node.node_id)
            down = rnd.randint(200, 1500)
            sim.at(sim.now + down, functools.partial(sim.restart, node.node_id))

    for t in range(800, heal - 500, 1000):
        sim.at(t + rnd.randint(0, 400), crash_leader)
    return _finish(sim, invariants, heal)


def random_crashes(seed: int, voters: int = 5, observers: int = 2) -> RunStats:
    sim, invariants = _new(seed, voters, observers)
    heal = 4500
    sim.workload(200, heal, 100)
    rnd = sim.random
    max_down = (voters - 1) // 2

    def crash_some() -> None:
        down = [n for n in sim.nodes.values() if not n.up]
        if len(down) >= max_down:
            return
        node_id = rnd.choice(list(sim.nodes))
        sim.crash(node_id)
        sim.at(sim.now + rnd.randint(100, 2000), lambda: sim.restart(node_id))

    for t in range(500, heal - 500, 400):
        sim.at(t + rnd.randint(0, 300), crash_some)
    return _finish(sim, invariants, heal)


def partitions(seed: int, voters: int = 3, observers: int = 1) -> RunStats:
    sim, invariants = _new(seed, voters, observers)
    heal = 4500
    sim.workload(200, heal, 100)
    rnd = sim.random
    ids = list(sim.nodes)

    def partition() -> None:
        kind = rnd.choice(["minority", "majority", "isolate_leader", "one_way", "heal"])
        sim.net.groups = {}
        sim.net.one_way = set()
        if kind == "heal":
            return
        if kind == "isolate_leader":
            leaders = sim.leaders()
            isolated = [leaders[0].node_id] if leaders else [rnd.choice(ids)]
        elif kind == "one_way":
            a, b = rnd.sample(ids, 2)
            sim.net.one_way = {(a, b)}
            return
        else:
            size = (voters - 1) // 2 if kind == "minority" else voters // 2 + 1
            isolated = rnd.sample(ids, max(size, 1))
        sim.net.groups = {i: (1 if i in isolated else 0) for i in ids}

    for t in range(500, heal - 500, 900):
        sim.at(t + rnd.randint(0, 300), partition)
    return _finish(sim, invariants, heal)


def lossy_network(seed: int, voters: int = 3, observers: int = 1) -> RunStats:
    sim, invariants = _new(seed, voters, observers)
    rnd = sim.random
    sim.net.drop = rnd.uniform(0.05, 0.25)
    sim.net.duplicate = rnd.uniform(0.0, 0.2)
    sim.net.max_delay_ms = rnd.randint(10, 120)
    heal = 4500
    sim.workload(200, heal, 100)
    # A crash too, so retransmission meets lost unflushed data.
    victim = rnd.randrange(voters)
    sim.at(3000, lambda: sim.crash(victim))
    sim.at(3700, lambda: sim.restart(victim))
    return _finish(sim, invariants, heal)


def voter_changes(seed: int, snapshots: bool = False) -> RunStats:
    """Add two controllers and remove an original voter, under loss and a crash; with
    ``snapshots`` every node also snapshots often, so the new controllers start from a
    snapshot (and its VotersRecord) rather than from the first VotersRecord of the log."""
    sim, invariants = _new(seed, 3, 1, spares=2)
    rnd = sim.random
    sim.net.drop = rnd.uniform(0.0, 0.1)
    sim.net.max_delay_ms = rnd.randint(5, 40)
    heal = 7000
    sim.workload(200, heal, 100)
    first_spare, second_spare = sim.spares
    plan: list[tuple[int, int]] = [
        (rpc.ADD_RAFT_VOTER, first_spare),
        (rpc.REMOVE_RAFT_VOTER, rnd.randrange(3)),
        (rpc.ADD_RAFT_VOTER, second_spare),
    ]
    done: list[int] = []

    def body(api: int, voter: int) -> dict[str, object]:
        out: dict[str, object] = {
            "cluster_id": sim.config.cluster_id,
            "voter_id": voter,
            "voter_directory_id": directory_of(voter),
        }
        if api == rpc.ADD_RAFT_VOTER:
            out["timeout_ms"] = 1500
            out["listeners"] = [{"name": "CONTROLLER", "host": "sim", "port": 9000 + voter}]
            out["ack_when_committed"] = True
        return out

    def step() -> None:
        ok = {(api, voter) for api, voter, error in sim.admin_results if error == 0}
        while len(done) < len(plan) and plan[len(done)] in ok:
            done.append(1)
        if len(done) < len(plan):
            api, voter = plan[len(done)]
            sim.admin(api, body(api, voter))
        sim.at(sim.now + 700, step)

    sim.at(1500, step)
    if snapshots:

        def snapshot_all() -> None:
            for node_id in sim.nodes:
                sim.take_snapshot(node_id)

        for t in range(1000, heal, 1000):
            sim.at(t + rnd.randint(0, 300), snapshot_all)
    crash_at = rnd.randint(2000, 5000)
    victim = rnd.randrange(5)
    sim.at(crash_at, lambda: sim.crash(victim))
    sim.at(crash_at + rnd.randint(200, 1500), lambda: sim.restart(victim))
    stats = _finish(sim, invariants, heal)
    errors = {e for _, _, e in sim.admin_results}
    allowed = {
        0,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.DUPLICATE_VOTER,
        ErrorCode.VOTER_NOT_FOUND,
    }
    if not errors <= {int(e) for e in allowed}:
        raise InvariantViolation(f"unexpected admin errors {errors}")
    return stats


def snapshots(seed: int, voters: int = 3, observers: int = 1) -> RunStats:
    """Every node snapshots often (so logs start above 0) while followers crash for long
    enough to fall behind the leader's log start and must catch up with FetchSnapshot."""
    sim, invariants = _new(seed, voters, observers)
    rnd = sim.random
    sim.net.drop = rnd.uniform(0.0, 0.1)
    sim.net.duplicate = rnd.uniform(0.0, 0.05)
    heal = 4500 if voters <= 3 else 3500
    sim.workload(200, heal, 80)
    max_voters_down = (voters - 1) // 2

    def snapshot_some() -> None:
        for node_id in sim.nodes:
            if rnd.random() < 0.6:
                sim.take_snapshot(node_id)

    def voters_down() -> int:
        return sum(1 for n in sim.nodes.values() if n.node_id < voters and not n.up)

    def crash(node_id: int) -> None:
        if node_id < voters and voters_down() >= max_voters_down:
            return
        sim.crash(node_id)
        sim.at(sim.now + rnd.randint(800, 2000), functools.partial(sim.restart, node_id))

    def crash_follower() -> None:
        leaders = {n.node_id for n in sim.leaders()}
        up = [i for i, n in sim.nodes.items() if n.up and i not in leaders]
        if up:
            crash(rnd.choice(up))

    def crash_leader() -> None:
        for node in sim.leaders():
            crash(node.node_id)

    for t in range(600, heal, 250):
        sim.at(t + rnd.randint(0, 200), snapshot_some)
    for t in range(400, heal - 1000, 1100):
        sim.at(t + rnd.randint(0, 300), crash_follower)
    sim.at(rnd.randint(1500, 3500), crash_leader)
    at_heal: list[int] = []
    sim.at(heal, lambda: at_heal.append(invariants.committed_end))
    stats = _finish(sim, invariants, heal)
    # Every replica caught up (through FetchSnapshot where its log was too far behind), and
    # its snapshot + log replays to the same state as the committed log.
    for node in sim.nodes.values():
        recorder = node.recorder
        assert recorder is not None
        if recorder.next_offset < at_heal[0]:
            raise InvariantViolation(
                f"node {node.node_id} stuck at {recorder.next_offset} (committed at heal: "
                f"{at_heal[0]})"
            )
        expected = invariants.values_at.get(recorder.next_offset)
        if expected is None or recorder.values != invariants.values[: expected[0]]:
            raise InvariantViolation(
                f"node {node.node_id}'s state at {recorder.next_offset} differs from the log"
            )
    return stats


SCENARIOS: dict[str, Callable[[int], RunStats]] = {
    "steady": steady,
    "leader_crash": leader_crash,
    "leader_crash_5": lambda seed: leader_crash(seed, 5, 2),
    "random_crashes": random_crashes,
    "partitions": partitions,
    "partitions_5": lambda seed: partitions(seed, 5, 1),
    "lossy_network": lossy_network,
    "voter_changes": voter_changes,
    "snapshots": snapshots,
    "snapshot_voter_changes": lambda seed: voter_changes(seed, snapshots=True),
    "snapshots_5": lambda seed: snapshots(seed, 5, 1),
}
