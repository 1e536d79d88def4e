"""Offline log dirs and fatal faults: the failure channel, the replica manager's handling of a
failed dir (KAFKA_STORAGE_ERROR, the dir left alone, recovery at restart), the metadata log's
I/O error hook, the raft driver's fatal path and task supervision."""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from sparklog.broker.log_dir_failure import LogDirFailureChannel, failure_decision, log_dir_of
from sparklog.broker.partition import Partition, PartitionState
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.fault import supervise
from sparklog.metrics import MetricName, MetricsRegistry
from sparklog.net.raft_driver import RaftDriver, wall_clock_ms
from sparklog.net.raft_flush import OffloadedFlushLog
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.kafka_uuid import uuid_from_str
from sparklog.protocol.records import validate_batch
from sparklog.raft.core import RaftConfig, RaftReplica
from sparklog.raft.quorum_state import QuorumStateStore
from sparklog.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet
from sparklog.server.faults import NodeFaults
from sparklog.server.node_metrics import register_replica_metrics
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from sparklog.storage.log_durability import FlushPlan
from sparklog.storage.manager import RECOVERY_POINT_CHECKPOINT, LogManager
from tests.unit.replication.helpers import batch

TOPIC_ID = b"t" * 16
ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class Recorder:
    """A fault handler that records instead of halting the test process."""

    def __init__(self) -> None:
        self.faults: list[tuple[str, BaseException | None]] = []

    def __call__(self, message: str, cause: BaseException | None = None) -> None:
        self.faults.append((message, cause))


def _now_ms() -> int:
    return int(time.time() * 1000)


# -- the channel ----------------------------------------------------------------------------


def test_a_dir_goes_offline_once_and_the_listener_hears_it_once(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    channel = LogDirFailureChannel([a, b])
    heard: list[str] = []
    channel.listener = heard.append
    assert channel.is_online(a) and channel.is_online(b) and not channel.all_offline
    assert channel.maybe_add_offline_log_dir(a + "/", "append failed", ENOSPC)
    assert not channel.maybe_add_offline_log_dir(a, "again", ENOSPC)
    assert heard == [os.path.abspath(a)] and channel.offline_dirs == (os.path.abspath(a),)
    assert not channel.is_online(a) and channel.is_online(b) and not channel.all_offline
    channel.maybe_add_offline_log_dir(b, "flush failed", ENOSPC)
    assert channel.all_offline and len(heard) == 2


def test_failure_decision_follows_kafka(tmp_path: Path) -> None:
    a, b, meta = (str(tmp_path / n) for n in ("a", "b", "meta"))
    channel = LogDirFailureChannel([a, b])
    channel.maybe_add_offline_log_dir(a, "x", ENOSPC)
    assert failure_decision(channel, a, meta).fatal_message is None
    # The metadata log dir failing halts the broker whatever else is online.
    message = failure_decision(channel, a, a).fatal_message
    expected = f"Shutdown broker because the metadata log dir {os.path.abspath(a)} has failed"
    assert message == expected
    channel.maybe_add_offline_log_dir(b, "x", ENOSPC)
    message = failure_decision(channel, b, meta).fatal_message
    assert message is not None and message.startswith("Shutdown broker because all log dirs in")
    assert os.path.abspath(a) in message and message.endswith("have failed")


def test_log_dir_of_is_the_parent_of_a_partition_dir(tmp_path: Path) -> None:
    assert log_dir_of(str(tmp_path / "t-0")) == str(tmp_path)
    assert log_dir_of(str(tmp_path / "t-0") + "/") == str(tmp_path)


# -- the replica manager --------------------------------------------------------------------


def _two_dir_rm(root: Path) -> tuple[ReplicaManager, Partition, Partition]:
    config = LogConfig().with_overrides({"min.insync.replicas": "1"})
    manager = LogManager([str(root / "a"), str(root / "b")], config, _now_ms)
    manager.load()
    rm = ReplicaManager(1, manager, config)
    partitions = []
    for topic in ("t", "u"):  # the least-loaded dir: t in a, u in b
        log = manager.create_log(topic, 0, TOPIC_ID, config)
        partition = Partition(topic, 0, TOPIC_ID, log, 1)
        partition.apply_state(PartitionState(1, 0, 0, (1,), (1,)))
        rm.partitions[(topic, 0)] = partition
        partitions.append(partition)
    return rm, partitions[0], partitions[1]


def _torn_pwrite(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next append writes half its bytes, then the disk is full."""
    real = os.pwrite
    calls = {"n": 0}

    def pwrite(fd: int, data: Any, offset: int) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real(fd, bytes(data)[: len(data) // 2], offset)
        raise ENOSPC

    monkeypatch.setattr(os, "pwrite", pwrite)


def test_an_append_io_error_takes_the_dir_offline_and_the_rest_keeps_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        rm, t0, u0 = _two_dir_rm(tmp_path)
        heard: list[str] = []
        rm.log_dir_failures.listener = heard.append
        for _ in range(3):
            await rm.append("t", 0, bytearray(batch(2)), 1)
        rm.log_manager.checkpoint()
        checkpoint = tmp_path / "a" / RECOVERY_POINT_CHECKPOINT
        before = os.stat(checkpoint).st_ino  # each checkpoint write replaces the file
        with monkeypatch.context() as patch:
            _torn_pwrite(patch)
            with pytest.raises(KafkaApiError) as raised:
                await rm.append("t", 0, bytearray(batch(2)), 1)
        assert raised.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        assert heard == [str(tmp_path / "a")]
        # Served as offline at once, before the handler runs...
        with pytest.raises(KafkaApiError) as raised:
            rm.leader_partition("t", 0)
        assert raised.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        # ...and after it: the partition leaves service, the log manager lets go of the dir.
        assert rm.handle_log_dir_failure(str(tmp_path / "a")) == [("t", 0)]
        assert ("t", 0) not in rm.partitions and ("t", 0) in rm.offline_partitions
        with pytest.raises(KafkaApiError) as raised:
            await rm.append("t", 0, bytearray(batch()), 1)
        assert raised.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        assert rm.log_manager.log_dirs == [str(tmp_path / "b")]
        outcome = await rm.append("u", 0, bytearray(batch()), 1)
        assert outcome.base_offset == 0 and u0.log_end_offset == 1
        rm.log_manager.checkpoint()
        await rm.flush_due(_now_ms() + 10**9)
        assert os.stat(checkpoint).st_ino == before  # nothing writes into the failed dir
        rm.log_manager.shutdown()
        assert not (tmp_path / "a" / ".kafka_cleanshutdown").exists()
        assert (tmp_path / "b" / ".kafka_cleanshutdown").exists()
        rm.close()
        del t0

    asyncio.run(scenario())
    # A restart once there is room: the torn tail is cut, every acknowledged batch is intact.
    manager = LogManager([str(tmp_path / "a"), str(tmp_path / "b")], LogConfig(), _now_ms)
    manager.load()
    log = manager.get_log("t", 0)
    assert log is not None and log.log_end_offset == 6
    data = log.read(0, 1 << 20, None, True).slices[0].read_bytes()
    position = offsets = 0
    while position < len(data):
        header = validate_batch(data, position)  # CRC-checked
        assert header.base_offset == offsets
        offsets, position = header.next_offset, position + header.size_in_bytes
    assert offsets == 6
    log.append_as_leader(batch(), 1)
    assert log.log_end_offset == 7
    manager.shutdown()


def test_a_flush_io_error_keeps_the_recovery_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        rm, t0, _ = _two_dir_rm(tmp_path)
        await rm.append("t", 0, bytearray(batch(2)), 1)

        def broken(self: FlushPlan) -> None:
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(FlushPlan, "run", broken)
        with pytest.raises(KafkaApiError) as raised:
            await rm.flush(t0.log)
        assert raised.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        assert t0.log.recovery_point == 0
        assert rm.log_dir_failures.offline_dirs == (str(tmp_path / "a"),)
        rm.close()

    asyncio.run(scenario())


# -- the metadata log -----------------------------------------------------------------------


def test_the_metadata_log_reports_a_write_error_before_raising(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = Log.open(str(tmp_path / "__cluster_metadata-0"), LogConfig(), _now_ms)
    replicated = OffloadedFlushLog(log)
    seen: list[tuple[str, OSError]] = []
    replicated.on_io_error = lambda action, exc: seen.append((action, exc))
    replicated.append_as_leader(batch(), 0)
    with monkeypatch.context() as patch:
        _torn_pwrite(patch)
        with pytest.raises(OSError):
            replicated.append_as_leader(batch(), 0)
    assert [(a, e.errno) for a, e in seen] == [("appending to", errno.ENOSPC)]
    log.close()


# A single voter: only how soon it elects itself and writes its no-op matters (the fetch and
# request timings are Kafka's defaults, unused without followers).
CONFIG = RaftConfig(
    election_timeout_ms=100, append_linger_ms=1, no_op_record=b"noop", cluster_id="fault-test"
)


def test_a_metadata_fsync_error_is_a_fatal_fault_naming_the_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        partition = tmp_path / "__cluster_metadata-0"
        log = Log.open(str(partition), LogConfig(), wall_clock_ms)
        key = ReplicaKey(1, b"d" * 16)
        voters = VoterSet.of([VoterNode(key, (Endpoint("CONTROLLER", "127.0.0.1", 1),))])
        replica: RaftReplica[bytes] = RaftReplica(
            1,
            key.directory_id,
            OffloadedFlushLog(log),
            QuorumStateStore(partition / "quorum-state"),
            voters,
            CONFIG,
            random.Random(1),
            wall_clock_ms,
        )
        faults = Recorder()
        driver: RaftDriver[bytes] = RaftDriver(replica, {}, fault_handler=faults)

        def broken(self: FlushPlan) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(FlushPlan, "run", broken)
        driver.start()
        deadline = time.monotonic() + 10
        while not faults.faults and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.05)
        assert len(faults.faults) == 1, faults.faults
        message, cause = faults.faults[0]
        assert f"(metadata log dir {tmp_path})" in message, message
        assert "No space left on device" in message
        assert isinstance(cause, OSError) and driver.closed and driver.failure is cause
        log.close()

    asyncio.run(scenario())


# -- task supervision -----------------------------------------------------------------------


def test_a_failed_or_cancelled_essential_task_is_escalated(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> Recorder:
        faults = Recorder()

        async def boom() -> None:
            raise RuntimeError("heartbeat loop broke")

        async def forever() -> None:
            await asyncio.Event().wait()

        supervise(asyncio.create_task(boom()), "heartbeats", fault_handler=faults)
        cancelled = supervise(asyncio.create_task(forever()), "idle", fault_handler=faults)
        await asyncio.sleep(0.01)
        cancelled.cancel()
        await asyncio.sleep(0.01)
        gc.collect()  # an unretrieved exception would be reported now
        return faults

    with caplog.at_level(logging.ERROR):
        faults = asyncio.run(scenario())
    # A cancellation the node did not ask for (a CancelledError leaking out of an await the
    # task did not own) must not end an essential task silently; NodeFaults drops the ones
    # that come with the node's own shutdown.
    assert [m for m, _ in faults.faults] == [
        "the essential task heartbeats failed: RuntimeError('heartbeat loop broke')",
        "the essential task idle was cancelled",
    ]
    assert "Task heartbeats failed" in caplog.text
    assert "never retrieved" not in caplog.text


# -- the node's handling --------------------------------------------------------------------


class FakeLifecycle:
    def __init__(self) -> None:
        self.reported: list[bytes] = []

    def report_offline_dir(self, directory_id: bytes) -> None:
        self.reported.append(directory_id)


def test_the_node_reports_a_partial_failure_and_halts_when_no_dir_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        rm, _, _ = _two_dir_rm(tmp_path)
        a, b = str(tmp_path / "a"), str(tmp_path / "b")
        ids = {a: "AAAAAAAAAAAAAAAAAAAAAA", b: "BBBBBBBBBBBBBBBBBBBBBA"}
        faults = Recorder()
        node = NodeFaults(faults, asyncio.Event(), str(tmp_path / "meta"), ids)
        lifecycle = FakeLifecycle()
        node.lifecycle = lambda: lifecycle  # type: ignore[assignment,return-value]
        node.attach(rm)
        # A checkpoint that cannot be written takes its dir offline (handled on the next turn).
        real = rm.log_manager.checkpoint_dir

        def checkpoint_dir(log_dir: str) -> None:
            if log_dir == a:
                raise ENOSPC
            real(log_dir)

        monkeypatch.setattr(rm.log_manager, "checkpoint_dir", checkpoint_dir)
        node.checkpoint()
        assert rm.log_dir_failures.offline_dirs == (a,) and ("t", 0) in rm.partitions
        await asyncio.sleep(0)
        assert ("t", 0) in rm.offline_partitions and rm.log_manager.log_dirs == [b]
        assert lifecycle.reported == [uuid_from_str(ids[a])] and not faults.faults
        # Retention failing on a file of b: b goes offline too, and nothing is left.
        node.io_error(
            OSError(errno.EIO, "Input/output error", os.path.join(b, "u-0", "x.log")),
            "Error while deleting segments",
        )
        await asyncio.sleep(0)
        assert [m for m, _ in faults.faults] == [
            f"Shutdown broker because all log dirs in {a}, {b} have failed"
        ]
        with pytest.raises(OSError):  # an error naming no data log dir is not placed
            node.io_error(OSError(errno.EIO, "x", "/elsewhere/file"), "Error")
        rm.close()

    asyncio.run(scenario())


def test_a_task_failing_while_the_node_stops_is_only_logged() -> None:
    async def scenario() -> Recorder:
        faults = Recorder()
        stopping = asyncio.Event()
        node = NodeFaults(faults, stopping, "/meta", {})

        async def fails_on_stop() -> None:
            await stopping.wait()
            raise RuntimeError("closed under me")

        async def fails_now() -> None:
            raise RuntimeError("broken")

        node.supervise([asyncio.create_task(fails_now())])
        await asyncio.sleep(0.01)
        node.supervise([asyncio.create_task(fails_on_stop())])
        stopping.set()
        await asyncio.sleep(0.01)
        return faults

    faults = asyncio.run(scenario())
    assert len(faults.faults) == 1 and "fails_now" in faults.faults[0][0]


def test_node_tasks_cancelled_by_shutdown_are_not_faults_others_are() -> None:
    async def scenario() -> Recorder:
        faults = Recorder()
        stopping = asyncio.Event()
        node = NodeFaults(faults, stopping, "/meta", {})

        async def forever() -> None:
            await asyncio.Event().wait()

        stray = asyncio.create_task(forever())
        node.supervise([stray])
        await asyncio.sleep(0.01)
        stray.cancel()  # nobody is stopping: a fault
        await asyncio.sleep(0.01)
        at_shutdown = asyncio.create_task(forever())
        node.supervise([at_shutdown])
        await asyncio.sleep(0.01)
        stopping.set()
        at_shutdown.cancel()
        await asyncio.sleep(0.01)
        return faults

    faults = asyncio.run(scenario())
    assert len(faults.faults) == 1, faults.faults
    assert faults.faults[0][0].endswith("forever was cancelled")


def test_out_of_descriptors_is_not_a_disk_failure_but_a_failed_create_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        rm, _, _ = _two_dir_rm(tmp_path)

        def emfile(fd: int, data: Any, offset: int) -> int:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

        with monkeypatch.context() as patch:
            patch.setattr(os, "pwrite", emfile)
            with pytest.raises(KafkaApiError) as raised:
                await rm.append("t", 0, bytearray(batch()), 1)
        assert raised.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        assert not rm.log_dir_failures.any_offline
        assert (await rm.append("t", 0, bytearray(batch()), 1)).base_offset == 0
        # Creating a log in b failed on the disk: b goes offline, the partition is offline.
        b = str(tmp_path / "b")
        rm._creation_failed(("v", 0), OSError(errno.ENOSPC, "full", os.path.join(b, "v-0")))
        assert rm.log_dir_failures.offline_dirs == (b,) and ("v", 0) in rm.offline_partitions
        with pytest.raises(OSError):
            rm._creation_failed(("w", 0), OSError(errno.ENOSPC, "full", "/elsewhere/w-0"))
        rm.close()

    asyncio.run(scenario())


def test_offline_dirs_and_replicas_are_metrics(tmp_path: Path) -> None:
    rm, _, _ = _two_dir_rm(tmp_path)
    registry = MetricsRegistry()
    register_replica_metrics(registry, rm)
    dirs = MetricName.yammer("kafka.log", "LogManager", "OfflineLogDirectoryCount")
    replicas = MetricName.yammer("kafka.server", "ReplicaManager", "OfflineReplicaCount")
    assert (registry.value(dirs), registry.value(replicas)) == (0, 0)
    rm.log_dir_failures.maybe_add_offline_log_dir(str(tmp_path / "a"), "x", ENOSPC)
    rm.handle_log_dir_failure(str(tmp_path / "a"))
    assert (registry.value(dirs), registry.value(replicas)) == (1, 1)
    rm.close()
