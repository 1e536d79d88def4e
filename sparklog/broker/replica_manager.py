"""The replica manager: the partitions this broker hosts, and appends and reads on them.

It is a metadata publisher: each new metadata image creates the logs of partitions assigned to
this broker, drops the logs of deleted topics and applies leader/ISR changes. Request handlers
call :meth:`append` and :meth:`read`; both work on bytes and file slices only, never on
individual records. Appends and transaction markers (:meth:`append_control_marker`, which can
move the last stable offset) wake parked fetches through ``fetch_waiters``.

fsyncs never run on the event loop: when ``flush.messages`` asks for one after an append, or
``flush.ms`` at the scheduler's tick, the fsyncs run on a dedicated flusher thread while the
loop keeps serving; a produce that needs its data flushed is answered after the fsync.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from sparklog.broker.partition import Partition, PartitionState
from sparklog.broker.purgatory import DelayedOperations
from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import MetadataImage
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from sparklog.storage.manager import LogManager
from sparklog.storage.slices import LogReadResult

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        default_config: LogConfig,
        producer_id_expiration_ms: int = 86_400_000,
    ) -> None:
        self.broker_id = broker_id
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.log_manager = log_manager
        self.default_config = default_config
        self.partitions: dict[TopicPartition, Partition] = {}
        self.fetch_waiters = DelayedOperations()
        self.image: MetadataImage | None = None
        self._flusher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="log-flusher")

    # -- metadata publisher -----------------------------------------------------------------
    def publish(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Make the hosted partitions match ``image`` (create, reconfigure, delete)."""
        self.image = image
        live: set[TopicPartition] = set()
        for topic in image.topics.by_name.values():
            config = self.topic_config(topic.name, image)
            for index, registration in topic.partitions.items():
                if self.broker_id not in registration.replicas:
                    continue
                tp = (topic.name, index)
                live.add(tp)
                partition = self.partitions.get(tp)
                if partition is None or partition.topic_id != topic.topic_id:
                    if partition is not None:
                        self._drop(tp)
                    partition = self._open(topic.name, index, topic.topic_id, config)
                elif partition.log.config != config:
                    partition.log.update_config(config)
                partition.apply_state(
                    PartitionState(
                        leader=registration.leader,
                        leader_epoch=registration.leader_epoch,
                        partition_epoch=registration.partition_epoch,
                        replicas=tuple(registration.replicas),
                        isr=tuple(registration.isr),
                    )
                )
                self.fetch_waiters.notify(tp)
        for tp in list(self.partitions):
            if tp not in live:
                self._drop(tp)

    def topic_config(self, topic: str, image: MetadataImage) -> LogConfig:
        overrides = image.configs.topic_config(topic)
        if not overrides:
            return self.default_config
        return self.default_config.with_overrides(overrides)

    def _open(self, topic: str, index: int, topic_id: bytes, config: LogConfig) -> Partition:
        existing = self.log_manager.get_log(topic, index)
        if existing is not None and existing.topic_id not in (None, topic_id):
            # A log left behind by an earlier topic of the same name: not ours any more.
            self.log_manager.delete_log(topic, index)
            existing = None
        plog = existing or self.log_manager.create_log(topic, index, topic_id, config)
        plog.auto_flush = False
        plog.producer_state.expiration_ms = self.producer_id_expiration_ms
        if existing is not None and existing.config != config:
            existing.update_config(config)
        partition = Partition(topic, index, topic_id, plog, self.broker_id)
        self.partitions[(topic, index)] = partition
        log.info("Created partition %s-%d (log end offset %d)", topic, index, plog.log_end_offset)
        return partition

    def _drop(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)
        self.log_manager.delete_log(*tp)
        self.fetch_waiters.notify(tp)
        log.info("Deleted partition %s-%d", *tp)

    # -- lookups ------------------------------------------------------------------------------
    def partition(self, topic: str, index: int) -> Partition:
        partition = self.partitions.get((topic, index))
        if partition is None:
            raise KafkaApiError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.",
            )
        return partition

    def leader_partition(self, topic: str, index: int, current_leader_epoch: int = -1) -> Partition:
        partition = self.partition(topic, index)
        partition.check_leader(current_leader_epoch)
        return partition

    def hosted(self) -> Iterator[Partition]:
        return iter(self.partitions.values())

    # -- data path --------------------------------------------------------------------------
    async def append(
        self, topic: str, index: int, records: bytearray | memoryview, required_acks: int
    ) -> AppendOutcome:
        """Append a produce request's batches for one partition as the leader.

        ``records`` must be writable: offsets and the leader epoch are assigned in place.
        """
        partition = self.leader_partition(topic, index)
        if (
            required_acks == -1
            and len(partition.state.isr) < partition.log.config.min_insync_replicas
        ):
            raise KafkaApiError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {len(partition.state.isr)} is insufficient to "
                f"satisfy the min.isr requirement of {partition.log.config.min_insync_replicas}",
            )
        result = partition.log.append_as_leader(records, partition.leader_epoch, from_client=True)
        partition.maybe_advance_hw()
        self.fetch_waiters.notify((topic, index))
        if partition.log.needs_flush:
            await self.flush(partition.log)
        return AppendOutcome(
            base_offset=result.first_offset,
            log_append_time_ms=result.log_append_time,
            log_start_offset=partition.log_start_offset,
        )

    async def append_control_marker(
        self,
        topic: str,
        index: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        committed: bool,
    ) -> int:
        """Write a COMMIT/ABORT marker as the leader, with the guarantees of an ``acks=all``
        produce on this node (the ISR is checked, the flush policy honoured); its offset."""
        partition = self.leader_partition(topic, index)
        plog = partition.log
        if len(partition.state.isr) < plog.config.min_insync_replicas:
            raise KafkaApiError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {len(partition.state.isr)} is insufficient to "
                f"satisfy the min.isr requirement of {plog.config.min_insync_replicas}",
            )
        offset = plog.append_control_marker(
            producer_id, producer_epoch, coordinator_epoch, committed, partition.leader_epoch
        )
        partition.maybe_advance_hw()
        self.fetch_waiters.notify((topic, index))
        if plog.needs_flush:
            await self.flush(plog)
        return offset

    def read(
        self,
        partition: Partition,
        fetch_offset: int,
        max_bytes: int,
        *,
        isolation_level: int,
        min_one_batch: bool,
    ) -> LogReadResult:
        """Read batches from ``fetch_offset`` up to the HW (or LSO for read_committed)."""
        upper = partition.last_stable_offset if isolation_level == 1 else partition.high_watermark
        return partition.log.read(fetch_offset, max_bytes, upper, min_one_batch)

    async def flush(self, log: Log, up_to_offset: int | None = None) -> None:
        """fsync ``log`` up to ``up_to_offset`` (default: its end) on the flusher thread."""
        plan = log.begin_flush(up_to_offset)
        if plan is None:
            return
        await asyncio.get_running_loop().run_in_executor(self._flusher, plan.run)
        log.complete_flush(plan)

    async def flush_due(self, now_ms: int) -> None:
        """flush.ms: flush every log whose oldest unflushed data has waited that long."""
        for partition in list(self.partitions.values()):
            log = partition.log
            unflushed = log.log_end_offset > log.recovery_point
            if unflushed and now_ms - log.last_flush_ms >= log.config.flush_ms:
                await self.flush(log)

    def close(self) -> None:
        self._flusher.shutdown(wait=True)

    def delete_records(self, topic: str, index: int, offset: int) -> int:
        partition = self.leader_partition(topic, index)
        hw = partition.high_watermark
        target = hw if offset == -1 else offset
        if target < 0 or target > hw:
            raise KafkaApiError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"Cannot delete records before offset {offset}: high watermark is {hw}",
            )
        low = partition.log.delete_records(target)
        self.fetch_waiters.notify((topic, index))
        return int(low)
