"""The transaction marker channel against real listeners standing in for the other leaders.

Partitions go to their leaders in the metadata image (ours through the local writer, the
others as WriteTxnMarkers v1, one request per destination), the leaders' codes come back per
partition, what a retry may cure comes back as a retriable code, one connection serves each
destination across calls and comes back after the leader restarts, and markers queued while a
request is in flight go together in the next one (never two of one producer).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest

from sparklog.broker.txn_marker_channel import MarkerCodes, TxnMarkerChannel
from sparklog.coordinator.runtime import TxnMarker
from sparklog.metadata.image import (
    BrokerRegistration,
    ClusterImage,
    Endpoint,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    TopicsImage,
)
from sparklog.net.server import Connection, KafkaServer
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import Request
from sparklog.protocol.messages.write_txn_markers import WRITE_TXN_MARKERS

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

LOCAL = 1
LISTENER = "REPLICATION"


class Leader:
    """A listener answering WriteTxnMarkers: NONE unless ``codes`` says otherwise for a
    partition; ``gate``, when set, holds every answer until it opens."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.versions: list[int] = []
        self.codes: dict[tuple[str, int], ErrorCode] = {}
        self.gate: asyncio.Event | None = None
        self.server: KafkaServer | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = KafkaServer(
            "TEST", "127.0.0.1", self.port, {WRITE_TXN_MARKERS.key: WRITE_TXN_MARKERS}, self._serve
        )
        await self.server.start()
        self.port = self.server.port

    async def stop(self) -> None:
        assert self.server is not None
        await self.server.close(grace_s=0)

    async def _serve(self, request: Request, connection: Connection) -> dict[str, Any]:
        self.requests.append(request.body)
        self.versions.append(request.header.api_version)
        if self.gate is not None:
            await self.gate.wait()
        return {
            "markers": [
                {
                    "producer_id": marker["producer_id"],
                    "topics": [
                        {
                            "name": topic["name"],
                            "partitions": [
                                {
                                    "partition_index": index,
                                    "error_code": int(
                                        self.codes.get((topic["name"], index), ErrorCode.NONE)
                                    ),
                                }
                                for index in topic["partition_indexes"]
                            ],
                        }
                    ],
                }
                for marker in request.body["markers"]
                for topic in marker["topics"]
            ]
        }


class LocalWrites:
    def __init__(self) -> None:
        self.calls: list[list[TxnMarker]] = []

    async def __call__(self, markers: Sequence[TxnMarker]) -> MarkerCodes:
        self.calls.append(list(markers))
        return {(m.producer_id, t, i): ErrorCode.NONE for m in markers for t, i in m.partitions}


def image(leaders: dict[int, Leader], partition_leaders: dict[int, int]) -> MetadataImage:
    """Topic ``t`` with ``partition -> leader``; broker ``LOCAL`` and the ``leaders``."""
    partitions = {
        index: PartitionRegistration((1, 2, 3), (1, 2, 3), leader, 0, 0)
        for index, leader in partition_leaders.items()
    }
    topic = TopicImage("t", b"t" * 16, partitions)
    brokers = {
        broker_id: BrokerRegistration(
            broker_id, 1, b"i" * 16, (Endpoint(LISTENER, "127.0.0.1", leader.port, 0),)
        )
        for broker_id, leader in leaders.items()
    }
    brokers[LOCAL] = BrokerRegistration(LOCAL, 1, b"i" * 16, ())
    return MetadataImage(
        cluster=ClusterImage(brokers),
        topics=TopicsImage({topic.topic_id: topic}, {"t": topic}),
    )


def marker(producer_id: int, *partitions: tuple[str, int], committed: bool = True) -> TxnMarker:
    return TxnMarker(producer_id, 3, 7, committed, tuple(partitions))


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(scenario(), 30)

    asyncio.run(bounded())


async def started(count: int) -> list[Leader]:
    leaders = [Leader() for _ in range(count)]
    for leader in leaders:
        await leader.start()
    return leaders


async def gated_leader(
    partition_leaders: dict[int, int], request_timeout_ms: int
) -> tuple[Leader, asyncio.Event, TxnMarkerChannel]:
    """Leader 2 of the partitions, the gate holding its answers until set, and a channel
    to it."""
    [two] = await started(1)
    gate = two.gate = asyncio.Event()
    current = image({2: two}, partition_leaders)
    channel = TxnMarkerChannel(
        LOCAL,
        lambda: current,
        LocalWrites(),
        listener_name=LISTENER,
        request_timeout_ms=request_timeout_ms,
    )
    return two, gate, channel


def test_partitions_go_to_their_leaders_and_codes_come_back() -> None:
    async def scenario() -> None:
        two, three = await started(2)
        three.codes[("t", 2)] = ErrorCode.NOT_LEADER_OR_FOLLOWER
        layout = {0: LOCAL, 1: 2, 2: 3, 3: 2, 4: -1}
        current = image({2: two, 3: three}, layout)
        local = LocalWrites()
        channel = TxnMarkerChannel(
            LOCAL, lambda: current, local, listener_name=LISTENER, request_timeout_ms=5_000
        )
        wanted = marker(42, *[("t", p) for p in range(5)], ("gone", 0))
        codes = await channel.write([wanted])
        assert codes == {
            (42, "t", 0): ErrorCode.NONE,
            (42, "t", 1): ErrorCode.NONE,
            (42, "t", 2): ErrorCode.NOT_LEADER_OR_FOLLOWER,
            (42, "t", 3): ErrorCode.NONE,
            (42, "t", 4): ErrorCode.LEADER_NOT_AVAILABLE,
            (42, "gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert [[m.partitions for m in call] for call in local.calls] == [[(("t", 0),)]]
        assert two.versions == [1] and three.versions == [1]
        [sent] = two.requests
        assert sent["markers"] == [
            {
                "producer_id": 42,
                "producer_epoch": 3,
                "transaction_result": True,
                "topics": [{"name": "t", "partition_indexes": [1, 3]}],
                "coordinator_epoch": 7,
                "transaction_version": 0,
            }
        ]
        # Calls share one connection per destination.
        await channel.write([marker(43, ("t", 1), committed=False)])
        assert two.server is not None and len(two.server.connections) == 1
        assert len(two.requests) == 2 and not two.requests[1]["markers"][0]["transaction_result"]
        await channel.close()
        for leader in (two, three):
            await leader.stop()

    run(scenario)


def test_an_unreachable_leader_is_retriable_and_the_channel_reconnects() -> None:
    async def scenario() -> None:
        [two] = await started(1)
        current = image({2: two}, {0: 2})
        channel = TxnMarkerChannel(
            LOCAL, lambda: current, LocalWrites(), listener_name=LISTENER, request_timeout_ms=5_000
        )
        assert await channel.write([marker(1, ("t", 0))]) == {(1, "t", 0): ErrorCode.NONE}
        await two.stop()
        down = await channel.write([marker(1, ("t", 0))])
        assert down == {(1, "t", 0): ErrorCode.NETWORK_EXCEPTION}
        await two.start()  # the same port: the leader restarted
        for _ in range(100):
            codes = await channel.write([marker(1, ("t", 0))])
            if codes[(1, "t", 0)] == ErrorCode.NONE:
                break
            assert codes == down
            await asyncio.sleep(0.05)
        assert codes == {(1, "t", 0): ErrorCode.NONE}
        await channel.close()
        await two.stop()

    run(scenario)


def test_a_leader_that_does_not_answer_times_out() -> None:
    async def scenario() -> None:
        two, gate, channel = await gated_leader({0: 2}, request_timeout_ms=200)
        assert await channel.write([marker(1, ("t", 0))]) == {
            (1, "t", 0): ErrorCode.REQUEST_TIMED_OUT
        }
        gate.set()
        await channel.close()
        await two.stop()

    run(scenario)


def test_markers_queued_behind_a_request_go_together() -> None:
    async def scenario() -> None:
        two, gate, channel = await gated_leader({0: 2, 1: 2}, request_timeout_ms=5_000)
        first = asyncio.ensure_future(channel.write([marker(1, ("t", 0))]))
        while not two.requests:
            await asyncio.sleep(0.01)
        queued = [
            asyncio.ensure_future(channel.write([marker(pid, ("t", 1))])) for pid in (2, 3, 2)
        ]
        await asyncio.sleep(0.05)
        gate.set()
        await first
        answers = await asyncio.gather(*queued)
        assert [sorted(a.values()) for a in answers] == [[ErrorCode.NONE]] * 3
        producers = [[m["producer_id"] for m in body["markers"]] for body in two.requests]
        assert producers == [[1], [2, 3], [2]]
        await channel.close()
        await two.stop()

    run(scenario)


def test_close_fails_what_is_queued() -> None:
    async def scenario() -> None:
        two, gate, channel = await gated_leader({0: 2}, request_timeout_ms=5_000)
        pending = asyncio.ensure_future(channel.write([marker(1, ("t", 0))]))
        while not two.requests:
            await asyncio.sleep(0.01)
        await channel.close()
        assert await pending == {(1, "t", 0): ErrorCode.NETWORK_EXCEPTION}
        assert await channel.write([marker(1, ("t", 0))]) == {
            (1, "t", 0): ErrorCode.NETWORK_EXCEPTION
        }
        gate.set()
        await two.stop()

    run(scenario)
