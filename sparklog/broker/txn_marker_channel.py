"""The transaction marker channel: a coordinator's COMMIT/ABORT markers to the partition
leaders, wherever they are (Kafka's ``TransactionMarkerChannelManager``).

:meth:`TxnMarkerChannel.write` is the transaction coordinator's
:data:`~sparklog.coordinator.txn_coordinator.MarkerWriter`: it takes decided transactions and
answers an error code per (producer id, topic, partition); the coordinator decides from those
codes what to retry, drop or give up (as Kafka's ``TransactionMarkerRequestCompletionHandler``).

Contract:
- Every partition goes to its leader in the broker's current metadata image. Partitions this
  broker leads are written through the local ``write`` (:func:`~sparklog.broker.txn_markers.
  write_txn_markers`); the others travel as WriteTxnMarkers v1 to the leader's inter-broker
  listener (``inter.broker.listener.name``). Each call resolves leaders afresh, so a retry
  after a failover reaches the new leader.
- Per destination broker: one connection, kept across requests and reopened after a failure
  (:class:`~sparklog.net.client.KafkaClientConnection`), and one request in flight at a time
  carrying every marker queued for that broker (markers queued meanwhile go together in the
  next one; two markers of one producer never share a request, because the response names
  markers by producer id). The leader answers a partition once its marker is replicated as an
  ``acks=all`` produce would be.
- What a retry may cure comes back as a code the coordinator retries: no leader or no
  endpoint for it (LEADER_NOT_AVAILABLE), a connection that fails (NETWORK_EXCEPTION), no
  answer within ``request.timeout.ms`` (REQUEST_TIMED_OUT), a partition the answer does not
  name (UNKNOWN_SERVER_ERROR). A topic or partition missing from the image is
  UNKNOWN_TOPIC_OR_PARTITION (the coordinator drops a deleted topic's partitions). The
  leaders' own codes pass through unchanged.
- Everything runs on the event loop; nothing waits on a socket but the per-destination sender
  tasks, and :meth:`close` ends them and fails what is still queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from sparklog.coordinator.runtime import MarkerKey, TxnMarker
from sparklog.metadata.image import MetadataImage
from sparklog.net.client import KafkaClientConnection
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequestMarkers,
    WriteTxnMarkersResponse,
)
from sparklog.protocol.messages.write_txn_markers import WRITE_TXN_MARKERS
from sparklog.security.client_security import ClientSecurity

__all__ = ["MarkerCodes", "TxnMarkerChannel"]

log = logging.getLogger(__name__)

MarkerCodes = dict[MarkerKey, ErrorCode]
LocalWriter = Callable[[Sequence[TxnMarker]], Awaitable[MarkerCodes]]

# Kafka 4.0 and 4.1 serve only v1; v2 carries the transaction version of KIP-1228.
WRITE_TXN_MARKERS_VERSION = 1


def _keys(marker: TxnMarker) -> list[MarkerKey]:
    return [(marker.producer_id, topic, index) for topic, index in marker.partitions]


def _all(marker: TxnMarker, code: ErrorCode) -> MarkerCodes:
    return dict.fromkeys(_keys(marker), code)


@dataclass(slots=True)
class _Queued:
    marker: TxnMarker
    answer: asyncio.Future[MarkerCodes]


@dataclass(slots=True)
class _Destination:
    """One leader broker: its connection and the markers waiting for the next request."""

    broker_id: int
    address: tuple[str, int]
    connection: KafkaClientConnection
    queue: list[_Queued] = field(default_factory=list)
    sender: asyncio.Task[None] | None = None
    failing: bool = False


class TxnMarkerChannel:
    def __init__(
        self,
        broker_id: int,
        image: Callable[[], MetadataImage],
        local: LocalWriter,
        *,
        listener_name: str,
        request_timeout_ms: int,
        security: ClientSecurity | None = None,
    ) -> None:
        self.broker_id = broker_id
        self._security = security
        self._image = image
        self._local_writer = local
        self.listener_name = listener_name
        self.request_timeout_ms = request_timeout_ms
        self._destinations: dict[int, _Destination] = {}
        self._closed = False

    async def write(self, markers: Sequence[TxnMarker]) -> MarkerCodes:
        """Write ``markers`` to their partitions' leaders; a code for every partition."""
        image = self._image()
        codes: MarkerCodes = {}
        local: list[TxnMarker] = []
        remote: list[Awaitable[MarkerCodes]] = []
        for marker in markers:
            by_leader: dict[int, list[tuple[str, int]]] = {}
            for topic, index in marker.partitions:
                leader = self._leader(image, topic, index)
                if isinstance(leader, ErrorCode):
                    codes[(marker.producer_id, topic, index)] = leader
                else:
                    by_leader.setdefault(leader, []).append((topic, index))
            for leader, partitions in by_leader.items():
                part = replace(marker, partitions=tuple(partitions))
                if leader == self.broker_id:
                    local.append(part)
                else:
                    remote.append(self._send(image, leader, part))
        if local:
            remote.append(self._local(local))
        for answered in await asyncio.gather(*remote):
            codes.update(answered)
        return codes

    async def close(self) -> None:
        """Stop the senders, fail what is queued, close the connections."""
        self._closed = True
        for destination in self._destinations.values():
            if destination.sender is not None:
                destination.sender.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await destination.sender
            self._fail(destination.queue, ErrorCode.NETWORK_EXCEPTION)
            destination.queue.clear()
            await destination.connection.close()
        self._destinations.clear()

    # -- routing ------------------------------------------------------------------------------
    @staticmethod
    def _leader(image: MetadataImage, topic: str, index: int) -> int | ErrorCode:
        registered = image.topics.get_topic(topic)
        partition = registered.partitions.get(index) if registered is not None else None
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if partition.leader < 0:
            return ErrorCode.LEADER_NOT_AVAILABLE
        return int(partition.leader)

    def _destination(self, image: MetadataImage, broker_id: int) -> _Destination | None:
        registration = image.cluster.broker(broker_id)
        endpoint = registration.endpoint(self.listener_name) if registration else None
        if endpoint is None:
            return None
        address = (endpoint.host, endpoint.port)
        destination = self._destinations.get(broker_id)
        if destination is None:
            destination = _Destination(broker_id, address, self._connect(address))
            self._destinations[broker_id] = destination
        elif destination.address != address:
            # The broker came back on another address: what is in flight on the old
            # connection fails (and is retried by the coordinator).
            old = destination.connection
            asyncio.get_running_loop().create_task(old.close())
            destination.address = address
            destination.connection = self._connect(address)
        return destination

    def _connect(self, address: tuple[str, int]) -> KafkaClientConnection:
        return KafkaClientConnection(
            address[0],
            address[1],
            client_id=f"broker-{self.broker_id}-txn-marker-sender",
            request_timeout_ms=self.request_timeout_ms,
            security=self._security,
        )

    async def _send(self, image: MetadataImage, broker_id: int, marker: TxnMarker) -> MarkerCodes:
        if self._closed:
            return _all(marker, ErrorCode.NETWORK_EXCEPTION)
        destination = self._destination(image, broker_id)
        if destination is None:
            log.debug("No %s endpoint for broker %d yet", self.listener_name, broker_id)
            return _all(marker, ErrorCode.LEADER_NOT_AVAILABLE)
        answer: asyncio.Future[MarkerCodes] = asyncio.get_running_loop().create_future()
        destination.queue.append(_Queued(marker, answer))
        if destination.sender is None:
            destination.sender = asyncio.get_running_loop().create_task(self._drain(destination))
        return await answer

    async def _local(self, markers: list[TxnMarker]) -> MarkerCodes:
        try:
            return await self._local_writer(markers)
        except Exception:
            log.exception("Writing markers locally failed")
            return {k: ErrorCode.UNKNOWN_SERVER_ERROR for m in markers for k in _keys(m)}

    # -- sending ------------------------------------------------------------------------------
    async def _drain(self, destination: _Destination) -> None:
        """Send what is queued for ``destination``, one request at a time, until it is empty."""
        try:
            while destination.queue:
                batch = self._next_batch(destination)
                try:
                    codes = await self._request(destination, [q.marker for q in batch])
                except asyncio.CancelledError:
                    self._fail(batch, ErrorCode.NETWORK_EXCEPTION)
                    raise
                except Exception:
                    log.exception("WriteTxnMarkers to broker %d failed", destination.broker_id)
                    codes = {}
                for queued in batch:
                    if not queued.answer.done():
                        queued.answer.set_result(
                            {
                                k: codes.get(k, ErrorCode.UNKNOWN_SERVER_ERROR)
                                for k in _keys(queued.marker)
                            }
                        )
        finally:
            destination.sender = None

    @staticmethod
    def _next_batch(destination: _Destination) -> list[_Queued]:
        batch: list[_Queued] = []
        later: list[_Queued] = []
        producers: set[int] = set()
        for queued in destination.queue:
            if queued.answer.done():  # its writer gave up (the coordinator lost the shard)
                continue
            if queued.marker.producer_id in producers:
                later.append(queued)
            else:
                producers.add(queued.marker.producer_id)
                batch.append(queued)
        destination.queue = later
        return batch

    async def _request(self, destination: _Destination, markers: list[TxnMarker]) -> MarkerCodes:
        if not markers:
            return {}
        try:
            response = await destination.connection.request(
                WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, _request_body(markers)
            )
        except (TimeoutError, ConnectionError, OSError) as exc:
            # Said once per outage; the coordinator logs its retries with the code.
            log.log(
                logging.DEBUG if destination.failing else logging.INFO,
                "WriteTxnMarkers to broker %d failed: %s",
                destination.broker_id,
                exc,
            )
            destination.failing = True
            code = (
                ErrorCode.REQUEST_TIMED_OUT
                if isinstance(exc, TimeoutError)
                else ErrorCode.NETWORK_EXCEPTION
            )
            return {k: code for m in markers for k in _keys(m)}
        destination.failing = False
        return _response_codes(cast("WriteTxnMarkersResponse", response))

    def _fail(self, queued: list[_Queued], code: ErrorCode) -> None:
        for item in queued:
            if not item.answer.done():
                item.answer.set_result(_all(item.marker, code))


def _request_body(markers: list[TxnMarker]) -> WriteTxnMarkersRequest:
    entries: list[WriteTxnMarkersRequestMarkers] = []
    for marker in markers:
        topics: dict[str, list[int]] = {}
        for topic, index in marker.partitions:
            topics.setdefault(topic, []).append(index)
        entries.append(
            {
                "producer_id": marker.producer_id,
                "producer_epoch": marker.producer_epoch,
                "transaction_result": marker.committed,
                "topics": [{"name": n, "partition_indexes": p} for n, p in topics.items()],
                "coordinator_epoch": marker.coordinator_epoch,
                "transaction_version": 0,  # v2+ only; v1 is sent
            }
        )
    return {"markers": entries}


def _response_codes(response: WriteTxnMarkersResponse) -> MarkerCodes:
    codes: MarkerCodes = {}
    for entry in response.get("markers", []):
        producer_id = int(entry["producer_id"])
        for topic in entry["topics"]:
            for partition in topic["partitions"]:
                try:
                    code = ErrorCode(int(partition["error_code"]))
                except ValueError:
                    code = ErrorCode.UNKNOWN_SERVER_ERROR
                codes[(producer_id, topic["name"], int(partition["partition_index"]))] = code
    return codes
