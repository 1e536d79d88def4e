"""The share coordinator (KIP-932): share-partition state persisted in ``__share_group_state``,
and its inter-broker APIs InitializeShareGroupState (83), ReadShareGroupState (84),
WriteShareGroupState (85), DeleteShareGroupState (86) and ReadShareGroupStateSummary (87).

Contract:

- The state of share-partition ``(group, topic id, partition)`` lives in partition
  ``abs(java_hash("group:topicId:partition")) % share.coordinator.state.topic.num.partitions``
  of ``__share_group_state`` (Kafka's share-coordinator key); its leader is the share
  coordinator for it, any other broker answers NOT_COORDINATOR.
- The topic is created on first use from the ``share.coordinator.state.topic.*`` keys, like
  ``__consumer_offsets``: replicated, ``min.insync.replicas`` from the min.isr key, unclean
  election off, ``cleanup.policy=delete`` with no time or size retention: the coordinator
  deletes the records that every key's newer snapshot made redundant, at most once per
  ``share.coordinator.state.topic.prune.interval.ms`` (as Kafka's share coordinator prunes).
- A leader loads its partition by replaying it (:mod:`sparklog.coordinator.log_replay`) the
  first time it is asked after becoming leader (or after its leader epoch changed). Every
  change is appended with ``acks=all`` before it is applied and answered, so an answered write
  survives the loss of this broker.
- Operations on one partition run one at a time (an asyncio lock).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypedDict, TypeVar

from sparklog.coordinator.coordinator import partition_for
from sparklog.coordinator.log_replay import replay_batches
from sparklog.coordinator.runtime import CoordinatorContext, Handler
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.kafka_uuid import uuid_to_str
from sparklog.protocol.message_types import (
    ApiKey,
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateRequest,
    ReadShareGroupStateRequestTopicsPartitions,
    ReadShareGroupStateResponse,
    ReadShareGroupStateResponseResultsPartitions,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryRequestTopicsPartitions,
    ReadShareGroupStateSummaryResponse,
    ReadShareGroupStateSummaryResponseResultsPartitions,
    WriteShareGroupStateRequest,
    WriteShareGroupStateRequestTopicsPartitions,
    WriteShareGroupStateRequestTopicsPartitionsStateBatches,
    WriteShareGroupStateResponse,
    WriteShareGroupStateResponseResultsPartitions,
)
from sparklog.protocol.record_codec import RecordInput, build_batch
from sparklog.share.state_store import (
    Batch,
    ShareRecordError,
    ShareState,
    ShareStateStore,
    StateKey,
)

log = logging.getLogger(__name__)

SHARE_STATE_TOPIC = "__share_group_state"


def share_coordinator_key(group_id: str, topic_id: bytes, partition: int) -> str:
    return f"{group_id}:{uuid_to_str(topic_id)}:{partition}"


def state_partition(ctx: CoordinatorContext, group_id: str, topic_id: bytes, partition: int) -> int:
    partitions = int(ctx.config.get("share.coordinator.state.topic.num.partitions"))
    return partition_for(share_coordinator_key(group_id, topic_id, partition), partitions)


async def ensure_state_topic(ctx: CoordinatorContext) -> None:
    """Create ``__share_group_state`` from the share.coordinator.state.topic.* keys if absent."""
    if SHARE_STATE_TOPIC in ctx.image.topics.by_name:
        return
    live = sum(
        1
        for b in ctx.image.cluster.brokers.values()
        if not b.fenced and not b.in_controlled_shutdown
    )
    prefix = "share.coordinator.state.topic"
    replication = max(1, min(int(ctx.config.get(f"{prefix}.replication.factor")), live))
    min_isr = min(int(ctx.config.get(f"{prefix}.min.isr")), replication)
    request = {
        "topics": [
            {
                "name": SHARE_STATE_TOPIC,
                "num_partitions": int(ctx.config.get(f"{prefix}.num.partitions")),
                "replication_factor": replication,
                "assignments": [],
                "configs": [
                    {"name": "cleanup.policy", "value": "delete"},
                    {"name": "retention.ms", "value": "-1"},
                    {"name": "retention.bytes", "value": "-1"},
                    {
                        "name": "segment.bytes",
                        "value": str(ctx.config.get(f"{prefix}.segment.bytes")),
                    },
                    {"name": "min.insync.replicas", "value": str(min_isr)},
                    {"name": "unclean.leader.election.enable", "value": "false"},
                    {"name": "compression.type", "value": "producer"},
                ],
            }
        ],
        "timeout_ms": 30000,
        "validate_only": False,
    }
    response = await ctx.controller("create_topics", request, 7)
    for result in response["topics"]:
        if result["error_code"] not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            log.warning("Could not create %s: %s", SHARE_STATE_TOPIC, result.get("error_message"))


@dataclass
class _Loaded:
    leader_epoch: int
    store: ShareStateStore
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    pruned_at: float = 0.0


@dataclass
class ShareStateCoordinator:
    """The ``__share_group_state`` partitions this broker leads, loaded on demand."""

    ctx: CoordinatorContext
    loaded: dict[int, _Loaded] = field(default_factory=dict)

    def _load(self, index: int) -> _Loaded:
        runtime = self.ctx.coordinator_runtime
        partition = runtime.leader_partition(SHARE_STATE_TOPIC, index)
        if partition is None:
            raise KafkaApiError(ErrorCode.NOT_COORDINATOR, "This is not the share coordinator.")
        found = self.loaded.get(index)
        if found is not None and found.leader_epoch == partition.leader_epoch:
            return found
        per_snapshot = int(
            self.ctx.config.get("share.coordinator.snapshot.update.records.per.snapshot")
        )
        store = ShareStateStore(per_snapshot, clock=lambda: int(time.time() * 1000))
        name = f"{SHARE_STATE_TOPIC}-{index}"
        for _header, records in replay_batches(
            runtime, SHARE_STATE_TOPIC, partition, control=False
        ):
            for record in records:
                try:
                    store.replay(record.key, record.value, record.offset)
                except ShareRecordError as exc:
                    log.warning("Skipping record %d of %s: %s", record.offset, name, exc)
        log.info(
            "Loaded %d share-partition state(s) from %s (epoch %d)",
            len(store.states),
            name,
            partition.leader_epoch,
        )
        loaded = _Loaded(partition.leader_epoch, store)
        self.loaded[index] = loaded
        return loaded

    async def _append(
        self, index: int, loaded: _Loaded, records: list[tuple[bytes, bytes | None]]
    ) -> None:
        if not records:
            return
        batch = build_batch([RecordInput(k, v) for k, v in records])
        base_offset = await self.ctx.coordinator_runtime.append(
            SHARE_STATE_TOPIC, index, bytearray(batch)
        )
        for delta, (key, value) in enumerate(records):
            loaded.store.replay(key, value, base_offset + delta)
        self._maybe_prune(index, loaded)

    def _maybe_prune(self, index: int, loaded: _Loaded) -> None:
        """Delete the records every key's newer snapshot made redundant, at most once per
        ``share.coordinator.state.topic.prune.interval.ms``."""
        now = time.monotonic()
        interval_s = int(self.ctx.config.get("share.coordinator.state.topic.prune.interval.ms"))
        if now - loaded.pruned_at < interval_s / 1000:
            return
        loaded.pruned_at = now
        runtime = self.ctx.coordinator_runtime
        partition = runtime.leader_partition(SHARE_STATE_TOPIC, index)
        if partition is None:
            return
        target = min(loaded.store.redundant_before(), partition.high_watermark)
        if target <= partition.log_start_offset:
            return
        try:
            runtime.delete_records(SHARE_STATE_TOPIC, index, target)
            log.debug("Pruned %s-%d below offset %d", SHARE_STATE_TOPIC, index, target)
        except KafkaApiError as exc:
            log.info("Could not prune %s-%d: %s", SHARE_STATE_TOPIC, index, exc.message)

    async def run(
        self, group_id: str, topic_id: bytes, partition: int, op: str, **args: Any
    ) -> tuple[ErrorCode, ShareState | None]:
        """One operation on one share-partition's state: ``read``, ``write``, ``initialize``,
        ``delete`` or ``summary``."""
        index = state_partition(self.ctx, group_id, topic_id, partition)
        try:
            loaded = self._load(index)
        except KafkaApiError as exc:
            return exc.code, None
        key: StateKey = (group_id, bytes(topic_id), partition)
        async with loaded.lock:
            store = loaded.store
            state: ShareState | None = None
            if op in ("read", "summary"):
                code, state, records = store.read(key, args.get("leader_epoch", -1))
                if op == "summary":
                    records = []
            elif op == "write":
                code, records = store.write(
                    key,
                    args["state_epoch"],
                    args["leader_epoch"],
                    args["start_offset"],
                    args["batches"],
                    args.get("delivery_complete_count", -1),
                )
            elif op == "initialize":
                code, records = store.initialize(key, args["state_epoch"], args["start_offset"])
            else:
                code, records = ErrorCode.NONE, store.delete(key)
            if code != ErrorCode.NONE:
                return code, None
            try:
                await self._append(index, loaded, records)
            except KafkaApiError as exc:
                log.warning(
                    "Could not write share state to %s-%d: %s",
                    SHARE_STATE_TOPIC,
                    index,
                    exc.message,
                )
                code = exc.code
                if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    code = ErrorCode.NOT_COORDINATOR
                elif code != ErrorCode.NOT_COORDINATOR:
                    code = ErrorCode.COORDINATOR_NOT_AVAILABLE
                return code, None
            return ErrorCode.NONE, state


def coordinator(ctx: CoordinatorContext) -> ShareStateCoordinator:
    found = ctx.share_state
    if found is None:
        found = ctx.share_state = ShareStateCoordinator(ctx)
    assert isinstance(found, ShareStateCoordinator)
    return found


def _batches(
    items: list[WriteShareGroupStateRequestTopicsPartitionsStateBatches],
) -> tuple[Batch, ...]:
    return tuple(
        (b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
        for b in items
    )


class _Partition(TypedDict):
    """What every share-state request names a partition with."""

    partition: int


_P = TypeVar("_P", bound=_Partition)
_R = TypeVar("_R")


class _Topic(TypedDict, Generic[_P]):
    """A request's ``topics`` entry, as all five share-state requests declare it."""

    topic_id: bytes
    partitions: list[_P]


class _Request(TypedDict, Generic[_P]):
    """The body all five share-state requests declare: a group and its topics' partitions."""

    group_id: str
    topics: list[_Topic[_P]]


class _Results(TypedDict, Generic[_R], total=False):
    """A response's ``results`` entry, as all five share-state responses declare it."""

    topic_id: bytes
    partitions: list[_R]


class _Response(TypedDict, Generic[_R], total=False):
    """The body all five share-state responses declare: per-topic results."""

    results: list[_Results[_R]]


async def _each(
    ctx: CoordinatorContext,
    body: _Request[_P],
    op: str,
    args: Callable[[_P], dict[str, Any]],
    answer: Callable[[_P, ErrorCode, ShareState | None], _R],
) -> _Response[_R]:
    """The response body: ``op`` run with ``args(p)`` on each partition ``p`` of each topic, in
    the request's order, each answered by ``answer(p, code, state)``."""
    results: list[_Results[_R]] = []
    for topic in body["topics"]:
        topic_id = bytes(topic["topic_id"])
        partitions = []
        for p in topic["partitions"]:
            code, state = await coordinator(ctx).run(
                body["group_id"], topic_id, p["partition"], op, **args(p)
            )
            partitions.append(answer(p, code, state))
        results.append({"topic_id": topic_id, "partitions": partitions})
    return {"results": results}


def _plain(
    p: _Partition, code: ErrorCode, state: ShareState | None
) -> WriteShareGroupStateResponseResultsPartitions:
    """Initialize, Write and Delete answer a partition alike (their TypedDicts are equal)."""
    return {"partition": p["partition"], "error_code": int(code), "error_message": None}


def _leader_epoch(
    p: ReadShareGroupStateRequestTopicsPartitions
    | ReadShareGroupStateSummaryRequestTopicsPartitions,
) -> dict[str, Any]:
    return {"leader_epoch": p["leader_epoch"]}


def _read_answer(
    p: ReadShareGroupStateRequestTopicsPartitions, code: ErrorCode, state: ShareState | None
) -> ReadShareGroupStateResponseResultsPartitions:
    return {
        "partition": p["partition"],
        "error_code": int(code),
        "error_message": None,
        "state_epoch": state.state_epoch if state else -1,
        "start_offset": state.start_offset if state else -1,
        "state_batches": [
            {"first_offset": f, "last_offset": last, "delivery_state": s, "delivery_count": c}
            for f, last, s, c in (state.batches if state else ())
        ],
    }


def _summary_answer(
    p: ReadShareGroupStateSummaryRequestTopicsPartitions,
    code: ErrorCode,
    state: ShareState | None,
) -> ReadShareGroupStateSummaryResponseResultsPartitions:
    return {
        "partition": p["partition"],
        "error_code": int(code),
        "error_message": None,
        "state_epoch": state.state_epoch if state else -1,
        "leader_epoch": state.leader_epoch if state else -1,
        "start_offset": state.start_offset if state else -1,
        "delivery_complete_count": state.delivery_complete_count if state else -1,
    }


def _write_args(p: WriteShareGroupStateRequestTopicsPartitions) -> dict[str, Any]:
    return {
        "state_epoch": p["state_epoch"],
        "leader_epoch": p["leader_epoch"],
        "start_offset": p["start_offset"],
        "batches": _batches(p["state_batches"]),
        "delivery_complete_count": p["delivery_complete_count"],
    }


async def handle_initialize(
    ctx: CoordinatorContext,
    request: TypedRequest[InitializeShareGroupStateRequest],
    listener: str,
) -> InitializeShareGroupStateResponse:
    return await _each(
        ctx,
        request.body,
        "initialize",
        lambda p: {"state_epoch": p["state_epoch"], "start_offset": p["start_offset"]},
        _plain,
    )


async def handle_read(
    ctx: CoordinatorContext, request: TypedRequest[ReadShareGroupStateRequest], listener: str
) -> ReadShareGroupStateResponse:
    return await _each(ctx, request.body, "read", _leader_epoch, _read_answer)


async def handle_write(
    ctx: CoordinatorContext, request: TypedRequest[WriteShareGroupStateRequest], listener: str
) -> WriteShareGroupStateResponse:
    return await _each(ctx, request.body, "write", _write_args, _plain)


async def handle_delete(
    ctx: CoordinatorContext, request: TypedRequest[DeleteShareGroupStateRequest], listener: str
) -> DeleteShareGroupStateResponse:
    return await _each(ctx, request.body, "delete", lambda p: {}, _plain)


async def handle_summary(
    ctx: CoordinatorContext,
    request: TypedRequest[ReadShareGroupStateSummaryRequest],
    listener: str,
) -> ReadShareGroupStateSummaryResponse:
    return await _each(ctx, request.body, "summary", _leader_epoch, _summary_answer)


SHARE_STATE_HANDLERS: dict[int, Handler] = {
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: handle_initialize,
    ApiKey.READ_SHARE_GROUP_STATE: handle_read,
    ApiKey.WRITE_SHARE_GROUP_STATE: handle_write,
    ApiKey.DELETE_SHARE_GROUP_STATE: handle_delete,
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: handle_summary,
}
