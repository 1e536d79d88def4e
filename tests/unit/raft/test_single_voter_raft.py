"""SingleVoterRaft over a real Log on disk: epochs, commit, replay, listeners, quorum-state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparklog.raft.client import CommittedBatch, LeaderAndEpoch, NotLeaderError
from sparklog.raft.quorum_state import ElectionState, QuorumStateError, QuorumStateStore
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from tests.unit.raft.single_voter import SingleVoterRaft


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


class Recorder:
    def __init__(self) -> None:
        self.batches: list[CommittedBatch[bytes]] = []
        self.leaders: list[LeaderAndEpoch] = []

    def handle_commit(self, batch: CommittedBatch[bytes]) -> None:
        self.batches.append(batch)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leaders.append(leader)

    @property
    def records(self) -> list[bytes]:
        return [r for b in self.batches for r in b.records]


def open_raft(tmp_path: Path, clock: Clock) -> tuple[SingleVoterRaft[bytes], Log]:
    log = Log.open(str(tmp_path / "__cluster_metadata-0"), LogConfig(), clock)
    store = QuorumStateStore(tmp_path / "__cluster_metadata-0" / "quorum-state")
    return SingleVoterRaft(log, 1, store, bytes, clock_ms=clock), log


def test_start_writes_quorum_state_and_a_leader_change(tmp_path: Path) -> None:
    clock = Clock()
    raft, log = open_raft(tmp_path, clock)
    recorder = Recorder()
    raft.register_listener(recorder)
    assert recorder.batches == [] and recorder.leaders == []
    leader = raft.start()
    assert leader == LeaderAndEpoch(1, 1)
    state = json.loads((tmp_path / "__cluster_metadata-0" / "quorum-state").read_text())
    assert state == {"leaderId": 1, "leaderEpoch": 1, "votedId": -1, "data_version": 1}
    assert raft.high_watermark == log.log_end_offset == 1
    assert log.high_watermark == 1
    [batch] = recorder.batches
    assert batch.records == () and batch.epoch == 1
    [control] = batch.control_records
    assert control.name == "LeaderChangeMessage"  # type: ignore[attr-defined]
    assert recorder.leaders == [LeaderAndEpoch(1, 1)]


def test_append_commits_immediately_in_order(tmp_path: Path) -> None:
    raft, log = open_raft(tmp_path, Clock())
    recorder = Recorder()
    raft.register_listener(recorder)
    epoch = raft.start().epoch
    last = raft.schedule_append(epoch, [b"a", b"b"])
    assert last == 2
    last = raft.schedule_append(epoch, [b"c"])
    assert last == 3
    assert raft.high_watermark == 4 == log.log_end_offset
    assert recorder.records == [b"a", b"b", b"c"]
    assert [(b.base_offset, b.last_offset) for b in recorder.batches] == [(0, 0), (1, 2), (3, 3)]
    assert log.recovery_point == 4  # fsynced before it counted


def test_wrong_epoch_and_not_started_are_refused(tmp_path: Path) -> None:
    raft, _ = open_raft(tmp_path, Clock())
    with pytest.raises(NotLeaderError):
        raft.schedule_append(1, [b"x"])
    epoch = raft.start().epoch
    with pytest.raises(NotLeaderError):
        raft.schedule_append(epoch + 1, [b"x"])
    with pytest.raises(ValueError):
        raft.schedule_append(epoch, [])


def test_restart_bumps_epoch_and_replays_everything(tmp_path: Path) -> None:
    clock = Clock()
    raft, log = open_raft(tmp_path, clock)
    epoch = raft.start().epoch
    raft.schedule_append(epoch, [b"one"])
    raft.schedule_append(epoch, [b"two", b"three"])
    log.close()

    raft2, log2 = open_raft(tmp_path, clock)
    assert raft2.start() == LeaderAndEpoch(1, 2)
    late = Recorder()
    raft2.register_listener(late)
    assert late.records == [b"one", b"two", b"three"]
    assert [b.epoch for b in late.batches] == [1, 1, 1, 2]
    assert late.leaders == [LeaderAndEpoch(1, 2)]
    raft2.schedule_append(2, [b"four"])
    assert late.records[-1] == b"four"
    log2.close()


def test_epoch_is_above_the_log_even_if_quorum_state_was_lost(tmp_path: Path) -> None:
    clock = Clock()
    raft, log = open_raft(tmp_path, clock)
    raft.start()
    log.close()
    for _ in range(2):
        raft, log = open_raft(tmp_path, clock)
        raft.start()
        log.close()
    (tmp_path / "__cluster_metadata-0" / "quorum-state").unlink()
    raft, log = open_raft(tmp_path, clock)
    assert raft.start().epoch == 4


def test_listener_may_not_append_from_a_callback(tmp_path: Path) -> None:
    raft, _ = open_raft(tmp_path, Clock())

    class Appender(Recorder):
        def handle_commit(self, batch: CommittedBatch[bytes]) -> None:
            raft.schedule_append(batch.epoch, [b"again"])

    raft.start()
    with pytest.raises(RuntimeError, match="inside a raft listener"):
        raft.register_listener(Appender())


def test_quorum_state_store_round_trip_and_errors(tmp_path: Path) -> None:
    store = QuorumStateStore(tmp_path / "qs")
    assert store.read() is None
    state = ElectionState(leader_epoch=7, leader_id=3, voted_id=3, voted_directory_id=b"\x01" * 16)
    store.write(state)
    assert store.read() == state
    assert not (tmp_path / "qs.tmp").exists()
    (tmp_path / "qs").write_text("{not json")
    with pytest.raises(QuorumStateError, match="Error reading quorum state file"):
        store.read()
    (tmp_path / "qs").write_text('{"leaderEpoch": 1}')
    with pytest.raises(QuorumStateError, match="data_version"):
        store.read()
    (tmp_path / "qs").write_text('{"leaderEpoch": 1, "data_version": 9}')
    with pytest.raises(QuorumStateError, match=r"data_version \(9\) is not within"):
        store.read()
    # A version 0 file (older Kafka) still reads.
    (tmp_path / "qs").write_text(
        '{"clusterId": "", "leaderId": 1, "leaderEpoch": 2, "votedId": -1, "appliedOffset": 0,'
        ' "currentVoters": [], "data_version": 0}'
    )
    assert store.read() == ElectionState(leader_epoch=2, leader_id=1)


def test_metadata_log_helpers_open_the_partition_under_metadata_log_dir(tmp_path: Path) -> None:
    from sparklog.config import ServerConfig
    from sparklog.metadata.records import decode_record
    from sparklog.server.metadata_log import (
        metadata_partition_dir,
        open_metadata_log,
        quorum_state_store,
    )

    config = ServerConfig.from_props(
        {
            "process.roles": "broker,controller",
            "node.id": "3",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": "localhost:9093",
            "log.dirs": str(tmp_path / "data"),
            "metadata.log.dir": str(tmp_path / "meta"),
        }
    )
    assert metadata_partition_dir(config) == str(tmp_path / "meta" / "__cluster_metadata-0")
    log = open_metadata_log(config, Clock())
    raft = SingleVoterRaft(log, 3, quorum_state_store(config), decode_record)
    assert raft.start() == LeaderAndEpoch(3, 1)
    assert (tmp_path / "meta" / "__cluster_metadata-0" / "quorum-state").exists()
    assert log.config.retention_ms == -1 and log.config.max_message_bytes > 8 * 1024 * 1024
    log.close()
