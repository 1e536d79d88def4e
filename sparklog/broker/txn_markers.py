"""Writing transaction markers: the broker side of a transaction's second phase.

The transaction coordinator decides a transaction and then has a COMMIT or ABORT marker
written into every partition it touched: through its marker channel
(:mod:`sparklog.broker.txn_marker_channel`) it calls :func:`write_txn_markers` for the
partitions this broker leads and sends WriteTxnMarkers (API key 27) to the other leaders, which
:func:`handle_write_txn_markers` serves with the same writes.

Contract:
- Each (producer, partition) gets its own error code: NONE once the marker is in the log
  with the guarantees of an ``acks=all`` produce (see
  :meth:`~sparklog.broker.replica_manager.ReplicaManager.append_control_marker`: min ISR
  checked before, the HW awaited after, for up to ``request.timeout.ms`` as Kafka);
  NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND or REQUEST_TIMED_OUT when that fails;
  UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER when this node cannot write it (the
  coordinator retries elsewhere); INVALID_PRODUCER_EPOCH for a marker older than the
  producer's epoch; TRANSACTION_COORDINATOR_FENCED for a stale coordinator epoch;
  KAFKA_STORAGE_ERROR for an I/O failure. One partition's failure never stops the others.
- A marker written to a ``__consumer_offsets`` partition is reported to the group coordinator
  (``complete_transaction(partition, producer_id, committed)``, when it offers that method),
  which makes the transaction's offset commits visible or drops them.
- The markers of a request are written concurrently, each waiting for its own replication,
  and appended in request order, so one producer's markers keep the order the coordinator
  chose.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Sequence

from sparklog.broker.context import BrokerContext
from sparklog.coordinator.runtime import MarkerKey, TxnMarker
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
    WriteTxnMarkersResponseMarkers,
    WriteTxnMarkersResponseMarkersTopicsPartitions,
)

__all__ = [
    "GROUP_METADATA_TOPIC",
    "MarkerKey",
    "TxnMarker",
    "handle_write_txn_markers",
    "write_txn_markers",
]

GROUP_METADATA_TOPIC = "__consumer_offsets"

log = logging.getLogger(__name__)


async def _complete_group_offsets(
    ctx: BrokerContext, partition: int, producer_id: int, committed: bool
) -> None:
    # The group coordinator gains this hook with transactional offset commits; until then
    # there is nothing to complete.
    complete = getattr(ctx.groups, "complete_transaction", None)
    if complete is None:
        return
    outcome = complete(partition, producer_id, committed)
    if inspect.isawaitable(outcome):
        await outcome


async def _write_one(
    ctx: BrokerContext, marker: TxnMarker, topic: str, index: int, timeout_ms: int
) -> ErrorCode:
    try:
        await ctx.replica_manager.append_control_marker(
            topic,
            index,
            marker.producer_id,
            marker.producer_epoch,
            marker.coordinator_epoch,
            marker.committed,
            timeout_ms,
        )
    except KafkaApiError as exc:
        log.info(
            "Marker for producer %d in %s-%d rejected: %s",
            marker.producer_id,
            topic,
            index,
            exc.message,
        )
        return ErrorCode(exc.code)
    except OSError:
        log.exception("Writing a marker for producer %d to %s-%d", marker.producer_id, topic, index)
        return ErrorCode.KAFKA_STORAGE_ERROR
    if topic == GROUP_METADATA_TOPIC:
        await _complete_group_offsets(ctx, index, marker.producer_id, marker.committed)
    return ErrorCode.NONE


async def _write(
    ctx: BrokerContext, markers: Sequence[TxnMarker]
) -> list[dict[tuple[str, int], ErrorCode]]:
    """Each marker's error per partition, in the order of ``markers``. Every (marker,
    partition) is written concurrently, each waiting for its own replication; the appends
    themselves happen in request order (a write appends before its first wait, and the
    writes start in the order they are listed)."""
    timeout_ms = int(ctx.config.get("request.timeout.ms"))
    writes = [(marker, tp) for marker in markers for tp in marker.partitions]
    answered = await asyncio.gather(
        *(_write_one(ctx, marker, topic, index, timeout_ms) for marker, (topic, index) in writes)
    )
    done = iter(answered)
    return [{tp: next(done) for tp in marker.partitions} for marker in markers]


async def write_txn_markers(
    ctx: BrokerContext, markers: Sequence[TxnMarker]
) -> dict[MarkerKey, ErrorCode]:
    """Write each marker to each of its partitions; the error per (producer id, topic,
    partition)."""
    results: dict[MarkerKey, ErrorCode] = {}
    for marker, codes in zip(markers, await _write(ctx, markers), strict=True):
        for (topic, index), code in codes.items():
            results[(marker.producer_id, topic, index)] = code
    return results


async def handle_write_txn_markers(
    ctx: BrokerContext, request: TypedRequest[WriteTxnMarkersRequest]
) -> WriteTxnMarkersResponse:
    """WriteTxnMarkers (27): the same writes for a coordinator on another node."""
    markers = [
        TxnMarker(
            producer_id=m["producer_id"],
            producer_epoch=m["producer_epoch"],
            coordinator_epoch=m["coordinator_epoch"],
            committed=m["transaction_result"],
            partitions=tuple(
                (t["name"], index) for t in m["topics"] for index in t["partition_indexes"]
            ),
        )
        for m in request.body["markers"]
    ]
    responses: list[WriteTxnMarkersResponseMarkers] = []
    # Answered per marker, so a producer listed twice gets each of its answers.
    for marker, codes in zip(markers, await _write(ctx, markers), strict=True):
        topics: dict[str, list[WriteTxnMarkersResponseMarkersTopicsPartitions]] = {}
        for topic, index in marker.partitions:
            topics.setdefault(topic, []).append(
                {"partition_index": index, "error_code": int(codes[(topic, index)])}
            )
        responses.append(
            {
                "producer_id": marker.producer_id,
                "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
            }
        )
    return {"markers": responses}
