"""The metrics listener: a node's :class:`~sparklog.metrics.MetricsRegistry` over plain HTTP.

Enabled by ``sparklog.metrics.listener=host:port`` (unset: no listener; port ``0`` binds an
ephemeral port, logged at start-up and available as :attr:`MetricsServer.port`). Routes:

- ``GET /metrics``: Prometheus text exposition format (``text/plain; version=0.0.4``);
- ``GET /metrics.json`` (or ``/metrics?format=json``): ``{mbean: {attribute: value}}``.

- anything :attr:`MetricsServer.pages` answers (the web console, :mod:`sparklog.console`,
  under ``/console`` when ``sparklog.console.enable=true``): ``(status, html)``.

Anything else answers 404 (unknown path) or 405 (a method other than GET/HEAD). The server is
deliberately minimal (asyncio streams, no dependency): one request per connection, the request
head limited to 8 KiB and 5 s, ``Connection: close`` on every response. A malformed request
gets 400 and the connection closes; it never reaches the registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sparklog.metrics import MetricsRegistry

_log = logging.getLogger(__name__)

MAX_REQUEST_HEAD_BYTES = 8192
REQUEST_TIMEOUT_S = 5.0
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
HTML_CONTENT_TYPE = "text/html; charset=utf-8"
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}

# (method, request target) -> (status, HTML document), or None for a path it does not serve
Pages = Callable[[str, str], Awaitable[tuple[int, str] | None]]


class MetricsListenerError(ValueError):
    """``sparklog.metrics.listener`` is not ``host:port``."""


def parse_listener(value: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` too) to ``(host, port)``; port 0 means ephemeral."""
    host, sep, port_text = value.strip().rpartition(":")
    if not sep or not port_text.isdigit():
        raise MetricsListenerError(
            f"sparklog.metrics.listener must be host:port (port 0 for any), got {value!r}"
        )
    port = int(port_text)
    if port > 65535:
        raise MetricsListenerError(f"sparklog.metrics.listener port {port} is above 65535")
    host = host.strip("[]") or "0.0.0.0"
    return host, port


@dataclass(frozen=True, slots=True)
class _Response:
    status: int
    reason: str
    content_type: str
    body: bytes


def _respond(registry: MetricsRegistry, method: str, target: str) -> _Response:
    if method not in ("GET", "HEAD"):
        return _Response(405, "Method Not Allowed", "text/plain", b"only GET\n")
    path, _, query = target.partition("?")
    if path == "/metrics.json" or (path == "/metrics" and "format=json" in query.split("&")):
        body = json.dumps(registry.to_json(), sort_keys=True).encode()
        return _Response(200, "OK", "application/json", body)
    if path == "/metrics":
        return _Response(200, "OK", PROMETHEUS_CONTENT_TYPE, registry.to_prometheus().encode())
    return _Response(404, "Not Found", "text/plain", b"try /metrics or /metrics.json\n")


class MetricsServer:
    def __init__(self, registry: MetricsRegistry, host: str, port: int) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self.pages: Pages | None = None
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, self.host, self.port, limit=MAX_REQUEST_HEAD_BYTES
        )
        sockets = self._server.sockets
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        _log.info("Metrics listener on %s/metrics", self.url)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            response, method = await self._read_and_answer(reader)
            head = (
                f"HTTP/1.1 {response.status} {response.reason}\r\n"
                f"Content-Type: {response.content_type}\r\n"
                f"Content-Length: {len(response.body)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            writer.write(head if method == "HEAD" else head + response.body)
            await writer.drain()
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _read_and_answer(self, reader: asyncio.StreamReader) -> tuple[_Response, str]:
        bad = _Response(400, "Bad Request", "text/plain", b"bad request\n")
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT_S)
        except asyncio.LimitOverrunError:
            return bad, "GET"
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return bad, "GET"
        method, target = parts[0], parts[1]
        if self.pages is not None:
            page = await self.pages(method, target)
            if page is not None:
                status, document = page
                reason = _REASONS.get(status, "Service Unavailable")
                return _Response(status, reason, HTML_CONTENT_TYPE, document.encode()), method
        return _respond(self.registry, method, target), method


async def start_metrics_server(registry: MetricsRegistry, listener: str) -> MetricsServer:
    """Bind ``listener`` (``host:port``) and serve ``registry``."""
    host, port = parse_listener(listener)
    server = MetricsServer(registry, host, port)
    await server.start()
    return server
