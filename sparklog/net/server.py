"""The asyncio Kafka listener: a thin driver of the sans-IO protocol code.

Contract:
- Each accepted connection gets a :class:`FrameDecoder`; bytes in, whole frames out. A frame
  whose size is negative or above ``max_request_bytes`` closes that connection (Kafka's
  ``InvalidReceiveException``), as does a request header or body that does not parse: the peer
  can no longer be trusted, so we log why and close it. Nothing the peer sends can stop the
  listener or affect other connections.
- Requests on one connection are handled one at a time, in arrival order, so responses leave in
  request order (Kafka mutes a channel while its request is in flight). Clients pipeline up to
  their in-flight limit; frames wait in the connection's queue meanwhile.
- Back-pressure: when ``max_queued_requests`` frames are waiting on a connection, or the
  transport's write buffer is above its high-water mark, we stop reading from that socket; TCP
  then pushes back on the client.
- A handler returning ``None`` sends no response (Produce with acks=0).
- File regions (fetched segment bytes) are opened only while being sent, by the region itself;
  segments' pooled descriptors may be closed meanwhile without harm. A region that cannot be
  opened (out of descriptors, file gone) aborts that connection with one warning, as a torn
  send does: the frame is already partly written. The client reconnects and fetches again.
- ``close()`` stops accepting and reading, answers the requests already received (bounded by a
  grace period) and then closes every connection.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from sparklog.net.connection_quotas import ConnectionQuotas
from sparklog.net.request_metrics import RequestMetrics
from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.framing import FrameDecoder
from sparklog.protocol.headers import (
    Request,
    UnsupportedVersion,
    decode_request,
    encode_response,
    unsupported_api_versions_response,
)
from sparklog.protocol.message_types import SaslAuthenticateRequest, SaslHandshakeRequest
from sparklog.protocol.schema import Api
from sparklog.protocol.types import Chunk, nbytes
from sparklog.security.listener_runtime import ListenerRuntime
from sparklog.security.principal import SessionContext
from sparklog.security.sasl_server import SASL_AUTHENTICATE, SASL_HANDSHAKE
from sparklog.storage.errors import StorageError
from sparklog.storage.slices import FileSlice

log = logging.getLogger(__name__)

# Regions at least this large go out with sendfile; smaller ones are cheaper to read and copy.
SENDFILE_MIN_BYTES = 64 * 1024
# Kafka's connection.failed.authentication.delay.ms default: a failed SASL login is closed late.
FAILED_AUTHENTICATION_DELAY_S = 0.1
# Byte chunks at least this large are written on their own instead of being joined.
LARGE_CHUNK_BYTES = 64 * 1024

Handler = Callable[[Request, "Connection"], Awaitable[dict[str, Any] | None]]


class Connection(asyncio.Protocol):
    """One client connection: framing, in-order dispatch, back-pressure."""

    def __init__(self, server: KafkaServer) -> None:
        self._server = server
        self._decoder = FrameDecoder(server.max_request_bytes)
        # (frame, time.monotonic() when it was received) in arrival order
        self._frames: deque[tuple[memoryview, float]] = deque()
        self._wakeup = asyncio.Event()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._transport: asyncio.Transport | None = None
        # Responses written while the request loop runs without yielding go out in one send
        # at the loop's next turn (pipelined small requests: one syscall for many responses).
        self._out: list[bytes | memoryview] = []
        self._out_bytes = 0
        self._flush_scheduled = False
        self._task: asyncio.Task[None] | None = None
        self._reading_paused = False
        self._closed = False
        self._shutting_down = False
        self.peer = "?"
        # Who this connection is (User:ANONYMOUS until TLS or SASL says otherwise); the
        # authorizer and quotas read it.
        self.session = SessionContext(server.name, server.security_protocol)
        # SASL listeners: authentication state; requests other than SASL's wait for it.
        self._sasl = server.security.new_sasl(self.session) if server.security else None
        self._auth_failed = False
        if self._sasl is not None and server.security is not None:
            # sasl.server.max.receive.size: an unauthenticated peer sends small frames only.
            self._decoder.max_frame_bytes = min(
                server.max_request_bytes, server.security.security.max_receive_bytes
            )

    # -- asyncio.Protocol callbacks -------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.session.client_host = str(peer[0]) if peer else ""
        limits = self._server.connection_quotas
        if limits is not None:
            # max.connections*, max.connection.creation.rate (sparklog.net.connection_quotas)
            refusal = limits.on_accept(self, self._server.name, self.session.client_host, transport)
            if refusal is not None:
                self._abort(refusal)
                return
        self._server.connections.add(self)
        runtime = self._server.security
        if runtime is not None:
            refused = runtime.on_connect(self.session, transport)
            if refused is not None:
                self._abort(refused)
                return
        self._task = asyncio.get_running_loop().create_task(self._process())

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        try:
            self._decoder.receive_data(data)
            received = time.monotonic()
            while (frame := self._decoder.next_frame()) is not None:
                self._frames.append((frame, received))
        except ProtocolError as exc:
            self._abort(f"invalid frame: {exc}")
            return
        if self._frames:
            self._wakeup.set()
            if len(self._frames) >= self._server.max_queued_requests:
                self._pause_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._server.connection_quotas is not None:
            self._server.connection_quotas.on_close(self)
        self._server.connections.discard(self)
        self._wakeup.set()
        self._can_write.set()

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    # -- request loop -----------------------------------------------------------------------
    async def _process(self) -> None:
        try:
            while not self._closed:
                if not self._frames and self._shutting_down:
                    self.close()
                    return
                if not self._frames:
                    self._wakeup.clear()
                    if self._reading_paused:
                        self._resume_reading()
                    await self._wakeup.wait()
                    continue
                frame, received = self._frames.popleft()
                await self._handle_frame(frame, received)
                if not self._can_write.is_set():
                    await self._can_write.wait()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("connection %s: internal error; closing it", self.peer)
            self._abort("internal error")

    async def _handle_frame(self, frame: memoryview, received: float) -> None:
        server = self._server
        started = time.monotonic()
        try:
            request = decode_request(frame, server.apis)
        except UnsupportedVersion as exc:
            header = exc.header
            if header is not None and header.api_key == 18:
                # Kafka answers an ApiVersions it cannot parse as v0, so the client negotiates.
                self._write(unsupported_api_versions_response(header.correlation_id, server.apis))
                return
            self._abort(str(exc))
            return
        except ProtocolError as exc:
            self._abort(f"invalid request: {exc}")
            return
        if self._sasl is not None and self._sasl_step(request):
            return
        body = await server.handler(request, self)
        handled = time.monotonic()
        if body is not None and not self._closed:
            header = request.header
            chunks = encode_response(request.api, header.api_version, header.correlation_id, body)
            handled = time.monotonic()
            await self._send(chunks)
        metrics = server.request_metrics
        if metrics is not None:
            api = request.api
            metrics.record(
                metrics.request_name(api.name, api.key, request.body),
                request.header.api_version,
                body,
                queue_ms=(started - received) * 1000.0,
                local_ms=(handled - started) * 1000.0,
                send_ms=(time.monotonic() - handled) * 1000.0,
            )

    def _sasl_step(self, request: Request) -> bool:
        """Run the SASL gate and SASL requests; True when the request was consumed here."""
        sasl = self._sasl
        assert sasl is not None
        key = request.api.key
        now_ms = time.monotonic() * 1000.0
        refused = sasl.gate(key, now_ms)
        if refused is not None:
            self._abort(refused)
            return True
        if key not in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
            return False
        header = request.header
        if key == SASL_HANDSHAKE:
            reply = sasl.handshake(cast("SaslHandshakeRequest", request.body))
        else:
            again = sasl.authenticated
            body = cast("SaslAuthenticateRequest", request.body)
            reply = sasl.authenticate(body, header.api_version, now_ms)
            if sasl.authenticated:
                self._decoder.max_frame_bytes = self._server.max_request_bytes
            metrics = self._server.request_metrics
            if metrics is not None and (reply.authenticated or reply.close):
                outcome = "successful" if reply.authenticated else "failed"
                kind = "reauthentication" if again else "authentication"
                metrics.authentication(self._server.name, f"{outcome}-{kind}")
        if reply.body is not None:
            self._write(
                encode_response(request.api, header.api_version, header.correlation_id, reply.body)
            )
        if reply.close:
            log.info(
                "Failed authentication with %s on %s (%s)",
                self.peer,
                self._server.name,
                reply.reason,
            )
            # Kafka's connection.failed.authentication.delay.ms (100): read nothing more, and
            # close a little later, so a client retrying a bad password cannot spin on us.
            self._auth_failed = True
            self._pause_reading()
            self._frames.clear()
            asyncio.get_running_loop().call_later(FAILED_AUTHENTICATION_DELAY_S, self.close)
        return True

    def _write(self, chunks: list[Chunk]) -> None:
        """Write byte chunks; small ones are joined so a response costs few syscalls."""
        if self._transport is None or self._closed:
            return
        small: list[bytes | memoryview] = []
        for chunk in chunks:
            if not isinstance(chunk, bytes | memoryview):
                try:
                    chunk = chunk.read_bytes()
                except (OSError, StorageError) as exc:
                    # Out of descriptors, or the file is gone: the response cannot be
                    # completed, so the client reconnects and fetches again.
                    self._abort(f"reading a file region for the response failed: {exc}")
                    return
            if nbytes(chunk) >= LARGE_CHUNK_BYTES:
                if small:
                    self._queue_out(b"".join(small))
                    small = []
                self._flush()
                self._transport.write(chunk)
            else:
                small.append(chunk)
        if small:
            self._queue_out(b"".join(small))

    def _queue_out(self, data: bytes | memoryview) -> None:
        self._out.append(data)
        self._out_bytes += nbytes(data)
        if self._out_bytes >= LARGE_CHUNK_BYTES:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Write the queued responses in one transport write."""
        self._flush_scheduled = False
        out = self._out
        if not out:
            return
        self._out = []
        self._out_bytes = 0
        if self._transport is not None and not self._closed:
            self._transport.write(out[0] if len(out) == 1 else b"".join(out))

    async def _send(self, chunks: list[Chunk]) -> None:
        """Send a response; large file regions go straight from the page cache (sendfile)."""
        start = 0
        for index, chunk in enumerate(chunks):
            if isinstance(chunk, FileSlice) and chunk.length >= SENDFILE_MIN_BYTES:
                self._write(chunks[start:index])
                self._flush()
                start = index + 1
                if not await self._sendfile(chunk):
                    return
        self._write(chunks[start:])

    async def _sendfile(self, region: FileSlice) -> bool:
        transport = self._transport
        if transport is None or self._closed:
            return False
        loop = asyncio.get_running_loop()
        try:
            with os.fdopen(region.open_fd(), "rb", buffering=0) as file:
                sent = await loop.sendfile(transport, file, region.position, region.length)
        except (OSError, RuntimeError, StorageError) as exc:
            # StorageError: out of file descriptors (sparklog.storage.handles).
            self._abort(f"sending {region.path} failed: {exc}")
            return False
        if sent != region.length:
            # The frame's size prefix is already on the wire: the connection is unusable.
            self._abort(f"{region.path} was truncated while being sent")
            return False
        return True

    def _pause_reading(self) -> None:
        if self._transport is not None and not self._reading_paused:
            self._reading_paused = True
            self._transport.pause_reading()

    def _resume_reading(self) -> None:
        if self._shutting_down or self._auth_failed:
            return
        if self._transport is not None and self._reading_paused and not self._closed:
            self._reading_paused = False
            self._transport.resume_reading()

    def _abort(self, why: str) -> None:
        if self._closed:
            return
        log.warning(
            "Closing connection %s on %s because of error: %s", self.peer, self._server.name, why
        )
        self._closed = True
        self._frames.clear()
        self._wakeup.set()
        if self._transport is not None:
            self._transport.abort()

    def close(self) -> None:
        self._flush()
        self._closed = True
        self._wakeup.set()
        if self._transport is not None:
            self._transport.close()

    def begin_shutdown(self) -> None:
        """Read no more requests; answer the ones already received, then close."""
        self._shutting_down = True
        self._pause_reading()
        self._wakeup.set()

    @property
    def listener_name(self) -> str:
        return self._server.name

    @property
    def served_apis(self) -> Mapping[int, Api]:
        """The APIs (and versions) this connection's listener serves."""
        return self._server.apis

    async def drain(self, timeout_s: float) -> None:
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout_s)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()
        self._flush()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()


class KafkaServer:
    """A listener serving the Kafka protocol with one handler for every API in ``apis``."""

    def __init__(
        self,
        name: str,
        host: str,
        port: int,
        apis: Mapping[int, Api],
        handler: Handler,
        *,
        max_request_bytes: int = 104857600,
        max_queued_requests: int = 500,
        security: ListenerRuntime | None = None,
    ) -> None:
        self.name = name
        # TLS context and per-connection authentication; None serves PLAINTEXT.
        self.security = security
        self.security_protocol = security.protocol if security is not None else "PLAINTEXT"
        self.host = host
        self.port = port
        # SASL listeners also serve SaslHandshake and SaslAuthenticate.
        self.apis = security.served_apis(apis) if security is not None else apis
        self.handler = handler
        self.max_request_bytes = max_request_bytes
        self.max_queued_requests = max_queued_requests
        self.connections: set[Connection] = set()
        # Kafka's RequestMetrics (set by the node; None records nothing).
        self.request_metrics: RequestMetrics | None = None
        self.connection_quotas: ConnectionQuotas | None = None
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        ssl_context = self.security.ssl_context if self.security is not None else None
        self._server = await loop.create_server(
            lambda: Connection(self),
            self.host or None,
            self.port,
            reuse_address=True,
            backlog=512,
            ssl=ssl_context,
        )
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        log.info(
            "Listener %s (%s) serving on %s:%d",
            self.name,
            self.security_protocol,
            self.host or "0.0.0.0",
            self.port,
        )

    async def close(self, grace_s: float = 5.0) -> None:
        if self._server is None:
            return
        self._server.close()
        connections = list(self.connections)
        for conn in connections:
            conn.begin_shutdown()
        await asyncio.gather(*(c.drain(grace_s) for c in connections))
        await self._server.wait_closed()
        self._server = None
