"""Log compaction (``cleanup.policy=compact`` and ``compact,delete``): Kafka's log cleaner.

Contract and invariants:
- Only closed segments are cleaned, never the active one, and only whole segments entirely
  below the *uncleanable offset*: the minimum of the last stable offset (so no open
  transaction is ever touched), the active segment's base and, with
  ``min.compaction.lag.ms``, the base of the first segment holding a record younger than that
  lag.
- The *dirty* section runs from the first dirty offset (the end of the previous cleaning,
  persisted by the log manager in ``cleaner-offset-checkpoint``) to that bound. A log is
  cleaned when ``dirty / (clean + dirty) >= min.cleanable.dirty.ratio``, when its oldest dirty
  batch is older than ``max.compaction.lag.ms``, or when a tombstone's delete horizon written
  by an earlier pass has passed.
- A pass maps every key of the dirty section to its latest offset, then rewrites every
  cleanable segment (clean and dirty): a keyed record survives iff no later record of its key
  lies in the dirty section; records without a key are dropped, as in Kafka. Offsets never
  change: surviving records keep their offsets and every batch keeps its base offset, last
  offset delta, leader epoch, producer fields and codec; an untouched batch is copied byte for
  byte. Control batches are kept, and so is the last batch of every producer in the producer
  state (empty if need be) so that the state can be rebuilt from the log.
- Transactions: records of aborted transactions (from the transaction indexes, markers below
  the high watermark) never enter the key map and are removed, as Kafka's cleaner does, so an
  aborted value can never shadow a committed one. Each cleaned segment keeps a copy of its
  transaction index (markers are never removed, so every entry still applies).
- Tombstones (null values), KIP-534: the first pass that keeps a tombstone stamps its batch
  with a delete horizon ``now + delete.retention.ms``; passes after the horizon drop them.
- Crash safety, Kafka's protocol (reliability note A7): the replacement of segment ``B`` is
  written as ``B.log.cleaned`` (+ ``.index.cleaned``, ``.timeindex.cleaned`` and, if the
  segment has aborts, ``.txnindex.cleaned``) and fsynced, renamed to ``*.swap``, then the old
  files are renamed ``*.deleted`` and the swap files get the final names.
  :func:`~sparklog.storage.loader.sweep_temp_files` deletes ``*.cleaned`` and
  ``*.deleted`` and completes ``*.swap`` on open, so a crash at any step leaves either the old
  or the new segment, both holding the same offsets and the latest value of every key.
- Threads: a :class:`CleaningPass` is planned and installed where the log's other calls run,
  and written (key map, cleaned files: all the reading and writing of segment data) on any
  thread; the node runs that part on its cleaner thread so compaction never stalls the event
  loop. A truncation between the two abandons the pass.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sparklog.protocol.record_codec import Record, build_batch, decode_batch
from sparklog.protocol.records import BatchHeader, parse_batch_header
from sparklog.storage.checkpoint import fsync_dir
from sparklog.storage.config import LogConfig
from sparklog.storage.loader import CLEANED_SUFFIX, SWAP_SUFFIX
from sparklog.storage.log import Log
from sparklog.storage.segment import LogSegment

__all__ = [
    "CleanPlan",
    "CleanResult",
    "CleaningPass",
    "LogCleaner",
    "StepHook",
    "aborted_ranges",
    "build_offset_map",
    "plan_cleaning",
    "write_cleaned_segment",
]

# Called with "cleaned", "swap" and "deleted" as a segment replacement passes each step;
# tests raise from it to simulate a crash there.
StepHook = Callable[[str], None]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CleanPlan:
    """What one pass over a log would clean: segments ``[0, segment_count)``."""

    first_dirty_offset: int
    end_offset: int
    segment_count: int
    clean_bytes: int
    dirty_bytes: int

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


@dataclass(slots=True)
class CleanResult:
    """Statistics of a pass; ``end_offset`` is the next first dirty offset."""

    end_offset: int
    segments: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    records_removed: int = 0
    earliest_horizon_ms: int | None = None


@dataclass(slots=True)
class _SegmentOutcome:
    bytes_after: int = 0
    records_removed: int = 0
    earliest_horizon_ms: int | None = None
    changed: bool = False
    headers: list[BatchHeader] = field(default_factory=list)


def plan_cleaning(
    log: Log, first_dirty_offset: int, now_ms: int, horizon_due: bool = False
) -> CleanPlan | None:
    """Decide whether ``log`` needs cleaning now, and up to where; ``None`` if it does not."""
    config = log.config
    segments = log.segments
    # A checkpoint past the end is left from before a truncation: that data is gone.
    first_dirty = min(max(first_dirty_offset, log.log_start_offset), log.log_end_offset)
    bound = min(log.last_stable_offset, log.active_segment.base_offset)
    if config.min_compaction_lag_ms > 0:
        for segment in segments[:-1]:
            young = now_ms - segment.largest_timestamp < config.min_compaction_lag_ms
            if segment.next_offset > first_dirty and young:
                bound = min(bound, segment.base_offset)
                break
    count = 0
    clean_bytes = dirty_bytes = 0
    oldest_dirty_ms: int | None = None
    for i, segment in enumerate(segments[:-1]):
        following = segments[i + 1].base_offset
        if following > bound:
            break
        count = i + 1
        if following <= first_dirty:
            clean_bytes += segment.size
            continue
        dirty_bytes += segment.size
        if segment.size and oldest_dirty_ms is None:
            oldest_dirty_ms = segment.read_header_at(0).max_timestamp
    if count == 0:
        return None
    end_offset = segments[count].base_offset
    plan = CleanPlan(first_dirty, end_offset, count, clean_bytes, dirty_bytes)
    overdue = (
        oldest_dirty_ms is not None
        and oldest_dirty_ms >= 0
        and now_ms - oldest_dirty_ms > config.max_compaction_lag_ms
    )
    if dirty_bytes and (plan.dirty_ratio >= config.min_cleanable_dirty_ratio or overdue):
        return plan
    return plan if horizon_due else None


def _batches(segment: LogSegment) -> list[tuple[BatchHeader, bytes]]:
    return [
        (header, segment.read_batch_bytes(pos, header.size_in_bytes))
        for pos, header in segment.iter_headers(0)
    ]


AbortedRanges = dict[int, list[tuple[int, int]]]


def aborted_ranges(log: Log, start_offset: int, end_offset: int) -> AbortedRanges:
    """Producer id -> ``[first, last]`` offset ranges of aborted transactions whose data may
    lie in ``[start_offset, end_offset)`` and whose marker is below the high watermark."""
    ranges: AbortedRanges = {}
    for txn in log.collect_aborted_transactions(start_offset, end_offset):
        if txn.last_offset < log.high_watermark:
            ranges.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
    return ranges


def _is_aborted(header: BatchHeader, aborted: AbortedRanges) -> bool:
    if not header.is_transactional or header.is_control:
        return False
    ranges = aborted.get(header.producer_id, ())
    return any(first <= header.base_offset <= last for first, last in ranges)


def build_offset_map(
    segments: Sequence[LogSegment],
    start_offset: int,
    end_offset: int,
    aborted: AbortedRanges | None = None,
) -> dict[bytes, int]:
    """The latest offset of every key among records in ``[start_offset, end_offset)``,
    leaving out records of aborted transactions."""
    latest: dict[bytes, int] = {}
    for segment in segments:
        if segment.next_offset <= start_offset or segment.base_offset >= end_offset:
            continue
        for header, data in _batches(segment):
            if header.is_control or header.last_offset < start_offset:
                continue
            if aborted and _is_aborted(header, aborted):
                continue
            for record in decode_batch(data)[1]:
                if record.key is not None and start_offset <= record.offset < end_offset:
                    latest[record.key] = record.offset
    return latest


def _retained(
    records: list[Record], offset_map: dict[bytes, int], drop_tombstones: bool
) -> list[Record]:
    kept = []
    for record in records:
        if record.key is None:
            continue
        if record.offset < offset_map.get(record.key, -1):
            continue
        if record.value is None and drop_tombstones:
            continue
        kept.append(record)
    return kept


def _rewrite_batch(
    header: BatchHeader,
    data: bytes,
    offset_map: dict[bytes, int],
    producer_last_offsets: frozenset[int],
    now_ms: int,
    delete_retention_ms: int,
    aborted: bool = False,
) -> tuple[bytes | None, int, int | None]:
    """``(new bytes, or None to drop it; records removed; the delete horizon its kept
    tombstones wait for, if any)`` for one batch; the original ``data`` if unchanged.
    An ``aborted`` batch loses all its records."""
    if header.is_control:
        return data, 0, None
    records = decode_batch(data)[1]
    horizon = header.base_timestamp if header.has_delete_horizon else None
    if aborted:
        kept: list[Record] = []
    else:
        kept = _retained(records, offset_map, horizon is not None and now_ms >= horizon)
    removed = len(records) - len(kept)
    has_tombstone = any(r.value is None for r in kept)
    stamp = has_tombstone and horizon is None
    if stamp:
        horizon = now_ms + delete_retention_ms
    pending = horizon if has_tombstone else None
    if not removed and not stamp:
        return data, 0, pending
    if not kept and header.last_offset not in producer_last_offsets:
        return None, removed, None
    # The header fields that producer-state rebuild and readers rely on stay as they were.
    rebuilt = build_batch(
        kept,
        base_offset=header.base_offset,
        compression=header.compression,
        timestamp_type=header.timestamp_type,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        partition_leader_epoch=header.partition_leader_epoch,
        is_transactional=header.is_transactional,
        last_offset_delta=header.last_offset_delta,
        max_timestamp=header.max_timestamp,
        delete_horizon_ms=horizon if has_tombstone or header.has_delete_horizon else None,
    )
    return rebuilt, removed, pending


def write_cleaned_segment(
    segment: LogSegment,
    config: LogConfig,
    offset_map: dict[bytes, int],
    producer_last_offsets: frozenset[int],
    now_ms: int,
    aborted: AbortedRanges | None = None,
) -> tuple[LogSegment | None, _SegmentOutcome]:
    """Write the cleaned copy of ``segment`` as ``*.cleaned`` files (fsynced and closed).

    Returns ``(None, outcome)`` when nothing would change, so the segment is left alone.
    """
    outcome = _SegmentOutcome()
    pieces: list[tuple[BatchHeader, bytes]] = []
    for header, data in _batches(segment):
        new, removed, horizon = _rewrite_batch(
            header,
            data,
            offset_map,
            producer_last_offsets,
            now_ms,
            config.delete_retention_ms,
            aborted=bool(aborted) and _is_aborted(header, aborted or {}),
        )
        outcome.records_removed += removed
        if new is not data:
            outcome.changed = True
        if horizon is not None:
            earliest = outcome.earliest_horizon_ms
            outcome.earliest_horizon_ms = horizon if earliest is None else min(earliest, horizon)
        if new is not None:
            pieces.append((header if new is data else parse_batch_header(new), new))
    if not outcome.changed:
        return None, outcome
    base = segment.base_offset
    for path in _paths(segment, CLEANED_SUFFIX):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
    cleaned = LogSegment.create(segment.directory, base, config, now_ms, CLEANED_SUFFIX)
    try:
        for header, data in pieces:
            cleaned.append(data, [header])
            outcome.headers.append(header)
        for txn in segment.txn_index.entries:
            cleaned.txn_index.append(txn)
        cleaned.flush()
    finally:
        cleaned.close()
    outcome.bytes_after = cleaned.size
    return cleaned, outcome


def _paths(segment: LogSegment, suffix: str) -> list[str]:
    """The segment's three file paths with ``suffix`` in place of its own suffix."""
    own = segment.file_suffix
    return [p[: len(p) - len(own)] + suffix for p in segment.file_paths()]


class CleaningPass:
    """One planned pass over one log, split so the heavy part can leave the log's thread.

    - Built on the log's thread (:meth:`LogCleaner.plan`): the segments, aborted ranges and
      producer offsets it needs are captured then.
    - :meth:`write` may run on any thread: it reads the captured closed segments (immutable
      below the uncleanable offset) and writes ``*.cleaned`` files nobody else touches.
    - :meth:`install` runs back on the log's thread: it swaps in each cleaned segment whose
      original is still part of the log and records the pass. If the log was truncated in
      between (a follower's truncation may remove records the key map relied on), nothing is
      installed and the cleaned files are removed; so are those of segments retention deleted.
    """

    def __init__(
        self, cleaner: LogCleaner, key: tuple[str, int], log: Log, plan: CleanPlan, now_ms: int
    ) -> None:
        self.cleaner = cleaner
        self.key = key
        self.log = log
        self.plan = plan
        self.now_ms = now_ms
        self._segments = log.segments[: plan.segment_count]
        self._log_start_offset = log.log_start_offset
        self._truncations = log.truncations
        self._config = log.config
        self._aborted = aborted_ranges(log, self._segments[0].base_offset, plan.end_offset)
        self._producers = frozenset(
            e.last_data_offset for e in log.producer_state.producers.values() if e.batches
        )
        self._written: list[tuple[LogSegment, LogSegment | None, _SegmentOutcome]] = []

    def write(self) -> None:
        """Build the key map and write every changed segment's cleaned copy (any thread)."""
        plan = self.plan
        offset_map = build_offset_map(
            self._segments, plan.first_dirty_offset, plan.end_offset, self._aborted
        )
        try:
            for segment in self._segments:
                if segment.next_offset <= self._log_start_offset:
                    continue  # retention deletes it anyway
                cleaned, outcome = write_cleaned_segment(
                    segment, self._config, offset_map, self._producers, self.now_ms, self._aborted
                )
                self._written.append((segment, cleaned, outcome))
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Remove the cleaned files written so far (the pass is abandoned)."""
        for _, cleaned, _ in self._written:
            if cleaned is not None:
                cleaned.delete_now()
        self._written = []

    def install(self, hook: StepHook | None = None) -> CleanResult | None:
        """Swap the cleaned segments in (the log's thread); None if the pass was abandoned."""
        log = self.log
        if log.truncations != self._truncations:
            _log.info("Abandoned cleaning %s: the log was truncated meanwhile", log.directory)
            self.discard()
            return None
        result = CleanResult(self.plan.end_offset)
        live = log.segments[:-1]
        for old, cleaned, outcome in self._written:
            if outcome.earliest_horizon_ms is not None:
                earliest = result.earliest_horizon_ms
                h = outcome.earliest_horizon_ms
                result.earliest_horizon_ms = h if earliest is None else min(earliest, h)
            if cleaned is None:
                continue
            if old not in live:
                cleaned.delete_now()  # retention removed the original meanwhile
                continue
            result.segments += 1
            result.bytes_before += old.size
            result.bytes_after += outcome.bytes_after
            result.records_removed += outcome.records_removed
            _swap_in(log, old, cleaned, self.now_ms, hook)
        self._written = []
        self.cleaner.record(self.key, result)
        _log.info(
            "Cleaned %s up to offset %d: %d segment(s), %d -> %d bytes, %d record(s) removed",
            log.directory,
            self.plan.end_offset,
            result.segments,
            result.bytes_before,
            result.bytes_after,
            result.records_removed,
        )
        return result


class LogCleaner:
    """Cleans the compacted logs of a log manager; remembers each log's first dirty offset
    and the earliest tombstone horizon its passes wrote."""

    def __init__(self, first_dirty_offsets: dict[tuple[str, int], int] | None = None) -> None:
        self.first_dirty_offsets: dict[tuple[str, int], int] = dict(first_dirty_offsets or {})
        self._horizons: dict[tuple[str, int], int] = {}

    def forget(self, key: tuple[str, int]) -> None:
        self.first_dirty_offsets.pop(key, None)
        self._horizons.pop(key, None)

    def plan(self, key: tuple[str, int], log: Log, now_ms: int) -> CleaningPass | None:
        """The pass ``log`` needs now (see :func:`plan_cleaning`), or None."""
        if not log.config.compact_enabled:
            return None
        horizon = self._horizons.get(key)
        plan = plan_cleaning(
            log,
            self.first_dirty_offsets.get(key, 0),
            now_ms,
            horizon_due=horizon is not None and now_ms >= horizon,
        )
        return None if plan is None else CleaningPass(self, key, log, plan, now_ms)

    def record(self, key: tuple[str, int], result: CleanResult) -> None:
        self.first_dirty_offsets[key] = result.end_offset
        if result.earliest_horizon_ms is None:
            self._horizons.pop(key, None)
        else:
            self._horizons[key] = result.earliest_horizon_ms

    def maybe_clean(
        self, key: tuple[str, int], log: Log, now_ms: int, hook: StepHook | None = None
    ) -> CleanResult | None:
        """Plan, write and install a pass on the calling thread; the pass's statistics."""
        cleaning = self.plan(key, log, now_ms)
        if cleaning is None:
            return None
        cleaning.write()
        return cleaning.install(hook)


def _swap_in(
    log: Log, old: LogSegment, cleaned: LogSegment, now_ms: int, hook: StepHook | None
) -> None:
    """Kafka's ``replaceSegments`` for one segment: cleaned -> swap -> old deleted -> final."""
    directory = old.directory
    if hook is not None:
        hook("cleaned")
    swaps = _paths(cleaned, SWAP_SUFFIX)
    # The log file goes last: while any .cleaned file of this base is left, the loader treats
    # every .swap at or above it as unfinished and deletes it (KAFKA-6264).
    for source, target in zip(cleaned.file_paths()[::-1], swaps[::-1], strict=True):
        os.replace(source, target)
    fsync_dir(directory)
    if hook is not None:
        hook("swap")

    def install() -> LogSegment:
        if hook is not None:
            hook("deleted")
        for source in swaps:
            os.replace(source, source[: -len(SWAP_SUFFIX)])
        fsync_dir(directory)
        return LogSegment.open(directory, old.base_offset, log.config, now_ms)

    log.replace_segment(old, install)
