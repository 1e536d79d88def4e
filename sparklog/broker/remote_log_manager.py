"""The remote log manager (KIP-405): copies closed segments to the object store, applies
whole-log retention across both tiers, and serves reads below the local log start offset.

Per leader partition of a topic with ``remote.storage.enable=true``, every
``remote.log.manager.task.interval.ms``:

1. On first sight, the partition's remote state is loaded from the store (the manifest, with
   orphan objects of interrupted copies removed) and attached to the log, so after a restart the
   log start offset is the remote one again.
2. Copy: each closed segment whose last offset is below both the high watermark and the last
   stable offset, and above the highest offset already copied, is transcoded to Parquet and
   uploaded (COPY_SEGMENT_STARTED) with the aborted transactions whose data it holds (from
   the transaction indexes; all of them are decided, the segment being below the LSO, so the
   Parquet ``aborted`` flag is final), then recorded in the manifest (COPY_SEGMENT_FINISHED). Only
   then does ``highest_remote_offset`` move, which is what allows local retention
   (``local.retention.ms`` / ``local.retention.bytes``, in the log's own retention pass) to
   delete the local copy. A crash between upload and manifest leaves an orphan object that the
   next load deletes, and the segment is copied again.
3. Expire: remote segments past ``retention.ms``, or beyond ``retention.bytes`` of the whole log,
   or wholly below the log start offset (DeleteRecords) are deleted (DELETE_SEGMENT_STARTED,
   objects removed, DELETE_SEGMENT_FINISHED) oldest first, and the log start offset moves past
   them.
4. Read: Fetches below the local log start offset are served from the Parquet objects; a
   read_committed one also gets the aborted transactions overlapping the returned batches,
   from the remote segments' ``.txnindex`` objects (uploaded with each copy from the segment's
   own transaction index) and, when the search is not complete there, the local indexes.

Copy lag and throughput: every run tiers all led partitions at once, each copying its segments
in order, with at most ``remote.log.manager.copier.thread.pool.size`` transcodes and uploads
at a time; deletes run on ``remote.log.manager.expiration.thread.pool.size`` threads, remote
fetches on ``remote.log.reader.threads``, followers' tier reads on
``remote.log.manager.thread.pool.size``. :mod:`sparklog.broker.remote_metrics` names what is
reported (Kafka's ``RemoteCopyLagBytes``, ``RemoteCopyBytesPerSec``... ).

Leadership changes: the store, never the local log, says what is copied. A partition's
manifest is re-read whenever this broker becomes its leader in a new leader epoch, and copying
resumes after the store's highest copied offset: a local segment wholly below it is skipped,
one straddling it is copied from the first batch above it (batch boundaries are the same on
every replica), so the manifest never holds overlapping or duplicate rows and nothing is
uploaded twice. Followers refresh the highest copied offset from the store every run (it
bounds their local retention) and rebuild from the store when their fetch offset was tiered
(:mod:`sparklog.broker.remote_aux_state`).

All store I/O runs on threads, so neither a slow bucket nor a long transcode ever stalls the
event loop, and a remote fetch never waits behind a copy. Log state is only touched on the
event loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from sparklog.broker.context import RemoteRead
from sparklog.broker.partition import Partition
from sparklog.broker.remote_aux_state import TierState, read_tier_state
from sparklog.broker.remote_metrics import RemoteStorageMetrics
from sparklog.broker.remote_segments import copy_source, tail_position
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.kafka_uuid import uuid_to_str
from sparklog.protocol.records import iter_batches
from sparklog.storage.log import Log
from sparklog.tiering.batch_encode import EncodedBatch
from sparklog.tiering.config import TieringConfig
from sparklog.tiering.layout import PARQUET_SUFFIX
from sparklog.tiering.metadata import (
    AbortedTxn,
    CopiedSegment,
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
)
from sparklog.tiering.rlmm import RemoteLogMetadataManager
from sparklog.tiering.rsm import RemoteStorageManager, segment_object_paths
from sparklog.tiering.segment_reader import first_at_or_after, open_segment

log = logging.getLogger(__name__)

T = TypeVar("T")
TopicPartition = tuple[str, int]


def segment_epochs(log_: Log, base_offset: int, end_offset: int) -> tuple[tuple[int, int], ...]:
    """The leader-epoch entries covering ``[base_offset, end_offset]``."""
    cache = log_.epoch_cache
    entries = [(e, s) for e, s in cache.entries if base_offset < s <= end_offset]
    first = cache.epoch_for_offset(base_offset)
    if first >= 0:
        entries.insert(0, (first, base_offset))
    return tuple(entries)


def segment_aborted_txns(log_: Log, base_offset: int, next_offset: int) -> tuple[AbortedTxn, ...]:
    """The aborted transactions with data in ``[base_offset, next_offset)``."""
    return tuple(
        AbortedTxn(t.producer_id, t.first_offset, t.last_offset)
        for t in log_.collect_aborted_transactions(base_offset, next_offset)
    )


def _next_offset(records: EncodedBatch, default: int) -> int:
    """The offset after the last whole batch of ``records``."""
    last = None
    for _, header in iter_batches(records):
        last = header
    return default if last is None else last.next_offset


class RemoteLogManager:
    def __init__(
        self,
        config: TieringConfig,
        broker_id: int,
        cluster_id: str,
        replica_manager: ReplicaManager,
        clock_ms: Callable[[], int],
    ) -> None:
        self.config = config
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self._clock_ms = clock_ms
        self.rsm = RemoteStorageManager.from_config(config, cluster_id=cluster_id)
        self.rlmm = RemoteLogMetadataManager(self.rsm.store, time_ms=clock_ms)
        self.metrics = RemoteStorageMetrics()
        self._copier = ThreadPoolExecutor(config.copier_threads, thread_name_prefix="remote-copy")
        self._expirer = ThreadPoolExecutor(
            config.expiration_threads, thread_name_prefix="remote-expire"
        )
        self._fetchers = ThreadPoolExecutor(
            config.reader_threads, thread_name_prefix="remote-fetch"
        )
        self._follower = ThreadPoolExecutor(
            config.follower_threads, thread_name_prefix="remote-follower"
        )
        # Per partition: its id in the store and the leader epoch its manifest was read in.
        self._loaded: dict[TopicPartition, tuple[TopicIdPartition, int]] = {}
        self._running = asyncio.Lock()

    async def _on(self, pool: ThreadPoolExecutor, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(pool, fn)

    def close(self) -> None:
        for pool in (self._copier, self._expirer, self._fetchers, self._follower):
            pool.shutdown(wait=True, cancel_futures=True)

    # -- the periodic task ------------------------------------------------------------------
    async def run_once(self) -> None:
        async with self._running:
            tiered = [
                p
                for p in list(self.replica_manager.partitions.values())
                if p.log.config.remote_storage_enable
            ]
            await asyncio.gather(*(self._run_partition(p) for p in tiered))

    async def _run_partition(self, partition: Partition) -> None:
        try:
            if partition.is_leader:
                await self._tier(partition)
            else:
                await self._follow(partition)
        except Exception:
            log.exception(
                "Tiering %s-%d failed; retrying next run", partition.topic, partition.index
            )

    async def _follow(self, partition: Partition) -> None:
        """A follower learns the highest copied offset (its local retention's bound)."""
        key = (partition.topic, partition.index)
        self._loaded.pop(key, None)  # leading again later re-reads the manifest
        if partition.log.local_log_start_offset >= partition.log.log_end_offset:
            return  # nothing local yet (a restarted or rebuilding follower)
        tip = self._tip_of(partition)
        manifest = await self._on(self._follower, lambda: self.rlmm.load(tip, delete_orphans=False))
        highest = max((s.end_offset for s in manifest.finished_segments), default=-1)
        if highest >= 0:
            partition.log.attach_remote(-1, min(highest, partition.high_watermark - 1))

    def copy_lag(self, partition: Partition) -> tuple[int, int]:
        """(segments, bytes) of the closed local segments not yet copied (Kafka's
        RemoteCopyLagSegments / RemoteCopyLagBytes of one partition)."""
        plog = partition.log
        lagging = [s for s in plog.segments[:-1] if s.next_offset - 1 > plog.highest_remote_offset]
        return len(lagging), sum(s.size for s in lagging)

    def _led(self) -> list[Partition]:
        return [
            p
            for p in list(self.replica_manager.partitions.values())
            if p.is_leader and p.log.config.remote_storage_enable
        ]

    def total_copy_lag(self) -> tuple[int, int]:
        lags = [self.copy_lag(p) for p in self._led()]
        return sum(n for n, _ in lags), sum(b for _, b in lags)

    def total_remote_size(self) -> tuple[int, int]:
        """(segments, segment bytes) in the store of the partitions this broker leads."""
        count = size = 0
        for partition in self._led():
            loaded = self._loaded.get((partition.topic, partition.index))
            if loaded is not None:
                segments = self.rlmm.manifest(loaded[0]).finished_segments
                count += len(segments)
                size += sum(s.segment_bytes for s in segments)
        return count, size

    def _tip_of(self, partition: Partition) -> TopicIdPartition:
        return TopicIdPartition(uuid_to_str(partition.topic_id), partition.topic, partition.index)

    async def read_remote_log_aux_state(
        self, partition: Partition, leader_local_start: int
    ) -> TierState:
        """What a follower rebuilds its log from for the leader's local log start (see
        :mod:`sparklog.broker.remote_aux_state`; the caller applies it with
        :func:`~sparklog.broker.remote_aux_state.apply_tier_state`). Raises
        RemoteStorageError when the store cannot tell."""
        self.metrics.aux_state_requests.mark()
        tip = self._tip_of(partition)
        try:
            return await self._on(
                self._follower,
                lambda: read_tier_state(self.rlmm, self.rsm, tip, leader_local_start),
            )
        except Exception:
            self.metrics.aux_state_errors.mark()
            raise

    async def _tier(self, partition: Partition) -> None:
        tip = await self._load(partition)
        await self._copy(partition, tip)
        await self._expire(partition, tip)

    async def _load(self, partition: Partition) -> TopicIdPartition:
        key = (partition.topic, partition.index)
        loaded = self._loaded.get(key)
        epoch = partition.leader_epoch
        if loaded is None or loaded[1] != epoch:
            # First sight, or leading in a new epoch: another broker may have copied since.
            tip = self._tip_of(partition)
            await self._on(self._copier, lambda: self.rlmm.load(tip))
            self._loaded[key] = (tip, epoch)
            start = self.rlmm.remote_log_start_offset(tip)
            highest = self.rlmm.highest_copied_offset(tip)
            partition.log.attach_remote(-1 if start is None else start, highest)
            log.info(
                "Loaded remote state of %s-%d: remote offsets [%s, %d]",
                partition.topic,
                partition.index,
                start,
                highest,
            )
        else:
            tip = loaded[0]
            partition.log.attach_remote(-1, self.rlmm.highest_copied_offset(tip))
        return tip

    async def _copy(self, partition: Partition, tip: TopicIdPartition) -> None:
        plog = partition.log
        bound = min(partition.high_watermark, partition.last_stable_offset)
        for segment in plog.segments[:-1]:
            end = segment.next_offset - 1
            copied = plog.highest_remote_offset
            if end <= copied or segment.size == 0:
                continue
            if segment.next_offset > bound or not partition.is_leader:
                return
            # A segment straddling the store's end (segments roll differently on another
            # replica that led before) is copied from the first batch above it.
            tail = tail_position(segment, copied + 1) if segment.base_offset <= copied else None
            first = copied + 1 if tail is not None else segment.base_offset
            now = self._clock_ms()
            metadata = RemoteLogSegmentMetadata(
                remote_log_segment_id=RemoteLogSegmentId.generate(tip),
                start_offset=first,
                end_offset=end,
                max_timestamp_ms=segment.largest_timestamp,
                broker_id=self.broker_id,
                event_timestamp_ms=now,
                segment_size_in_bytes=segment.size - (tail or 0),
                segment_leader_epochs=segment_epochs(plog, first, end),
                leader_epoch=partition.leader_epoch,
            )
            snapshot = plog.producer_state.snapshot_path(segment.next_offset)
            data = LogSegmentData(
                segment.path,
                metadata.segment_leader_epochs,
                # The producer state as of the segment's end, as Kafka uploads it.
                producer_snapshot_path=snapshot if os.path.exists(snapshot) else None,
                aborted_txns=segment_aborted_txns(plog, first, segment.next_offset),
                transaction_index=tuple(
                    AbortedTxn(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
                    for t in segment.txn_index.entries
                    if t.last_offset >= first
                ),
            )
            self.rlmm.add_remote_log_segment_metadata(metadata)

            def upload(
                m: RemoteLogSegmentMetadata = metadata,
                d: LogSegmentData = data,
                at: int = tail or 0,
            ) -> CopiedSegment:
                with copy_source(d, at) as source:
                    return self.rsm.copy_log_segment_data(m, source)

            def finish(m: RemoteLogSegmentMetadata, result: CopiedSegment) -> None:
                self.rlmm.update_remote_log_segment_metadata(
                    m.remote_log_segment_id,
                    RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
                    copied=result,
                )

            self.metrics.copy_requests.mark()
            try:
                result = await self._on(self._copier, upload)
                if not partition.is_leader or partition.leader_epoch != metadata.leader_epoch:
                    # Deposed meanwhile: the new leader owns the manifest (and deletes these
                    # objects as orphans when it loads it).
                    log.info(
                        "Not recording the copy of %s-%d [%d, %d]: no longer the leader",
                        partition.topic,
                        partition.index,
                        first,
                        end,
                    )
                    return
                await self._on(self._copier, functools.partial(finish, metadata, result))
            except Exception:
                self.metrics.copy_errors.mark()
                raise
            records = result.record_count
            self.metrics.copy_bytes.mark(metadata.segment_size_in_bytes)
            plog.attach_remote(-1, end)
            log.info(
                "Copied %s-%d [%d, %d] to remote storage (%d records)",
                partition.topic,
                partition.index,
                first,
                end,
                records,
            )

    def _expired(
        self, partition: Partition, tip: TopicIdPartition
    ) -> list[RemoteLogSegmentMetadata]:
        plog = partition.log
        config = plog.config
        segments = self.rlmm.list_remote_log_segments(tip)
        now = self._clock_ms()
        doomed: list[RemoteLogSegmentMetadata] = []
        local_only = plog.size_in_bytes
        remote_below_local = [s for s in segments if s.end_offset < plog.local_log_start_offset]
        total = local_only + sum(s.segment_size_in_bytes for s in remote_below_local)
        for segment in segments:
            below_start = segment.end_offset < plog.log_start_offset
            too_old = config.retention_ms >= 0 and now - segment.max_timestamp_ms > (
                config.retention_ms
            )
            too_big = (
                config.retention_bytes >= 0
                and segment in remote_below_local
                and total - segment.segment_size_in_bytes >= config.retention_bytes
            )
            if not (below_start or (config.delete_enabled and (too_old or too_big))):
                break
            if segment.end_offset >= plog.high_watermark:
                break
            total -= segment.segment_size_in_bytes if segment in remote_below_local else 0
            doomed.append(segment)
        return doomed

    async def _expire(self, partition: Partition, tip: TopicIdPartition) -> None:
        for segment in self._expired(partition, tip):
            segment_id = segment.remote_log_segment_id

            def delete(m: RemoteLogSegmentMetadata = segment) -> None:
                self.rlmm.update_remote_log_segment_metadata(
                    m.remote_log_segment_id, RemoteLogSegmentState.DELETE_SEGMENT_STARTED
                )
                self.rsm.delete_log_segment_data(m)
                self.rlmm.update_remote_log_segment_metadata(
                    m.remote_log_segment_id, RemoteLogSegmentState.DELETE_SEGMENT_FINISHED
                )
                self.rlmm.update_log_start_offset(tip, m.end_offset + 1)

            self.metrics.delete_requests.mark()
            try:
                await self._on(self._expirer, delete)
            except Exception:
                self.metrics.delete_errors.mark()
                raise
            new_start = segment.end_offset + 1
            if new_start <= partition.log.log_end_offset:
                partition.log.increment_log_start_offset(new_start)
            self.replica_manager.fetch_waiters.notify((partition.topic, partition.index))
            log.info(
                "Deleted remote segment %s of %s-%d; log start offset %d",
                segment_id.id,
                partition.topic,
                partition.index,
                partition.log.log_start_offset,
            )

    # -- reads --------------------------------------------------------------------------------
    def _tip(self, partition: Partition) -> TopicIdPartition:
        loaded = self._loaded.get((partition.topic, partition.index))
        if loaded is None:
            raise KafkaApiError(ErrorCode.OFFSET_OUT_OF_RANGE, "remote state not loaded yet")
        return loaded[0]

    async def _read_tip(self, partition: Partition) -> TopicIdPartition:
        """The partition's store id, its manifest loaded first if this broker has just become
        the leader (a new leader serves remote reads before its first tiering run)."""
        loaded = self._loaded.get((partition.topic, partition.index))
        if loaded is None or loaded[1] != partition.leader_epoch:
            if not partition.is_leader:
                raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "not the leader")
            return await self._load(partition)
        return loaded[0]

    async def fetch(self, partition: Partition, offset: int, max_bytes: int) -> bytes:
        """Kafka batches from remote storage, from the batch holding ``offset`` on."""
        records = (await self._fetch(partition, offset, max_bytes))[0]
        return records if isinstance(records, bytes) else bytes(records)

    async def _fetch(
        self, partition: Partition, offset: int, max_bytes: int
    ) -> tuple[EncodedBatch, RemoteLogSegmentMetadata, int]:
        """The batches, their segment and the offset after the last one (-1 when none): the
        batches are walked once for both the prefetch and a read_committed reader's bound."""
        tip = await self._read_tip(partition)
        metadata = self.rlmm.remote_log_segment_metadata(tip, offset)
        if metadata is None:
            raise KafkaApiError(
                ErrorCode.OFFSET_OUT_OF_RANGE, f"offset {offset} is in no remote segment"
            )
        self.metrics.fetch_requests.mark()
        try:
            records = await self._on(
                self._fetchers, lambda: self.rsm.fetch_log_segment(metadata, offset, max_bytes)
            )
        except Exception:
            self.metrics.fetch_errors.mark()
            raise
        self.metrics.fetch_bytes.mark(len(records))
        following = _next_offset(records, -1)
        self._prefetch_next(partition, tip, metadata, following, max_bytes)
        return records, metadata, following

    def _prefetch_next(
        self,
        partition: Partition,
        tip: TopicIdPartition,
        metadata: RemoteLogSegmentMetadata,
        following: int,
        max_bytes: int,
    ) -> None:
        """A reader whose fetch reached the end of a remote segment asks for the next offset
        next: when that is in the next remote segment (and not served locally), start
        encoding that fetch now, so the request finds its batches ready instead of waiting
        for the object to be read and re-encoded."""
        if following <= metadata.end_offset or following >= partition.log.segments[0].base_offset:
            return
        segment = self.rlmm.remote_log_segment_metadata(tip, following)
        if segment is not None:
            self.rsm.prefetch_log_segment(segment, following, max_bytes)

    async def read(
        self, partition: Partition, offset: int, max_bytes: int, read_committed: bool = False
    ) -> RemoteRead:
        """What a Fetch of ``offset`` gets from remote storage (the broker's ``remote_fetch``
        hook): the batches and, when ``read_committed``, the aborted transactions from
        ``offset`` up to the end of the last returned batch (Kafka bounds them the same way,
        by the fetched range; the client matches them to batches itself)."""
        records, metadata, following = await self._fetch(partition, offset, max_bytes)
        if not read_committed or not records:
            return RemoteRead(records)
        upper = following if following >= 0 else metadata.end_offset + 1
        aborted = await self.aborted_transactions(partition, offset, upper)
        pairs = dict.fromkeys((t.producer_id, t.first_offset) for t in aborted)
        return RemoteRead(records, tuple(sorted(pairs, key=lambda p: (p[1], p[0]))))

    async def aborted_transactions(
        self, partition: Partition, start_offset: int, upper_offset: int
    ) -> list[AbortedTxn]:
        """The aborted transactions a read_committed reader of ``[start_offset,
        upper_offset)`` needs, across both tiers (see :meth:`collect_aborted_transactions`)."""
        if upper_offset <= start_offset:
            return []
        return await self.collect_aborted_transactions(
            partition, self._tip(partition), start_offset, upper_offset
        )

    async def collect_aborted_transactions(
        self, partition: Partition, tip: TopicIdPartition, start_offset: int, upper_offset: int
    ) -> list[AbortedTxn]:
        """Aborted transactions with a marker at or after ``start_offset`` and data below
        ``upper_offset`` (Kafka's ``RemoteLogManager.collectAbortedTransactions``): the
        ``.txnindex`` of every remote segment from the one holding ``start_offset`` on, then
        the local transaction indexes, until an entry's LSO shows no later marker can abort
        data below ``upper_offset``. May hold duplicates (a segment both remote and local)."""
        found: list[AbortedTxn] = []
        scanned_below = start_offset
        while True:
            # Remote segments that are also local are left to the cheaper local scan. Local
            # retention may delete local segments while the remote scan runs off the loop;
            # those are then remote only, and the next round scans them. Segments without
            # transactional rows (no ABORT marker, so an empty .txnindex) are not listed.
            local_base = partition.log.segments[0].base_offset
            segments = self.rlmm.transaction_index_segments(tip, scanned_below, local_base)
            scanned_below = max(scanned_below, local_base)
            if segments:

                def scan(
                    segments: list[RemoteLogSegmentMetadata] = segments,
                ) -> tuple[list[AbortedTxn], bool]:
                    return self._scan_remote(segments, start_offset, upper_offset)

                part, complete = await self._on(self._fetchers, scan)
                found.extend(part)
                if complete:
                    return found
            if partition.log.segments[0].base_offset <= scanned_below:
                break
        found.extend(
            AbortedTxn(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
            for t in partition.log.collect_aborted_transactions(start_offset, upper_offset)
        )
        return found

    def _scan_remote(
        self, segments: list[RemoteLogSegmentMetadata], start_offset: int, upper_offset: int
    ) -> tuple[list[AbortedTxn], bool]:
        found: list[AbortedTxn] = []
        for metadata in segments:
            for txn in self.rsm.fetch_transaction_index(metadata):
                if txn.last_offset >= start_offset and txn.first_offset < upper_offset:
                    found.append(txn)
                if txn.last_stable_offset >= upper_offset:
                    return found, True
        return found, False

    async def offset_for_timestamp(
        self, partition: Partition, timestamp: int
    ) -> tuple[int, int, int] | None:
        """(timestamp, offset, epoch) of the first remote record at or after ``timestamp``."""
        loaded = self._loaded.get((partition.topic, partition.index))
        if loaded is None:
            return None
        tip = loaded[0]
        start = partition.log.log_start_offset
        for metadata in self.rlmm.list_remote_log_segments(tip):
            if metadata.max_timestamp_ms < timestamp or metadata.end_offset < start:
                continue
            path = segment_object_paths(metadata)[PARQUET_SUFFIX]

            def find(path: str = path) -> tuple[int, int] | None:
                with open_segment(self.rsm.store, path) as parquet:
                    return first_at_or_after(parquet, timestamp, start, skip_control=True)

            found = await self._on(self._fetchers, find)
            if found is not None:
                ts, offset = found
                return ts, offset, partition.log.epoch_cache.epoch_for_offset(offset)
        return None
