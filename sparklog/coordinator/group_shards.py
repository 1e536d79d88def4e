"""The loaded ``__consumer_offsets`` partitions of the group coordinator: one
:class:`LoadedGroups` per partition this broker leads, rebuilt by replaying the partition.

Contract:
- :meth:`GroupShardTable.at` returns the state of a partition we lead at its current leader
  epoch, loading it (replay from log start to high watermark) when it is missing or was
  loaded at an older epoch; a partition we do not lead is NOT_COORDINATOR. A reload
  abandons the previous state (its parked JoinGroup/SyncGroup answered NOT_COORDINATOR).
- Replay: classic group and offset records rebuild the :class:`GroupShard`, consumer
  (KIP-848) records the :class:`ConsumerGroups`, share records the
  :class:`ShareGroupStore`'s image of the partition; offsets of a transactional batch stay
  pending until the producer's COMMIT/ABORT control record (an undecided transaction's
  offsets stay pending after a restart). A record that does not decode is skipped with a
  warning. A group held by the consumer groups owns its offsets: the classic shell an offset
  record recreated for it is dropped.
- The table never writes to the log; the coordinator appends under each state's lock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sparklog.coordinator.consumer_group import ConsumerConfig, ConsumerGroups
from sparklog.coordinator.consumer_records import CONSUMER_RECORD_TYPES, decode_consumer_record
from sparklog.coordinator.group_metadata import Effects, GroupConfig
from sparklog.coordinator.log_replay import replay_batches
from sparklog.coordinator.offsets import PendingOffsets, complete_txn_offsets
from sparklog.coordinator.rebalance import GroupShard
from sparklog.coordinator.records import CoordinatorRecordError, OffsetRecord, decode_record
from sparklog.coordinator.runtime import CoordinatorRuntime, PartitionView
from sparklog.coordinator.share_records import (
    SHARE_RECORD_TYPES,
    Image,
    ShareGroupStore,
    record_type,
    replay_share_record,
)
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.record_codec import CONTROL_ABORT, CONTROL_COMMIT, decode_control_record
from sparklog.protocol.records import BatchHeader, CorruptRecordError

__all__ = ["OFFSETS_TOPIC", "GroupShardTable", "LoadedGroups"]

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass
class LoadedGroups:
    """The groups of one ``__consumer_offsets`` partition at one leader epoch."""

    index: int
    leader_epoch: int
    shard: GroupShard
    consumer: ConsumerGroups
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    pending: PendingOffsets = field(default_factory=dict)


class GroupShardTable:
    """The loaded partitions, keyed by partition index."""

    def __init__(
        self,
        config: GroupConfig,
        consumer_config: ConsumerConfig,
        runtime: CoordinatorRuntime,
        clock: Callable[[], int],
        share: ShareGroupStore,
        num_partitions: int,
    ) -> None:
        self.config = config
        self.consumer_config = consumer_config
        self.runtime = runtime
        self.clock = clock
        self.share = share
        self.num_partitions = num_partitions
        self.loaded: dict[int, LoadedGroups] = {}

    def leader_partition(self, index: int) -> PartitionView | None:
        return self.runtime.leader_partition(OFFSETS_TOPIC, index)

    def group_overrides(self, group_id: str) -> Mapping[str, str]:
        """The group's dynamic configs in the broker's latest metadata image."""
        image = self.runtime.image
        return {} if image is None else image.configs.group_config(group_id)

    def is_current(self, loaded: LoadedGroups) -> bool:
        partition = self.leader_partition(loaded.index)
        return partition is not None and partition.leader_epoch == loaded.leader_epoch

    def _current_or_load(self, partition: PartitionView) -> LoadedGroups:
        loaded = self.loaded.get(partition.index)
        if loaded is None or loaded.leader_epoch != partition.leader_epoch:
            loaded = self._load(partition)
        return loaded

    def at(self, index: int) -> LoadedGroups:
        """The state of partition ``index`` (loaded now if need be); NOT_COORDINATOR if we do
        not lead it."""
        partition = self.leader_partition(index)
        if partition is None:
            raise KafkaApiError(ErrorCode.NOT_COORDINATOR, "This is not the correct coordinator.")
        return self._current_or_load(partition)

    def led(self) -> list[LoadedGroups]:
        """The state of every partition we lead (loading those not loaded yet)."""
        out: list[LoadedGroups] = []
        for index in range(self.num_partitions):
            partition = self.leader_partition(index)
            if partition is not None:
                out.append(self._current_or_load(partition))
        return out

    def drop(self, loaded: LoadedGroups) -> None:
        """Forget ``loaded`` and answer its parked requests NOT_COORDINATOR."""
        if self.loaded.get(loaded.index) is loaded:
            del self.loaded[loaded.index]
        self.abandon(loaded)

    def drop_all(self) -> None:
        for loaded in list(self.loaded.values()):
            self.drop(loaded)

    @staticmethod
    def abandon(loaded: LoadedGroups) -> None:
        fx = Effects()
        loaded.shard.fail_all_waiters(fx, ErrorCode.NOT_COORDINATOR)
        for responder, result in fx.replies:
            responder(result)

    def _load(self, partition: PartitionView) -> LoadedGroups:
        shard = GroupShard(self.config, self.clock)
        consumer = ConsumerGroups(self.consumer_config, self.clock, self.group_overrides)
        pending: PendingOffsets = {}
        share: dict[str, Image] = {}
        replayed = 0
        name = f"{OFFSETS_TOPIC}-{partition.index}"
        for header, records in replay_batches(self.runtime, OFFSETS_TOPIC, partition):
            if header.is_control:
                self._replay_marker(shard, pending, header, records)
                continue
            for record in records:
                try:
                    key = record.key or b""
                    if record_type(key) in SHARE_RECORD_TYPES:
                        replay_share_record(share, key, record.value)
                        replayed += 1
                        continue
                    if record_type(key) in CONSUMER_RECORD_TYPES:
                        consumer_record = decode_consumer_record(key, record.value)
                        if consumer_record is not None:
                            consumer.replay(consumer_record)
                            replayed += 1
                        continue
                    decoded = decode_record(record.key, record.value)
                except CoordinatorRecordError as exc:
                    log.warning("Skipping record %d of %s: %s", record.offset, name, exc)
                    continue
                if decoded is None:
                    continue
                replayed += 1
                if header.is_transactional and isinstance(decoded, OffsetRecord):
                    if decoded.value is not None:
                        staged = pending.setdefault(header.producer_id, {})
                        offsets = staged.setdefault(decoded.group, {})
                        offsets[(decoded.topic, decoded.partition)] = decoded.value
                    continue
                shard.replay(decoded)
        # Offset records recreate a classic shell for their group; a consumer group owns them.
        for group_id in consumer.groups:
            shard.groups.pop(group_id, None)
        previous = self.loaded.get(partition.index)
        if previous is not None:
            self.abandon(previous)
        loaded = LoadedGroups(
            partition.index, partition.leader_epoch, shard, consumer, pending=pending
        )
        self.share.loaded(partition.index, share)
        self.loaded[partition.index] = loaded
        log.info(
            "Loaded %d group(s) from %s-%d (%d records, epoch %d)",
            len(shard.groups),
            OFFSETS_TOPIC,
            partition.index,
            replayed,
            partition.leader_epoch,
        )
        return loaded

    @staticmethod
    def _replay_marker(
        shard: GroupShard, pending: PendingOffsets, header: BatchHeader, records: list[Any]
    ) -> None:
        for record in records:
            try:
                marker = decode_control_record(record)
            except CorruptRecordError as exc:
                log.warning("Skipping control record %d: %s", record.offset, exc)
                continue
            if marker.control_type in (CONTROL_COMMIT, CONTROL_ABORT):
                complete_txn_offsets(
                    shard, pending, header.producer_id, marker.control_type == CONTROL_COMMIT
                )
