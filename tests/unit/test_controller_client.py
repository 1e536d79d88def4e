"""The broker's controller channel while the active controller is cut off (chaos seed 8).

Every broker-to-controller request (heartbeats, AlterPartition, AllocateProducerIds, forwarded
admin requests) shares one ControllerClient and so one connection per controller. When the
controller is unreachable its connects hang; a heartbeat whose short deadline passes closes
that shared connection. The other requests waiting for the same connect must see a connection
error and retry (Kafka's NetworkClient fails them as disconnected), not a CancelledError: the
AlterPartition sender's task died of one and no ISR change of the broker was ever sent again.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sparklog.broker.alter_partition_sender import AlterPartitionSender
from sparklog.broker.controller_channel import ControllerClient
from sparklog.broker.partition import PartitionState
from sparklog.net import client as net_client
from sparklog.net.server import Connection, KafkaServer
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import Request
from sparklog.protocol.messages import API_BY_KEY
from sparklog.raft.client import LeaderAndEpoch
from sparklog.replication.messages import FollowerFetch
from tests.unit.replication.test_broker_replication import TOPIC_ID, make_rm

pytestmark = pytest.mark.timeout(30)

ALTER_PARTITION = 56
BROKER_HEARTBEAT = 63
API = API_BY_KEY[ALTER_PARTITION]
BODY: dict[str, Any] = {"broker_id": 101, "broker_epoch": 4, "topics": []}
HEARTBEAT: dict[str, Any] = {
    "broker_id": 101,
    "broker_epoch": 4,
    "current_metadata_offset": 0,
    "want_fence": False,
    "want_shut_down": False,
}


async def _unreachable(*args: Any, **kwargs: Any) -> Any:
    """A connect to a node cut off by iptables (its SYNs dropped): it never completes."""
    await asyncio.sleep(3600)
    raise AssertionError("unreachable")


def test_a_request_sharing_a_connect_that_another_request_gives_up_is_not_cancelled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(asyncio, "open_connection", _unreachable)

    async def scenario() -> None:
        client = ControllerClient(
            lambda: LeaderAndEpoch(3, 1),
            lambda node: ("127.0.0.1", 9),
            client_id="broker-101",
            retry_backoff_ms=10,
        )
        alter = asyncio.ensure_future(client.request(ALTER_PARTITION, 3, BODY, timeout_ms=1_000))
        await asyncio.sleep(0.05)  # the AlterPartition waits for the connect
        heartbeat = await client.request(BROKER_HEARTBEAT, 1, HEARTBEAT, timeout_ms=200)
        assert heartbeat["error_code"] == ErrorCode.REQUEST_TIMED_OUT
        # The heartbeat's timeout closed the shared connection: the AlterPartition retries
        # and times out on its own deadline, with an answer the sender can retry.
        done, _ = await asyncio.wait({alter}, timeout=5)
        assert alter in done and not alter.cancelled()
        assert alter.result()["error_code"] == ErrorCode.REQUEST_TIMED_OUT
        await client.close()

    asyncio.run(scenario())


def test_a_close_during_the_connect_is_a_connection_error_for_its_waiters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(asyncio, "open_connection", _unreachable)

    async def scenario() -> None:
        connection = net_client.KafkaClientConnection("127.0.0.1", 9)
        waiting = asyncio.ensure_future(connection.request(API, 3, BODY, timeout_ms=5_000))
        await asyncio.sleep(0.05)
        with pytest.raises(TimeoutError):
            await connection.request(API, 3, BODY, timeout_ms=100)
        # Another caller's timeout leaves the shared connect (and its waiter) alone ...
        assert not waiting.done()
        # ... and a close fails it as a lost connection, not as a cancellation of its caller.
        await connection.close()
        with pytest.raises(ConnectionError):
            await asyncio.wait_for(waiting, 1)
        # A caller cancelled from outside is still cancelled.
        again = net_client.KafkaClientConnection("127.0.0.1", 9)
        outer = asyncio.ensure_future(again.request(API, 3, BODY, timeout_ms=5_000))
        await asyncio.sleep(0.05)
        outer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await outer
        await again.close()

    asyncio.run(scenario())


def test_the_alter_partition_sender_outlives_a_cut_off_controller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 8 end to end: an ISR expansion sent while the controller is cut off, a heartbeat
    timing out meanwhile; once the cut heals the expansion is retried and committed."""
    reachable = asyncio.open_connection
    monkeypatch.setattr(asyncio, "open_connection", _unreachable)

    async def scenario() -> None:
        rm, partition = make_rm(tmp_path, min_isr=1)
        partition.apply_state(PartitionState(1, 0, 1, (1, 2, 3), (1, 2)))
        core = partition.leader_core
        assert core is not None
        requests: list[dict[str, Any]] = []

        async def handle(request: Request, connection: Connection) -> dict[str, Any]:
            requests.append(request.body)
            answer = {
                "partition_index": 0,
                "error_code": 0,
                "leader_id": 1,
                "leader_epoch": 0,
                "isr": [1, 2, 3],
                "partition_epoch": 2,
                "leader_recovery_state": 0,
            }
            return {"error_code": 0, "topics": [{"topic_id": TOPIC_ID, "partitions": [answer]}]}

        server = KafkaServer("CONTROLLER", "127.0.0.1", 0, {ALTER_PARTITION: API}, handle)
        await server.start()
        client = ControllerClient(
            lambda: LeaderAndEpoch(3, 1),
            lambda node: ("127.0.0.1", server.port),
            client_id="broker-1",
            timeout_ms=1_000,
            retry_backoff_ms=10,
        )
        sender = AlterPartitionSender(rm, client.request, lambda: 77, retry_backoff_ms=10)
        stopping = asyncio.Event()
        task = asyncio.ensure_future(sender.run(stopping))
        proposal = rm.follower_fetch(partition, FollowerFetch(3, 0, broker_epoch=9)).proposal
        assert proposal is not None
        sender.submit(partition, proposal)
        await asyncio.sleep(0.05)
        heartbeat = await client.request(BROKER_HEARTBEAT, 1, HEARTBEAT, timeout_ms=200)
        assert heartbeat["error_code"] == ErrorCode.REQUEST_TIMED_OUT
        await asyncio.sleep(0.05)
        assert not task.done(), "the AlterPartition sender died"
        monkeypatch.setattr(asyncio, "open_connection", reachable)  # healed
        for _ in range(500):
            if core.isr == {1, 2, 3}:
                break
            await asyncio.sleep(0.01)
        assert core.isr == {1, 2, 3} and core.partition_epoch == 2
        assert rm.isr_expands == 1 and len(requests) == 1
        stopping.set()
        await asyncio.wait_for(task, 1)
        await client.close()
        await server.close(grace_s=0)

    asyncio.run(scenario())


def test_the_alter_partition_sender_retries_after_a_stray_cancellation(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, partition = make_rm(tmp_path, min_isr=1)
        partition.apply_state(PartitionState(1, 0, 1, (1, 2, 3), (1, 2)))
        core = partition.leader_core
        assert core is not None
        calls: list[int] = []
        answer = {
            "partition_index": 0,
            "error_code": 0,
            "leader_id": 1,
            "leader_epoch": 0,
            "isr": [1, 2, 3],
            "partition_epoch": 2,
        }

        async def controller(key: int, version: int, body: Any) -> dict[str, Any]:
            calls.append(key)
            if len(calls) == 1:
                raise asyncio.CancelledError  # from a wait below us, not a cancel of the task
            return {"error_code": 0, "topics": [{"topic_id": TOPIC_ID, "partitions": [answer]}]}

        sender = AlterPartitionSender(rm, controller, lambda: 77, retry_backoff_ms=10)
        stopping = asyncio.Event()
        task = asyncio.ensure_future(sender.run(stopping))
        proposal = rm.follower_fetch(partition, FollowerFetch(3, 0, broker_epoch=9)).proposal
        assert proposal is not None
        sender.submit(partition, proposal)
        for _ in range(200):
            if core.isr == {1, 2, 3}:
                break
            await asyncio.sleep(0.01)
        assert not task.done() and core.isr == {1, 2, 3} and len(calls) == 2
        # Cancelling the task itself still ends it.
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
