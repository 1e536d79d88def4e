"""Safety invariants of the simulated quorum, checked after every event.

Ported from Kafka's ``RaftEventSimulationTest`` invariants and the KRaft TLA+ spec:

- ``NeverTwoLeadersInSameEpoch``: over the whole run, one leader id per epoch.
- ``ConsistentCommittedData`` / ``NoLogDivergence``: every batch below a replica's high
  watermark is byte-for-byte the batch the cluster committed at that offset; the first replica
  to commit an offset defines it, and committed batches never change afterwards.
- ``LeaderHasAllAckedValues``: a leader's log holds every batch committed before it led.
- ``MonotonicHighWatermark``: a replica's HW never decreases (it restarts from 0 after a crash,
  as Kafka does not persist it, or from its latest snapshot's end offset).
- Snapshots agree with the committed log: a snapshot ending at ``S`` (on any node, taken
  locally or downloaded) ends at a committed batch boundary, carries that batch's epoch, and
  holds exactly the data values committed below ``S``. A leader's log start never passes the
  committed end, and a log that starts above 0 starts at a snapshot it holds.
- Listeners see committed batches exactly once, in order (checked by the ``Recorder``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparklog.protocol.record_codec import decode_batch
from sparklog.raft.snapshot_format import parse_snapshot
from sparklog.raft.snapshots import SnapshotId, read_all
from sparklog.raft.state import Leader
from tests.sim.cluster import SimNode, Simulation


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
    # The committed data values in offset order, and for each committed batch end offset the
    # number of values below it and the epoch of that batch (what a snapshot there must hold).
    values: list[bytes] = field(default_factory=list)
    values_at: dict[int, tuple[int, int]] = field(default_factory=dict)
    _snapshots_checked: set[tuple[int, SnapshotId]] = field(default_factory=set)
    snapshots_downloaded: int = 0
    snapshots_created: int = 0

    def __call__(self, sim: Simulation) -> None:
        for node in sim.nodes.values():
            self._check_snapshots(node)
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
        next_offset = self._checked.get(key, 0)
        index = log.first_index_from(next_offset)
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
                self._commit(info.base_offset, info.last_offset, info.epoch, data)
            elif known != (info.last_offset, data):
                raise InvariantViolation(
                    f"node {node_id} disagrees on committed batch at offset {info.base_offset}"
                )
            next_offset = info.last_offset + 1
            index += 1
        self._checked[key] = next_offset

    def _commit(self, base: int, last: int, epoch: int, data: bytes) -> None:
        self.committed[base] = (last, data)
        self.committed_end = last + 1
        header, records = decode_batch(data)
        if not header.is_control:
            self.values.extend(r.value or b"" for r in records)
        self.values_at[last + 1] = (len(self.values), epoch)

    def _check_snapshots(self, node: SimNode) -> None:
        for snapshot_id in node.snapshots.snapshot_ids():
            if (node.node_id, snapshot_id) in self._snapshots_checked:
                continue
            self._snapshots_checked.add((node.node_id, snapshot_id))
            if snapshot_id in node.created_snapshots:
                self.snapshots_created += 1
            else:
                self.snapshots_downloaded += 1
            expected = self.values_at.get(snapshot_id.end_offset)
            if expected is None:
                raise InvariantViolation(
                    f"node {node.node_id} has snapshot {snapshot_id} that does not end at a "
                    f"committed batch (committed end {self.committed_end})"
                )
            count, epoch = expected
            contents = parse_snapshot(snapshot_id, read_all(node.snapshots, snapshot_id))
            if epoch != snapshot_id.epoch or list(contents.records) != self.values[:count]:
                raise InvariantViolation(
                    f"node {node.node_id} snapshot {snapshot_id} differs from the committed log"
                )

    def _check_leader_complete(self, sim: Simulation, node_id: int) -> None:
        node = sim.nodes[node_id]
        log = node.log
        start = log.log_start_offset
        if start > self.committed_end:
            raise InvariantViolation(
                f"leader {node_id} log starts at {start} beyond the committed end "
                f"{self.committed_end}"
            )
        latest = node.snapshots.latest()
        if start > 0 and (latest is None or latest.end_offset < start):
            raise InvariantViolation(f"leader {node_id} log starts at {start} without a snapshot")
        for base in sorted(self.committed):
            last, data = self.committed[base]
            if last < start:
                continue
            index = log.index_of(base)
            if index is None or log.batch(index)[1] != data:
                raise InvariantViolation(f"leader {node_id} lacks committed batch at {base}")
