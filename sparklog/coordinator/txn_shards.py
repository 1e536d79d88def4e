"""The shards of the transaction coordinator: one per ``__transaction_state`` partition this
broker leads, each the replayed state of its partition, and the one way a transition reaches
the log (:meth:`TxnShards.persist`).

Contract:
- A shard is current while we lead its partition at the leader epoch it was loaded at and it
  is still the table's shard for that index; :meth:`TxnShards.at` (re)loads a shard whose
  partition we lead when there is none or its epoch moved, by replaying the partition from
  log start to high watermark. A reload unloads the previous shard (its tasks cancelled).
- A loaded transaction left in PrepareCommit/PrepareAbort is handed to ``on_prepared`` (the
  coordinator's marker phase) so that it is finished after a restart or a failover.
- :meth:`TxnShards.persist` appends the record of a transition with acks=all and applies the
  transition only once it is in the log and the shard is still current; an append that
  reached our log but was not replicated in time is applied when the HW covers it
  (:meth:`TxnShards._settle`), never lost, so the state never falls behind the log a later
  leader loads. Callers hold the shard's lock.
- Tasks of a shard (:meth:`TxnShards.spawn`) are cancelled when it is unloaded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any

from sparklog.coordinator.coordinator import partition_for
from sparklog.coordinator.log_replay import replay_batches
from sparklog.coordinator.runtime import CoordinatorRuntime, PartitionView
from sparklog.coordinator.txn_answers import APPENDED_UNREPLICATED, append_error
from sparklog.coordinator.txn_records import (
    TxnLogValue,
    TxnRecordError,
    TxnState,
    decode_txn_record,
    txn_key,
    txn_value,
)
from sparklog.coordinator.txn_state import TxnMetadata
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.record_codec import RecordInput, build_batch

__all__ = ["TRANSACTION_STATE_TOPIC", "OnPrepared", "TxnShard", "TxnShards"]

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"
_SETTLE_POLL_S = 1.0


@dataclass
class TxnShard:
    """The transactional ids of one ``__transaction_state`` partition at one leader epoch."""

    index: int
    leader_epoch: int
    txns: dict[str, TxnMetadata] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


OnPrepared = Callable[[TxnShard, TxnMetadata, TxnLogValue], None]
"""Called for each loaded transaction in PrepareCommit/PrepareAbort (its prepared state)."""


class TxnShards:
    """The table of loaded shards over the coordinator runtime."""

    def __init__(
        self, runtime: CoordinatorRuntime, num_partitions: int, on_prepared: OnPrepared
    ) -> None:
        self.runtime = runtime
        self.num_partitions = num_partitions
        self.on_prepared = on_prepared
        self._shards: dict[int, TxnShard] = {}

    def loaded(self) -> list[TxnShard]:
        """The shards loaded now (some may no longer be current)."""
        return list(self._shards.values())

    def leader_partition(self, index: int) -> PartitionView | None:
        return self.runtime.leader_partition(TRANSACTION_STATE_TOPIC, index)

    def current(self, shard: TxnShard) -> bool:
        partition = self.leader_partition(shard.index)
        return (
            partition is not None
            and partition.leader_epoch == shard.leader_epoch
            and self._shards.get(shard.index) is shard
        )

    def at(self, index: int) -> TxnShard | None:
        """The current shard of partition ``index`` (loaded now if need be); None if we do
        not lead it."""
        partition = self.leader_partition(index)
        if partition is None:
            return None
        shard = self._shards.get(index)
        if shard is None or shard.leader_epoch != partition.leader_epoch:
            shard = self._load(partition)
        return shard

    def of(self, transactional_id: str) -> TxnShard:
        """The shard of ``transactional_id``; NOT_COORDINATOR if we do not lead it."""
        shard = self.at(partition_for(transactional_id, self.num_partitions))
        if shard is None:
            raise KafkaApiError(ErrorCode.NOT_COORDINATOR, "This is not the correct coordinator.")
        return shard

    def refresh(self) -> None:
        """Unload the shards no longer current and load every partition we lead."""
        for index in range(self.num_partitions):
            shard = self._shards.get(index)
            if shard is not None and not self.current(shard):
                self.unload(shard)
            self.at(index)

    def all_transactions(self) -> Iterator[TxnMetadata]:
        for index in range(self.num_partitions):
            shard = self.at(index)
            if shard is not None:
                yield from shard.txns.values()

    def _load(self, partition: PartitionView) -> TxnShard:
        shard = TxnShard(partition.index, partition.leader_epoch)
        name = f"{TRANSACTION_STATE_TOPIC}-{partition.index}"
        replayed = 0
        batches = replay_batches(self.runtime, TRANSACTION_STATE_TOPIC, partition, control=False)
        for _, records in batches:
            for record in records:
                try:
                    transactional_id, value = decode_txn_record(record.key, record.value)
                except TxnRecordError as exc:
                    log.warning("Skipping record %d of %s: %s", record.offset, name, exc)
                    continue
                replayed += 1
                if value is None or value.state is TxnState.DEAD:
                    shard.txns.pop(transactional_id, None)
                else:
                    shard.txns[transactional_id] = TxnMetadata.from_log(transactional_id, value)
        previous = self._shards.get(partition.index)
        if previous is not None:
            self.unload(previous)
        self._shards[partition.index] = shard
        log.info(
            "Loaded %d transactional id(s) from %s (%d records, epoch %d)",
            len(shard.txns),
            name,
            replayed,
            partition.leader_epoch,
        )
        for meta in shard.txns.values():
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                log.info(
                    "Resuming the markers of %s (%s, producer %d epoch %d)",
                    meta.transactional_id,
                    meta.state.display_name,
                    meta.producer_id,
                    meta.producer_epoch,
                )
                self.on_prepared(shard, meta, meta.snapshot())
        return shard

    def unload(self, shard: TxnShard) -> None:
        for task in list(shard.tasks):
            task.cancel()
        shard.tasks.clear()
        if self._shards.get(shard.index) is shard:
            del self._shards[shard.index]

    def unload_all(self) -> None:
        for shard in self.loaded():
            self.unload(shard)

    @staticmethod
    def spawn(shard: TxnShard, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as a task of ``shard`` (cancelled when the shard is unloaded)."""
        task = asyncio.get_running_loop().create_task(work)
        shard.tasks.add(task)
        task.add_done_callback(shard.tasks.discard)

    async def persist(
        self,
        shard: TxnShard,
        meta: TxnMetadata,
        target: TxnLogValue,
        then: Callable[[], None] | None = None,
    ) -> ErrorCode:
        """Append ``target`` for ``meta`` and apply it (then call ``then``); the error for the
        client if not. An append that is in our log but not yet replicated is applied (and
        ``then`` called) once the HW covers it."""
        tombstone = target.state is TxnState.DEAD
        record = RecordInput(
            txn_key(meta.transactional_id), None if tombstone else txn_value(target)
        )
        try:
            await self.runtime.append(
                TRANSACTION_STATE_TOPIC,
                shard.index,
                bytearray(build_batch([record])),
                target.timeout_ms,  # as Kafka: the transaction timeout bounds the wait
            )
        except Exception as exc:  # storage errors carry a Kafka error code
            code = exc.code if isinstance(exc, KafkaApiError) else getattr(exc, "error_code", None)
            if code is None:
                log.exception("Writing a transition of %s failed", meta.transactional_id)
                code = ErrorCode.KAFKA_STORAGE_ERROR
            log.warning(
                "Could not write the %s transition of %s: %s",
                target.state.display_name,
                meta.transactional_id,
                exc,
            )
            partition = self.leader_partition(shard.index)
            if code in APPENDED_UNREPLICATED and partition is not None and self.current(shard):
                self.spawn(shard, self._settle(shard, meta, target, partition, then))
            else:
                meta.abandon()
            return append_error(ErrorCode(code))
        except BaseException:  # cancelled: the state stays what it was
            meta.abandon()
            raise
        if not self.current(shard):
            meta.abandon()
            return ErrorCode.NOT_COORDINATOR
        self._apply(shard, meta, target, then)
        return ErrorCode.NONE

    @staticmethod
    def _apply(
        shard: TxnShard, meta: TxnMetadata, target: TxnLogValue, then: Callable[[], None] | None
    ) -> None:
        meta.complete(target)
        if target.state is TxnState.DEAD:
            shard.txns.pop(meta.transactional_id, None)
        if then is not None:
            then()

    async def _settle(
        self,
        shard: TxnShard,
        meta: TxnMetadata,
        target: TxnLogValue,
        partition: PartitionView,
        then: Callable[[], None] | None,
    ) -> None:
        """Apply a transition whose record is in our log once the HW covers it (the log end
        now is at or past it); dropped if the shard stops being ours first."""
        end = partition.log_end_offset
        while self.current(shard) and partition.high_watermark < end:
            await self.runtime.wait_until(
                TRANSACTION_STATE_TOPIC,
                shard.index,
                lambda: not self.current(shard) or partition.high_watermark >= end,
                _SETTLE_POLL_S,
            )
        async with shard.lock:
            if not self.current(shard) or meta.pending != target:
                return
            log.info(
                "The %s transition of %s is replicated after all; applying it",
                target.state.display_name,
                meta.transactional_id,
            )
            self._apply(shard, meta, target, then)
