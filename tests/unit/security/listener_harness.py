"""A KafkaServer on 127.0.0.1 with a given security runtime, run on its own loop thread.

Serves ApiVersions (and whatever ``apis`` adds) and records each request's principal, so tests
can drive it with the blocking client or raw sockets.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sparklog.broker.apis import api_versions_body
from sparklog.metrics import MetricsRegistry
from sparklog.net.request_metrics import RequestMetrics
from sparklog.net.server import Connection, KafkaServer
from sparklog.protocol.headers import Request
from sparklog.protocol.messages import API_BY_KEY
from sparklog.protocol.schema import Api
from sparklog.security.listener_runtime import ListenerRuntime


class Harness:
    def __init__(self, server: KafkaServer, registry: MetricsRegistry) -> None:
        self.server = server
        self.registry = registry
        self.principals: list[str] = []

    @property
    def port(self) -> int:
        return self.server.port


@contextmanager
def serving(
    runtime: ListenerRuntime | None, apis: Mapping[int, Api] | None = None
) -> Iterator[Harness]:
    served = dict(apis or {18: API_BY_KEY[18], 3: API_BY_KEY[3]})
    holder: dict[str, Any] = {}

    async def handler(request: Request, conn: Connection) -> dict[str, Any] | None:
        harness.principals.append(str(conn.session.principal))
        if request.api.key == 18:
            body: dict[str, Any] = {**api_versions_body(conn.served_apis)}
            return body
        return {
            "throttle_time_ms": 0,
            "brokers": [],
            "topics": [],
            "cluster_id": None,
            "controller_id": -1,
        }

    server = KafkaServer("TEST", "127.0.0.1", 0, served, handler, security=runtime)
    registry = MetricsRegistry()
    server.request_metrics = RequestMetrics(registry)
    harness = Harness(server, registry)
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)

        async def start() -> None:
            try:
                await server.start()
            except BaseException as exc:  # reported to the test thread
                holder["error"] = exc
            started.set()

        loop.run_until_complete(start())
        if "error" not in holder:
            loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(60)
    if "error" in holder:
        raise holder["error"]
    try:
        yield harness
    finally:
        asyncio.run_coroutine_threadsafe(server.close(1.0), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(60)
        loop.close()
