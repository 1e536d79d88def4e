"""ShareFetch (78) and ShareAcknowledge (79) on the partition leader (KIP-932).

The leader keeps a :class:`~sparklog.share.share_partition.SharePartition` per (share group,
partition) it leads and the members' share sessions (:mod:`sparklog.broker.share_partitions`).
A ShareFetch first applies the acknowledgements it carries (persisted through the share
coordinator before the answer says they took effect), then acquires records for the
member from the share-partition's first Available offset up to the high watermark (the last
stable offset under ``share.isolation.level=read_committed``, where aborted batches are never
acquired), whole batches up to ``max_records``; it returns the batches that hold what was
acquired and the acquired ranges with their delivery counts. With nothing to acquire it waits
up to ``max_wait_ms`` for new records, a release, or an expired lock. Epoch -1 (ShareFetch or
ShareAcknowledge) closes the member's session and releases what it still holds.

A new share-partition starts at ``share.auto.offset.reset`` (see
:func:`~sparklog.broker.share_partitions.initial_offset`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypedDict

from sparklog.broker.context import BrokerContext
from sparklog.broker.partition import Partition
from sparklog.broker.share_partitions import group_config, manager
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeRequestTopicsPartitionsAcknowledgementBatches,
    ShareAcknowledgeResponse,
    ShareAcknowledgeResponseResponsesPartitions,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareFetchResponseNodeEndpoints,
    ShareFetchResponseResponses,
    ShareFetchResponseResponsesPartitions,
    ShareFetchResponseResponsesPartitionsCurrentLeader,
)
from sparklog.protocol.records import iter_batches
from sparklog.share.batches import classify_batches
from sparklog.share.share_partition import (
    AckBatch,
    AcknowledgeType,
    AcquiredRange,
    SharePartition,
)
from sparklog.share.share_session import TopicPartitionKey
from sparklog.storage.errors import OffsetMovedToTieredStorageError

_WAIT_SLICE_S = 0.2  # lock expiries are not notified: parked fetches re-check this often
_MAX_READS = 8


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


def _ack_batches(
    items: list[ShareAcknowledgeRequestTopicsPartitionsAcknowledgementBatches],
) -> list[AckBatch]:
    """ShareFetch's and ShareAcknowledge's acknowledgement batches (their TypedDicts are equal)."""
    return [
        AckBatch(b["first_offset"], b["last_offset"], tuple(b["acknowledge_types"])) for b in items
    ]


def _partition(ctx: BrokerContext, topic_id: bytes, index: int) -> Partition:
    name = ctx.topic_name(topic_id)
    if name is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_ID, "Unknown topic id")
    return ctx.replica_manager.leader_partition(name, index)


def _leader(
    ctx: BrokerContext, topic_id: bytes, index: int
) -> ShareFetchResponseResponsesPartitionsCurrentLeader:
    """A partition's current leader as ShareFetch and ShareAcknowledge answer it (KIP-951)."""
    registration = ctx.image.topics.by_id.get(bytes(topic_id))
    part = registration.partitions.get(index) if registration is not None else None
    if part is None:
        return {"leader_id": -1, "leader_epoch": -1}
    return {"leader_id": part.leader, "leader_epoch": part.leader_epoch}


async def _acknowledge(
    ctx: BrokerContext,
    group_id: str,
    member_id: str,
    tp: TopicPartitionKey,
    batches: list[AckBatch],
    now_ms: int,
) -> ErrorCode:
    """Apply one partition's acknowledgements and persist them before answering."""
    mgr = manager(ctx)
    try:
        partition = _partition(ctx, tp[0], tp[1])
        lead = await mgr.share_partition(ctx, group_id, partition, tp[0])
    except KafkaApiError as exc:
        return exc.code
    code = lead.share.acknowledge(member_id, batches, now_ms)
    if code != ErrorCode.NONE:
        return code
    for batch in batches:
        for ack_type in set(batch.types):
            count = (
                batch.last_offset - batch.first_offset + 1
                if len(batch.types) == 1
                else batch.types.count(ack_type)
            )
            ctx.share_metrics.acknowledged(ack_type, count)
    if all(t == AcknowledgeType.RENEW for b in batches for t in b.types):
        return code  # a renewed lock is not persisted state
    code = await mgr.persist(group_id, partition, lead)
    if any(t == AcknowledgeType.RELEASE for b in batches for t in b.types):
        _notify(ctx, group_id, partition)
    return code


def _notify(ctx: BrokerContext, group_id: str, partition: Partition) -> None:
    ctx.replica_manager.fetch_waiters.notify(("share", group_id, partition.topic, partition.index))


async def _release(
    ctx: BrokerContext, group_id: str, member_id: str, tps: list[TopicPartitionKey]
) -> None:
    """Release what ``member_id`` holds in ``tps`` (its session closed) and persist it."""
    mgr = manager(ctx)
    for topic_id, index in tps:
        try:
            partition = _partition(ctx, topic_id, index)
        except KafkaApiError:
            continue
        lead = mgr.loaded(group_id, partition)
        if lead is not None and lead.share.release_member(member_id):
            await mgr.persist(group_id, partition, lead)
            _notify(ctx, group_id, partition)


@dataclass
class _Acquired:
    records: bytes = b""
    ranges: list[AcquiredRange] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(r.last_offset - r.first_offset + 1 for r in self.ranges)


def _overlapping(data: bytes, ranges: list[AcquiredRange]) -> bytes:
    """The batches of ``data`` holding at least one acquired offset."""
    out: list[bytes] = []
    for pos, header in iter_batches(data):
        if any(
            r.first_offset <= header.last_offset and header.base_offset <= r.last_offset
            for r in ranges
        ):
            out.append(data[pos : pos + header.size_in_bytes])
    return b"".join(out)


async def _acquire(
    ctx: BrokerContext,
    sp: SharePartition,
    partition: Partition,
    member_id: str,
    read_committed: bool,
    max_records: int,
    max_bytes: int,
    strict: bool,
    now_ms: int,
) -> _Acquired:
    got = _Acquired()
    rm = ctx.replica_manager
    sp.expire_locks(now_ms)
    upper = partition.last_stable_offset if read_committed else partition.high_watermark
    offset = sp.next_fetch_offset()
    chunks: list[bytes] = []
    for _ in range(_MAX_READS):
        if got.count >= max_records or offset >= upper or max_bytes <= 0:
            break
        try:
            result = rm.read(
                partition,
                offset,
                max_bytes,
                isolation_level=int(read_committed),
                min_one_batch=True,
            )
            data = b"".join(s.read_bytes() for s in result.slices)
            aborted: list[tuple[int, int, int | None]] = (
                [
                    (t.producer_id, t.first_offset, t.last_offset)
                    for t in partition.log.aborted_transactions_for_read(offset, result, upper)
                ]
                if read_committed
                else []
            )
        except OffsetMovedToTieredStorageError:
            if ctx.remote_fetch is None:
                break
            remote = await ctx.remote_fetch(partition, offset, max_bytes, read_committed)
            data = bytes(remote.records)
            # Remote reads give (producer, first offset) only: such a range ends at the
            # producer's next marker.
            aborted = (
                [(p, first, None) for p, first in remote.aborted_transactions]
                if read_committed
                else []
            )
        if not data:
            break
        batches = classify_batches(data, aborted)
        if not batches:
            break
        ranges = sp.acquire(member_id, batches, max_records - got.count, now_ms, strict=strict)
        if ranges:
            got.ranges.extend(ranges)
            piece = _overlapping(data, ranges)
            chunks.append(piece)
            max_bytes -= len(piece)
        offset = sp.next_fetch_offset(batches[-1].last_offset + 1)
    got.records = b"".join(chunks)
    return got


def _partition_response(
    index: int, leader: ShareFetchResponseResponsesPartitionsCurrentLeader
) -> ShareFetchResponseResponsesPartitions:
    return {
        "partition_index": index,
        "error_code": 0,
        "error_message": None,
        "acknowledge_error_code": 0,
        "acknowledge_error_message": None,
        "current_leader": leader,
        "records": b"",
        "acquired_records": [],
    }


def _by_topic(
    results: dict[TopicPartitionKey, ShareFetchResponseResponsesPartitions],
) -> list[ShareFetchResponseResponses]:
    topics: dict[bytes, list[ShareFetchResponseResponsesPartitions]] = {}
    for (topic_id, _index), response in results.items():
        topics.setdefault(topic_id, []).append(response)
    return [{"topic_id": t, "partitions": parts} for t, parts in topics.items()]


def _top_level_error(code: ErrorCode, message: str | None, lock_ms: int) -> ShareFetchResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": int(code),
        "error_message": message,
        "acquisition_lock_timeout_ms": lock_ms,
        "responses": [],
        "node_endpoints": [],
    }


async def handle_share_fetch(
    ctx: BrokerContext, request: TypedRequest[ShareFetchRequest], listener: str = ""
) -> ShareFetchResponse:
    body = request.body
    mgr = manager(ctx)
    group_id, member_id = body["group_id"], body["member_id"]
    lock_ms = mgr.group_partition_config(ctx, group_id or "").lock_duration_ms
    if not group_id or not member_id:
        return _top_level_error(
            ErrorCode.INVALID_REQUEST, "GroupId and MemberId are required.", lock_ms
        )
    epoch = body["share_session_epoch"]
    named: list[TopicPartitionKey] = []
    acks: dict[TopicPartitionKey, list[AckBatch]] = {}
    for topic in body["topics"]:
        for p in topic["partitions"]:
            tp = (bytes(topic["topic_id"]), p["partition_index"])
            named.append(tp)
            if p["acknowledgement_batches"]:
                acks[tp] = _ack_batches(p["acknowledgement_batches"])
    forgotten = [
        (bytes(t["topic_id"]), index)
        for t in body["forgotten_topics_data"]
        for index in t["partitions"]
    ]
    if epoch == -1 and named and not acks:
        return _top_level_error(
            ErrorCode.INVALID_REQUEST, "A final ShareFetch fetches nothing.", lock_ms
        )
    error, session = mgr.sessions.begin(
        group_id, member_id, epoch, [] if epoch == -1 else named, forgotten
    )
    if error != ErrorCode.NONE or session is None:
        return _top_level_error(error, None, lock_ms)
    if epoch == 0:
        for topic_id, index in named:
            try:
                partition = _partition(ctx, topic_id, index)
            except KafkaApiError:
                continue
            await mgr.revalidate(group_id, member_id, partition, topic_id)
    now = _now_ms()
    results: dict[TopicPartitionKey, ShareFetchResponseResponsesPartitions] = {}
    for tp, batches in acks.items():
        code = await _acknowledge(ctx, group_id, member_id, tp, batches, now)
        results[tp] = _partition_response(tp[1], _leader(ctx, *tp))
        results[tp]["acknowledge_error_code"] = int(code)
    if epoch == -1:
        await _release(ctx, group_id, member_id, session.partitions)
        return _response(results, lock_ms)
    await _release(ctx, group_id, member_id, forgotten)
    if body["is_renew_ack"]:
        return _response(results, lock_ms)  # KIP-1222: a renewing request fetches nothing
    strict = body["share_acquire_mode"] == 1
    max_records = body["max_records"] if body["max_records"] > 0 else 500
    wait_s = max(body["max_wait_ms"], 0) / 1000.0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        acquired = await _fetch_session(
            ctx, session.partitions, group_id, member_id, body, max_records, strict, results
        )
        remaining = deadline - loop.time()
        if acquired or remaining <= 0 or not session.partitions:
            break
        await _wait_for_records(ctx, group_id, session.partitions, min(remaining, _WAIT_SLICE_S))
    _count_fetches(ctx, session.partitions, results)
    response = _response(results, lock_ms)
    response["node_endpoints"] = _node_endpoints(ctx, listener, results.values())
    return response


class _Answered(TypedDict, total=False):
    """What :func:`_node_endpoints` reads of a ShareFetch or ShareAcknowledge partition."""

    error_code: int
    current_leader: ShareFetchResponseResponsesPartitionsCurrentLeader


def _node_endpoints(
    ctx: BrokerContext, listener: str, partitions: Iterable[_Answered]
) -> list[ShareFetchResponseNodeEndpoints]:
    """The current leaders of the partitions answered NOT_LEADER_OR_FOLLOWER, on ``listener``
    (KIP-951: the client moves to them without a metadata round trip)."""
    leaders = {
        p["current_leader"]["leader_id"]
        for p in partitions
        if p["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        and p["current_leader"]["leader_id"] >= 0
    }
    out: list[ShareFetchResponseNodeEndpoints] = []
    for node_id in sorted(leaders):
        registration = ctx.image.cluster.broker(node_id)
        endpoint = registration.endpoint(listener) if registration is not None else None
        if endpoint is not None and registration is not None:
            out.append(
                {
                    "node_id": node_id,
                    "host": endpoint.host,
                    "port": endpoint.port,
                    "rack": registration.rack,
                }
            )
    return out


def _count_fetches(
    ctx: BrokerContext,
    partitions: list[TopicPartitionKey],
    results: dict[TopicPartitionKey, ShareFetchResponseResponsesPartitions],
) -> None:
    """Kafka's Total/FailedShareFetchRequestsPerSec: once per partition of the session."""
    for tp in partitions:
        topic = ctx.topic_name(tp[0])
        if topic is None:
            continue
        ctx.share_metrics.mark("TotalShareFetchRequestsPerSec", topic)
        if tp in results and results[tp]["error_code"]:
            ctx.share_metrics.mark("FailedShareFetchRequestsPerSec", topic)


async def _fetch_session(
    ctx: BrokerContext,
    partitions: list[TopicPartitionKey],
    group_id: str,
    member_id: str,
    body: ShareFetchRequest,
    max_records: int,
    strict: bool,
    results: dict[TopicPartitionKey, ShareFetchResponseResponsesPartitions],
) -> int:
    """One acquisition pass over the session's partitions; returns how many records it got."""
    read_committed = (
        group_config(ctx, group_id, "share.isolation.level", "read_uncommitted") == "read_committed"
    )
    max_bytes = body["max_bytes"]
    total = 0
    now = _now_ms()
    for tp in partitions:
        leader = _leader(ctx, *tp)
        try:
            partition = _partition(ctx, *tp)
        except KafkaApiError as exc:
            response = results.setdefault(tp, _partition_response(tp[1], leader))
            response["error_code"] = int(exc.code)
            continue
        if total >= max_records or max_bytes <= 0:
            continue
        try:
            lead = await manager(ctx).share_partition(ctx, group_id, partition, tp[0])
        except KafkaApiError as exc:
            response = results.setdefault(tp, _partition_response(tp[1], leader))
            response["error_code"] = int(exc.code)
            continue
        got = await _acquire(
            ctx,
            lead.share,
            partition,
            member_id,
            read_committed,
            max_records - total,
            max_bytes,
            strict,
            now,
        )
        if not got.ranges:
            continue
        total += got.count
        max_bytes -= len(got.records)
        response = results.setdefault(tp, _partition_response(tp[1], leader))
        response["records"] = got.records
        response["acquired_records"] = [
            {
                "first_offset": r.first_offset,
                "last_offset": r.last_offset,
                "delivery_count": r.delivery_count,
            }
            for r in got.ranges
        ]
    return total


async def _wait_for_records(
    ctx: BrokerContext,
    group_id: str,
    partitions: list[TopicPartitionKey],
    timeout_s: float,
) -> None:
    keys: list[Any] = []
    watched: list[tuple[SharePartition, Partition, bool]] = []
    read_committed = (
        group_config(ctx, group_id, "share.isolation.level", "read_uncommitted") == "read_committed"
    )
    for tp in partitions:
        try:
            partition = _partition(ctx, *tp)
        except KafkaApiError:
            continue
        keys += [
            (partition.topic, partition.index),
            ("share", group_id, partition.topic, partition.index),
        ]
        lead = manager(ctx).loaded(group_id, partition)
        if lead is not None:
            watched.append((lead.share, partition, read_committed))

    def ready() -> bool:
        now = _now_ms()
        for sp, partition, committed in watched:
            sp.expire_locks(now)
            upper = partition.last_stable_offset if committed else partition.high_watermark
            if sp.has_available(upper):
                return True
        return False

    await ctx.replica_manager.fetch_waiters.wait_until(keys, ready, timeout_s)


def _response(
    results: dict[TopicPartitionKey, ShareFetchResponseResponsesPartitions], lock_ms: int
) -> ShareFetchResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout_ms": lock_ms,
        "responses": _by_topic(results),
        "node_endpoints": [],
    }


async def handle_share_acknowledge(
    ctx: BrokerContext, request: TypedRequest[ShareAcknowledgeRequest], listener: str = ""
) -> ShareAcknowledgeResponse:
    body = request.body
    mgr = manager(ctx)
    group_id, member_id = body["group_id"], body["member_id"]
    lock_ms = mgr.group_partition_config(ctx, group_id or "").lock_duration_ms

    def top(code: ErrorCode, message: str | None = None) -> ShareAcknowledgeResponse:
        return {
            "throttle_time_ms": 0,
            "error_code": int(code),
            "error_message": message,
            "acquisition_lock_timeout_ms": lock_ms,
            "responses": [],
            "node_endpoints": [],
        }

    if not group_id or not member_id:
        return top(ErrorCode.INVALID_REQUEST, "GroupId and MemberId are required.")
    epoch = body["share_session_epoch"]
    if epoch == 0:
        return top(ErrorCode.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a session.")
    error, session = mgr.sessions.acknowledge(group_id, member_id, epoch)
    if error != ErrorCode.NONE or session is None:
        return top(error)
    now = _now_ms()
    topics: dict[bytes, list[ShareAcknowledgeResponseResponsesPartitions]] = {}
    for topic in body["topics"]:
        topic_id = bytes(topic["topic_id"])
        for p in topic["partitions"]:
            tp = (topic_id, p["partition_index"])
            code = await _acknowledge(
                ctx, group_id, member_id, tp, _ack_batches(p["acknowledgement_batches"]), now
            )
            topics.setdefault(topic_id, []).append(
                {
                    "partition_index": tp[1],
                    "error_code": int(code),
                    "error_message": None,
                    "current_leader": _leader(ctx, *tp),
                }
            )
    if epoch == -1:
        await _release(ctx, group_id, member_id, session.partitions)
    for topic_id, parts in topics.items():
        name = ctx.topic_name(topic_id)
        if name is None:
            continue
        for part in parts:
            ctx.share_metrics.mark("TotalShareAcknowledgementRequestsPerSec", name)
            if part["error_code"]:
                ctx.share_metrics.mark("FailedShareAcknowledgementRequestsPerSec", name)
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout_ms": lock_ms,
        "responses": [{"topic_id": t, "partitions": parts} for t, parts in topics.items()],
        "node_endpoints": _node_endpoints(
            ctx, listener, [p for parts in topics.values() for p in parts]
        ),
    }
