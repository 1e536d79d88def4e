"""An asyncio Kafka-protocol client connection: pipelined requests over one TCP connection.

Contract:
- :meth:`KafkaClientConnection.request` encodes a request at the version the caller names
  (no ApiVersions negotiation: the caller knows its peer, e.g. a KRaft voter), writes it at
  once and returns the decoded response body. Any number of requests may be in flight on the
  connection (pipelining); each gets a fresh correlation id and a future, and a response is
  matched to its future by correlation id, so it does not matter that Kafka answers in order.
- Each request is bounded by ``request_timeout_ms`` (connecting included). A request that
  times out raises :class:`TimeoutError` and, as Kafka's ``NetworkClient`` does, closes the
  connection: the peer answers in order, so everything queued behind it is stuck too. Requests
  still in flight on a connection that closes fail with :class:`ConnectionError`.
- The connection is opened lazily and reopened after a failure, with exponential backoff
  (``reconnect.backoff.ms`` growing to ``reconnect.backoff.max.ms``, with jitter); while backing
  off, a request fails at once with :class:`ConnectionError` rather than waiting, so callers
  that retry on their own schedule (the Raft core) are never stalled by a dead peer.
- A response frame that does not parse is the peer's fault: the connection is closed and the
  pending requests fail with :class:`ConnectionError`. Responses to requests we gave up on
  (timed out) are skipped by correlation id, without decoding them.
- With ``security`` the connection is TLS (SSL, SASL_SSL) and/or authenticates with SASL
  (SaslHandshake + SaslAuthenticate) before any request is sent; a refused login fails the
  connect (ConnectionError) and backs off like an unreachable peer.
- :meth:`close` fails every pending request and makes every later request fail, with
  :class:`ConnectionError` also for a request still waiting for the connect (never with a
  ``CancelledError`` its caller did not ask for).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.framing import DEFAULT_MAX_FRAME_BYTES
from sparklog.protocol.headers import decode_response, encode_request
from sparklog.protocol.messages import API_BY_NAME
from sparklog.protocol.schema import Api
from sparklog.protocol.types import INT32, join_chunks
from sparklog.security.client_security import ClientSecurity
from sparklog.security.sasl_client import SaslAuthenticationError

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Pending:
    api: Api
    version: int
    future: asyncio.Future[dict[str, Any]]


@dataclass(slots=True)
class _Link:
    """One open TCP connection and the requests waiting for an answer on it."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    pending: dict[int, _Pending] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None
    closed: bool = False


class KafkaClientConnection:
    """A client connection to one Kafka-protocol listener at ``host:port``."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "sparklog",
        request_timeout_ms: int = 30000,
        connect_timeout_ms: int = 10000,
        reconnect_backoff_ms: int = 50,
        reconnect_backoff_max_ms: int = 1000,
        max_response_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        security: ClientSecurity | None = None,
    ) -> None:
        self.host = host
        # TLS and SASL for a secured listener (None: PLAINTEXT).
        self.security = security
        self.port = port
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.reconnect_backoff_max_ms = reconnect_backoff_max_ms
        self.max_response_bytes = max_response_bytes
        self._correlation = itertools.count(1)
        self._link: _Link | None = None
        self._connecting: asyncio.Task[_Link] | None = None
        self._failures = 0
        self._next_attempt_s = 0.0
        self._closed = False

    def __repr__(self) -> str:
        return f"KafkaClientConnection({self.host}:{self.port})"

    @property
    def connected(self) -> bool:
        return self._link is not None and not self._link.closed

    @property
    def in_flight(self) -> int:
        return len(self._link.pending) if self._link is not None else 0

    # -- public API -------------------------------------------------------------------------

    async def request(
        self,
        api: Api,
        version: int,
        body: Mapping[str, Any],
        *,
        timeout_ms: int | None = None,
    ) -> dict[str, Any]:
        """Send one request and return the decoded response body (see the module contract)."""
        if self._closed:
            raise ConnectionError(f"{self} is closed")
        timeout_s = (self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        link: _Link | None = None
        try:
            async with asyncio.timeout(timeout_s):
                link = await self._ensure_link()
                return await self._exchange(link, api, version, body)
        except TimeoutError:
            if link is not None:
                self._drop(link, f"{api.name} request timed out after {timeout_s:.3f}s")
            raise TimeoutError(f"{api.name} to {self.host}:{self.port} timed out") from None

    async def _exchange(
        self, link: _Link, api: Api, version: int, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        correlation_id = next(self._correlation) & 0x7FFFFFFF
        frame = join_chunks(encode_request(api, version, correlation_id, self.client_id, body))
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        link.pending[correlation_id] = _Pending(api, version, future)
        try:
            link.writer.write(frame)
            await link.writer.drain()
            return await future
        finally:
            link.pending.pop(correlation_id, None)

    async def close(self) -> None:
        """Close the connection; pending and later requests fail with ConnectionError."""
        self._closed = True
        if self._connecting is not None:
            self._connecting.cancel()
        link = self._link
        if link is not None:
            self._drop(link, "closed by the client")
            if link.task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await link.task
            with contextlib.suppress(OSError, ConnectionError):
                await link.writer.wait_closed()

    # -- connecting -------------------------------------------------------------------------

    async def _ensure_link(self) -> _Link:
        link = self._link
        if link is not None and not link.closed:
            return link
        if self._connecting is None:
            loop = asyncio.get_running_loop()
            if loop.time() < self._next_attempt_s:
                raise ConnectionError(
                    f"{self.host}:{self.port} is unreachable; backing off before reconnecting"
                )
            self._connecting = loop.create_task(self._connect())
            self._connecting.add_done_callback(self._connect_done)
        connecting = self._connecting
        try:
            # Shielded: a caller timing out must not cancel a connect other callers share.
            return await asyncio.shield(connecting)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if connecting.cancelled() and (current is None or not current.cancelling()):
                # close() gave the connect up (e.g. another caller's request timed out): for
                # us that is a lost connection, to retry, not a cancellation of our caller.
                raise ConnectionError(f"{self} was closed while connecting") from None
            raise

    def _connect_done(self, task: asyncio.Task[_Link]) -> None:
        if self._connecting is task:
            self._connecting = None
        if not task.cancelled():
            task.exception()  # retrieved here so an unawaited failure is not reported as lost

    async def _connect(self) -> _Link:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout_ms / 1000):
                context = self.security.ssl_context if self.security is not None else None
                reader, writer = await asyncio.open_connection(
                    self.host,
                    self.port,
                    ssl=context,
                    server_hostname=self.host if context is not None else None,
                )
        except (OSError, TimeoutError) as exc:
            self._failures += 1
            self._next_attempt_s = loop.time() + self._backoff_s()
            raise ConnectionError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._closed:
            writer.close()
            raise ConnectionError(f"{self} is closed")
        link = _Link(reader, writer)
        link.task = loop.create_task(self._read_loop(link))
        if self.security is not None and self.security.uses_sasl:
            await self._authenticate(link)
        self._failures = 0
        self._link = link
        return link

    async def _authenticate(self, link: _Link) -> None:
        """SASL on a new link before anything else is sent on it (KIP-152)."""
        assert self.security is not None

        async def request(name: str, body: dict[str, Any], version: int) -> dict[str, Any]:
            return await self._exchange(link, API_BY_NAME[name], version, body)

        try:
            await self.security.authenticate(request)
        except (SaslAuthenticationError, ConnectionError) as exc:
            self._drop(link, f"SASL authentication failed: {exc}")
            self._failures += 1
            loop = asyncio.get_running_loop()
            self._next_attempt_s = loop.time() + self._backoff_s()
            log.warning("SASL authentication to %s:%d failed: %s", self.host, self.port, exc)
            raise ConnectionError(
                f"SASL authentication to {self.host}:{self.port} failed: {exc}"
            ) from None

    def _backoff_s(self) -> float:
        exponent = max(self._failures - 1, 0)
        backoff = min(
            self.reconnect_backoff_ms * (2 ** min(exponent, 20)), self.reconnect_backoff_max_ms
        )
        # Kafka's 20% jitter keeps peers that lost the same node from reconnecting in lockstep.
        return float(backoff * random.uniform(0.8, 1.2) / 1000)

    # -- reading ----------------------------------------------------------------------------

    async def _read_loop(self, link: _Link) -> None:
        why = "closed by the peer"
        try:
            while True:
                size = INT32.unpack(await link.reader.readexactly(4))[0]
                if size < 4 or size > self.max_response_bytes:
                    why = f"invalid response size {size}"
                    break
                frame = memoryview(await link.reader.readexactly(size))
                correlation_id = INT32.unpack_from(frame, 0)[0]
                pending = link.pending.get(correlation_id)
                if pending is None or pending.future.done():
                    continue
                try:
                    _, body = decode_response(pending.api, pending.version, frame)
                except ProtocolError as exc:
                    why = f"unparseable {pending.api.name} response: {exc}"
                    break
                del link.pending[correlation_id]
                pending.future.set_result(body)
        except asyncio.IncompleteReadError:
            pass
        except (OSError, ConnectionError) as exc:
            why = f"connection error: {exc}"
        except Exception:
            # Our bug, not the peer's: still fail the waiting requests rather than strand them.
            log.exception("reading from %s:%d failed", self.host, self.port)
            why = "internal error"
        self._drop(link, why)

    def _drop(self, link: _Link, why: str) -> None:
        """Close ``link`` and fail what waits on it; the next request reconnects."""
        if link.closed:
            return
        link.closed = True
        if self._link is link:
            self._link = None
            if not self._closed:
                loop = asyncio.get_running_loop()
                self._next_attempt_s = loop.time() + self.reconnect_backoff_ms / 1000
        log.debug("connection to %s:%d dropped: %s", self.host, self.port, why)
        error = ConnectionError(f"connection to {self.host}:{self.port} lost: {why}")
        for pending in link.pending.values():
            if not pending.future.done():
                pending.future.set_exception(error)
        link.pending.clear()
        link.writer.close()
        task = link.task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
