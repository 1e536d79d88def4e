"""Fetch (API key 1) for consumers: batches up to the high watermark (read_uncommitted) or the
last stable offset (read_committed), long-polled until ``min_bytes`` or ``max_wait_ms``.

Rules kept from Kafka:
- Reads are batch aligned and may start before ``fetch_offset`` (the batch containing it);
  clients skip the records below their position.
- ``max_bytes`` bounds the response and ``partition_max_bytes`` each partition, but the first
  non-empty partition always returns at least one whole batch so a large batch can make
  progress (KIP-74).
- Out-of-range offsets get OFFSET_OUT_OF_RANGE with the partition's log start offset and high
  watermark so the client can reset; stale or future leader epochs get FENCED_LEADER_EPOCH /
  UNKNOWN_LEADER_EPOCH (KIP-320).
- read_committed (isolation_level 1) reads stop at the last stable offset, and each partition
  carries the aborted transactions (producer id, first offset) of the range it returns, from
  the transaction indexes (for tiered offsets, the remote segments' ``.txnindex`` objects and
  then the local indexes, see the remote log manager); read_uncommitted answers
  ``aborted_transactions`` null. Every response carries ``last_stable_offset``, and a parked
  read_committed fetch wakes when the LSO moves (markers notify the fetch purgatory like
  appends do).
- A fetch naming a replica (``replica_id`` before v15, the tagged ``replica_state`` from v15,
  with the follower's broker epoch) is a follower fetch: the leader's replication core checks
  it (epochs, KIP-320 ``diverging_epoch``, offsets) and records the follower's progress, which
  may move the HW and wake parked ``acks=all`` produces; the follower reads up to the log end
  offset, not the HW, and is answered NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH like a
  consumer when we do not lead the epoch it names. Below a tiered partition's local log start
  it gets OFFSET_OUT_OF_RANGE with the local log start as ``log_start_offset``, where it
  restarts its log.
- Fetch sessions (KIP-227, :mod:`sparklog.broker.fetch_session`): a full fetch with epoch 0
  creates a session when the cache has room; an incremental fetch reads every partition of its
  session and answers only those with records or changed marks or an error. A consumer's
  partition whose fetch offset is at its readable end and whose marks are those last sent is
  not read at all (it would return nothing and be left out; for a read_uncommitted consumer
  the LSO is not compared, as in Kafka); a follower's partitions are all accounted every
  time, as they keep the follower in the ISR.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypedDict

from sparklog.broker.context import BrokerContext
from sparklog.broker.fetch_session import FetchContext, FetchPartition, PartitionKey
from sparklog.broker.partition import Partition
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    FetchRequest,
    FetchResponse,
    FetchResponseResponses,
    FetchResponseResponsesPartitions,
    FetchResponseResponsesPartitionsAbortedTransactions,
    FetchResponseResponsesPartitionsDivergingEpoch,
)
from sparklog.protocol.types import RecordsValue
from sparklog.replication.messages import FollowerFetch
from sparklog.storage.errors import OffsetMovedToTieredStorageError
from sparklog.storage.slices import FileSlice, LogReadResult

_NO_ABORTED: None = None
PartitionResponse = FetchResponseResponsesPartitions
AbortedTxn = FetchResponseResponsesPartitionsAbortedTransactions
_Results = list[tuple[FetchPartition, PartitionResponse]]


class _Marks(TypedDict):
    """A partition's offsets, as the response reports them."""

    high_watermark: int
    last_stable_offset: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class _Replica:
    """Who sent a follower fetch."""

    replica_id: int
    broker_epoch: int


def _replica_of(body: FetchRequest, version: int) -> _Replica | None:
    if version >= 15:
        state = body["replica_state"]
        replica_id = -1 if state is None else state["replica_id"]
        broker_epoch = -1 if state is None else state["replica_epoch"]
    else:
        replica_id = body["replica_id"]
        broker_epoch = -1
    return _Replica(replica_id, broker_epoch) if replica_id >= 0 else None


def _partition_response(
    index: int,
    code: int,
    *,
    high_watermark: int = -1,
    last_stable_offset: int = -1,
    log_start_offset: int = -1,
    aborted_transactions: list[AbortedTxn] | None = _NO_ABORTED,
    diverging_epoch: FetchResponseResponsesPartitionsDivergingEpoch | None = None,
    records: RecordsValue = b"",  # Kafka sends empty records, not null: librdkafka wants them
) -> PartitionResponse:
    response: PartitionResponse = {
        "partition_index": index,
        "error_code": int(code),
        "high_watermark": high_watermark,
        "last_stable_offset": last_stable_offset,
        "log_start_offset": log_start_offset,
        "aborted_transactions": aborted_transactions,
        "preferred_read_replica": -1,
        "records": records,
    }
    if diverging_epoch is not None:
        response["diverging_epoch"] = diverging_epoch
    return response


def _wanted_partitions(
    ctx: BrokerContext, body: FetchRequest, version: int
) -> list[FetchPartition]:
    wanted: list[FetchPartition] = []
    for topic in body["topics"]:
        if version >= 13:
            topic_id = bytes(topic["topic_id"])
            name = ctx.topic_name(topic_id) or ""
        else:
            name = topic["topic"]
            topic_id = b"\x00" * 16
        for p in topic["partitions"]:
            wanted.append(
                FetchPartition(
                    topic=name,
                    topic_id=topic_id,
                    partition=p["partition"],
                    fetch_offset=p["fetch_offset"],
                    current_leader_epoch=p["current_leader_epoch"],
                    max_bytes=p["partition_max_bytes"],
                    last_fetched_epoch=p["last_fetched_epoch"],
                    log_start_offset=p["log_start_offset"],
                )
            )
    return wanted


async def _read_once(
    ctx: BrokerContext,
    wanted: list[FetchPartition],
    max_bytes: int,
    isolation_level: int,
    by_id: bool,
    skip_unchanged: bool = False,
) -> tuple[_Results, int, bool]:
    """One pass over the partitions; returns (responses, bytes read, any error).

    Offsets below a tiered partition's local log start are read from remote storage on the
    remote log manager's threads, so a remote fetch never blocks the event loop. With
    ``skip_unchanged`` (an incremental session) a partition with nothing to read and the marks
    the session last sent is left out of the responses.
    """
    rm = ctx.replica_manager
    remaining = max_bytes
    total = 0
    out: _Results = []
    errored = any(not want.topic for want in wanted)
    for want in _known_topics(wanted, by_id, out):
        try:
            partition = rm.leader_partition(want.topic, want.partition, want.current_leader_epoch)
        except KafkaApiError as exc:
            out.append((want, _partition_response(want.partition, exc.code)))
            errored = True
            continue
        hw = partition.high_watermark
        start = partition.log_start_offset
        if skip_unchanged and _nothing_new(partition, want, hw, start, isolation_level):
            continue
        lso = partition.last_stable_offset
        marks = _Marks(high_watermark=hw, last_stable_offset=lso, log_start_offset=start)
        if want.fetch_offset < start or want.fetch_offset > partition.log_end_offset:
            out.append(
                (want, _partition_response(want.partition, ErrorCode.OFFSET_OUT_OF_RANGE, **marks))
            )
            errored = True
            continue
        budget = min(want.max_bytes, remaining)
        records: list[FileSlice] | bytes | memoryview | None = None
        aborted: list[AbortedTxn] = []
        if budget > 0 or total == 0:
            try:
                result = rm.read(
                    partition,
                    want.fetch_offset,
                    max(budget, 0),
                    isolation_level=isolation_level,
                    min_one_batch=total == 0,
                )
                size = result.size
                if size:
                    # File slices, not bytes: the listener sends them with sendfile.
                    records = list(result.slices)
                    if isolation_level == 1:
                        aborted = _aborted(partition, want.fetch_offset, result, lso)
            except OffsetMovedToTieredStorageError:
                if ctx.remote_fetch is None:
                    code = ErrorCode.OFFSET_OUT_OF_RANGE
                    out.append((want, _partition_response(want.partition, code, **marks)))
                    errored = True
                    continue
                remote = await ctx.remote_fetch(
                    partition, want.fetch_offset, max(budget, 1), isolation_level == 1
                )
                records = remote.records
                size = len(records)
                aborted = [
                    {"producer_id": producer_id, "first_offset": first_offset}
                    for producer_id, first_offset in remote.aborted_transactions
                ]
            except KafkaApiError as exc:
                out.append((want, _partition_response(want.partition, exc.code, **marks)))
                errored = True
                continue
            total += size
            remaining -= size
        response = _partition_response(
            want.partition,
            ErrorCode.NONE,
            **marks,
            records=records if records is not None else b"",
        )
        if isolation_level == 1:
            response["aborted_transactions"] = aborted
        out.append((want, response))
    return out, total, errored


def _known_topics(
    wanted: list[FetchPartition], by_id: bool, out: _Results
) -> Iterator[FetchPartition]:
    """The wanted partitions of topics we know; each other one is answered in ``out``, at its
    place (UNKNOWN_TOPIC_ID when asked by id)."""
    for want in wanted:
        if want.topic:
            yield want
        else:
            code = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            out.append((want, _partition_response(want.partition, code)))


def _nothing_new(
    partition: Partition, want: FetchPartition, hw: int, start: int, isolation_level: int
) -> bool:
    """An incremental consumer fetch would neither read nor report anything for ``want``.

    The LSO costs more to compute than the rest; a read_uncommitted consumer is not told of an
    LSO that moved alone (Kafka never compares it), a read_committed one reads up to it.
    """
    if want.sent_high_watermark != hw or want.sent_log_start_offset != start:
        return False
    if isolation_level == 0:
        return want.fetch_offset == hw
    lso = partition.last_stable_offset
    return want.fetch_offset == lso == want.sent_last_stable_offset


def _follower_error(
    ctx: BrokerContext, want: FetchPartition, exc: KafkaApiError
) -> PartitionResponse:
    code = exc.code
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and want.topic in ctx.image.topics.by_name:
        # The topic exists but this broker does not host the partition.
        code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    return _partition_response(want.partition, code)


def _read_follower_once(
    ctx: BrokerContext, wanted: list[FetchPartition], max_bytes: int, replica: _Replica, by_id: bool
) -> tuple[_Results, int, bool]:
    """One pass of a follower fetch: account each partition with the leader core, then read
    up to the log end offset (or answer the diverging epoch)."""
    rm = ctx.replica_manager
    remaining = max_bytes
    total = 0
    out: _Results = []
    errored = any(not want.topic for want in wanted)
    for want in _known_topics(wanted, by_id, out):
        try:
            partition = rm.leader_partition(want.topic, want.partition, want.current_leader_epoch)
            result = rm.follower_fetch(
                partition,
                FollowerFetch(
                    replica_id=replica.replica_id,
                    fetch_offset=want.fetch_offset,
                    last_fetched_epoch=want.last_fetched_epoch,
                    log_start_offset=want.log_start_offset,
                    current_leader_epoch=want.current_leader_epoch,
                    broker_epoch=replica.broker_epoch,
                ),
            )
        except KafkaApiError as exc:
            out.append((want, _follower_error(ctx, want, exc)))
            errored = True
            continue
        marks = _Marks(
            high_watermark=result.high_watermark,
            last_stable_offset=partition.last_stable_offset,
            log_start_offset=result.log_start_offset,
        )
        if result.error:
            out.append((want, _partition_response(want.partition, result.error, **marks)))
            errored = True
            continue
        if result.diverging_epoch is not None:
            diverging: FetchResponseResponsesPartitionsDivergingEpoch = {
                "epoch": result.diverging_epoch.epoch,
                "end_offset": result.diverging_epoch.end_offset,
            }
            out.append(
                (
                    want,
                    _partition_response(
                        want.partition, ErrorCode.NONE, diverging_epoch=diverging, **marks
                    ),
                )
            )
            errored = True  # answer at once: the follower must truncate before anything else
            continue
        budget = min(want.max_bytes, remaining)
        records: list[FileSlice] | bytes = b""
        if budget > 0 or total == 0:
            try:
                read = rm.read_for_follower(
                    partition, want.fetch_offset, max(budget, 0), min_one_batch=total == 0
                )
            except OffsetMovedToTieredStorageError:
                # KIP-405: the follower asks for our earliest local offset (ListOffsets -4)
                # and rebuilds what lies below it from the store.
                code = ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE
                out.append((want, _partition_response(want.partition, code, **marks)))
                errored = True
                continue
            except KafkaApiError as exc:
                out.append((want, _partition_response(want.partition, exc.code, **marks)))
                errored = True
                continue
            if read.size:
                records = list(read.slices)
                total += read.size
                remaining -= read.size
        out.append(
            (want, _partition_response(want.partition, ErrorCode.NONE, records=records, **marks))
        )
    return out, total, errored


def _aborted(
    partition: Partition, fetch_offset: int, result: LogReadResult, lso: int
) -> list[AbortedTxn]:
    return [
        {"producer_id": txn.producer_id, "first_offset": txn.first_offset}
        for txn in partition.log.aborted_transactions_for_read(fetch_offset, result, lso)
    ]


def _group_by_topic(results: _Results, by_id: bool) -> list[FetchResponseResponses]:
    topics: list[FetchResponseResponses] = []
    partitions: list[PartitionResponse] = []
    last_key: tuple[str, bytes] | None = None
    for want, response in results:
        key = (want.topic, want.topic_id)
        if key != last_key:
            partitions = []
            topics.append(
                {
                    "topic": want.topic,
                    "topic_id": want.topic_id if by_id else b"\x00" * 16,
                    "partitions": partitions,
                }
            )
            last_key = key
        partitions.append(response)
    return topics


def _upper(
    ctx: BrokerContext, want: FetchPartition, isolation_level: int, follower: bool
) -> int | tuple[int, int]:
    """The readable end of a partition, or -1 when it is gone or not led here. A follower's is
    its log end offset and its high watermark: a held follower fetch also completes when the HW
    moves, so followers learn it at once (Kafka's DelayedFetch case H, KIP-392) rather than
    with the next record or at ``replica.fetch.wait.max.ms``."""
    partition = ctx.replica_manager.partitions.get((want.topic, want.partition))
    if partition is None or not partition.is_leader:
        return -1
    if follower:
        return partition.log_end_offset, partition.high_watermark
    return partition.last_stable_offset if isolation_level == 1 else partition.high_watermark


def _hw_moved(
    ctx: BrokerContext, wanted: list[FetchPartition], seen: list[int | tuple[int, int]]
) -> bool:
    """Whether a held follower fetch's high watermark moved since ``seen`` (then it answers)."""
    for want, mark in zip(wanted, seen, strict=True):
        now = _upper(ctx, want, 0, True)
        if isinstance(now, tuple) and isinstance(mark, tuple) and now[1] != mark[1]:
            return True
    return False


def _forgotten(body: FetchRequest, by_id: bool) -> list[PartitionKey]:
    forgotten: list[PartitionKey] = []
    for topic in body["forgotten_topics_data"]:
        name: bytes | str = bytes(topic["topic_id"]) if by_id else topic["topic"]
        forgotten.extend((name, index) for index in topic["partitions"])
    return forgotten


def _resolve_names(ctx: BrokerContext, partitions: list[FetchPartition]) -> None:
    """Names of a topic-id session's partitions from the current image ("" once unknown)."""
    names: dict[bytes, str] = {}
    for wanted in partitions:
        name = names.get(wanted.topic_id)
        if name is None:
            name = names[wanted.topic_id] = ctx.topic_name(wanted.topic_id) or ""
        wanted.topic = name


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


async def handle_fetch(ctx: BrokerContext, request: TypedRequest[FetchRequest]) -> FetchResponse:
    body = request.body
    version = request.header.api_version
    by_id = version >= 13
    replica = _replica_of(body, version)
    session: FetchContext = ctx.fetch_sessions.new_context(
        session_id=body["session_id"],
        epoch=body["session_epoch"],
        uses_topic_ids=by_id,
        privileged=replica is not None,
        partitions=_wanted_partitions(ctx, body, version),
        forgotten=_forgotten(body, by_id),
        now_ms=_now_ms(),
    )
    wanted = session.partitions
    if session.incremental and by_id:
        _resolve_names(ctx, wanted)
    isolation_level = 0 if replica is not None else body["isolation_level"]
    max_bytes = body["max_bytes"]
    min_bytes = body["min_bytes"]
    max_wait_s = max(body["max_wait_ms"], 0) / 1000.0

    async def read_once() -> tuple[_Results, int, bool]:
        if replica is not None:
            return _read_follower_once(ctx, wanted, max_bytes, replica, by_id)
        return await _read_once(
            ctx, wanted, max_bytes, isolation_level, by_id, skip_unchanged=session.incremental
        )

    follower = replica is not None
    results, total, errored = await read_once()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_wait_s
    while total < max(min_bytes, 1) and not errored and wanted:
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        keys = [(w.topic, w.partition) for w in wanted]
        # Wake when any partition's readable end moves past what the last read saw.
        seen = [_upper(ctx, w, isolation_level, follower) for w in wanted]

        def has_new_data(seen: list[int | tuple[int, int]] = seen) -> bool:
            return any(
                _upper(ctx, w, isolation_level, follower) != mark
                for w, mark in zip(wanted, seen, strict=True)
            )

        woke = await ctx.replica_manager.fetch_waiters.wait_until(keys, has_new_data, remaining)
        results, total, errored = await read_once()
        if not woke or (follower and _hw_moved(ctx, wanted, seen)):
            break
    error, session_id, results = ctx.fetch_sessions.complete(session, results, _now_ms())
    ctx.topic_metrics.fetched_partitions(results, follower=follower)
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "session_id": session_id,
        "responses": _group_by_topic(results, by_id),
    }
