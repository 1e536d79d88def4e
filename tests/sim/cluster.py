"""A deterministic KRaft cluster in one process: nodes, a faulty network, crashes, a clock.

One seeded ``random.Random`` drives everything (election timeouts, message delays and losses,
fault choices), and one priority queue of events on a simulated clock orders every step, so a
seed replays exactly. Per node: a :class:`~tests.sim.memory_log.MemoryLog` (a crash loses what was
not flushed), a :class:`MemoryElectionStore` (written synchronously, survives crashes), a
:class:`~sparklog.raft.snapshots.MemorySnapshotStore` (frozen snapshots survive crashes) and,
while it is up, a :class:`~sparklog.raft.core.RaftReplica` rebuilt from those on restart. The
state machine is a :class:`Recorder`: the list of committed values, which is also what a
snapshot holds (:meth:`Simulation.take_snapshot`).

The network delivers each message after a random delay (hence reordering), and can drop,
duplicate, or hold back messages between partitioned groups. A message to a node that is down
when it arrives is lost. :class:`~tests.sim.invariants.Invariants` is called after every event.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from sparklog.raft import rpc
from sparklog.raft.client import CommittedBatch, LeaderAndEpoch, LoadedSnapshot
from sparklog.raft.core import RaftConfig, RaftReplica
from sparklog.raft.quorum_state import ElectionState
from sparklog.raft.snapshots import MemorySnapshotStore, SnapshotId
from sparklog.raft.state import Leader
from sparklog.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet
from tests.sim.events import EventQueue
from tests.sim.memory_log import MemoryLog

SIM_CONFIG = RaftConfig(
    election_timeout_ms=300,
    fetch_timeout_ms=600,
    election_backoff_max_ms=300,
    request_timeout_ms=400,
    retry_backoff_ms=20,
    fetch_max_wait_ms=150,
    append_linger_ms=10,
    idle_interval_ms=500,
    no_op_record=b"noop",
    cluster_id="sim-cluster",
)


class MemoryElectionStore:
    def __init__(self) -> None:
        self.state: ElectionState | None = None
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
        self.writes += 1


class Recorder:
    """A RaftListener recording what it was told, to check delivery order."""

    def __init__(self) -> None:
        self.next_offset = 0
        self.values: list[bytes] = []
        self.snapshots_loaded = 0

    def handle_load_snapshot(self, snapshot: LoadedSnapshot[bytes]) -> None:
        if snapshot.end_offset < self.next_offset:
            raise AssertionError(f"snapshot at {snapshot.end_offset} is behind {self.next_offset}")
        self.values = list(snapshot.records)
        self.next_offset = snapshot.end_offset
        self.snapshots_loaded += 1

    def handle_commit(self, batch: CommittedBatch[bytes]) -> None:
        if batch.base_offset != self.next_offset:
            raise AssertionError(f"listener got {batch.base_offset}, expected {self.next_offset}")
        self.next_offset = batch.last_offset + 1
        self.values.extend(batch.records)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        pass


def directory_of(node_id: int) -> bytes:
    return bytes([0] * 15 + [node_id + 1])


def voter_node(node_id: int) -> VoterNode:
    return VoterNode(
        ReplicaKey(node_id, directory_of(node_id)), (Endpoint("CONTROLLER", "sim", 9000 + node_id),)
    )


@dataclass
class SimNode:
    node_id: int
    bootstrap: VoterSet | None
    bootstrap_ids: tuple[int, ...]
    log: MemoryLog = field(default_factory=MemoryLog)
    store: MemoryElectionStore = field(default_factory=MemoryElectionStore)
    snapshots: MemorySnapshotStore = field(default_factory=MemorySnapshotStore)
    created_snapshots: set[SnapshotId] = field(default_factory=set)
    replica: RaftReplica[bytes] | None = None
    recorder: Recorder | None = None
    poll_at: int | None = None
    incarnation: int = 0

    @property
    def up(self) -> bool:
        return self.replica is not None


@dataclass
class NetworkFaults:
    drop: float = 0.0
    duplicate: float = 0.0
    min_delay_ms: int = 1
    max_delay_ms: int = 10
    # node id -> group; messages cross groups only when ``groups`` is empty.
    groups: dict[int, int] = field(default_factory=dict)
    one_way: set[tuple[int, int]] = field(default_factory=set)

    def blocked(self, src: int, dst: int) -> bool:
        if (src, dst) in self.one_way:
            return True
        if not self.groups:
            return False
        return self.groups.get(src, -1) != self.groups.get(dst, -1)


class Simulation:
    """The event loop; scenarios schedule faults and workload with :meth:`at`."""

    def __init__(
        self,
        seed: int,
        voters: int,
        observers: int = 0,
        spare_controllers: int = 0,
        config: RaftConfig = SIM_CONFIG,
    ) -> None:
        self.seed = seed
        self.random = random.Random(seed)
        self.config = config
        self.now = 0
        self._events = EventQueue()
        self.net = NetworkFaults()
        self.delivered = 0
        self.dropped = 0
        self.events = 0
        initial = VoterSet.of(voter_node(i) for i in range(voters))
        ids = tuple(range(voters))
        self.nodes: dict[int, SimNode] = {}
        for i in range(voters):
            self.nodes[i] = SimNode(i, initial, ids)
        # Observers (brokers) and spare controllers know only the bootstrap servers.
        for i in range(voters, voters + observers + spare_controllers):
            self.nodes[i] = SimNode(i, None, ids)
        self.spares = list(range(voters + observers, voters + observers + spare_controllers))
        self.appended = 0
        self.checkers: list[Callable[[Simulation], None]] = []
        self.admin_results: list[tuple[int, int, int]] = []  # (api, voter id, error)
        self._admin_pending: dict[int, tuple[int, int]] = {}
        for node in self.nodes.values():
            self.start(node.node_id)

    # -- scheduling ---------------------------------------------------------------------------

    def at(self, time_ms: int, action: Callable[[], None]) -> None:
        self._events.at(time_ms, action)

    def run_until(self, end_ms: int) -> None:
        for time_ms, action in self._events.due(end_ms):
            self.now = max(self.now, time_ms)
            action()
            self.events += 1
            for check in self.checkers:
                check(self)
        self.now = end_ms

    # -- nodes --------------------------------------------------------------------------------

    def start(self, node_id: int) -> None:
        node = self.nodes[node_id]
        node.incarnation += 1
        node.replica = RaftReplica(
            node_id,
            directory_of(node_id),
            node.log,
            node.store,
            node.bootstrap,
            self.config,
            random.Random(self.random.getrandbits(32)),
            lambda: self.now,
            bootstrap_ids=node.bootstrap_ids,
            snapshots=node.snapshots,
        )
        node.recorder = Recorder()
        node.replica.register_listener(node.recorder)
        node.poll_at = None
        self._poll(node)

    def crash(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.replica is None:
            return
        node.replica = None
        node.recorder = None
        node.poll_at = None
        node.log.crash()

    def take_snapshot(self, node_id: int) -> SnapshotId | None:
        """Snapshot what the node's state machine has applied (as a controller would)."""
        node = self.nodes[node_id]
        if node.replica is None or node.recorder is None:
            return None
        end = node.recorder.next_offset
        latest = node.snapshots.latest()
        if end <= node.log.log_start_offset or (latest is not None and end <= latest.end_offset):
            return None
        snapshot_id = node.replica.create_snapshot(end, node.recorder.values, self.now)
        node.created_snapshots.add(snapshot_id)
        self._poll(node)
        return snapshot_id

    def restart(self, node_id: int) -> None:
        if not self.nodes[node_id].up:
            self.start(node_id)

    def _schedule_poll(self, node: SimNode, when: int) -> None:
        if node.poll_at is not None and node.poll_at <= when:
            return
        node.poll_at = when
        incarnation = node.incarnation

        def fire() -> None:
            if node.incarnation == incarnation and node.poll_at == when and node.up:
                node.poll_at = None
                self._poll(node)

        self.at(when, fire)

    def _poll(self, node: SimNode) -> None:
        assert node.replica is not None
        out, deadline = node.replica.poll(self.now)
        self._send_all(node.node_id, out)
        self._schedule_poll(node, deadline)

    def _send_all(self, src: int, messages: Iterable[rpc.Outbound]) -> None:
        for message in messages:
            self._send(src, message)

    def _send(self, src: int, message: rpc.Outbound) -> None:
        dst = message.destination_id
        if dst in self._admin_pending:
            api_key, voter_id = self._admin_pending.pop(dst)
            self.admin_results.append((api_key, voter_id, int(message.body.get("error_code", 0))))
            return
        if dst not in self.nodes:
            return
        if self.net.blocked(src, dst) or self.random.random() < self.net.drop:
            self.dropped += 1
            return
        copies = 2 if self.random.random() < self.net.duplicate else 1
        for _ in range(copies):
            delay = self.random.randint(self.net.min_delay_ms, self.net.max_delay_ms)
            self.at(self.now + delay, functools.partial(self._deliver, src, message))

    def _deliver(self, src: int, message: rpc.Outbound) -> None:
        node = self.nodes[message.destination_id]
        if node.replica is None or self.net.blocked(src, node.node_id):
            self.dropped += 1
            return
        self.delivered += 1
        inbound: rpc.InboundRequest | rpc.InboundResponse
        if message.is_response:
            inbound = rpc.InboundResponse(
                message.api_key, src, message.correlation_id, message.body
            )
        else:
            inbound = rpc.InboundRequest(message.api_key, src, message.correlation_id, message.body)
        out = node.replica.handle(self.now, inbound)
        self._send_all(node.node_id, out)
        self._poll(node)

    # -- workload and admin -------------------------------------------------------------------

    def leaders(self) -> list[SimNode]:
        return [
            n
            for n in self.nodes.values()
            if n.replica is not None and isinstance(n.replica.quorum.role, Leader)
        ]

    def append_to_leader(self) -> None:
        """The controller's write: a unique value appended at whichever node leads now."""
        for node in self.leaders():
            assert node.replica is not None
            self.appended += 1
            node.replica.append([f"v{self.appended}".encode()])
            self._poll(node)

    def workload(self, start_ms: int, end_ms: int, every_ms: int) -> None:
        for t in range(start_ms, end_ms, every_ms):
            self.at(t, self.append_to_leader)

    def admin(self, api_key: int, body: dict[str, object], target: int | None = None) -> None:
        """An admin request (AddRaftVoter, ...) sent to the leader (or ``target``); its answer
        lands in ``admin_results`` whenever the replica sends it."""
        nodes = [self.nodes[target]] if target is not None else self.leaders()
        for node in nodes:
            if node.replica is None:
                continue
            seq = self._events.next_seq()
            admin_id = -1000 - seq
            voter_id = body.get("voter_id")
            self._admin_pending[admin_id] = (api_key, voter_id if isinstance(voter_id, int) else -1)
            request = rpc.InboundRequest(api_key, admin_id, seq, body)
            self._send_all(node.node_id, node.replica.handle(self.now, request))
            self._poll(node)
