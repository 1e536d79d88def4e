"""Snapshots in the KRaft core: create, log start, FetchSnapshot (chunks, errors), restart."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sparklog.protocol.errors import ErrorCode
from sparklog.raft import rpc
from sparklog.raft.core import RaftReplica
from sparklog.raft.log import StorageReplicatedLog
from sparklog.raft.quorum_state import QuorumStateStore
from sparklog.raft.snapshot_sync import SnapshotError
from sparklog.raft.snapshots import FileSnapshotStore, SnapshotId
from sparklog.raft.state import Follower, Leader
from sparklog.raft.voters import VoterSet
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from tests.sim.cluster import SIM_CONFIG, Recorder, SimNode, Simulation, directory_of, voter_node
from tests.sim.memory_log import MemoryLog


def _leader(sim: Simulation) -> SimNode:
    [leader] = sim.leaders()
    assert leader.replica is not None
    return leader


def test_memory_log_start_moves_and_keeps_the_start_epoch() -> None:
    sim = Simulation(3, 1)
    sim.workload(100, 1500, 50)
    sim.run_until(1500)
    node = sim.nodes[0]
    log = node.log
    assert node.replica is not None
    end = sim.take_snapshot(0)
    assert end is not None
    assert log.log_start_offset == end.end_offset
    assert log.batch_count == 0 or log.batch(0)[0].base_offset == end.end_offset
    assert log.end_offset_for_epoch(end.epoch)[1] >= end.end_offset
    sim.run_until(2500)  # appends go on above the snapshot
    assert log.batch(0)[0].base_offset == end.end_offset and log.log_end_offset > end.end_offset
    empty = MemoryLog()
    empty.reset_to(100, 7)
    assert (empty.log_start_offset, empty.log_end_offset, empty.last_epoch) == (100, 100, 7)
    assert empty.end_offset_for_epoch(9) == (7, 100)
    with pytest.raises(ValueError):
        empty.truncate_to(50)


def test_create_snapshot_checks_the_offset() -> None:
    sim = Simulation(5, 1)
    sim.workload(100, 1000, 50)
    sim.run_until(1000)
    replica = sim.nodes[0].replica
    assert replica is not None
    with pytest.raises(SnapshotError, match="beyond the high watermark"):
        replica.create_snapshot(replica.high_watermark + 1, [], 0)
    with pytest.raises(SnapshotError, match="outside the log"):
        replica.create_snapshot(0, [], 0)
    snapshot_id = replica.create_snapshot(replica.high_watermark, [b"state"], 0)
    with pytest.raises(SnapshotError, match="already covers"):
        replica.create_snapshot(snapshot_id.end_offset, [], 0)
    contents = replica.latest_snapshot()
    assert contents is not None and contents.records == (b"state",)
    assert contents.voters == VoterSet.of([voter_node(0)])  # the VotersRecord of the log


def _late_follower_sim(seed: int, max_fetch_bytes: int) -> tuple[Simulation, SimNode]:
    """A 3-voter quorum plus an observer that is down (with an empty disk) while the voters
    write and snapshot, then starts."""
    sim = Simulation(seed, 3, 1, config=replace(SIM_CONFIG, max_fetch_bytes=max_fetch_bytes))
    observer = sim.nodes[3]
    sim.crash(3)
    sim.workload(100, 2000, 20)
    sim.run_until(2000)
    for node_id in range(3):
        sim.take_snapshot(node_id)
    sim.workload(2000, 2300, 50)
    sim.run_until(2300)
    return sim, observer


def test_a_late_observer_downloads_the_snapshot_in_chunks_and_catches_up() -> None:
    sim, observer = _late_follower_sim(7, max_fetch_bytes=200)
    leader = _leader(sim)
    leader_snapshot = leader.snapshots.latest()
    assert leader_snapshot is not None and leader.log.log_start_offset > 0
    size = leader.snapshots.size(leader_snapshot)
    assert size > 5 * 200  # many FetchSnapshot round trips
    sim.restart(3)
    sim.run_until(3500)
    assert observer.replica is not None and observer.recorder is not None
    assert observer.snapshots.latest() == leader_snapshot
    assert observer.recorder.snapshots_loaded == 1
    assert observer.log.log_start_offset == leader_snapshot.end_offset
    assert leader.recorder is not None and leader.replica is not None
    assert observer.replica.high_watermark == leader.replica.high_watermark
    assert observer.recorder.values == leader.recorder.values
    # The voter set came from the snapshot: the observer was never given one.
    assert observer.replica.voters.latest.ids == {0, 1, 2}


def _fetch_snapshot(
    sim: Simulation, leader: SimNode, epoch: int, snapshot: SnapshotId, position: int
) -> dict[str, Any]:
    assert leader.replica is not None
    body = rpc.fetch_snapshot_request(
        "sim-cluster", 3, directory_of(3), epoch, (snapshot.end_offset, snapshot.epoch),
        position, 100,
    )  # fmt: skip
    out = leader.replica.handle(sim.now, rpc.InboundRequest(rpc.FETCH_SNAPSHOT, 3, 99, body))
    [response] = [m for m in out if m.is_response]
    partition = rpc.partition_of(response.body)
    assert partition is not None
    return dict(partition)


def test_fetch_snapshot_errors() -> None:
    sim, _ = _late_follower_sim(11, max_fetch_bytes=4096)
    leader = _leader(sim)
    assert leader.replica is not None
    epoch = leader.replica.quorum.epoch
    snapshot = leader.snapshots.latest()
    assert snapshot is not None
    size = leader.snapshots.size(snapshot)
    ok = _fetch_snapshot(sim, leader, epoch, snapshot, 10)
    assert ok["error_code"] == 0 and ok["size"] == size and ok["position"] == 10
    assert ok["unaligned_records"] == leader.snapshots.read(snapshot, 10, 100)
    missing = SnapshotId(snapshot.end_offset - 1, snapshot.epoch)
    cases = [
        (epoch, missing, 0, ErrorCode.SNAPSHOT_NOT_FOUND),
        (epoch, snapshot, size, ErrorCode.POSITION_OUT_OF_RANGE),
        (epoch, snapshot, -1, ErrorCode.POSITION_OUT_OF_RANGE),
        (epoch - 1, snapshot, 0, ErrorCode.FENCED_LEADER_EPOCH),
        (epoch + 1, snapshot, 0, ErrorCode.UNKNOWN_LEADER_EPOCH),
    ]
    for request_epoch, snapshot_id, position, error in cases:
        answer = _fetch_snapshot(sim, leader, request_epoch, snapshot_id, position)
        assert answer["error_code"] == error, (request_epoch, snapshot_id, position)
    follower = next(n for n in sim.nodes.values() if n.up and n is not leader)
    assert isinstance(follower.replica and follower.replica.quorum.role, Follower)
    answer = _fetch_snapshot(sim, follower, epoch, snapshot, 0)
    assert answer["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_fetch_below_the_log_start_names_the_snapshot() -> None:
    sim, _ = _late_follower_sim(13, max_fetch_bytes=4096)
    leader = _leader(sim)
    assert leader.replica is not None
    snapshot = leader.snapshots.latest()
    assert snapshot is not None
    epoch = leader.replica.quorum.epoch

    def fetch(offset: int, last_epoch: int) -> dict[str, object]:
        assert leader.replica is not None
        body = rpc.fetch_request(
            "sim-cluster", 3, directory_of(3), epoch, offset, last_epoch, 0, 1 << 20
        )
        out = leader.replica.handle(sim.now, rpc.InboundRequest(rpc.FETCH, 3, 5, body))
        [response] = [m for m in out if m.is_response]
        partition = rpc.fetch_partition(response.body)
        assert partition is not None
        return dict(partition)

    start = leader.log.log_start_offset
    for offset, last_epoch in [(0, 0), (start - 1, snapshot.epoch), (start, snapshot.epoch - 1)]:
        answer = fetch(offset, last_epoch)
        assert answer["snapshot_id"] == {"end_offset": snapshot.end_offset, "epoch": snapshot.epoch}
        assert not answer["records"]
    answer = fetch(start, snapshot.epoch)
    assert "snapshot_id" not in answer and answer["records"]


def test_restart_on_disk_loads_the_snapshot_then_replays_the_log(tmp_path: Path) -> None:
    now = [1_700_000_000_000]
    directory = tmp_path / "__cluster_metadata-0"

    def open_replica() -> tuple[RaftReplica[bytes], Log, Recorder]:
        log = Log.open(str(directory), LogConfig(internal_segment_bytes=1024), lambda: now[0])
        replica: RaftReplica[bytes] = RaftReplica(
            1, directory_of(1), StorageReplicatedLog(log),
            QuorumStateStore(directory / "quorum-state"), VoterSet.of([voter_node(1)]),
            SIM_CONFIG, random.Random(1), lambda: now[0],
            snapshots=FileSnapshotStore(str(directory)),
        )  # fmt: skip
        recorder = Recorder()
        replica.register_listener(recorder)
        return replica, log, recorder

    def run(replica: RaftReplica[bytes], steps: int) -> None:
        for _ in range(steps):
            now[0] += 20
            replica.poll(now[0])

    replica, log, recorder = open_replica()
    run(replica, 100)
    assert isinstance(replica.quorum.role, Leader)
    for i in range(40):
        replica.append([b"before-%d" % i + b"." * 50])
        run(replica, 2)
    snapshot_id = replica.create_snapshot(recorder.next_offset, recorder.values, now[0])
    assert log.log_start_offset == snapshot_id.end_offset
    assert log.segments[0].base_offset > 0  # whole segments below the snapshot are deleted
    for i in range(5):
        replica.append([b"after-%d" % i])
        run(replica, 2)
    expected = list(recorder.values)
    log.close()

    replica, log, recorder = open_replica()
    assert replica.high_watermark >= snapshot_id.end_offset
    assert recorder.snapshots_loaded == 1 and recorder.next_offset == snapshot_id.end_offset
    run(replica, 100)
    assert recorder.values[: len(expected)] == expected
    log.close()


def test_a_reopened_empty_log_learns_its_start_epoch_from_the_snapshot(tmp_path: Path) -> None:
    def open_log() -> tuple[Log, StorageReplicatedLog]:
        log = Log.open(str(tmp_path / "__cluster_metadata-0"), LogConfig(), lambda: 0)
        return log, StorageReplicatedLog(log)

    log, replicated = open_log()
    replicated.reset_to(100, 7)
    assert (replicated.log_start_offset, replicated.last_epoch) == (100, 7)
    assert replicated.end_offset_for_epoch(8) == (7, 100)
    log.close()
    log, replicated = open_log()
    assert replicated.log_start_offset == 100
    # What the core does on start-up with the snapshot at 100 (it already is the log start).
    replicated.delete_before(100, 7)
    assert replicated.last_epoch == 7
    log.close()
