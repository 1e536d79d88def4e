"""Three KRaft voters, each a RaftDriver with its own on-disk log and listener, over loopback.

All three run in this test process on one event loop, but talk only through real sockets and
the Kafka wire codec. Checks: a leader is elected; appended records reach every replica's
listener; DescribeQuorum v2 reports the voters with their directory ids and log end offsets;
killing the leader (its listener and driver stop without resigning) elects a new leader that
keeps every committed entry and commits new ones; the killed node restarts from its disk and
catches up.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sparklog.net.client import KafkaClientConnection
from sparklog.net.raft_driver import RaftDriver, raft_apis, wall_clock_ms
from sparklog.net.raft_flush import OffloadedFlushLog
from sparklog.net.server import Connection, KafkaServer
from sparklog.protocol.headers import Request
from sparklog.protocol.messages import API_BY_NAME
from sparklog.protocol.record_codec import RecordInput, build_batch
from sparklog.raft import rpc
from sparklog.raft.core import RaftConfig, RaftReplica
from sparklog.raft.quorum_state import QuorumStateStore
from sparklog.raft.state import Leader
from sparklog.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from sparklog.storage.log_durability import FlushPlan
from tests.sim.cluster import Recorder

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

NO_OP = b"noop"
CONFIG = RaftConfig(
    election_timeout_ms=300,
    fetch_timeout_ms=600,
    election_backoff_max_ms=300,
    request_timeout_ms=1000,
    retry_backoff_ms=20,
    fetch_max_wait_ms=200,
    append_linger_ms=5,
    idle_interval_ms=500,
    no_op_record=NO_OP,
    cluster_id="raft-driver-test",
)


class CountingExecutor(ThreadPoolExecutor):
    """Counts the fsync plans the drivers hand off (they must not run on the loop)."""

    submitted = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        CountingExecutor.submitted += 1
        return super().submit(fn, *args, **kwargs)


@dataclass
class Peer:
    node_id: int
    directory_id: bytes
    root: Path
    server: KafkaServer
    driver: RaftDriver[bytes] | None = None
    recorder: Recorder | None = None

    @property
    def replica(self) -> RaftReplica[bytes]:
        assert self.driver is not None
        return self.driver.replica

    @property
    def data(self) -> list[bytes]:
        assert self.recorder is not None
        return [v for v in self.recorder.values if v != NO_OP]


@dataclass
class Cluster:
    root: Path
    executor: ThreadPoolExecutor
    peers: dict[int, Peer] = field(default_factory=dict)
    endpoints: dict[int, tuple[str, int]] = field(default_factory=dict)

    async def open(self, size: int) -> None:
        for node_id in range(size):
            server = KafkaServer("CONTROLLER", "127.0.0.1", 0, raft_apis(), self._route(node_id))
            await server.start()
            self.endpoints[node_id] = ("127.0.0.1", server.port)
            self.peers[node_id] = Peer(node_id, os.urandom(16), self.root / f"n{node_id}", server)
        for node_id in self.peers:
            self.start_driver(node_id)

    def _route(self, node_id: int) -> Callable[[Request, Connection], Any]:
        async def handler(request: Request, connection: Connection) -> dict[str, Any] | None:
            driver = self.peers[node_id].driver
            assert driver is not None
            return await driver.handle_request(request, connection)

        return handler

    def voters(self) -> VoterSet:
        return VoterSet.of(
            VoterNode(
                ReplicaKey(p.node_id, p.directory_id),
                (Endpoint("CONTROLLER", *self.endpoints[p.node_id]),),
            )
            for p in self.peers.values()
        )

    def start_driver(self, node_id: int) -> None:
        peer = self.peers[node_id]
        partition = peer.root / "__cluster_metadata-0"
        log = Log.open(str(partition), LogConfig(), wall_clock_ms)
        replica: RaftReplica[bytes] = RaftReplica(
            node_id,
            peer.directory_id,
            OffloadedFlushLog(log),
            QuorumStateStore(partition / "quorum-state"),
            self.voters(),
            CONFIG,
            random.Random(),
            wall_clock_ms,
            bootstrap_ids=tuple(self.peers),
        )
        peer.recorder = Recorder()
        replica.register_listener(peer.recorder)
        # A fault is recorded in driver.failure (checked by the tests), never a halt of pytest.
        peer.driver = RaftDriver(
            replica, self.endpoints, executor=self.executor, fault_handler=_record_only
        )
        peer.driver.start()

    async def kill(self, node_id: int) -> None:
        """Stop a node the way a crash does: no resignation, connections cut."""
        peer = self.peers[node_id]
        await peer.server.close(grace_s=0)
        assert peer.driver is not None
        await peer.driver.close()

    async def restart(self, node_id: int) -> None:
        peer = self.peers[node_id]
        peer.server = KafkaServer(
            "CONTROLLER", "127.0.0.1", self.endpoints[node_id][1], raft_apis(), self._route(node_id)
        )
        await peer.server.start()
        self.start_driver(node_id)

    def live(self) -> list[Peer]:
        return [p for p in self.peers.values() if p.driver is not None and not p.driver.closed]

    def leaders(self) -> list[Peer]:
        return [p for p in self.live() if isinstance(p.replica.quorum.role, Leader)]

    async def close(self) -> None:
        for peer in self.peers.values():
            await peer.server.close(grace_s=0)
            if peer.driver is not None:
                await peer.driver.close()

    def failures(self) -> list[BaseException]:
        return [
            p.driver.failure
            for p in self.peers.values()
            if p.driver is not None and p.driver.failure is not None
        ]


def _record_only(message: str, cause: BaseException | None = None) -> None:
    del message, cause


async def eventually(what: str, check: Callable[[], bool], timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def one_leader(cluster: Cluster, timeout_s: float = 15.0) -> Peer:
    def elected() -> bool:
        leaders = cluster.leaders()
        if len(leaders) != 1:
            return False
        leader = leaders[0].replica.leader_and_epoch
        # Every live node follows it, and the leader committed its epoch's first entry.
        return all(p.replica.leader_and_epoch == leader for p in cluster.live()) and (
            leaders[0].replica.high_watermark > 0
        )

    await eventually("one leader that every live node follows", elected, timeout_s)
    return cluster.leaders()[0]


async def append_all(cluster: Cluster, values: list[bytes]) -> None:
    for value in values:
        leader = await one_leader(cluster)
        assert leader.driver is not None
        leader.driver.append([value])
        await asyncio.sleep(0.005)


async def describe_quorum(port: int) -> dict[str, Any]:
    connection = KafkaClientConnection("127.0.0.1", port, request_timeout_ms=5000)
    try:
        body = {
            "topics": [{"topic_name": rpc.METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]
        }
        return await connection.request(API_BY_NAME["DescribeQuorum"], 2, body)
    finally:
        await connection.close()


async def scenario(root: Path) -> None:
    with CountingExecutor(max_workers=3, thread_name_prefix="fsync") as executor:
        cluster = Cluster(root, executor)
        try:
            await cluster.open(3)
            leader = await one_leader(cluster)

            first = [f"a{i}".encode() for i in range(30)]
            await append_all(cluster, first)
            await eventually(
                "every replica to see the first records",
                lambda: all(p.data == first for p in cluster.live()),
            )

            # DescribeQuorum v2 on the leader: all voters, directory ids, caught-up LEOs.
            leader = await one_leader(cluster)

            async def described() -> dict[str, Any]:
                body = await describe_quorum(cluster.endpoints[leader.node_id][1])
                partition: dict[str, Any] = body["topics"][0]["partitions"][0]
                return partition

            def caught_up(partition: dict[str, Any]) -> bool:
                leo = leader.replica.log_end_offset
                return all(v["log_end_offset"] == leo for v in partition["current_voters"])

            partition = await described()
            deadline = time.monotonic() + 10
            while not caught_up(partition) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                partition = await described()
            assert partition["error_code"] == 0
            assert partition["leader_id"] == leader.node_id
            assert partition["leader_epoch"] == leader.replica.quorum.epoch
            assert partition["high_watermark"] >= len(first)
            voters = {v["replica_id"]: v for v in partition["current_voters"]}
            assert set(voters) == {0, 1, 2}
            for peer in cluster.peers.values():
                assert bytes(voters[peer.node_id]["replica_directory_id"]) == peer.directory_id
            assert caught_up(partition), partition
            assert all(v["last_caught_up_timestamp"] > 0 for v in voters.values())

            # A follower refuses DescribeQuorum with NOT_LEADER_OR_FOLLOWER and names the leader.
            follower = next(p for p in cluster.live() if p is not leader)
            answer = (await describe_quorum(cluster.endpoints[follower.node_id][1]))["topics"][0][
                "partitions"
            ][0]
            assert answer["error_code"] == 6 and answer["leader_id"] == leader.node_id

            # The listener answers ApiVersions, and refuses a Fetch of any other topic.
            port = cluster.endpoints[follower.node_id][1]
            connection = KafkaClientConnection("127.0.0.1", port)
            try:
                versions = await connection.request(API_BY_NAME["ApiVersions"], 3, {})
                served = {k["api_key"] for k in versions["api_keys"]}
                assert served == {1, 18, 52, 53, 54, 55, 59, 80, 81, 82}
                other = {"topics": [{"topic_id": os.urandom(16), "partitions": [{"partition": 0}]}]}
                refused = await connection.request(API_BY_NAME["Fetch"], 17, other)
                assert refused["error_code"] == 100  # UNKNOWN_TOPIC_ID
            finally:
                await connection.close()

            # Kill the leader; the committed entries it saw must survive on the others.
            old = leader
            old_epoch = old.replica.quorum.epoch
            committed = list(old.recorder.values if old.recorder else [])
            killed_at = time.monotonic()
            await cluster.kill(old.node_id)
            new_leader = await one_leader(cluster)
            print(f"new leader {new_leader.node_id} after {time.monotonic() - killed_at:.2f}s")
            assert new_leader.node_id != old.node_id
            assert new_leader.replica.quorum.epoch > old_epoch

            second = [f"b{i}".encode() for i in range(20)]
            await append_all(cluster, second)
            await eventually(
                "the survivors to commit the new records",
                lambda: all(p.data == first + second for p in cluster.live()),
            )
            for peer in cluster.live():
                assert peer.recorder is not None
                assert peer.recorder.values[: len(committed)] == committed

            # The killed node restarts from its own disk and catches up.
            await cluster.restart(old.node_id)
            await eventually(
                "the restarted node to catch up",
                lambda: cluster.peers[old.node_id].data == first + second,
            )
            assert not cluster.failures(), cluster.failures()
            assert CountingExecutor.submitted > 0
        finally:
            await cluster.close()


def test_three_drivers_elect_replicate_and_survive_losing_the_leader(tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(scenario(tmp_path), 60))


def _batch(base: int, epoch: int, value: bytes) -> bytes:
    return build_batch(
        [RecordInput(None, value, timestamp=1)], base_offset=base, partition_leader_epoch=epoch
    )


def test_offloaded_flush_counts_only_completed_fsyncs_and_survives_truncation(
    tmp_path: Path,
) -> None:
    plans: list[FlushPlan] = []
    log = OffloadedFlushLog(Log.open(str(tmp_path / "m-0"), LogConfig(), wall_clock_ms))
    log.bind(plans.append)
    for offset in range(3):
        log.append_as_leader(_batch(offset, 1, b"x"), 1)
    log.flush()
    assert log.flush_pending and log.flushed_offset == 0
    log.flush()  # covered by the running plan: no second plan
    assert len(plans) == 1
    plans[0].run()
    log.complete(plans[0], True)
    assert not log.flush_pending and log.flushed_offset == 3

    # A plan to 5 is running when the log is truncated to 4 and offset 4 is rewritten: the
    # plan may not vouch for the new offset 4.
    for offset in (3, 4):
        log.append_as_leader(_batch(offset, 1, b"y"), 1)
    log.flush()
    running = plans[-1]
    log.truncate_to(4)
    assert log.truncated_since(running)
    log.append_as_leader(_batch(4, 2, b"z"), 2)
    running.run()
    log.complete(running, True)
    assert log.flushed_offset == 4
    log.flush()
    plans[-1].run()
    log.complete(plans[-1], True)
    assert log.flushed_offset == 5

    # Unbound, flushes are inline again.
    log.bind(None)
    log.append_as_leader(_batch(5, 2, b"w"), 2)
    log.flush()
    assert log.flushed_offset == 6
