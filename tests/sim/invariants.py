"""Safety invariants of the simulated quorum, checked after every event.

Ported from Kafka's ``RaftEventSimulationTest`` invariants and the KRaft TLA+ spec:

- ``NeverTwoLeadersInSameEpoch``: over the whole run, one leader id per epoch.
- ``ConsistentCommittedData`` / ``NoLogDivergence``: every batch below a replica's high
  watermark is byte-for-byte the batch the cluster committed at that offset; the first replica
  to commit an offset defines it, and committed batches never change afterwards.
- ``LeaderHasAllAckedValues``: a leader's log holds every batch committed before it led.
- ``MonotonicHighWatermark``: a replica's HW never decreases (it restarts from 0 after a crash,
  as Kafka does not persist it).
- Listeners see committed batches exactly once, in order (checked by the ``Recorder``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparklog.raft.state import Leader
from tests.sim.cluster import Simulation


class InvariantViolation(AssertionError):
    pass


@dataclass
class Invariants:
    leaders_by_epoch: dict[int, int] = field(default_factory=dict)
    # base offset -> (last offset, batch bytes), for every committed batch
    committed: dict[int, tuple[int, bytes]] = field(default_factory=dict)
    committed_end: int = 0
    _hw: dict[tuple[int, int], int] = field(default_factory=dict)
    _checked: dict[tuple[int, int], int] = field(default_factory=dict)
    _leader_checked: set[tuple[int, int]] = field(default_factory=set)
    max_epoch: int = 0

    def __call__(self, sim: Simulation) -> None:
        for node in sim.nodes.values():
            replica = node.replica
            if replica is None:
                continue
            key = (node.node_id, node.incarnation)
            role = replica.quorum.role
            self.max_epoch = max(self.max_epoch, role.epoch)
            if isinstance(role, Leader):
                leader = self.leaders_by_epoch.setdefault(role.epoch, node.node_id)
                if leader != node.node_id:
                    raise InvariantViolation(
                        f"two leaders in epoch {role.epoch}: {leader} and {node.node_id}"
                    )
                if (node.node_id, role.epoch) not in self._leader_checked:
                    self._leader_checked.add((node.node_id, role.epoch))
                    self._check_leader_complete(sim, node.node_id)
            hw = replica.high_watermark
            previous = self._hw.get(key, 0)
            if hw < previous:
                raise InvariantViolation(f"node {node.node_id} HW went back {previous} -> {hw}")
            self._hw[key] = hw
            self._check_committed(node.node_id, key, sim, hw)

    def _check_committed(
        self, node_id: int, key: tuple[int, int], sim: Simulation, hw: int
    ) -> None:
        log = sim.nodes[node_id].log
        index = self._checked.get(key, 0)
        while index < log.batch_count:
            info, data = log.batch(index)
            if info.last_offset >= hw:
                break
            known = self.committed.get(info.base_offset)
            if known is None:
                if info.base_offset != self.committed_end:
                    raise InvariantViolation(
                        f"node {node_id} committed batch at {info.base_offset} but the committed "
                        f"log ends at {self.committed_end}"
                    )
                self.committed[info.base_offset] = (info.last_offset, data)
                self.committed_end = info.last_offset + 1
            elif known != (info.last_offset, data):
                raise InvariantViolation(
                    f"node {node_id} disagrees on committed batch at offset {info.base_offset}"
                )
            index += 1
        self._checked[key] = index

    def _check_leader_complete(self, sim: Simulation, node_id: int) -> None:
        log = sim.nodes[node_id].log
        offsets = sorted(self.committed)
        if len(offsets) > log.batch_count:
            raise InvariantViolation(
                f"leader {node_id} has {log.batch_count} batches, {len(offsets)} are committed"
            )
        for index, base in enumerate(offsets):
            info, data = log.batch(index)
            if info.base_offset != base or self.committed[base] != (info.last_offset, data):
                raise InvariantViolation(f"leader {node_id} lacks committed batch at {base}")
