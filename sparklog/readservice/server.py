"""The hot read service's gRPC shell: ``HotRead.ReadRange`` on the node's event loop.

Contract of ``ReadRange`` (see ``hot_read.proto``):
- Only the partition's leader serves; every chunk is checked again, so a leadership change
  ends the stream with FAILED_PRECONDITION "NOT_LEADER_OR_FOLLOWER: ...". An unknown partition
  is NOT_FOUND "UNKNOWN_TOPIC_OR_PARTITION: ..."; a start offset outside
  ``[log start, log end]`` is OUT_OF_RANGE "OFFSET_OUT_OF_RANGE: ..." with the log start offset
  in the trailing metadata key ``sparklog-log-start-offset``.
- The stream covers ``[start_offset, min(end_offset, bound))`` where the bound is the high
  watermark (read_uncommitted) or the last stable offset (read_committed), re-read per chunk.
  Chunks hold stored batch bytes (no control batches) of at most ``max_chunk_bytes`` (a single
  larger batch is sent whole), and under read_committed the aborted transactions overlapping
  them (the local transaction indexes, or the remote segments' ``.txnindex`` objects for a range
  read from the store). Chunks are yielded already encoded
  (:mod:`~sparklog.readservice_wire.chunk_wire`, the bytes the generated ``RecordChunk`` class
  would write), and the method is registered with a
  pass-through serializer; the generated message class would copy each chunk twice more.
- Segment bytes are read on the service's own threads, never on the event loop; the log's
  index lookup (which batch holds an offset) stays on the loop, as in Fetch. Offsets below the
  local log start of a tiered partition are read through the remote log manager.
- Flow control: a chunk is produced only when the previous one has been handed to gRPC (which
  applies HTTP/2 flow control), with exactly one segment read ahead, so a slow reader holds at
  most two chunks of memory.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Protocol

import grpc

from sparklog.broker.partition import Partition
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.config import ServerConfig
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.readservice_wire import hot_read_pb2 as pb
from sparklog.readservice_wire import hot_read_pb2_grpc as pb_grpc
from sparklog.readservice_wire.chunk_wire import encode_chunk
from sparklog.security.authorizer import StandardAuthorizer
from sparklog.security.grpc_security import read_service_security
from sparklog.security.sasl_server import ScramLookup
from sparklog.storage.errors import OffsetMovedToTieredStorageError, OffsetOutOfRangeError

from .authz import ReadAuthorizer
from .chunks import LISTENER_KEY, aborted_ranges, bind_address, data_batches, published_address
from .chunks import status_for as _status_name

__all__ = ["DEFAULT_CHUNK_BYTES", "HotReadServicer", "ReadService", "start_read_service"]

log = logging.getLogger(__name__)

DEFAULT_CHUNK_BYTES: Final = 4 << 20
MAX_CHUNK_BYTES: Final = 64 << 20
LOG_START_METADATA: Final = "sparklog-log-start-offset"
_READ_THREADS: Final = 4
_SERVICE: Final = "sparklog.readservice.HotRead"


class RemoteFetch(Protocol):
    def fetch(self, partition: Partition, offset: int, max_bytes: int) -> Awaitable[bytes]: ...

    def aborted_transactions(
        self, partition: Partition, start_offset: int, upper_offset: int
    ) -> Awaitable[Sequence[Any]]: ...


@dataclass(frozen=True, slots=True)
class _Chunk:
    data: bytes
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    # Read through the remote log manager: its aborted transactions live in the store.
    remote: bool = False


class _Abort(Exception):
    def __init__(self, code: ErrorCode, message: str, log_start_offset: int = -1) -> None:
        super().__init__(message)
        self.code = code
        self.log_start_offset = log_start_offset


class HotReadServicer(pb_grpc.HotReadServicer):
    def __init__(
        self,
        replica_manager: ReplicaManager,
        remote: Callable[[], RemoteFetch | None],
        executor: ThreadPoolExecutor,
        read_authorizer: ReadAuthorizer | None = None,
    ) -> None:
        self._replicas = replica_manager
        self._remote = remote
        self._executor = executor
        # READ on the topic, as a Fetch (sparklog.readservice.authz); None: no authorizer
        self._read_authorizer = read_authorizer

    def _leader(self, request: Any) -> Partition:
        try:
            return self._replicas.leader_partition(
                request.topic, request.partition, request.current_leader_epoch
            )
        except KafkaApiError as exc:
            raise _Abort(exc.code, exc.message or exc.code.name) from None

    async def _read(self, partition: Partition, offset: int, upper: int, max_bytes: int) -> _Chunk:
        marks = (
            partition.high_watermark,
            partition.last_stable_offset,
            partition.log_start_offset,
        )
        try:
            result = partition.log.read(offset, max_bytes, upper, True)
        except OffsetMovedToTieredStorageError:
            remote = self._remote()
            if remote is None:
                raise _Abort(
                    ErrorCode.OFFSET_OUT_OF_RANGE,
                    f"offset {offset} is in remote storage and tiering is off",
                    marks[2],
                ) from None
            return _Chunk(await remote.fetch(partition, offset, max_bytes), *marks, remote=True)
        except OffsetOutOfRangeError as exc:
            raise _Abort(ErrorCode.OFFSET_OUT_OF_RANGE, str(exc), marks[2]) from None
        loop = asyncio.get_running_loop()
        data = await loop.run_in_executor(self._executor, result.read_bytes)
        return _Chunk(data, *marks)

    async def _aborted(
        self, partition: Partition, chunk: _Chunk, start: int, upper: int
    ) -> Sequence[Any]:
        """Aborted transactions overlapping ``[start, upper)``: from the remote segments'
        transaction indexes (and the local ones after them) for a remotely read chunk, else
        from the local log."""
        remote = self._remote() if chunk.remote else None
        if remote is not None:
            return await remote.aborted_transactions(partition, start, upper)
        return partition.log.collect_aborted_transactions(start, upper)

    async def ReadRange(self, request: Any, context: Any) -> AsyncIterator[bytes]:
        if self._read_authorizer is not None:
            refusal = self._read_authorizer.refusal(context, request.topic)
            if refusal is not None:
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, refusal)
        try:
            try:
                async for chunk in self._stream(request):
                    yield chunk
            except KafkaApiError as exc:
                # A remote fetch's error or a damaged stored batch (CORRUPT_MESSAGE).
                log.warning("hot read of %s-%d failed: %s", request.topic, request.partition, exc)
                raise _Abort(exc.code, exc.message or exc.code.name) from None
        except _Abort as exc:
            metadata = ((LOG_START_METADATA, str(exc.log_start_offset)),)
            await context.abort(
                getattr(grpc.StatusCode, _status_name(exc.code)),
                f"{exc.code.name}: {exc}",
                trailing_metadata=metadata,
            )

    async def _stream(self, request: Any) -> AsyncIterator[bytes]:
        read_committed = request.isolation_level == pb.READ_COMMITTED
        max_bytes = min(max(request.max_chunk_bytes or DEFAULT_CHUNK_BYTES, 1), MAX_CHUNK_BYTES)
        end = int(request.end_offset)
        partition = self._leader(request)
        offset = request.start_offset
        if offset < partition.log_start_offset or offset > partition.log_end_offset:
            raise _Abort(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"offset {offset} of {partition.topic}-{partition.index} is outside"
                f" [{partition.log_start_offset}, {partition.log_end_offset}]",
                partition.log_start_offset,
            )

        def readable(p: Partition) -> int:
            return p.last_stable_offset if read_committed else p.high_watermark

        # Reads stop before batches reaching the readable bound (batches end at it), while
        # ``end`` may fall inside a batch: that batch is sent whole and the reader trims it.
        ahead: asyncio.Task[_Chunk] | None = None
        if offset < min(end, readable(partition)):
            ahead = asyncio.ensure_future(
                self._read(partition, offset, readable(partition), max_bytes)
            )
        try:
            while ahead is not None:
                chunk = await ahead
                ahead = None
                data, next_offset = data_batches(chunk.data, end)
                if next_offset <= offset:
                    # Nothing readable below the bound (e.g. a compacted gap at the end).
                    break
                partition = self._leader(request)
                upper = readable(partition)
                if next_offset < min(end, upper):
                    ahead = asyncio.ensure_future(
                        self._read(partition, next_offset, upper, max_bytes)
                    )
                aborted: list[tuple[int, int, int]] = []
                if read_committed:
                    aborted = aborted_ranges(
                        await self._aborted(partition, chunk, offset, next_offset)
                    )
                message = encode_chunk(
                    data,
                    next_offset,
                    chunk.high_watermark,
                    chunk.last_stable_offset,
                    chunk.log_start_offset,
                    aborted,
                )
                offset = next_offset
                yield message
        finally:
            if ahead is not None:
                ahead.cancel()


def _add_servicer(servicer: HotReadServicer, server: Any) -> None:
    """The generated registration, except that ``ReadRange`` yields chunks already in wire
    form (:mod:`~sparklog.readservice_wire.chunk_wire`): the message class would copy each
    chunk's megabytes twice."""
    handler = grpc.unary_stream_rpc_method_handler(
        servicer.ReadRange,
        request_deserializer=pb.ReadRangeRequest.FromString,
        response_serializer=_as_is,
    )
    handlers = {"ReadRange": handler}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(_SERVICE, handlers),))
    server.add_registered_method_handlers(_SERVICE, handlers)


def _as_is(message: bytes) -> bytes:
    return message


class ReadService:
    """A started service: ``address`` is what readers connect to; ``config`` is the node's
    configuration with ``sparklog.read.listener`` set to that address (DescribeConfigs shows
    it)."""

    def __init__(
        self, server: Any, address: str, config: ServerConfig, executor: ThreadPoolExecutor
    ) -> None:
        self.server = server
        self.address = address
        self.config = config
        self._executor = executor

    async def stop(self, grace_s: float = 1.0) -> None:
        await self.server.stop(grace_s)
        self._executor.shutdown(wait=False, cancel_futures=True)


async def start_read_service(
    config: ServerConfig,
    replica_manager: ReplicaManager,
    remote: Callable[[], RemoteFetch | None] = lambda: None,
    scram_lookup: ScramLookup | None = None,
    authorizer: StandardAuthorizer | None = None,
) -> ReadService | None:
    """Start the service on the running loop, or return None when it is disabled."""
    where = bind_address(config)
    if where is None:
        return None
    host, port = where
    # A node with a secured client listener serves the same security here (fail closed).
    security = read_service_security(config, scram_lookup)
    credentials = security.server_credentials() if security is not None else None
    executor = ThreadPoolExecutor(_READ_THREADS, thread_name_prefix="hot-read")
    server = grpc.aio.server(
        options=[("grpc.max_send_message_length", -1), ("grpc.so_reuseport", 0)],
        interceptors=security.interceptors() if security is not None else None,
    )
    read_authorizer = None
    if authorizer is not None:
        ssl_settings = security.listener.ssl if security is not None else None
        rules = ssl_settings.principal_mapping_rules if ssl_settings is not None else None
        read_authorizer = ReadAuthorizer(authorizer, rules)
    _add_servicer(HotReadServicer(replica_manager, remote, executor, read_authorizer), server)
    bind_host = "[::]" if host in ("", "::") else (f"[{host}]" if ":" in host else host)
    if credentials is not None:
        bound_port = server.add_secure_port(f"{bind_host}:{port}", credentials)
    else:
        bound_port = server.add_insecure_port(f"{bind_host}:{port}")
    if bound_port == 0:
        executor.shutdown(wait=False)
        raise OSError(f"{LISTENER_KEY}: cannot listen on {host}:{port}")
    await server.start()
    address = published_address(config, host, bound_port)
    published = ServerConfig.from_props({**config.props, LISTENER_KEY: address})
    log.info(
        "Hot read service (gRPC%s) listening on %s:%d, published as %s",
        f", security of listener {security.listener.name}" if security is not None else "",
        host,
        bound_port,
        address,
    )
    return ReadService(server, address, published, executor)
