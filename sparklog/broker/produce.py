"""Produce (API key 0): validate and append each partition's batches, answer per partition.

Errors follow Kafka: a bad ``acks`` fails every partition with INVALID_REQUIRED_ACKS; a corrupt
or oversized batch fails only its partition (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD)
and the connection stays open; an unknown partition is UNKNOWN_TOPIC_OR_PARTITION (or
UNKNOWN_TOPIC_ID when the request names topics by id). ``acks=0`` gets no response at all.
A control batch from a client is INVALID_RECORD: transaction markers are written only by the
transaction coordinator (WriteTxnMarkers). Transactional batches are appended like any other;
their producer opens a transaction in the partition's producer state, which holds the last
stable offset until the coordinator's marker closes it. The first transactional batch of a
producer epoch on a partition is checked with the transaction coordinator first (verified, or
for a transactions-version-2 Produce v12+ added to the transaction):
:mod:`sparklog.broker.txn_verification`.

The records blob is never decoded: the log validates batch headers and CRCs and assigns offsets
in place, so a frame's bytes go to the segment file as received.

``acks=all`` waits, up to the request's ``timeout_ms``, until the partition's HW covers the
batches (see :meth:`~sparklog.broker.replica_manager.ReplicaManager.append`): NOT_ENOUGH_REPLICAS
before appending when the ISR is under min ISR, NOT_ENOUGH_REPLICAS_AFTER_APPEND or
REQUEST_TIMED_OUT after. Partitions are appended one after the other in request order and
their waits overlap.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass

from sparklog.broker.context import BrokerContext
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    ProduceRequest,
    ProduceRequestTopicDataPartitionData,
    ProduceResponse,
    ProduceResponseResponses,
    ProduceResponseResponsesPartitionResponses,
)
from sparklog.protocol.records import (
    RECORD_BATCH_OVERHEAD,
    CorruptRecordError,
    RecordValidationError,
    parse_batch_header,
)
from sparklog.protocol.types import nbytes

log = logging.getLogger(__name__)

_ACKS = (0, 1, -1)

PartitionResponse = ProduceResponseResponsesPartitionResponses


def _error_partition(index: int, code: int, message: str | None = None) -> PartitionResponse:
    return {
        "index": index,
        "error_code": int(code),
        "base_offset": -1,
        "log_append_time_ms": -1,
        "log_start_offset": -1,
        "error_message": message,
    }


@dataclass(frozen=True, slots=True)
class _TxnProduce:
    transactional_id: str | None
    version: int


async def _check_transaction(
    ctx: BrokerContext, txn: _TxnProduce, name: str, index: int, records: memoryview
) -> ErrorCode | None:
    """The error to answer instead of appending, after asking the transaction coordinator
    about the first transactional batch of a producer epoch here (None: append)."""
    manager = ctx.txn_verification
    if manager is None or not txn.transactional_id or len(records) < RECORD_BATCH_OVERHEAD:
        return None
    try:
        header = parse_batch_header(records)
    except CorruptRecordError:  # malformed: the append answers it
        return None
    if not header.is_transactional or not header.has_producer_id:
        return None
    try:
        state = ctx.replica_manager.leader_partition(name, index).log.producer_state
    except KafkaApiError:
        return None  # not the leader: the append answers it
    entry = state.producers.get(header.producer_id)
    if (
        entry is not None
        and entry.epoch == header.producer_epoch
        and entry.current_txn_first_offset >= 0
    ):
        return None  # this producer's transaction is already open here
    codes = await manager.check(
        txn.transactional_id,
        header.producer_id,
        header.producer_epoch,
        [(name, index)],
        txn.version,
    )
    code = codes.get((name, index), ErrorCode.NONE)
    return None if code == ErrorCode.NONE else code


async def _produce_partition(
    ctx: BrokerContext,
    txn: _TxnProduce,
    name: str,
    pdata: ProduceRequestTopicDataPartitionData,
    acks: int,
    timeout_ms: int,
) -> PartitionResponse:
    index = pdata["index"]
    records = pdata["records"]
    if records is None or len(records) == 0:
        return _error_partition(index, ErrorCode.INVALID_RECORD, "Produce request has no records")
    refused = await _check_transaction(ctx, txn, name, index, records)
    if refused is not None:
        ctx.topic_metrics.produce_failed(name)
        return _error_partition(index, refused)
    try:
        writable = records if not records.readonly else bytearray(records)
        outcome = await ctx.replica_manager.append(name, index, writable, acks, timeout_ms)
    except KafkaApiError as exc:
        ctx.topic_metrics.produce_failed(name)
        failed = _error_partition(index, exc.code, exc.message)
        if isinstance(exc, RecordValidationError):
            failed["record_errors"] = [
                {"batch_index": i, "batch_index_error_message": m} for i, m in exc.record_errors
            ]
        return failed
    except Exception as exc:  # storage errors carry a Kafka error code
        code = getattr(exc, "error_code", None)
        if code is None:
            log.exception("append to %s-%d failed", name, index)
            code = ErrorCode.KAFKA_STORAGE_ERROR
        ctx.topic_metrics.produce_failed(name)
        return _error_partition(index, code, str(exc))
    ctx.topic_metrics.produced(name, records, nbytes(records))
    return {
        "index": index,
        "error_code": 0,
        "base_offset": outcome.base_offset,
        "log_append_time_ms": outcome.log_append_time_ms,
        "log_start_offset": outcome.log_start_offset,
    }


async def _done(response: PartitionResponse) -> PartitionResponse:
    return response


async def handle_produce(
    ctx: BrokerContext, request: TypedRequest[ProduceRequest]
) -> ProduceResponse | None:
    body = request.body
    version = request.header.api_version
    acks = body["acks"]
    timeout_ms = body["timeout_ms"]
    by_id = version >= 13
    txn = _TxnProduce(body["transactional_id"], version)
    # Every partition is appended at once, then acks=all waits run side by side, so a request
    # waits for its slowest partition, not for the sum of them (Kafka's DelayedProduce).
    pending: list[tuple[ProduceResponseResponses, list[Awaitable[PartitionResponse]]]] = []
    for topic in body["topic_data"]:
        name = topic["name"]
        unknown_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if by_id:
            resolved = ctx.topic_name(topic["topic_id"])
            unknown_code = ErrorCode.UNKNOWN_TOPIC_ID
            name = resolved or ""
        partitions: list[Awaitable[PartitionResponse]] = []
        for pdata in topic["partition_data"]:
            index = pdata["index"]
            if acks not in _ACKS:
                partitions.append(_done(_error_partition(index, ErrorCode.INVALID_REQUIRED_ACKS)))
            elif not name:
                partitions.append(_done(_error_partition(index, unknown_code)))
            elif acks != -1:
                # Nothing to wait for but a flush: append in place, without a task per
                # partition (and without yielding, so pipelined responses share a send).
                partitions.append(
                    _done(await _produce_partition(ctx, txn, name, pdata, acks, timeout_ms))
                )
            else:
                partitions.append(
                    asyncio.ensure_future(
                        _produce_partition(ctx, txn, name, pdata, acks, timeout_ms)
                    )
                )
        header: ProduceResponseResponses = {"name": topic["name"], "topic_id": topic["topic_id"]}
        pending.append((header, partitions))
    responses: list[ProduceResponseResponses] = []
    for header, partitions in pending:
        if acks == -1:
            header["partition_responses"] = list(await asyncio.gather(*partitions))
        else:
            header["partition_responses"] = [await p for p in partitions]
        responses.append(header)
    if acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}
