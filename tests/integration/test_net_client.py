"""The asyncio client connection against a real KafkaServer (and a misbehaving raw server)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from sparklog.net.client import KafkaClientConnection
from sparklog.net.server import Connection, KafkaServer
from sparklog.protocol.headers import Request
from sparklog.protocol.messages import API_BY_NAME
from sparklog.protocol.types import INT32

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

DESCRIBE = API_BY_NAME["DescribeQuorum"]


def _request(name: str) -> dict[str, Any]:
    return {"topics": [{"topic_name": name, "partitions": [{"partition_index": 0}]}]}


def _echo(request: Request) -> dict[str, Any]:
    """A DescribeQuorum response naming the topic of the request (to check matching)."""
    name = request.body["topics"][0]["topic_name"]
    return {"error_code": 0, "topics": [{"topic_name": name, "partitions": []}]}


@asynccontextmanager
async def serving(
    handler: Callable[[Request], Awaitable[dict[str, Any] | None]],
) -> AsyncIterator[KafkaServer]:
    async def handle(request: Request, connection: Connection) -> dict[str, Any] | None:
        return await handler(request)

    server = KafkaServer("TEST", "127.0.0.1", 0, {DESCRIBE.key: DESCRIBE}, handle)
    await server.start()
    try:
        yield server
    finally:
        await server.close(grace_s=0)


def run(coro: Awaitable[None]) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(coro, 30)

    asyncio.run(bounded())


def test_pipelined_requests_share_one_connection_and_match_their_responses() -> None:
    async def scenario() -> None:
        async def handler(request: Request) -> dict[str, Any]:
            await asyncio.sleep(0.001)
            return _echo(request)

        async with serving(handler) as server:
            client = KafkaClientConnection("127.0.0.1", server.port)
            names = [f"t{i}" for i in range(50)]
            answers = await asyncio.gather(
                *(client.request(DESCRIBE, 2, _request(n)) for n in names)
            )
            assert [a["topics"][0]["topic_name"] for a in answers] == names
            assert len(server.connections) == 1
            await client.close()

    run(scenario())


def test_a_timed_out_request_closes_the_connection_and_the_next_one_reconnects() -> None:
    async def scenario() -> None:
        async def handler(request: Request) -> dict[str, Any]:
            if request.body["topics"][0]["topic_name"] == "slow":
                await asyncio.sleep(2)
            return _echo(request)

        async with serving(handler) as server:
            client = KafkaClientConnection("127.0.0.1", server.port, reconnect_backoff_ms=50)
            slow = asyncio.ensure_future(
                client.request(DESCRIBE, 2, _request("slow"), timeout_ms=100)
            )
            queued = asyncio.ensure_future(client.request(DESCRIBE, 2, _request("queued")))
            with pytest.raises(TimeoutError):
                await slow
            # The request pipelined behind the stuck one fails with the connection.
            with pytest.raises(ConnectionError):
                await queued
            assert not client.connected
            await asyncio.sleep(0.1)
            answer = await client.request(DESCRIBE, 2, _request("fast"))
            assert answer["topics"][0]["topic_name"] == "fast"
            await client.close()

    run(scenario())


def test_connect_failures_back_off_and_fail_fast_meanwhile() -> None:
    async def scenario() -> None:
        async with serving(lambda r: asyncio.sleep(0, _echo(r))) as server:
            port = server.port
        client = KafkaClientConnection(
            "127.0.0.1", port, reconnect_backoff_ms=200, reconnect_backoff_max_ms=1000
        )
        with pytest.raises(ConnectionError, match="cannot connect"):
            await client.request(DESCRIBE, 2, _request("x"))
        started = time.monotonic()
        with pytest.raises(ConnectionError, match="backing off"):
            await client.request(DESCRIBE, 2, _request("x"))
        assert time.monotonic() - started < 0.1
        await asyncio.sleep(0.3)
        with pytest.raises(ConnectionError, match="cannot connect"):
            await client.request(DESCRIBE, 2, _request("x"))
        await client.close()

    run(scenario())


def test_a_peer_that_goes_away_fails_pending_requests_and_a_restart_is_reached_again() -> None:
    async def scenario() -> None:
        release = asyncio.Event()

        async def handler(request: Request) -> dict[str, Any]:
            await release.wait()
            return _echo(request)

        async with serving(handler) as server:
            port = server.port
            client = KafkaClientConnection("127.0.0.1", port, reconnect_backoff_ms=20)
            pending = asyncio.ensure_future(client.request(DESCRIBE, 2, _request("a")))
            await asyncio.sleep(0.1)
        with pytest.raises(ConnectionError):
            await pending
        release.set()
        restarted = KafkaServer(
            "TEST",
            "127.0.0.1",
            port,
            {DESCRIBE.key: DESCRIBE},
            lambda request, connection: asyncio.sleep(0, _echo(request)),
        )
        await restarted.start()
        try:
            await asyncio.sleep(0.05)
            answer = await client.request(DESCRIBE, 2, _request("b"))
            assert answer["topics"][0]["topic_name"] == "b"
        finally:
            await client.close()
            await restarted.close(grace_s=0)

    run(scenario())


def test_an_unparseable_response_closes_the_connection() -> None:
    async def scenario() -> None:
        async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            size = INT32.unpack(await reader.readexactly(4))[0]
            frame = await reader.readexactly(size)
            correlation = frame[4:8]
            # The right correlation id, then a body that ends in the middle of a field.
            payload = correlation + b"\x00\x05\x00"
            writer.write(INT32.pack(len(payload)) + payload)
            await writer.drain()
            await asyncio.sleep(1)
            writer.close()

        server = await asyncio.start_server(garbage, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = KafkaClientConnection("127.0.0.1", port)
        try:
            with pytest.raises(ConnectionError, match="unparseable"):
                await client.request(DESCRIBE, 2, _request("x"))
            assert not client.connected
        finally:
            await client.close()
            server.close()

    run(scenario())


def test_close_fails_pending_and_later_requests() -> None:
    async def scenario() -> None:
        async def never(request: Request) -> dict[str, Any] | None:
            await asyncio.sleep(10)
            return None

        async with serving(never) as server:
            client = KafkaClientConnection("127.0.0.1", server.port)
            pending = asyncio.ensure_future(client.request(DESCRIBE, 2, _request("a")))
            await asyncio.sleep(0.1)
            await client.close()
            with pytest.raises(ConnectionError):
                await pending
            with pytest.raises(ConnectionError, match="closed"):
                await client.request(DESCRIBE, 2, _request("b"))

    run(scenario())
