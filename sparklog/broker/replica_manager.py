"""The replica manager: the partitions this broker hosts, and appends and reads on them.

It is a metadata publisher: each new metadata image creates the logs of partitions assigned to
this broker, drops the logs of deleted topics and applies leader/ISR changes (the partitions we
start following go to the replica fetchers, see :mod:`sparklog.broker.replica_fetcher`). On a
running event loop an image is applied in time-boxed rounds, so an image adding thousands of
partitions never stalls heartbeats; a partition whose log cannot be opened for lack of file
descriptors answers KAFKA_STORAGE_ERROR and is retried (:mod:`sparklog.broker.publish_rounds`).
Request handlers call :meth:`append` and :meth:`read`; both work on bytes and file slices only,
never on individual records. Appends and transaction markers (:meth:`append_control_marker`,
which can move the last stable offset) wake parked fetches through ``fetch_waiters``.

Replication (seed 004): follower fetches go through :meth:`follower_fetch` (the leader core
validates them, tracks the follower and may move the HW or propose an ISR expansion);
:meth:`maybe_shrink_isr` runs periodically; ISR changes go to the controller through
``isr_sender`` (:mod:`sparklog.broker.alter_partition_sender`). An ``acks=all`` append (and a
transaction marker) is refused with NOT_ENOUGH_REPLICAS when the ISR is under min ISR, and
otherwise parks in ``produce_waiters`` until the HW covers it (NONE, or
NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank under min ISR meanwhile), leadership is
lost (NOT_LEADER_OR_FOLLOWER) or its timeout passes (REQUEST_TIMED_OUT). Every HW move wakes
both purgatories.

Log dirs (KIP-858): a new replica's log is created in the dir the metadata places it in when
that is one of ours, else in the least-loaded dir; a replica whose log is in a dir other than
the one the metadata names is reported through ``dir_assigner``
(:mod:`sparklog.broker.dir_assignments`).

fsyncs never run on the event loop: when ``flush.messages`` asks for one after an append, or
``flush.ms`` at the scheduler's tick, the fsyncs run on a dedicated flusher thread while the
loop keeps serving; a produce that needs its data flushed is answered after the fsync.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from sparklog.broker.log_dir_failure import (
    LogDirFailureChannel,
    is_disk_failure,
    log_dir_holding,
    log_dir_of,
    storage_error,
)
from sparklog.broker.partition import Partition, PartitionState, RoleChange
from sparklog.broker.publish_rounds import PublishRounds
from sparklog.broker.purgatory import DelayedOperations
from sparklog.controller.directories import assignment_supported, directory_of
from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import MetadataImage, PartitionRegistration
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.replication.leader import DEFAULT_REPLICA_LAG_TIME_MAX_MS
from sparklog.replication.messages import (
    AlterPartitionProposal,
    BrokerStatus,
    FollowerFetch,
    FollowerFetchResult,
)
from sparklog.storage.config import LogConfig
from sparklog.storage.handles import TooManyOpenFilesError, is_out_of_descriptors
from sparklog.storage.log import Log
from sparklog.storage.manager import LogManager
from sparklog.storage.slices import LogReadResult

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# (partition, proposal) -> queue the AlterPartition for the controller
IsrSender = Callable[[Partition, AlterPartitionProposal], None]
# (partitions we now follow, partitions we no longer follow)
FollowerListener = Callable[[list[Partition], list[TopicPartition]], None]
# (topic id, partition, directory id) -> tell the controller (AssignReplicasToDirs)
DirAssigner = Callable[[bytes, int, bytes], None]

DEFAULT_ACKS_TIMEOUT_MS = 30_000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def brokers_of(image: MetadataImage) -> dict[int, BrokerStatus]:
    return {
        broker_id: BrokerStatus(broker_id, reg.epoch, reg.fenced, reg.in_controlled_shutdown)
        for broker_id, reg in image.cluster.brokers.items()
    }


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
        *,
        replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS,
    ) -> None:
        self.broker_id = broker_id
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.log_manager = log_manager
        self.default_config = default_config
        self.partitions: dict[TopicPartition, Partition] = {}
        self.fetch_waiters = DelayedOperations()
        self.produce_waiters = DelayedOperations()
        self.image: MetadataImage | None = None
        self.broker_epoch: Callable[[], int] = lambda: -1
        self.isr_sender: IsrSender | None = None
        self.follower_listener: FollowerListener | None = None
        # Kafka's IsrExpandsPerSec / IsrShrinksPerSec / FailedIsrUpdatesPerSec, as counts.
        self.isr_expands = 0
        self.isr_shrinks = 0
        self.failed_isr_updates = 0
        self._flusher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="log-flusher")
        # Offline log dirs (Kafka's LogDirFailureChannel) and the partitions taken out of
        # service with them: they answer KAFKA_STORAGE_ERROR and are never reopened.
        self.log_dir_failures = LogDirFailureChannel(log_manager.log_dirs)
        self.offline_partitions: set[TopicPartition] = set()
        # Large images are applied in time-boxed rounds (sparklog.broker.publish_rounds).
        self.publish_rounds = PublishRounds()
        # KIP-858: each data log dir's id (absolute path -> id), and where to report a
        # replica whose log is not in the dir the metadata names (set by the node).
        self.directory_ids: dict[str, bytes] = {}
        self._dir_paths: dict[bytes, str] = {}
        self.dir_assigner: DirAssigner | None = None
        # The registration each partition's dir was last checked against (images share
        # unchanged registrations: a publish re-checks only what changed).
        self._dir_checked: dict[TopicPartition, PartitionRegistration] = {}

    def set_directory_ids(self, directory_ids: Mapping[str, bytes]) -> None:
        self.directory_ids = {os.path.abspath(d): i for d, i in directory_ids.items()}
        self._dir_paths = {i: d for d, i in self.directory_ids.items()}

    # -- metadata publisher -----------------------------------------------------------------
    def publish(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Make the hosted partitions match ``image`` (create, reconfigure, delete)."""
        self.image = image
        rounds = self.publish_rounds
        rounds.begin(image)
        now = _now_ms()
        brokers = brokers_of(image)
        broker_epoch = self.broker_epoch()
        live: set[TopicPartition] = set()
        followed: list[Partition] = []
        unfollowed: list[TopicPartition] = []
        assign = assignment_supported(image.features.metadata_version) and bool(self.directory_ids)
        for topic in image.topics.by_name.values():
            config = self.topic_config(topic.name, image)
            for index, registration in topic.partitions.items():
                if self.broker_id not in registration.replicas:
                    continue
                tp = (topic.name, index)
                live.add(tp)
                if tp in self.offline_partitions or rounds.skip(tp):
                    continue
                partition = self.partitions.get(tp)
                if partition is None or partition.topic_id != topic.topic_id:
                    if partition is not None:
                        self._drop(tp)
                    placed = self._dir_paths.get(directory_of(registration, self.broker_id))
                    try:
                        partition = self._open(topic.name, index, topic.topic_id, config, placed)
                    except (TooManyOpenFilesError, OSError) as exc:
                        if not is_out_of_descriptors(exc):
                            self._creation_failed(tp, exc)
                            continue
                        rounds.failed(tp, exc)
                        continue
                elif partition.log.config != config:
                    partition.log.update_config(config)
                partition.local_broker_epoch = broker_epoch
                if assign and self._dir_checked.get(tp) is not registration:
                    self._maybe_assign(topic.topic_id, tp, registration)
                was_follower = partition.follower_core is not None
                change = partition.apply_state(
                    PartitionState(
                        leader=registration.leader,
                        leader_epoch=registration.leader_epoch,
                        partition_epoch=registration.partition_epoch,
                        replicas=tuple(registration.replicas),
                        isr=tuple(registration.isr),
                    ),
                    now,
                    brokers,
                )
                if change is RoleChange.FOLLOWER:
                    followed.append(partition)
                elif change is RoleChange.LEADER and was_follower:
                    unfollowed.append(tp)
                core = partition.leader_core
                if core is not None:
                    # Fencing and broker epochs change without any partition change.
                    core.update_brokers(brokers)
                    core.local_broker_epoch = broker_epoch
                    partition.maybe_advance_hw(now)
                self._wake(tp)
                rounds.done(tp)
        dropped = 0
        for tp in list(self.partitions):
            if tp not in live and rounds.may_drop():
                if self.partitions[tp].follower_core is not None:
                    unfollowed.append(tp)
                self._drop(tp, checkpoint=False)
                dropped += 1
        if dropped:
            # Once per round, not per partition: a 20,000-partition delete stays linear.
            self.log_manager.checkpoint()
        if self.follower_listener is not None and (followed or unfollowed):
            self.follower_listener(followed, unfollowed)
        # What this round had no time for (or no descriptors for) is applied by the next one.
        rounds.end(lambda: self.publish(delta, self.image) if self.image is not None else None)

    def topic_config(self, topic: str, image: MetadataImage) -> LogConfig:
        overrides = image.configs.topic_config(topic)
        if not overrides:
            return self.default_config
        return self.default_config.with_overrides(overrides)

    def _maybe_assign(
        self, topic_id: bytes, tp: TopicPartition, registration: PartitionRegistration
    ) -> None:
        """Report ``tp``'s log dir if the metadata names another (KIP-858)."""
        log_dir = self.log_manager.dir_of(*tp)
        actual = None if log_dir is None else self.directory_ids.get(log_dir)
        if actual is None or self.dir_assigner is None:
            return
        self._dir_checked[tp] = registration
        if directory_of(registration, self.broker_id) != actual:
            self.dir_assigner(topic_id, tp[1], actual)

    def _open(
        self,
        topic: str,
        index: int,
        topic_id: bytes,
        config: LogConfig,
        log_dir: str | None = None,
    ) -> Partition:
        existing = self.log_manager.get_log(topic, index)
        if existing is not None and existing.topic_id not in (None, topic_id):
            # A log left behind by an earlier topic of the same name: not ours any more.
            self.log_manager.delete_log(topic, index)
            existing = None
        plog = existing or self.log_manager.create_log(topic, index, topic_id, config, log_dir)
        plog.auto_flush = False
        plog.producer_state.expiration_ms = self.producer_id_expiration_ms
        if existing is not None and existing.config != config:
            existing.update_config(config)
        partition = Partition(
            topic,
            index,
            topic_id,
            plog,
            self.broker_id,
            replica_lag_time_max_ms=self.replica_lag_time_max_ms,
        )
        self.partitions[(topic, index)] = partition
        log.info("Created partition %s-%d (log end offset %d)", topic, index, plog.log_end_offset)
        return partition

    def _drop(self, tp: TopicPartition, checkpoint: bool = True) -> None:
        self.partitions.pop(tp, None)
        self._dir_checked.pop(tp, None)
        self.log_manager.delete_log(*tp, checkpoint=checkpoint)
        self._wake(tp)
        log.info("Deleted partition %s-%d", *tp)

    def _wake(self, tp: TopicPartition) -> None:
        """The HW, the LEO or the leadership of ``tp`` may have moved: re-check its waiters."""
        self.fetch_waiters.notify(tp)
        self.produce_waiters.notify(tp)

    # -- lookups ------------------------------------------------------------------------------
    def partition(self, topic: str, index: int) -> Partition:
        partition = self.partitions.get((topic, index))
        if self.log_dir_failures.any_offline:
            log_dir = log_dir_of(partition.log.directory) if partition is not None else ""
            if (topic, index) in self.offline_partitions or (
                partition is not None and not self.log_dir_failures.is_online(log_dir)
            ):
                raise storage_error(topic, index, log_dir)
        if partition is None:
            reason = self.publish_rounds.unavailable((topic, index))
            if reason is not None:
                raise KafkaApiError(ErrorCode.KAFKA_STORAGE_ERROR, reason)
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
        self,
        topic: str,
        index: int,
        records: bytearray | memoryview,
        required_acks: int,
        timeout_ms: int = DEFAULT_ACKS_TIMEOUT_MS,
    ) -> AppendOutcome:
        """Append a produce request's batches for one partition as the leader.

        ``records`` must be writable: offsets and the leader epoch are assigned in place. With
        ``required_acks == -1`` it returns once the HW covers the batches (see the module
        docstring for the errors it raises instead).
        """
        partition = self.leader_partition(topic, index)
        if required_acks == -1:
            self._check_enough_isr(partition)
        try:
            result = partition.log.append_as_leader(
                records, partition.leader_epoch, from_client=True
            )
        except OSError as exc:
            raise self.log_dir_failed(partition, "Error while appending records to", exc) from exc
        partition.maybe_advance_hw()
        self._wake((topic, index))
        if partition.log.needs_flush:
            await self.flush(partition.log)
        if required_acks == -1 and result.last_offset >= 0:
            await self.wait_for_replication(partition, result.last_offset + 1, timeout_ms)
        return AppendOutcome(
            base_offset=result.first_offset,
            log_append_time_ms=result.log_append_time,
            log_start_offset=partition.log_start_offset,
        )

    @staticmethod
    def _check_enough_isr(partition: Partition) -> None:
        core = partition.leader_core
        if core is None:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "not the leader")
        core.min_insync_replicas = partition.min_insync_replicas
        if core.is_under_min_isr:
            raise KafkaApiError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {sorted(core.isr)} is insufficient to satisfy "
                f"the min.isr requirement of {core.effective_min_isr} for partition "
                f"{partition.topic}-{partition.index}",
            )

    async def wait_for_replication(
        self, partition: Partition, required_offset: int, timeout_ms: int
    ) -> None:
        """Park until the HW reaches ``required_offset`` (Kafka's DelayedProduce)."""
        tp = (partition.topic, partition.index)
        epoch = partition.leader_epoch

        def settled() -> bool:
            core = partition.leader_core
            if self.partitions.get(tp) is not partition or core is None:
                return True
            if partition.leader_epoch != epoch:
                return True
            return core.check_enough_replicas(required_offset)[0]

        await self.produce_waiters.wait_until([tp], settled, max(timeout_ms, 0) / 1000.0)
        if tp in self.offline_partitions:
            raise storage_error(
                partition.topic, partition.index, log_dir_of(partition.log.directory)
            )
        core = partition.leader_core
        if self.partitions.get(tp) is not partition or core is None:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "leadership moved")
        done, error = core.check_enough_replicas(required_offset)
        if not done:
            raise KafkaApiError(
                ErrorCode.REQUEST_TIMED_OUT,
                f"The ISR of {partition.topic}-{partition.index} did not replicate offset "
                f"{required_offset - 1} within {timeout_ms} ms",
            )
        if error:
            raise KafkaApiError(
                ErrorCode(error),
                f"The ISR of {partition.topic}-{partition.index} shrank below "
                f"{core.effective_min_isr} after the append",
            )

    async def append_control_marker(
        self,
        topic: str,
        index: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        committed: bool,
        timeout_ms: int = DEFAULT_ACKS_TIMEOUT_MS,
    ) -> int:
        """Write a COMMIT/ABORT marker as the leader, with the guarantees of an ``acks=all``
        produce (min ISR checked, the flush policy honoured, the HW awaited); its offset."""
        partition = self.leader_partition(topic, index)
        plog = partition.log
        self._check_enough_isr(partition)
        try:
            offset = plog.append_control_marker(
                producer_id, producer_epoch, coordinator_epoch, committed, partition.leader_epoch
            )
        except OSError as exc:
            raise self.log_dir_failed(partition, "Error while writing a marker to", exc) from exc
        partition.maybe_advance_hw()
        self._wake((topic, index))
        if plog.needs_flush:
            await self.flush(plog)
        await self.wait_for_replication(partition, offset + 1, timeout_ms)
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

    # -- replication ------------------------------------------------------------------------
    def follower_fetch(self, partition: Partition, fetch: FollowerFetch) -> FollowerFetchResult:
        """Account one partition of a follower's Fetch (the partition must be led here)."""
        core = partition.leader_core
        if core is None:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "not the leader")
        core.min_insync_replicas = partition.min_insync_replicas
        result = core.on_follower_fetch(fetch, _now_ms())
        if result.proposal is not None:
            self._send_isr_change(partition, result.proposal)
        if result.hw_changed:
            self._wake((partition.topic, partition.index))
        return result

    def read_for_follower(
        self, partition: Partition, fetch_offset: int, max_bytes: int, min_one_batch: bool
    ) -> LogReadResult:
        """A follower reads up to the LEO, not the HW."""
        plog = partition.log
        return plog.read(fetch_offset, max_bytes, plog.log_end_offset, min_one_batch)

    def maybe_shrink_isr(self, now_ms: int | None = None) -> int:
        """Propose dropping lagging followers from the ISR of every partition we lead."""
        now = _now_ms() if now_ms is None else now_ms
        proposed = 0
        for partition in list(self.partitions.values()):
            core = partition.leader_core
            if core is None:
                continue
            proposal = core.maybe_shrink_isr(now)
            if proposal is not None:
                proposed += 1
                log.info(
                    "Shrinking ISR of %s-%d from %s to %s (leader LEO %d, HW %d)",
                    partition.topic,
                    partition.index,
                    sorted(core.isr),
                    list(proposal.isr_ids),
                    partition.log_end_offset,
                    partition.high_watermark,
                )
                self._send_isr_change(partition, proposal)
        return proposed

    def _send_isr_change(self, partition: Partition, proposal: AlterPartitionProposal) -> None:
        if self.isr_sender is not None:
            self.isr_sender(partition, proposal)

    def hw_may_have_moved(self, partition: Partition) -> None:
        """After an ISR change was applied: recompute the HW and wake the waiters."""
        partition.maybe_advance_hw()
        self._wake((partition.topic, partition.index))

    @property
    def leader_count(self) -> int:
        return sum(1 for p in self.partitions.values() if p.is_leader)

    @property
    def under_replicated_count(self) -> int:
        return sum(1 for p in self.partitions.values() if p.is_under_replicated)

    @property
    def under_min_isr_count(self) -> int:
        return sum(1 for p in self.partitions.values() if p.is_under_min_isr)

    async def flush(self, log: Log, up_to_offset: int | None = None) -> None:
        """fsync ``log`` up to ``up_to_offset`` (default: its end) on the flusher thread."""
        plan = log.begin_flush(up_to_offset)
        if plan is None:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(self._flusher, plan.run)
        except OSError as exc:
            # The recovery point stays where it was: these offsets are not known durable.
            raise self._dir_failed(log, "Error while flushing", exc) from exc
        log.complete_flush(plan)

    async def flush_due(self, now_ms: int) -> None:
        """flush.ms: flush every log whose oldest unflushed data has waited that long."""
        for partition in list(self.partitions.values()):
            log = partition.log
            if not self.log_dir_failures.is_online(log_dir_of(log.directory)):
                continue
            unflushed = log.log_end_offset > log.recovery_point
            if unflushed and now_ms - log.last_flush_ms >= log.config.flush_ms:
                with contextlib.suppress(KafkaApiError):  # the dir went offline: logged
                    await self.flush(log)

    # -- log dir failures -------------------------------------------------------------------
    def log_dir_failed(self, partition: Partition, action: str, exc: OSError) -> KafkaApiError:
        """An I/O error on ``partition``'s log: take its log dir offline; the error to answer."""
        return self._dir_failed(partition.log, action, exc)

    def _dir_failed(self, log: Log, action: str, exc: OSError) -> KafkaApiError:
        log_dir = log_dir_of(log.directory)
        if not is_disk_failure(exc):  # out of descriptors: retried, the dir stays online
            return KafkaApiError(ErrorCode.KAFKA_STORAGE_ERROR, f"{action} failed: {exc}")
        self.log_dir_failures.maybe_add_offline_log_dir(
            log_dir, f"{action} {log.topic}-{log.partition} in dir {log_dir} failed: {exc}", exc
        )
        return storage_error(log.topic, log.partition, log_dir)

    def _creation_failed(self, tp: TopicPartition, exc: BaseException) -> None:
        """Creating ``tp``'s log failed on the disk: the dir goes offline, the partition is
        offline here (Kafka marks it so); an error naming no data log dir is re-raised."""
        log_dir = log_dir_holding(getattr(exc, "filename", None), self.log_dir_failures.log_dirs)
        if log_dir is None or not is_disk_failure(exc):
            raise exc
        self.offline_partitions.add(tp)
        message = f"Error while creating log for {tp[0]}-{tp[1]} in dir {log_dir}: {exc}"
        self.log_dir_failures.maybe_add_offline_log_dir(log_dir, message, exc)

    def handle_log_dir_failure(self, log_dir: str) -> list[TopicPartition]:
        """Stop serving every partition in the offline ``log_dir`` (Kafka's
        ``ReplicaManager.handleLogDirFailure``): they leave :attr:`partitions` for
        :attr:`offline_partitions` (KAFKA_STORAGE_ERROR from then on), their fetchers stop,
        waiting produces and fetches are answered, and the log manager lets go of the dir."""
        path = os.path.abspath(log_dir)
        offline = [tp for tp, p in self.partitions.items() if log_dir_of(p.log.directory) == path]
        followed = [tp for tp in offline if self.partitions[tp].follower_core is not None]
        for tp in offline:
            del self.partitions[tp]
            self.offline_partitions.add(tp)
            self._wake(tp)
        if self.follower_listener is not None and followed:
            self.follower_listener([], followed)
        self.log_manager.handle_log_dir_failure(path)
        log.warning(
            "Broker %d stopped serving partitions %s because they are in the failed log "
            "directory %s",
            self.broker_id,
            ", ".join(f"{t}-{i}" for t, i in sorted(offline)),
            path,
        )
        return offline

    def close(self) -> None:
        self.publish_rounds.cancel()
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
