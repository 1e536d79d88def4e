"""The group coordinator of one broker: a :class:`GroupShard` per ``__consumer_offsets``
partition it leads, driven on the event loop.

Contract:
- The coordinator of a group is the leader of partition ``abs(java_hash(group_id)) % N`` of
  ``__consumer_offsets`` (N = ``offsets.topic.num.partitions``; Java's ``String.hashCode``, so
  Kafka clients and tools agree on the partition). A request for a group whose partition we
  do not lead is NOT_COORDINATOR.
- The loaded partitions and their replay are a collaborator,
  :class:`sparklog.coordinator.group_shards.GroupShardTable`; this module holds the
  operations, the appends and the timers.
- A shard is loaded by replaying its partition from the log start to the high watermark the
  first time a request needs it after we became leader (or after the leader epoch changed);
  its state is the log, so a restart or a failover is a replay.
- Operations run one at a time per shard (an asyncio lock): the state change, then the append
  of the records it produced (acks=all), then the answers. A client never hears of a change
  that is not in the log; when the append fails, every answer of that operation becomes the
  error Kafka gives (NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE).
- Offsets committed in a transaction (TxnOffsetCommit) are written in a transactional batch of
  the producer and held as pending until :meth:`GroupCoordinator.complete_transaction` (called
  when a COMMIT/ABORT marker lands on the partition); replay honours the control batches the
  same way, so after a restart an undecided transaction's offsets stay pending.
- Share groups (KIP-932) are persisted the same way (:meth:`GroupCoordinator.run_share_op`,
  :class:`~sparklog.coordinator.share_records.ShareGroupStore`); a load replays them too.
- :meth:`run` drives the timers (session expiry, rebalance deadlines, offsets retention) and,
  when the node stops, answers every parked JoinGroup/SyncGroup with NOT_COORDINATOR so the
  listeners can drain.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from sparklog.config import ServerConfig
from sparklog.coordinator.consumer_group import (
    ConsumerConfig,
    ConsumerGroup,
    HeartbeatRequest,
    HeartbeatResult,
    TopicResolver,
)
from sparklog.coordinator.group_metadata import (
    ClassicGroup,
    Effects,
    GroupConfig,
    JoinResult,
    SyncResult,
)
from sparklog.coordinator.group_shards import OFFSETS_TOPIC, GroupShardTable, LoadedGroups
from sparklog.coordinator.offsets import (
    CommitPartition,
    CommittedOffset,
    PendingOffsets,
    commit_error,
    commit_offsets,
    complete_txn_offsets,
    delete_offsets,
    expire_offsets,
    fetch_offsets,
    has_pending_offset,
    stage_txn_offsets,
    txn_commit_error,
)
from sparklog.coordinator.rebalance import GroupShard, JoinRequest, SyncRequest, TopicPartition
from sparklog.coordinator.records import group_key, offset_key
from sparklog.coordinator.runtime import CoordinatorRuntime
from sparklog.coordinator.share_records import ShareGroupStore
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.record_codec import RecordInput, build_batch
from sparklog.protocol.records import NO_SEQUENCE
from sparklog.share.share_group import ShareGroups

__all__ = [
    "OFFSETS_TOPIC",
    "GroupCoordinator",
    "consumer_config_from",
    "group_config_from",
    "java_string_hash",
    "partition_for",
]

log = logging.getLogger(__name__)

T = TypeVar("T")
_MAX_TIMER_WAIT_S = 1.0


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    h = java_string_hash(group_id)
    # Kafka's Utils.abs maps Integer.MIN_VALUE to 0 rather than overflowing.
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


def group_config_from(config: ServerConfig) -> GroupConfig:
    return GroupConfig(
        min_session_timeout_ms=int(config.get("group.min.session.timeout.ms")),
        max_session_timeout_ms=int(config.get("group.max.session.timeout.ms")),
        initial_rebalance_delay_ms=int(config.get("group.initial.rebalance.delay.ms")),
        max_size=int(config.get("group.max.size")),
        offsets_retention_ms=int(config.get("offsets.retention.minutes")) * 60_000,
        offset_metadata_max_bytes=int(config.get("offset.metadata.max.bytes")),
    )


def consumer_config_from(config: ServerConfig) -> ConsumerConfig:
    return ConsumerConfig(
        session_timeout_ms=int(config.get("group.consumer.session.timeout.ms")),
        heartbeat_interval_ms=int(config.get("group.consumer.heartbeat.interval.ms")),
        assignors=tuple(config.get("group.consumer.assignors")),
    )


def _now_ms() -> int:
    return int(time.time() * 1000)


def _append_error(code: ErrorCode) -> ErrorCode:
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.COORDINATOR_NOT_AVAILABLE


class GroupCoordinator:
    def __init__(
        self,
        config: GroupConfig,
        num_partitions: int,
        runtime: CoordinatorRuntime,
        *,
        retention_check_interval_ms: int = 600_000,
        clock: Callable[[], int] = _now_ms,
        consumer_config: ConsumerConfig | None = None,
        share_groups: ShareGroups | None = None,
    ) -> None:
        self.config = config
        self.consumer_config = consumer_config or ConsumerConfig()
        self.num_partitions = num_partitions
        self.runtime = runtime
        self.retention_check_interval_ms = retention_check_interval_ms
        self.clock = clock
        self.share = ShareGroupStore(share_groups or ShareGroups(45_000, 200), self.partition_for)
        self.shards = GroupShardTable(
            config, self.consumer_config, runtime, clock, self.share, num_partitions
        )
        self.share_groups = self.share.groups
        self.share_groups.overrides = self.shards.group_overrides
        self._wake = asyncio.Event()
        self._next_retention_ms = clock() + retention_check_interval_ms

    @classmethod
    def from_config(cls, config: ServerConfig, runtime: CoordinatorRuntime) -> GroupCoordinator:
        return cls(
            group_config_from(config),
            int(config.get("offsets.topic.num.partitions")),
            runtime,
            retention_check_interval_ms=int(config.get("offsets.retention.check.interval.ms")),
            consumer_config=consumer_config_from(config),
            share_groups=ShareGroups(
                int(config.get("group.share.session.timeout.ms")),
                int(config.get("group.share.max.size")),
            ),
        )

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    # -- shards ---------------------------------------------------------------------------
    def _shard(self, group_id: str) -> LoadedGroups:
        return self.shards.at(self.partition_for(group_id))

    async def run_share_op(
        self, group_id: str, op: Callable[[ShareGroups], T], resolve: TopicResolver
    ) -> T:
        """``op`` on the share groups under the lock of ``group_id``'s shard (loaded first),
        its changes appended before it returns (:meth:`ShareGroupStore.run`)."""
        loaded = self._shard(group_id)
        async with loaded.lock:
            return await self.share.run(
                loaded.index, op, resolve, lambda records: self._apply(loaded, Effects(records))
            )

    def load_led_shards(self) -> None:
        """Load every ``__consumer_offsets`` partition we lead that is not loaded yet, so
        :attr:`share_groups` holds all of their share groups."""
        self.shards.led()

    async def _apply(self, loaded: LoadedGroups, fx: Effects) -> ErrorCode | None:
        """Append the operation's records, then deliver its answers (errors if the append
        failed). Returns the append's error, if any."""
        error: ErrorCode | None = None
        if fx.records:
            batch = build_batch([RecordInput(key, value) for key, value in fx.records])
            try:
                await self.runtime.append(OFFSETS_TOPIC, loaded.index, bytearray(batch))
            except KafkaApiError as exc:
                error = _append_error(exc.code)
                log.warning(
                    "Could not write %d record(s) to %s-%d: %s",
                    len(fx.records),
                    OFFSETS_TOPIC,
                    loaded.index,
                    exc.message,
                )
        for responder, result in fx.replies:
            responder(result if error is None else error)
        if fx.replies:
            self._wake.set()
        return error

    async def _run_op(self, group_id: str, op: Callable[[GroupShard, Effects], Any]) -> Any:
        loaded = self._shard(group_id)
        async with loaded.lock:
            fx = Effects()
            outcome = op(loaded.shard, fx)
            error = await self._apply(loaded, fx)
        self._wake.set()
        return error if error is not None else outcome

    async def _await_answer(
        self, group_id: str, start: Callable[[GroupShard, Callable[[Any], None], Effects], None]
    ) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def responder(result: Any) -> None:
            if not future.done():
                future.set_result(result)

        await self._run_op(group_id, lambda shard, fx: start(shard, responder, fx))
        return await future

    # -- operations -----------------------------------------------------------------------
    async def join_group(self, req: JoinRequest) -> JoinResult:
        if req.group_id in self._shard(req.group_id).consumer.groups:
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=req.member_id)
        result = await self._await_answer(
            req.group_id, lambda shard, respond, fx: shard.join_group(req, respond, fx)
        )
        return result if isinstance(result, JoinResult) else JoinResult(result)

    async def sync_group(self, req: SyncRequest) -> SyncResult:
        result = await self._await_answer(
            req.group_id, lambda shard, respond, fx: shard.sync_group(req, respond, fx)
        )
        return result if isinstance(result, SyncResult) else SyncResult(result)

    async def heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        loaded = self._shard(group_id)
        error = loaded.shard.heartbeat(group_id, member_id, instance_id, generation_id)
        self._wake.set()
        return error

    async def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> list[ErrorCode] | ErrorCode | None:
        outcome: list[ErrorCode] | ErrorCode | None = await self._run_op(
            group_id, lambda shard, fx: shard.leave_group(group_id, leaving, fx)
        )
        return outcome

    async def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        partitions: list[CommitPartition],
    ) -> ErrorCode | list[ErrorCode]:
        consumer = self._shard(group_id).consumer

        def op(shard: GroupShard, fx: Effects) -> ErrorCode | list[ErrorCode]:
            if group_id in consumer.groups:
                error = consumer.commit_error(group_id, member_id, generation_id)
                if error is not None:
                    return error
                errors = commit_offsets(shard, group_id, "", partitions, fx)
                shard.groups.pop(group_id, None)
                return errors
            error = commit_error(shard, group_id, generation_id, member_id, instance_id)
            if error is not None:
                return error
            return commit_offsets(shard, group_id, member_id, partitions, fx)

        outcome: ErrorCode | list[ErrorCode] = await self._run_op(group_id, op)
        return outcome

    async def fetch_offsets(
        self, group_id: str, wanted: list[TopicPartition] | None
    ) -> dict[TopicPartition, CommittedOffset]:
        loaded = self._shard(group_id)
        return fetch_offsets(loaded.shard, group_id, wanted)

    def has_pending_offset(self, group_id: str, tp: TopicPartition) -> bool:
        """Whether a transaction not yet decided committed an offset for ``tp``."""
        return has_pending_offset(self._shard(group_id).pending, group_id, tp)

    async def commit_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        partitions: list[CommitPartition],
    ) -> ErrorCode | list[ErrorCode]:
        """TxnOffsetCommit: the offsets are written in a transactional batch of the producer
        and stay pending until the transaction's marker lands."""
        loaded = self._shard(group_id)
        async with loaded.lock:
            if group_id in loaded.consumer.groups:
                error = loaded.consumer.commit_error(group_id, member_id, generation_id)
            else:
                error = txn_commit_error(
                    loaded.shard, group_id, generation_id, member_id, instance_id
                )
            if error is not None:
                return error
            staged: PendingOffsets = {}
            records: list[tuple[bytes, bytes | None]] = []
            errors = stage_txn_offsets(
                loaded.shard, staged, producer_id, group_id, partitions, records
            )
            if records:
                batch = build_batch(
                    [RecordInput(key, value) for key, value in records],
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    base_sequence=self._next_sequence(loaded.index, producer_id, producer_epoch),
                    is_transactional=True,
                )
                try:
                    await self.runtime.append(OFFSETS_TOPIC, loaded.index, bytearray(batch))
                except KafkaApiError as exc:
                    log.warning(
                        "Could not write transactional offsets of %s: %s", group_id, exc.message
                    )
                    if exc.code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED):
                        return ErrorCode.PRODUCER_FENCED
                    return _append_error(exc.code)
                mine = loaded.pending.setdefault(producer_id, {}).setdefault(group_id, {})
                mine.update(staged[producer_id][group_id])
            return errors

    def _next_sequence(self, index: int, producer_id: int, producer_epoch: int) -> int:
        # The log checks sequences of every leader append; Kafka skips that check for the
        # coordinator's own appends. We are the only writer of this producer's batches here
        # (under the shard lock), so continuing its sequence passes the same checks.
        entry = self.runtime.producer_entry(OFFSETS_TOPIC, index, producer_id)
        if entry is None or entry[0] != producer_epoch or entry[1] == NO_SEQUENCE:
            return 0
        return (entry[1] + 1) % (1 << 31)

    def complete_transaction(self, partition: int, producer_id: int, committed: bool) -> None:
        """A COMMIT/ABORT marker of ``producer_id`` landed on ``__consumer_offsets`` partition
        ``partition``: its pending offsets become committed, or are dropped."""
        loaded = self.shards.loaded.get(partition)
        if loaded is None:
            return  # the partition's next load replays the marker
        complete_txn_offsets(loaded.shard, loaded.pending, producer_id, committed)
        for group_id in loaded.consumer.groups:
            group = loaded.shard.groups.get(group_id)
            if group is not None and not group.members:
                loaded.shard.groups.pop(group_id, None)

    async def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> tuple[ErrorCode, list[ErrorCode]] | ErrorCode:
        outcome: tuple[ErrorCode, list[ErrorCode]] | ErrorCode = await self._run_op(
            group_id, lambda shard, fx: delete_offsets(shard, group_id, partitions, fx)
        )
        return outcome

    async def delete_group(self, group_id: str) -> ErrorCode:
        consumer = self._shard(group_id).consumer

        def op(shard: GroupShard, fx: Effects) -> ErrorCode:
            if group_id in consumer.groups:
                code = consumer.delete(group_id, fx)
                if code == ErrorCode.NONE:
                    for topic, partition in shard.offsets.pop(group_id, {}):
                        fx.records.append((offset_key(group_id, topic, partition), None))
                return code
            # Sessions whose deadline has passed expire first, as Kafka's timer would have
            # fired already: a static member closed session.timeout.ms ago is gone.
            shard.tick(fx)
            group = shard.groups.get(group_id)
            if group is None:
                return ErrorCode.GROUP_ID_NOT_FOUND
            if group.members or group.state.value not in ("Empty", "Dead"):
                return ErrorCode.NON_EMPTY_GROUP
            shard.delete_group(group, fx)
            return ErrorCode.NONE

        outcome: ErrorCode = await self._run_op(group_id, op)
        return outcome

    async def consumer_heartbeat(
        self, req: HeartbeatRequest, resolve: TopicResolver
    ) -> HeartbeatResult:
        """ConsumerGroupHeartbeat; a group id held by a classic group with members is
        GROUP_ID_NOT_FOUND (as Kafka: it is not a consumer group)."""

        def op(shard: GroupShard, fx: Effects) -> HeartbeatResult:
            classic = shard.groups.get(req.group_id)
            if classic is not None:
                if classic.members:
                    return HeartbeatResult(
                        ErrorCode.GROUP_ID_NOT_FOUND,
                        message=f"Group {req.group_id} is not a consumer group.",
                    )
                if classic.protocol_type is not None:
                    fx.records.append((group_key(req.group_id), None))
                del shard.groups[req.group_id]
            return self._shard(req.group_id).consumer.heartbeat(req, resolve, fx)

        outcome = await self._run_op(req.group_id, op)
        return outcome if isinstance(outcome, HeartbeatResult) else HeartbeatResult(outcome)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer (KIP-848) group as this coordinator holds it."""
        return self._shard(group_id).consumer.groups.get(group_id)

    def group(self, group_id: str) -> ClassicGroup | None:
        """The group as this coordinator holds it (raises NOT_COORDINATOR if not ours)."""
        return self._shard(group_id).shard.groups.get(group_id)

    def groups(self) -> list[ClassicGroup]:
        """Every classic group of every partition we lead."""
        return [g for loaded in self.shards.led() for g in loaded.shard.groups.values()]

    def consumer_groups(self) -> list[ConsumerGroup]:
        """Every consumer (KIP-848) group of every partition we lead."""
        return [g for loaded in self.shards.led() for g in loaded.consumer.groups.values()]

    def committed_offsets(self) -> Iterator[tuple[str, TopicPartition, int]]:
        """``(group, partition, committed offset)`` of every loaded shard we still lead, for
        metrics: it never loads a shard."""
        for loaded in list(self.shards.loaded.values()):
            if not self.shards.is_current(loaded):
                continue
            for group_id, offsets in list(loaded.shard.offsets.items()):
                for tp, value in list(offsets.items()):
                    yield group_id, tp, value.offset

    # -- timers ---------------------------------------------------------------------------
    def _next_wait_s(self) -> float:
        now = self.clock()
        deadlines = [self._next_retention_ms]
        for loaded in self.shards.loaded.values():
            for deadline in (loaded.shard.next_deadline_ms(), loaded.consumer.next_deadline_ms()):
                if deadline is not None:
                    deadlines.append(deadline)
        wait_ms = min(deadlines) - now
        return min(max(wait_ms / 1000.0, 0.005), _MAX_TIMER_WAIT_S)

    async def run(self, stopping: asyncio.Event) -> None:
        """Fire timers until ``stopping`` is set, then release every parked request."""
        stop_waiter = asyncio.ensure_future(stopping.wait())
        try:
            while not stopping.is_set():
                wake_waiter = asyncio.ensure_future(self._wake.wait())
                await asyncio.wait(
                    {stop_waiter, wake_waiter},
                    timeout=self._next_wait_s(),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                wake_waiter.cancel()
                self._wake.clear()
                if stopping.is_set():
                    break
                try:
                    await self._tick()
                except Exception:
                    log.exception("Group coordinator timers failed")
        finally:
            stop_waiter.cancel()
            self.shards.drop_all()

    async def _tick(self) -> None:
        now = self.clock()
        retention_due = now >= self._next_retention_ms
        if retention_due:
            self._next_retention_ms = now + self.retention_check_interval_ms
        for index, loaded in list(self.shards.loaded.items()):
            if not self.shards.is_current(loaded):
                self.shards.drop(loaded)
                continue
            async with loaded.lock:
                fx = Effects()
                loaded.shard.tick(fx)
                loaded.consumer.tick(fx)
                if retention_due:
                    expired = expire_offsets(loaded.shard, fx)
                    if expired:
                        log.info("Expired %d offset(s) in %s-%d", expired, OFFSETS_TOPIC, index)
                await self._apply(loaded, fx)
