"""Unit tests of the KRaft core: log, voter history, votes, divergence, voter changes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.record_codec import RecordInput, build_batch
from sparklog.raft import rpc
from sparklog.raft.client import NotLeaderError
from sparklog.raft.core import RaftConfig, RaftReplica
from sparklog.raft.log import StorageReplicatedLog
from sparklog.raft.quorum_state import QuorumStateStore
from sparklog.raft.state import Leader
from sparklog.raft.voters import ReplicaKey, VoterSet, VoterSetHistory
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from tests.sim.cluster import (
    SIM_CONFIG,
    MemoryElectionStore,
    Recorder,
    Simulation,
    directory_of,
    voter_node,
)
from tests.sim.memory_log import MemoryLog


def _batch(base: int, epoch: int, value: bytes) -> bytes:
    return build_batch(
        [RecordInput(None, value, timestamp=1)], base_offset=base, partition_leader_epoch=epoch
    )


def test_memory_log_loses_only_unflushed_batches_on_crash() -> None:
    log = MemoryLog()
    log.append_as_leader(_batch(0, 1, b"a"), 1)
    log.flush()
    log.append_as_leader(_batch(1, 1, b"b"), 1)
    assert (log.log_end_offset, log.flushed_offset) == (2, 1)
    log.crash()
    assert log.log_end_offset == 1 and log.last_epoch == 1


def test_memory_log_end_offset_for_epoch() -> None:
    log = MemoryLog()
    log.append_as_follower(_batch(0, 1, b"a") + _batch(1, 1, b"b") + _batch(2, 3, b"c"))
    assert log.end_offset_for_epoch(1) == (1, 2)
    assert log.end_offset_for_epoch(2) == (1, 2)
    assert log.end_offset_for_epoch(3) == (3, 3)
    assert log.end_offset_for_epoch(0) == (0, 0)
    log.truncate_to(1)
    assert log.log_end_offset == 1 and log.end_offset_for_epoch(3) == (1, 1)


def test_voter_history_reverts_on_truncation() -> None:
    history = VoterSetHistory(VoterSet.from_ids([1, 2, 3]))
    history.add_at(5, VoterSet.from_ids([1, 2, 3, 4]))
    history.add_at(9, VoterSet.from_ids([1, 2, 4]))
    assert history.latest.ids == {1, 2, 4}
    assert history.at(9).ids == {1, 2, 3, 4}
    history.truncate_to(9)
    assert history.latest.ids == {1, 2, 3, 4}
    history.truncate_to(0)
    assert history.latest.ids == {1, 2, 3} and history.latest_offset == -1


def test_majority_and_voter_keys() -> None:
    voters = VoterSet.of([voter_node(1), voter_node(2), voter_node(3), voter_node(4)])
    assert voters.majority_size == 3
    assert not voters.is_majority({1, 2}) and voters.is_majority({1, 2, 4})
    assert voters.is_voter(ReplicaKey(1, directory_of(1)))
    assert not voters.is_voter(ReplicaKey(1, directory_of(9)))
    assert voters.is_voter(ReplicaKey(1))  # an unknown directory id matches


def _replica(
    store: MemoryElectionStore, log: MemoryLog | None = None, now: list[int] | None = None
) -> RaftReplica[bytes]:
    clock = now if now is not None else [0]
    return RaftReplica(
        1,
        directory_of(1),
        log if log is not None else MemoryLog(),
        store,
        VoterSet.of([voter_node(1), voter_node(2), voter_node(3)]),
        SIM_CONFIG,
        random.Random(1),
        lambda: clock[0],
    )


def _vote(
    epoch: int, candidate: int, last_epoch: int = 0, last_offset: int = 0, pre: bool = False
) -> rpc.InboundRequest:
    body = rpc.vote_request(
        "sim-cluster",
        1,
        directory_of(1),
        epoch,
        candidate,
        directory_of(candidate),
        last_epoch,
        last_offset,
        pre,
    )
    return rpc.InboundRequest(rpc.VOTE, candidate, 1, body)


def _granted(out: list[rpc.Outbound]) -> bool:
    [response] = [m for m in out if m.is_response]
    partition = rpc.partition_of(response.body)
    assert partition is not None
    return bool(partition["vote_granted"])


def test_a_vote_is_persisted_before_the_response_and_survives_a_restart() -> None:
    store = MemoryElectionStore()
    replica = _replica(store)
    assert _granted(replica.handle(0, _vote(5, 2)))
    assert store.state is not None and (store.state.leader_epoch, store.state.voted_id) == (5, 2)
    assert not _granted(replica.handle(1, _vote(5, 3)))
    restarted = _replica(store)
    assert not _granted(restarted.handle(2, _vote(5, 3)))
    assert _granted(restarted.handle(3, _vote(5, 2)))  # the same candidate again: idempotent


def test_pre_votes_change_nothing_and_stale_logs_get_no_vote() -> None:
    store = MemoryElectionStore()
    log = MemoryLog()
    log.append_as_follower(_batch(0, 2, b"a"))
    replica = _replica(store, log)
    assert _granted(replica.handle(0, _vote(7, 2, last_epoch=2, last_offset=1, pre=True)))
    assert store.state is None or store.state.leader_epoch < 7
    assert not _granted(replica.handle(0, _vote(7, 2, last_epoch=1, last_offset=9)))
    assert replica.quorum.epoch == 7  # the real vote moved the epoch even though it lost


def test_single_voter_elects_itself_and_commits_after_the_flush() -> None:
    now = [0]
    store = MemoryElectionStore()
    log = MemoryLog()
    replica: RaftReplica[bytes] = RaftReplica(
        1,
        directory_of(1),
        log,
        store,
        VoterSet.of([voter_node(1)]),
        SIM_CONFIG,
        random.Random(3),
        lambda: now[0],
    )
    recorder = Recorder()
    replica.register_listener(recorder)
    with pytest.raises(NotLeaderError):
        replica.append([b"x"])
    for now[0] in range(0, 2000, 50):
        replica.poll(now[0])
    assert isinstance(replica.quorum.role, Leader)
    last = replica.append([b"x"])
    assert replica.high_watermark <= last  # not flushed yet, so not committed
    now[0] += SIM_CONFIG.append_linger_ms
    replica.poll(now[0])
    assert replica.high_watermark == last + 1 and log.flushed_offset == last + 1
    assert b"x" in recorder.values
    assert store.state is not None and store.state.leader_id == 1


def test_an_isolated_leader_truncates_its_uncommitted_tail_after_healing() -> None:
    sim = Simulation(11, 3)
    sim.workload(100, 1000, 50)
    sim.run_until(1000)
    [old] = sim.leaders()
    assert old.replica is not None
    sim.net.groups = {n: (1 if n == old.node_id else 0) for n in sim.nodes}
    old.replica.append([b"lost-1"])
    old.replica.append([b"lost-2"])
    sim.run_until(1100)
    assert b"lost-2" in old.log.read(0, 1 << 30)
    sim.workload(1100, 3000, 50)
    sim.run_until(3000)
    [new] = sim.leaders()
    assert new.node_id != old.node_id
    sim.net.groups = {}
    sim.run_until(5000)
    assert b"lost-1" not in old.log.read(0, 1 << 30)
    assert old.replica is not None and new.replica is not None
    assert old.replica.high_watermark > 0
    for index in range(min(old.log.batch_count, new.log.batch_count)):
        assert old.log.batch(index) == new.log.batch(index)


def _admin(sim: Simulation, api: int, voter: int, **extra: object) -> int:
    before = len(sim.admin_results)
    body: dict[str, object] = {
        "cluster_id": "sim-cluster",
        "voter_id": voter,
        "voter_directory_id": directory_of(voter),
    }
    body.update(extra)
    sim.admin(api, body)
    sim.run_until(sim.now + 1500)
    assert len(sim.admin_results) > before
    return sim.admin_results[before][2]


def test_voter_change_errors() -> None:
    sim = Simulation(5, 3, 0, spare_controllers=1)
    sim.run_until(1500)
    [leader] = sim.leaders()
    follower = next(n for n in sim.nodes.values() if n is not leader and n.node_id < 3)
    sim.admin(
        rpc.REMOVE_RAFT_VOTER,
        {"voter_id": 0, "voter_directory_id": directory_of(0)},
        target=follower.node_id,
    )
    assert sim.admin_results[-1][2] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (
        _admin(sim, rpc.ADD_RAFT_VOTER, leader.node_id, timeout_ms=100, listeners=[])
        == ErrorCode.DUPLICATE_VOTER
    )
    assert _admin(sim, rpc.REMOVE_RAFT_VOTER, 9) == ErrorCode.VOTER_NOT_FOUND
    spare = sim.spares[0]
    assert _admin(sim, rpc.ADD_RAFT_VOTER, spare, timeout_ms=1000, listeners=[]) == ErrorCode.NONE
    replica = sim.nodes[spare].replica
    assert replica is not None and replica.is_voter


def test_static_voters_cannot_change() -> None:
    config = RaftConfig(
        **{
            **{f: getattr(SIM_CONFIG, f) for f in SIM_CONFIG.__dataclass_fields__},
            "kraft_version": 0,
        }
    )
    sim = Simulation(5, 3, config=config)
    sim.run_until(1500)
    assert _admin(sim, rpc.REMOVE_RAFT_VOTER, 0) == ErrorCode.UNSUPPORTED_VERSION


def test_a_removed_leader_resigns_once_the_removal_commits() -> None:
    sim = Simulation(21, 3)
    sim.workload(100, 4000, 100)
    sim.run_until(1500)
    [leader] = sim.leaders()
    assert _admin(sim, rpc.REMOVE_RAFT_VOTER, leader.node_id) == ErrorCode.NONE
    sim.run_until(sim.now + 2000)
    [new_leader] = sim.leaders()
    assert new_leader.node_id != leader.node_id
    assert new_leader.replica is not None and new_leader.replica.voters.latest.ids == {0, 1, 2} - {
        leader.node_id
    }
    assert leader.replica is not None and not leader.replica.is_voter


def test_replica_over_a_real_log_restarts_with_its_data(tmp_path: Path) -> None:
    now = [1_700_000_000_000]

    def open_replica() -> tuple[RaftReplica[bytes], Log]:
        log = Log.open(str(tmp_path / "__cluster_metadata-0"), LogConfig(), lambda: now[0])
        store = QuorumStateStore(tmp_path / "__cluster_metadata-0" / "quorum-state")
        voters = VoterSet.of([voter_node(1)])
        replica: RaftReplica[bytes] = RaftReplica(
            1,
            directory_of(1),
            StorageReplicatedLog(log),
            store,
            voters,
            SIM_CONFIG,
            random.Random(1),
            lambda: now[0],
        )
        return replica, log

    replica, log = open_replica()
    for _ in range(60):
        now[0] += 50
        replica.poll(now[0])
    replica.append([b"persisted"])
    now[0] += 50
    replica.poll(now[0])
    committed = replica.high_watermark
    epoch = replica.quorum.epoch
    log.close()
    replica, log = open_replica()
    recorder = Recorder()
    replica.register_listener(recorder)
    for _ in range(60):
        now[0] += 50
        replica.poll(now[0])
    assert replica.quorum.epoch > epoch
    assert replica.high_watermark > committed
    assert b"persisted" in recorder.values
    log.close()
