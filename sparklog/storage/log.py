"""One partition's log: an ordered list of segments with offsets, epochs, retention and recovery.

Contract and invariants:
- Offsets: ``log_start_offset <= high_watermark <= log_end_offset`` and
  ``recovery_point <= log_end_offset`` at all times. The log end offset (LEO) is the next
  offset of the last batch (or the active segment's base offset when it is empty).
- Segments are sorted by base offset, never overlap, and only the last (active) one is written.
- The log never holds a corrupt batch: appends CRC-check every batch once (``validate_batch``)
  before writing, and recovery truncates at the first batch that fails the check.
- Appends write the request bytes as received after patching, in place and O(1) per batch,
  the base offset, the partition leader epoch and (LogAppendTime topics) the max timestamp.
- Reads return batch-aligned :class:`FileSlice` objects from a single segment, never copies.
- Everything below ``recovery_point`` has been fsynced; it only advances in :meth:`flush`.
  Recovery (``had_clean_shutdown=False``) re-checks every segment from the one holding the
  recovery point, truncates a torn or corrupt tail and deletes the segments after it, so the
  recovered log is a prefix of what was appended.
- Deleted segments are renamed ``*.deleted`` and removed after ``file.delete.delay.ms`` by
  :meth:`delete_expired_files`, so slices handed out earlier stay readable meanwhile.
- Retention (Kafka 4.x): only whole segments entirely below the high watermark are deleted,
  oldest first; the active segment qualifies too, in which case a new empty segment is rolled
  first. Deletion never creates a gap below the log end offset.
- Truncation removes whole batches: ``truncate_to(o)`` drops every batch whose last offset is
  >= o, so if ``o`` falls inside a batch the new LEO is that batch's base offset (< o).
- Idempotent producers: :attr:`Log.producer_state` (a
  :class:`~sparklog.storage.producer_state.ProducerStateManager`) always describes the batches
  below the LEO. Leader appends are checked against it before anything is written (a
  duplicate is not written and answered with the original offsets); follower appends update it
  unchecked. A snapshot is written at every roll and by :meth:`take_producer_snapshot` (clean
  shutdown); opening and truncation reload the newest snapshot at or below the LEO and replay
  the batches after it.
- Transactions (:mod:`sparklog.storage.log_txn`): the log keeps the last stable offset and
  the per-segment transaction indexes; leader appends may not carry control batches when they
  come from a client (``from_client``), markers are written by
  :meth:`~sparklog.storage.log_txn.Transactions.append_control_marker`.
- Not thread-safe: the caller serialises calls per log. Time comes from the injected clock.

:class:`Log` keeps opening, recovery, appends, rolls and truncation here and is composed of
:class:`~sparklog.storage.log_reader.LogReader` (reads by offset and timestamp),
:class:`~sparklog.storage.log_durability.Durability` (flushes, :class:`FlushPlan`),
:class:`~sparklog.storage.log_retention.Retention` (log start offset, retention, deleting
files) and :class:`~sparklog.storage.log_txn.Transactions` (markers, LSO, transaction
indexes), whose docstrings state their own invariants; they share only the segments and
offsets of a :class:`~sparklog.storage.log_state.LogState` (and the epoch cache and producer
state they are handed), and :class:`Log` delegates its public methods to them.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.records import (
    BatchHeader,
    assign_offsets,
    set_log_append_time,
)
from sparklog.storage.checkpoint import write_partition_metadata
from sparklog.storage.config import LogConfig
from sparklog.storage.epoch_cache import LeaderEpochCache
from sparklog.storage.errors import (
    StorageError,
    UnexpectedAppendOffsetError,
)
from sparklog.storage.loader import (
    PARTITION_METADATA,
    load_topic_id,
    parse_log_dir_name,
    recover_segments,
    segment_bases,
    sweep_temp_files,
)
from sparklog.storage.log_durability import Durability, FlushPlan
from sparklog.storage.log_reader import LogReader
from sparklog.storage.log_retention import Retention
from sparklog.storage.log_state import LogState
from sparklog.storage.log_txn import Transactions
from sparklog.storage.log_validation import Records, validate_append
from sparklog.storage.producer_state import ProducerStateManager, duplicate_result
from sparklog.storage.segment import LogSegment
from sparklog.storage.slices import (
    AppendResult,
    LogReadResult,
    TimestampAndOffset,
)
from sparklog.storage.txn_index import AbortedTxn

__all__ = ["Clock", "FlushPlan", "Log", "Records"]

Clock = Callable[[], int]


_log = logging.getLogger(__name__)


def _writable(records: Records) -> bytearray | memoryview:
    if isinstance(records, bytearray):
        return records
    if isinstance(records, memoryview) and not records.readonly:
        return records
    # Offsets are patched in place, so immutable input is copied once.
    return bytearray(records)


class Log:
    """A partition log in ``directory``; create with :meth:`open`."""

    def __init__(
        self,
        directory: str,
        config: LogConfig,
        clock: Clock,
        segments: list[LogSegment],
        log_start_offset: int,
        recovery_point: int,
        high_watermark: int,
        topic_id: bytes | None,
    ) -> None:
        self.directory = directory
        name = parse_log_dir_name(os.path.basename(directory.rstrip(os.sep)))
        self.topic, self.partition = name if name is not None else ("", -1)
        self._state = LogState(
            directory,
            self.topic,
            self.partition,
            config,
            clock,
            segments,
            [s.base_offset for s in segments],
            log_start_offset,
            recovery_point,
            high_watermark,
        )
        self.topic_id = topic_id
        self._durability = Durability(self._state)
        # The broker turns this off and runs flush.messages fsyncs off its event loop.
        self.auto_flush = True
        # Bumped by every truncation, so work planned before one (a cleaning pass) can tell.
        self.truncations = 0
        self._roll_jitter_ms = self._new_jitter()
        self.epoch_cache = LeaderEpochCache(directory, lambda: self.log_end_offset)
        self.producer_state = ProducerStateManager(directory)
        self._retention = Retention(self._state, self.epoch_cache, self.producer_state, self.roll)
        self._txn = Transactions(self._state, self.producer_state, self._append)
        self._reader = LogReader(self._state)

    # --- opening and recovery ------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: str,
        config: LogConfig,
        clock: Clock,
        *,
        topic_id: bytes | None = None,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        high_watermark: int = 0,
        had_clean_shutdown: bool = False,
    ) -> Log:
        """Open (creating if needed) the log in ``directory``, recovering it after a crash."""
        os.makedirs(directory, exist_ok=True)
        now = clock()
        sweep_temp_files(directory)
        stored_id = load_topic_id(directory)
        if topic_id is not None and stored_id is not None and stored_id != topic_id:
            raise StorageError(
                f"Topic id mismatch in {directory}: stored {stored_id.hex()}, "
                f"expected {topic_id.hex()}",
                ErrorCode.INCONSISTENT_TOPIC_ID,
            )
        if topic_id is not None and stored_id is None:
            write_partition_metadata(os.path.join(directory, PARTITION_METADATA), topic_id)
        segments = [
            LogSegment.open(directory, base, config, now) for base in segment_bases(directory)
        ]
        epoch_starts = recover_segments(directory, segments, recovery_point, had_clean_shutdown)
        if not segments:
            segments.append(LogSegment.create(directory, log_start_offset, config, now))
        log_end_offset = segments[-1].next_offset
        start = min(max(log_start_offset, segments[0].base_offset), log_end_offset)
        recovered_point = (
            log_end_offset if had_clean_shutdown else min(recovery_point, log_end_offset)
        )
        log = cls(
            directory,
            config,
            clock,
            segments,
            start,
            max(recovered_point, 0),
            min(max(high_watermark, start), log_end_offset),
            topic_id or stored_id,
        )
        log.epoch_cache.recover(epoch_starts, start, log_end_offset)
        log._txn.reload_producer_state()
        return log

    def _new_jitter(self) -> int:
        jitter = min(self.config.segment_jitter_ms, self.config.segment_ms)
        return random.randrange(jitter) if jitter > 0 else 0

    # --- properties ----------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._state.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._state.log_end_offset

    @property
    def recovery_point(self) -> int:
        return self._state.recovery_point

    @property
    def high_watermark(self) -> int:
        return self._state.high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        state = self._state
        state.high_watermark = min(max(offset, state.log_start_offset), state.log_end_offset)
        # Forget transactions whose markers are now replicated, so the list stays short.
        self.producer_state.first_unstable_offset(state.high_watermark)

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return tuple(self._state.segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._state.active_segment

    @property
    def size_in_bytes(self) -> int:
        return self._state.size_in_bytes

    @property
    def latest_epoch(self) -> int:
        return self.epoch_cache.latest_epoch

    @property
    def config(self) -> LogConfig:
        return self._state.config

    def update_config(self, config: LogConfig) -> None:
        self._state.config = config

    @property
    def remote_storage(self) -> bool:
        """True while remote storage holds part of this log: the log start offset may then lie
        below the first local segment, and local segments are deleted only once copied."""
        return self._state.remote_storage

    @property
    def highest_remote_offset(self) -> int:
        """The last offset copied to remote storage (-1: none)."""
        return self._state.highest_remote_offset

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: ``(largest epoch <= epoch, its end offset)`` or (-1, -1)."""
        return self.epoch_cache.end_offset_for_epoch(epoch)

    # --- appending -----------------------------------------------------------------------

    def append_as_leader(
        self,
        records: Records,
        leader_epoch: int,
        now_ms: int | None = None,
        *,
        from_client: bool = False,
    ) -> AppendResult:
        """Validate, assign offsets from the LEO and the leader epoch in place, and append.

        Raises ``CorruptRecordError`` (CORRUPT_MESSAGE / INVALID_RECORD),
        :class:`RecordTooLargeError` (MESSAGE_TOO_LARGE), :class:`RecordBatchTooLargeError`
        or :class:`InvalidTimestampError`; nothing is written when it raises. A control batch
        ``from_client`` is INVALID_RECORD.
        """
        now = self._state.clock() if now_ms is None else now_ms
        buf = _writable(records)
        batches = validate_append(buf, now, self.config, self._state.name, True, from_client)
        next_offset = self.log_end_offset
        headers: list[BatchHeader] = []
        append_time = now if self.config.log_append_time else -1
        for pos, _ in batches:
            header = assign_offsets(buf, pos, next_offset, leader_epoch)
            if append_time >= 0:
                header = set_log_append_time(buf, pos, append_time)
            headers.append(header)
            next_offset = header.next_offset
        check = self.producer_state.check_leader_append(headers, f"{self.topic}-{self.partition}")
        if check.duplicate is not None:
            return duplicate_result(check.duplicate, self._state.log_start_offset, append_time >= 0)
        result = self._append(buf, headers, now, append_time)
        self.producer_state.commit(check.updates, self.log_end_offset)
        return result

    def append_as_follower(self, records: Records, now_ms: int | None = None) -> AppendResult:
        """Append batches whose offsets the leader assigned; they must start at the LEO."""
        now = self._state.clock() if now_ms is None else now_ms
        batches = validate_append(records, now, self.config, self._state.name, False)
        headers = [h for _, h in batches]
        expected = self.log_end_offset
        for header in headers:
            if header.base_offset != expected:
                raise UnexpectedAppendOffsetError(
                    f"Unexpected offset in append to {self.topic}-{self.partition}. First "
                    f"offset {header.base_offset} is not the expected {expected}; the append "
                    f"must be contiguous with the log end offset"
                )
            expected = header.next_offset
        result = self._append(records, headers, now, -1)
        self._txn.track_replicated(records, batches)
        return result

    def _append(
        self, buf: Records, headers: list[BatchHeader], now_ms: int, append_time: int
    ) -> AppendResult:
        if not headers:
            return AppendResult(-1, -1, append_time, self._state.log_start_offset, -1, -1, 0, 0)
        size = sum(h.size_in_bytes for h in headers)
        self._maybe_roll(size, headers, now_ms)
        self.active_segment.append(buf, headers)
        self._state.bases[-1] = self.active_segment.base_offset
        max_ts, offset_of_max = -1, -1
        cache = self.epoch_cache
        for header in headers:
            if header.max_timestamp > max_ts:
                max_ts, offset_of_max = header.max_timestamp, header.last_offset
            epoch = header.partition_leader_epoch
            if epoch >= 0 and epoch > cache.latest_epoch:
                cache.assign(epoch, header.base_offset)
        if self.auto_flush and self.needs_flush:
            self.flush()
        return AppendResult(
            first_offset=headers[0].base_offset,
            last_offset=headers[-1].last_offset,
            log_append_time=append_time,
            log_start_offset=self._state.log_start_offset,
            max_timestamp=max_ts,
            offset_of_max_timestamp=offset_of_max,
            records_count=sum(h.records_count for h in headers),
            valid_bytes=size,
        )

    def _maybe_roll(self, size: int, headers: list[BatchHeader], now_ms: int) -> None:
        segment = self.active_segment
        if segment.size == 0:
            if segment.base_offset != headers[0].base_offset:
                self.roll(headers[0].base_offset)
            return
        max_ts = max(h.max_timestamp for h in headers)
        if segment.rolling_timestamp is not None and segment.rolling_timestamp >= 0:
            waited = max_ts - segment.rolling_timestamp
        else:
            waited = now_ms - segment.created_ms
        if (
            segment.size > self.config.segment_size - size
            or waited > self.config.segment_ms - self._roll_jitter_ms
            or segment.indexes_full
            or not segment.can_hold(headers[-1].last_offset)
        ):
            self.roll(headers[0].base_offset)

    def roll(self, new_base_offset: int | None = None) -> LogSegment:
        """Start a new active segment at ``new_base_offset`` (default: the LEO)."""
        base = self.log_end_offset if new_base_offset is None else new_base_offset
        active = self.active_segment
        if active.size == 0 and active.base_offset == base:
            return active
        if base < self.log_end_offset:
            raise ValueError(f"cannot roll at {base} below the log end offset")
        if active.size == 0:
            # An empty segment at a lower base would overlap nothing but confuse lookups.
            active.delete_now()
            self._state.segments.pop()
            self._state.bases.pop()
        segment = LogSegment.create(self.directory, base, self.config, self._state.clock())
        self._state.segments.append(segment)
        self._state.bases.append(base)
        self._roll_jitter_ms = self._new_jitter()
        # Every batch below ``base`` is applied, so the state is the one at the new segment.
        self.producer_state.map_end_offset = base
        self.producer_state.take_snapshot()
        return segment

    def take_producer_snapshot(self) -> None:
        """Durably snapshot the producer state at the LEO (clean shutdown), so the next open
        has nothing to replay."""
        self.producer_state.map_end_offset = self.log_end_offset
        self.producer_state.take_snapshot(durable=True)

    # --- reading -------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> LogReadResult:
        """Batch-aligned slices from the batch holding ``start_offset``; see
        :meth:`LogReader.read`."""
        return self._reader.read(start_offset, max_bytes, max_offset, min_one_batch)

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets by time; see :meth:`LogReader.offset_for_timestamp`."""
        return self._reader.offset_for_timestamp(timestamp)

    def max_timestamp_offset(self) -> TimestampAndOffset | None:
        """ListOffsets MAX_TIMESTAMP (-3): the first record with the largest timestamp."""
        return self._reader.max_timestamp_offset()

    # --- truncation ----------------------------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch with an offset >= ``offset``; True if anything was removed."""
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self.log_end_offset:
            # Nothing to remove, but the epoch cache may hold an entry at the log end that a
            # leader assigned and never wrote to; a follower must not keep it (Kafka trims too).
            self.epoch_cache.truncate_from_end(self.log_end_offset)
            return False
        if offset < self._state.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        _log.info("Truncating %s to offset %d", self.directory, offset)
        self.truncations += 1
        while len(self._state.segments) > 1 and self._state.segments[-1].base_offset >= offset:
            self._retention.schedule_delete(self._state.segments.pop())
            self._state.bases.pop()
        self.active_segment.truncate_to(offset)
        leo = self.log_end_offset
        self._state.recovery_point = min(self._state.recovery_point, leo)
        self._state.high_watermark = min(self._state.high_watermark, leo)
        self.epoch_cache.truncate_from_end(leo)
        self._txn.reload_producer_state()
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete everything and restart the log, empty, at ``offset``."""
        _log.info("Truncating %s fully and starting at offset %d", self.directory, offset)
        self.truncations += 1
        state = self._state
        for segment in state.segments:
            self._retention.schedule_delete(segment)
        state.segments = [LogSegment.create(self.directory, offset, state.config, state.clock())]
        state.bases = [offset]
        state.log_start_offset = state.recovery_point = state.high_watermark = offset
        self.epoch_cache.clear()
        self.producer_state.delete_all_snapshots()
        self.producer_state.clear(offset)

    # --- tiered storage ------------------------------------------------------------------

    @property
    def local_log_start_offset(self) -> int:
        """The first offset held in local segments (the log start offset without tiering)."""
        return self._state.local_log_start_offset

    def attach_remote(self, remote_log_start_offset: int, highest_remote_offset: int) -> None:
        """Record what remote storage holds: ``[remote_log_start_offset, highest_remote_offset]``.

        When the remote range reaches the local segments, the log start offset becomes the
        remote one, so offsets below the local log start are served from remote storage.
        """
        state = self._state
        state.remote_storage = True
        state.highest_remote_offset = max(state.highest_remote_offset, highest_remote_offset)
        reaches_local = state.highest_remote_offset + 1 >= self.local_log_start_offset
        if remote_log_start_offset >= 0 and reaches_local:
            state.log_start_offset = min(state.log_start_offset, remote_log_start_offset)

    # --- durability (Durability) --------------------------------------------------------

    @property
    def last_flush_ms(self) -> int:
        return self._durability.last_flush_ms

    @property
    def needs_flush(self) -> bool:
        """flush.messages: at least that many messages are not yet fsynced."""
        return self._durability.needs_flush

    def flush(self, up_to_offset: int | None = None) -> None:
        """fsync the offsets in [recovery_point, up_to_offset) (default: the LEO)."""
        self._durability.flush(up_to_offset)

    def begin_flush(self, up_to_offset: int | None = None) -> FlushPlan | None:
        """The first half of :meth:`flush`; see :meth:`Durability.begin_flush`."""
        return self._durability.begin_flush(up_to_offset)

    def complete_flush(self, plan: FlushPlan) -> None:
        """Advance the recovery point once ``plan`` has run."""
        self._durability.complete_flush(plan)

    def flush_if_due(self, now_ms: int) -> bool:
        """Honour flush.ms: flush if unflushed data is older than it. True if flushed."""
        return self._durability.flush_if_due(now_ms)

    # --- retention (Retention) -----------------------------------------------------------

    def increment_log_start_offset(self, offset: int) -> bool:
        """Move the log start offset up to ``offset`` and delete segments wholly below it."""
        return self._retention.increment_log_start_offset(offset)

    def delete_records(self, offset: int) -> int:
        """DeleteRecords up to ``offset`` (-1: the HW); returns the new log start offset."""
        return self._retention.delete_records(offset)

    def delete_retention_breached(self, now_ms: int) -> int:
        """Delete the segments retention lets go; returns how many were deleted."""
        return self._retention.delete_retention_breached(now_ms)

    def replace_segment(self, old: LogSegment, install: Callable[[], LogSegment]) -> LogSegment:
        """Swap in a cleaned copy of the closed segment ``old`` (log compaction)."""
        return self._retention.replace_segment(old, install)

    def remove_expired_producers(self, now_ms: int) -> int:
        """producer.id.expiration.ms: forget producers idle that long (no open transaction)."""
        return self._retention.remove_expired_producers(now_ms)

    def delete_expired_files(self, now_ms: int) -> None:
        """Remove ``*.deleted`` files whose ``file.delete.delay.ms`` has passed."""
        self._retention.delete_expired_files(now_ms)

    # --- transactions (Transactions) -----------------------------------------------------

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest undecided (or unreplicated) transaction."""
        return self._txn.first_unstable_offset

    @property
    def last_stable_offset(self) -> int:
        return self._txn.last_stable_offset

    def append_control_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        committed: bool,
        leader_epoch: int,
        now_ms: int | None = None,
    ) -> int:
        """Append a COMMIT or ABORT marker for ``producer_id`` at the log end; its offset."""
        return self._txn.append_control_marker(
            producer_id, producer_epoch, coordinator_epoch, committed, leader_epoch, now_ms
        )

    def collect_aborted_transactions(
        self, start_offset: int, upper_offset: int
    ) -> list[AbortedTxn]:
        """Aborted transactions with a marker at or after ``start_offset`` and data below
        ``upper_offset``, in marker order."""
        return self._txn.collect_aborted_transactions(start_offset, upper_offset)

    def aborted_transactions_for_read(
        self, start_offset: int, result: LogReadResult, max_offset: int | None
    ) -> list[AbortedTxn]:
        """The aborted transactions a read_committed fetch returns with ``result``."""
        return self._txn.aborted_transactions_for_read(start_offset, result, max_offset)

    def close(self) -> None:
        for segment in self._state.segments:
            segment.close()
