"""The share-partitions a broker leads and the share sessions of their consumers (Kafka's
SharePartitionManager), with their state persisted through the share coordinator.

Contract:
- A share-partition is loaded the first time it is used under the partition's current leader
  epoch: its persisted state (ReadShareGroupState with that epoch, which fences the previous
  leader's writes) or, for a new one, a window starting at ``share.auto.offset.reset`` (a GROUP
  config; ``latest`` by default), written at once so a later leader finds it. Nothing is
  Acquired after a load: locks do not survive a leader change.
- :meth:`SharePartitionManager.persist` writes a share-partition's whole window (start offset
  and state batches; Acquired records as Available with their delivery counts) and is awaited
  before a client hears that an acknowledgement or a release took effect. Writes of one
  share-partition are serialized and each carries the state as of its turn, so the last write
  is always the newest state.
- Records below the log start offset are forgotten (they were deleted from the log).
- The group configs ``share.auto.offset.reset``, ``share.isolation.level`` and
  ``share.record.lock.duration.ms`` (IncrementalAlterConfigs on the GROUP resource) override
  the defaults; the lock duration is read when a share-partition loads.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace

from sparklog.broker.context import BrokerContext
from sparklog.broker.partition import Partition
from sparklog.broker.share_metrics import InFlight, SharePartitionMetrics
from sparklog.broker.share_persister import SharePersister
from sparklog.config_keys import ConfigError
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.share.offset_reset import parse_offset_reset
from sparklog.share.share_partition import (
    RecordState,
    SharePartition,
    SharePartitionConfig,
    StateBatch,
)
from sparklog.share.share_session import ShareSessions

SharePartitionKey = tuple[str, str, int]  # (group id, topic, partition)


def group_config(ctx: BrokerContext, group_id: str, key: str, default: str) -> str:
    return ctx.image.configs.group_config(group_id).get(key, default)


@dataclass
class LeadShare:
    """A share-partition this broker leads, under one leader epoch."""

    share: SharePartition
    topic_id: bytes
    leader_epoch: int
    state_epoch: int
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    metrics: SharePartitionMetrics = field(default_factory=SharePartitionMetrics)

    def __post_init__(self) -> None:
        self.share.on_lock_timeout = self.metrics.acquisition_lock_timeouts.mark
        self.share.on_acquired = self.metrics.in_flight_batch_messages.update


@dataclass
class SharePartitionManager:
    partition_config: SharePartitionConfig
    persister: SharePersister
    partitions: dict[SharePartitionKey, LeadShare] = field(default_factory=dict)
    sessions: ShareSessions = field(default_factory=ShareSessions)
    _loading: dict[SharePartitionKey, asyncio.Lock] = field(default_factory=dict)

    @classmethod
    def from_context(cls, ctx: BrokerContext) -> SharePartitionManager:
        config = ctx.config
        return cls(
            SharePartitionConfig(
                lock_duration_ms=int(config.get("group.share.record.lock.duration.ms")),
                delivery_count_limit=int(config.get("group.share.delivery.count.limit")),
                max_in_flight=int(config.get("group.share.partition.max.record.locks")),
            ),
            SharePersister(ctx),
        )

    def group_partition_config(self, ctx: BrokerContext, group_id: str) -> SharePartitionConfig:
        """The broker's share-partition settings with the group's
        ``share.record.lock.duration.ms`` override, if any (read when a share-partition loads)."""
        default = self.partition_config.lock_duration_ms
        try:
            lock_ms = int(
                group_config(ctx, group_id, "share.record.lock.duration.ms", str(default))
            )
        except ValueError:
            lock_ms = default
        return replace(self.partition_config, lock_duration_ms=lock_ms)

    def loaded(self, group_id: str, partition: Partition) -> LeadShare | None:
        found = self.partitions.get((group_id, partition.topic, partition.index))
        if found is None or found.leader_epoch != partition.leader_epoch:
            return None
        return found

    async def share_partition(
        self, ctx: BrokerContext, group_id: str, partition: Partition, topic_id: bytes
    ) -> LeadShare:
        key = (group_id, partition.topic, partition.index)
        lock = self._loading.setdefault(key, asyncio.Lock())
        async with lock:
            lead = self.loaded(group_id, partition)
            if lead is None:
                lead = await self._load(ctx, group_id, partition, topic_id)
                self.partitions[key] = lead
        if lead.share.start_offset < partition.log_start_offset:
            lead.share.truncate_below(partition.log_start_offset)
        return lead

    async def _load(
        self, ctx: BrokerContext, group_id: str, partition: Partition, topic_id: bytes
    ) -> LeadShare:
        epoch = partition.leader_epoch
        started = time.monotonic()
        code, state = await self.persister.read(group_id, topic_id, partition.index, epoch)
        ctx.share_metrics.partition_load_time_ms.update((time.monotonic() - started) * 1000)
        if code != ErrorCode.NONE:
            raise KafkaApiError(code, f"Could not read the share-partition state: {code.name}")
        share = SharePartition(0, self.group_partition_config(ctx, group_id))
        if state is not None:
            share.load(
                state.start_offset,
                [StateBatch(f, last, RecordState(s), c) for f, last, s, c in state.batches],
            )
            lead = LeadShare(share, topic_id, epoch, state.state_epoch)
        else:
            share.reset_start(initial_offset(ctx, group_id, partition))
            lead = LeadShare(share, topic_id, epoch, 0)
            code = await self.persist(group_id, partition, lead)
            if code != ErrorCode.NONE:
                raise KafkaApiError(code, f"Could not write the share-partition state: {code.name}")
        return lead

    async def revalidate(
        self, group_id: str, member_id: str, partition: Partition, topic_id: bytes
    ) -> None:
        """A member opens a session on a share-partition no other member of its group has a
        session on: if the persisted state epoch moved (offsets reset or deleted while the
        group was empty), forget the state held here so the next use loads the new one."""
        lead = self.loaded(group_id, partition)
        if lead is None:
            return
        others = any(
            (topic_id, partition.index) in session.partitions
            for (group, member), session in self.sessions.sessions.items()
            if group == group_id and member != member_id
        )
        if others:
            return
        code, state = await self.persister.call(group_id, topic_id, partition.index, "summary")
        if code == ErrorCode.NONE and (state is None or state.state_epoch != lead.state_epoch):
            self.partitions.pop((group_id, partition.topic, partition.index), None)

    async def persist(self, group_id: str, partition: Partition, lead: LeadShare) -> ErrorCode:
        async with lead.lock:
            share = lead.share
            code = await self.persister.write(
                group_id,
                lead.topic_id,
                partition.index,
                state_epoch=lead.state_epoch,
                leader_epoch=lead.leader_epoch,
                start_offset=share.start_offset,
                batches=tuple(
                    (b.first_offset, b.last_offset, int(b.state), b.delivery_count)
                    for b in share.state_batches()
                ),
            )
        if code == ErrorCode.FENCED_STATE_EPOCH:
            # The offsets were reset under us: load the new state on next use.
            self.partitions.pop((group_id, partition.topic, partition.index), None)
        return code


def in_flight(ctx: BrokerContext) -> list[InFlight]:
    """``(group, topic, partition, in-flight records, in-flight batches, meters)`` of every
    share-partition this broker leads now (for SharePartitionMetrics)."""
    found = ctx.shares
    if not isinstance(found, SharePartitionManager):
        return []
    out = []
    for (group, topic, index), lead in list(found.partitions.items()):
        partition = ctx.replica_manager.partitions.get((topic, index))
        if partition is None or not partition.is_leader:
            continue
        share = lead.share
        batches = len(share.state_batches())
        out.append((group, topic, index, share.in_flight_count(), batches, lead.metrics))
    return out


def manager(ctx: BrokerContext) -> SharePartitionManager:
    found = ctx.shares
    if found is None:
        found = ctx.shares = SharePartitionManager.from_context(ctx)
    assert isinstance(found, SharePartitionManager)
    return found


def initial_offset(ctx: BrokerContext, group_id: str, partition: Partition) -> int:
    try:
        kind, duration_ms = parse_offset_reset(
            group_config(ctx, group_id, "share.auto.offset.reset", "latest")
        )
    except ConfigError:
        kind, duration_ms = "latest", 0
    if kind == "earliest":
        return partition.log_start_offset
    if kind == "by_duration":
        found = partition.log.offset_for_timestamp(max(int(time.time() * 1000) - duration_ms, 0))
        return found.offset if found is not None else partition.high_watermark
    return partition.high_watermark
