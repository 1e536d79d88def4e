"""The asyncio driver of a KRaft replica: timers, peer connections, and the KRaft RPC handler.

:class:`RaftDriver` runs one :class:`~sparklog.raft.core.RaftReplica` on the event loop, the way
``tests/sim/cluster.py`` runs it on a simulated clock. It adds no consensus logic of its own.

Contract:
- Single-threaded: every call into the replica (``handle``, ``poll``, appends, listener
  callbacks) happens on the loop thread. Only fsync plans run elsewhere (an executor), when the
  replica's log is an :class:`~sparklog.net.raft_flush.OffloadedFlushLog`; otherwise flushes
  run inline.
- Timer: one task polls the replica at the deadline ``poll`` returned, and at once after
  anything that may have changed it (an inbound message, an append, a completed flush).
- Outbound requests go to the destination's address from ``endpoints`` (else from the voter
  set's endpoints) over one pipelined :class:`~sparklog.net.client.KafkaClientConnection` per
  destination, encoded at ``Outbound.api_version``. The response is fed back as an
  ``InboundResponse``; a transport failure (refused, reset, timed out) is fed back as a
  response carrying ``NETWORK_EXCEPTION``, which the core treats as a failed request.
- A follower's Fetch waits while a flush is pending: the offset a Fetch reports counts toward
  the leader's commit, so it must already be durable ("followers flush before fetching").
- Inbound KRaft requests (:data:`RAFT_API_KEYS`, a Fetch only for ``__cluster_metadata``) are
  served by :meth:`RaftDriver.handle_request`, a :class:`~sparklog.net.server.KafkaServer`
  handler: the request gets a driver-unique correlation id, goes to ``handle``, and the handler
  awaits the ``is_response`` Outbound carrying that id, which may come later (a parked Fetch,
  a voter change waiting for its commit). A request not answered within its bound gets
  ``REQUEST_TIMED_OUT``; a request arriving after :meth:`RaftDriver.close` gets
  ``NOT_LEADER_OR_FOLLOWER``.
- :meth:`RaftDriver.close` stops the timer, fails waiting inbound requests, and closes peer
  connections. It neither resigns nor flushes (that is :meth:`RaftDriver.shutdown`), so closing
  is as abrupt as a crash from the quorum's point of view.
- Fatal faults (Kafka's raft I/O thread hands every unexpected error to the fatal fault
  handler, which halts the process): an I/O error writing the metadata log, the quorum state
  or a downloaded snapshot, a failed fsync, a broken core invariant, or any exception escaping
  the timer or one of the driver's tasks goes to ``fault_handler`` (default
  :func:`sparklog.fault.halt`) with a message naming the node, the metadata log dir and the
  error, and the driver closes. It never keeps running on a dead timer: a node whose metadata
  log cannot be written stops, and restarts (recovering the log) once the disk is usable.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any, Final, Generic, TypeVar, cast

from sparklog.fault import FaultHandler, halt
from sparklog.net.client import KafkaClientConnection
from sparklog.net.raft_flush import OffloadedFlushLog
from sparklog.net.server import Connection, KafkaServer
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import API_VERSIONS_KEY, Request
from sparklog.protocol.kafka_uuid import METADATA_TOPIC_ID
from sparklog.protocol.message_types import (
    ApiVersionsResponse,
    DescribeClusterResponseBrokers,
    DescribeQuorumResponseNodes,
    FetchResponse,
    FetchResponseNodeEndpoints,
)
from sparklog.protocol.messages import API_BY_KEY
from sparklog.protocol.schema import Api
from sparklog.raft import rpc
from sparklog.raft.core import RaftReplica
from sparklog.security.client_security import ClientSecurity
from sparklog.storage.log_durability import FlushPlan

log = logging.getLogger(__name__)

T = TypeVar("T")

RAFT_API_KEYS: Final = rpc.RAFT_API_KEYS

# How long past a request's own bound (max_wait_ms, timeout_ms) the handler waits for the core.
_ANSWER_GRACE_MS: Final = 1000


def raft_apis() -> dict[int, Api]:
    """The APIs a KRaft-only listener serves: the KRaft RPCs and ApiVersions."""
    return {key: API_BY_KEY[key] for key in sorted(RAFT_API_KEYS | {API_VERSIONS_KEY})}


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def is_metadata_fetch(body: Mapping[str, Any]) -> bool:
    """True if a Fetch request names only ``__cluster_metadata`` (by topic id or name)."""
    topics = body.get("topics") or ()
    if not topics:
        return False
    for topic in topics:
        topic_id = topic.get("topic_id")
        name = topic.get("topic")
        by_id = topic_id is not None and bytes(topic_id) == METADATA_TOPIC_ID
        if not by_id and name != rpc.METADATA_TOPIC:
            return False
    return True


def _source_of(api_key: int, body: Mapping[str, Any]) -> int:
    """The node id a KRaft request comes from, where the request names it (-1 otherwise)."""
    if api_key == rpc.FETCH:
        return rpc.fetch_replica_id(body)
    partition = rpc.partition_of(body) or {}
    if api_key == rpc.VOTE:
        return int(partition.get("replica_id", -1))
    if api_key in (rpc.BEGIN_QUORUM_EPOCH, rpc.END_QUORUM_EPOCH):
        return int(partition.get("leader_id", -1))
    return -1


class RaftDriver(Generic[T]):
    """Runs ``replica`` on the running event loop; see the module contract."""

    def __init__(
        self,
        replica: RaftReplica[T],
        endpoints: Mapping[int, tuple[str, int]],
        *,
        clock: Callable[[], int] = wall_clock_ms,
        executor: Executor | None = None,
        listener_name: str | None = None,
        client_id: str | None = None,
        fault_handler: FaultHandler = halt,
        security: ClientSecurity | None = None,
    ) -> None:
        """``clock`` must be the one ``replica`` was built with (epoch milliseconds).

        ``endpoints`` may be filled in after construction (it is read on each send);
        ``listener_name`` picks the voter-set endpoint used for nodes missing from it.
        """
        # TLS/SASL towards the other controllers (controller.listener.names).
        self._security = security
        self.replica = replica
        self.endpoints = endpoints
        self.clock = clock
        self.executor = executor
        self.listener_name = listener_name
        self.client_id = client_id or f"raft-{replica.node_id}"
        self._connections: dict[int, KafkaClientConnection] = {}
        # Leader endpoints learned from Fetch responses (an observer that knows only the
        # bootstrap servers is told where the leader is before it has read the voter set).
        self._learned: dict[int, tuple[str, int]] = {}
        self._answers: dict[int, asyncio.Future[Mapping[str, Any]]] = {}
        self._next_inbound_id = 1
        self._held_fetches: list[rpc.Outbound] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._wakeup = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None
        self._closed = False
        self.failure: BaseException | None = None
        self.fault_handler = fault_handler
        self._flush_log = replica.log if isinstance(replica.log, OffloadedFlushLog) else None
        if self._flush_log is not None:
            self._flush_log.on_io_error = self._on_log_io_error

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the timer task (call on the loop that will run the driver)."""
        if self._timer is not None:
            raise RuntimeError("the driver is already running")
        if self._flush_log is not None:
            self._flush_log.bind(self._run_flush)
        self._timer = asyncio.get_running_loop().create_task(self._run())

    async def serve(self, host: str, port: int, name: str = "CONTROLLER") -> KafkaServer:
        """Start a KRaft-only listener for this driver (the node's controller listener will
        route to :meth:`handle_request` instead)."""
        server = KafkaServer(name, host, port, raft_apis(), self.handle_request)
        await server.start()
        return server

    async def close(self) -> None:
        """Stop at once, as a crash would (no resignation, no final flush)."""
        if self._closed:
            return
        self._closed = True
        if self._flush_log is not None:
            self._flush_log.bind(None)
        current = asyncio.current_task()
        pending = [t for t in (self._timer, *self._tasks) if t is not None and t is not current]
        for task in pending:
            task.cancel()
        for future in self._answers.values():
            if not future.done():
                future.set_result({"error_code": int(ErrorCode.NOT_LEADER_OR_FOLLOWER)})
        await asyncio.gather(*pending, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in self._connections.values()))
        self._connections.clear()

    async def shutdown(self, grace_ms: int = 1000) -> None:
        """Graceful stop: flush, resign leadership (EndQuorumEpoch to the voters), close."""
        if not self._closed:
            self.replica.log.flush()
            self._dispatch(self.replica.resign(self.clock()))
            if self._tasks:
                await asyncio.wait(list(self._tasks), timeout=grace_ms / 1000)
        await self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- the application side ---------------------------------------------------------------

    def append(self, records: Sequence[bytes]) -> int:
        """Append as the current leader (``NotLeaderError`` otherwise); the last offset."""
        offset = self.replica.append(records)
        self.wakeup()
        return offset

    def wakeup(self) -> None:
        """Poll the replica soon: call after touching it directly (``schedule_append``, ...)."""
        self._wakeup.set()

    # -- timer ------------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while not self._closed:
                now = self.clock()
                outbounds, deadline_ms = self.replica.poll(now)
                self._dispatch(outbounds)
                self._wakeup.clear()
                delay_s = max(deadline_ms - self.clock(), 0) / 1000
                try:
                    async with asyncio.timeout(delay_s):
                        await self._wakeup.wait()
                except TimeoutError:
                    pass
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # A broken invariant or an I/O error: stop rather than act on state we cannot trust.
            self._fatal("Unexpected error in the KRaft replica", exc)

    # -- fatal faults -----------------------------------------------------------------------

    @property
    def metadata_log_dir(self) -> str:
        """``metadata.log.dir``: the dir holding ``__cluster_metadata-0``."""
        if self._flush_log is None:
            return "<in memory>"
        return os.path.dirname(self._flush_log.log.directory.rstrip(os.sep))

    def _fatal(self, what: str, exc: BaseException) -> None:
        """Hand ``exc`` to the fault handler (which halts the node) and close the driver."""
        if self.failure is not None:
            return
        self.failure = exc
        message = (
            f"{what} of node {self.replica.node_id} (metadata log dir "
            f"{self.metadata_log_dir}): {exc!r}"
        )
        try:
            self.fault_handler(message, exc)
        finally:
            # Reached only when the handler returns (tests): the driver stops either way.
            if not self._closed:
                self._spawn(self.close())

    def _on_log_io_error(self, action: str, exc: OSError) -> None:
        self._fatal(f"I/O error while {action} the metadata log", exc)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self._fatal("Unexpected error in a KRaft driver task", exc)

    # -- sending ----------------------------------------------------------------------------

    def _dispatch(self, outbounds: Sequence[rpc.Outbound]) -> None:
        for outbound in outbounds:
            if outbound.is_response:
                future = self._answers.get(outbound.correlation_id)
                if future is not None and not future.done():
                    future.set_result(outbound.body)
            elif self._closed:
                continue
            elif (
                outbound.api_key == rpc.FETCH
                and self._flush_log is not None
                and self._flush_log.flush_pending
            ):
                self._held_fetches.append(outbound)
            else:
                self._spawn(self._send(outbound))

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def address_of(self, node_id: int) -> tuple[str, int] | None:
        """The controller-listener address of ``node_id``: configured, voter set, or learned."""
        address = self.endpoints.get(node_id)
        if address is not None:
            return address
        node = self.replica.voters.latest.node(node_id)
        if node is not None:
            for endpoint in node.endpoints:
                if self.listener_name is None or endpoint.name == self.listener_name:
                    return endpoint.host, endpoint.port
        return self._learned.get(node_id)

    def cluster_controllers(self) -> tuple[int, list[DescribeClusterResponseBrokers]]:
        """DescribeCluster on a controller listener (KIP-919): the KRaft leader id (-1 when
        unknown) and every voter as a DescribeCluster ``brokers`` entry (its address)."""
        controllers: list[DescribeClusterResponseBrokers] = []
        for node in self.replica.voters.latest.voters:
            address = self.address_of(node.key.id)
            if address is not None:
                controllers.append(
                    {"broker_id": node.key.id, "host": address[0], "port": address[1], "rack": None}
                )
        return self.replica.leader_and_epoch.leader_id, controllers

    def _learn_endpoints(self, body: FetchResponse) -> None:
        for node in body.get("node_endpoints") or ():
            with contextlib.suppress(KeyError, TypeError, ValueError):
                self._learned[int(node["node_id"])] = (str(node["host"]), int(node["port"]))

    def _voter_nodes(self) -> list[DescribeQuorumResponseNodes]:
        """DescribeQuorum v2 ``nodes``: every voter's listeners, and the leader's if learned."""
        nodes: list[DescribeQuorumResponseNodes] = [
            {
                "node_id": node.key.id,
                "listeners": [
                    {"name": e.name, "host": e.host, "port": e.port} for e in node.endpoints
                ],
            }
            for node in self.replica.voters.latest.voters
        ]
        leader_id = self.replica.leader_and_epoch.leader_id
        address = self._learned.get(leader_id)
        if address is not None and all(n["node_id"] != leader_id for n in nodes):
            name = self.listener_name or "CONTROLLER"
            nodes.append(
                {
                    "node_id": leader_id,
                    "listeners": [{"name": name, "host": address[0], "port": address[1]}],
                }
            )
        return nodes

    def _leader_endpoints(self) -> list[FetchResponseNodeEndpoints]:
        leader_id = self.replica.leader_and_epoch.leader_id
        address = self.address_of(leader_id) if leader_id >= 0 else None
        if address is None:
            return []
        return [{"node_id": leader_id, "host": address[0], "port": address[1], "rack": None}]

    def _connection(self, node_id: int) -> KafkaClientConnection | None:
        address = self.address_of(node_id)
        if address is None:
            return None
        connection = self._connections.get(node_id)
        if connection is not None and (connection.host, connection.port) != address:
            self._spawn(connection.close())
            connection = None
        if connection is None:
            connection = KafkaClientConnection(
                address[0],
                address[1],
                client_id=self.client_id,
                request_timeout_ms=self.replica.config.request_timeout_ms,
                reconnect_backoff_ms=self.replica.config.retry_backoff_ms,
                security=self._security,
            )
            self._connections[node_id] = connection
        return connection

    async def _send(self, outbound: rpc.Outbound) -> None:
        connection = self._connection(outbound.destination_id)
        if connection is None:
            log.debug("no address for node %d; dropping a request", outbound.destination_id)
            return
        api = API_BY_KEY[outbound.api_key]
        try:
            body: Mapping[str, Any] = await connection.request(
                api, outbound.api_version, outbound.body
            )
        except (ConnectionError, TimeoutError) as exc:
            log.debug("%s to node %d failed: %s", api.name, outbound.destination_id, exc)
            body = {"error_code": int(ErrorCode.NETWORK_EXCEPTION)}
        if self._closed:
            return
        if outbound.api_key == rpc.FETCH:
            self._learn_endpoints(cast("FetchResponse", body))
        response = rpc.InboundResponse(
            outbound.api_key, outbound.destination_id, outbound.correlation_id, body
        )
        self._feed(response)

    def _feed(self, message: rpc.InboundRequest | rpc.InboundResponse) -> bool:
        """Hand ``message`` to the replica; False if the peer's message could not be read."""
        try:
            outbounds = self.replica.handle(self.clock(), message)
        except (AssertionError, OSError) as exc:
            # A safety invariant broke or the disk failed: never act on that state again.
            self._fatal("Unexpected error in the KRaft replica", exc)
            return False
        except (KeyError, TypeError, ValueError) as exc:
            log.warning(
                "KRaft replica %d could not handle api key %d from node %d: %r",
                self.replica.node_id,
                message.api_key,
                message.source_id,
                exc,
            )
            return False
        self._dispatch(outbounds)
        self.wakeup()
        return True

    # -- flushing ---------------------------------------------------------------------------

    def _run_flush(self, plan: FlushPlan) -> None:
        self._spawn(self._flush(plan))

    async def _flush(self, plan: FlushPlan) -> None:
        assert self._flush_log is not None
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self.executor, plan.run)
            succeeded = True
        except (OSError, ValueError) as exc:
            # A segment closed by a concurrent truncation cannot be fsynced; the plan's
            # offsets were truncated, so failing it loses nothing. Other errors are fatal,
            # as in Kafka: a log that cannot be made durable must not count toward commits.
            if not self._flush_log.truncated_since(plan) and not self._closed:
                self._flush_log.complete(plan, False)
                self._fatal("I/O error while flushing the metadata log", exc)
                return
            succeeded = False
        self._flush_log.complete(plan, succeeded)
        if self._closed:
            return
        if not succeeded and self.replica.log.flushed_offset < self.replica.log.log_end_offset:
            self._flush_log.flush()
        if not self._flush_log.flush_pending:
            held, self._held_fetches = self._held_fetches, []
            for outbound in held:
                self._spawn(self._send(outbound))
        self.wakeup()

    # -- serving ----------------------------------------------------------------------------

    def handles(self, request: Request) -> bool:
        """True for a request this driver serves (a KRaft RPC; Fetch of the metadata log)."""
        key = request.header.api_key
        if key == rpc.FETCH:
            return is_metadata_fetch(request.body)
        return key in RAFT_API_KEYS

    async def handle_request(self, request: Request, connection: Connection) -> dict[str, Any]:
        """A :class:`KafkaServer` handler for the KRaft RPCs (and ApiVersions)."""
        key = request.header.api_key
        body = request.body
        if key == API_VERSIONS_KEY:
            return dict(_api_versions_body(connection.served_apis))
        if not self.handles(request):
            error = ErrorCode.UNKNOWN_TOPIC_ID if key == rpc.FETCH else ErrorCode.INVALID_REQUEST
            return {"error_code": int(error)}
        if self._closed:
            return {"error_code": int(ErrorCode.NOT_LEADER_OR_FOLLOWER)}
        correlation_id = self._next_inbound_id
        self._next_inbound_id += 1
        future: asyncio.Future[Mapping[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[correlation_id] = future
        try:
            inbound = rpc.InboundRequest(key, _source_of(key, body), correlation_id, body)
            if not self._feed(inbound):
                return {"error_code": int(ErrorCode.INVALID_REQUEST)}
            bound_ms = self._answer_bound_ms(key, body)
            try:
                async with asyncio.timeout(bound_ms / 1000):
                    answer = await future
            except TimeoutError:
                answer = {"error_code": int(ErrorCode.REQUEST_TIMED_OUT)}
        finally:
            del self._answers[correlation_id]
        result = dict(answer)
        if key == rpc.FETCH and not result.get("node_endpoints"):
            result["node_endpoints"] = self._leader_endpoints()
        elif key == rpc.DESCRIBE_QUORUM and not result.get("nodes"):
            result["nodes"] = self._voter_nodes()
        return result

    def _answer_bound_ms(self, key: int, body: Mapping[str, Any]) -> int:
        config = self.replica.config
        if key == rpc.FETCH:
            own = int(body.get("max_wait_ms", 0))
        elif key == rpc.ADD_RAFT_VOTER:
            own = int(body.get("timeout_ms", config.request_timeout_ms))
        else:
            own = config.request_timeout_ms
        return max(own, config.request_timeout_ms) + _ANSWER_GRACE_MS


def _api_versions_body(apis: Mapping[int, Api]) -> ApiVersionsResponse:
    return {
        "error_code": 0,
        "api_keys": [
            {"api_key": a.key, "min_version": a.min_version, "max_version": a.max_version}
            for a in sorted(apis.values(), key=lambda a: a.key)
        ],
        "throttle_time_ms": 0,
    }
