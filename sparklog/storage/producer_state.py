"""Per-partition idempotent-producer state (Kafka's ``ProducerStateManager``) and its snapshots.

Contract and invariants:
- For every producer id seen in the partition the state keeps an entry: the producer epoch, the
  metadata (first/last sequence, first/last offset, max timestamp) of its last
  :data:`NUM_BATCHES_TO_RETAIN` data batches of that epoch (oldest first), the timestamp of its
  last batch, the coordinator epoch and the first offset of its open transaction (-1 if none;
  the transaction coordinator builds on these two later).
- The state always describes exactly the batches at offsets ``< map_end_offset``; the log
  applies a batch's effect only after it has been written, so a rejected append leaves the
  state untouched.
- Leader appends (origin client) are validated as in Kafka 4.x: a batch whose epoch and
  sequence range equal one of the retained batches is a *duplicate* (not written; answered with
  the original offsets); an epoch below the current one is INVALID_PRODUCER_EPOCH; a new epoch
  must start at sequence 0 and a known epoch must continue at ``last_sequence + 1`` (wrapping
  at 2**31), else OUT_OF_ORDER_SEQUENCE_NUMBER. An unknown producer (no entry, e.g. after
  expiry) may start at any sequence: Kafka 4.x never answers UNKNOWN_PRODUCER_ID (KIP-360).
- Follower appends and recovery replay apply batches without any check.
- Transactions (Kafka's ongoing / unreplicated txns): a transactional data batch opens its
  producer's transaction at its base offset unless one is open; an end-transaction marker
  (control batch, see :meth:`ProducerStateManager.apply_batch`) closes it and yields a
  :class:`CompletedTxn` (first offset = the open transaction's, or the marker's own offset if
  none was open, as Kafka does). A completed transaction stays *unreplicated* until the high
  watermark passes its marker. :meth:`ProducerStateManager.first_unstable_offset` is the
  minimum first offset over open and unreplicated transactions; the log's last stable offset
  is ``min(that, high watermark)``. Open transactions live in the entries
  (``current_txn_first_offset``), so snapshots carry them and a reload restores them;
  unreplicated ones are rebuilt only by replay (their markers are below the high watermark
  of any snapshot taken on a leader, and a follower's high watermark catches up).
- Snapshots: ``<offset:020d>.snapshot`` in the partition directory holds the state for
  ``map_end_offset == offset``. The log writes one at every roll (at the new segment's base
  offset) and at clean shutdown (at the log end offset). Loading takes the newest readable
  snapshot at or below the log end offset, deletes newer ones and unreadable ones, and the log
  then replays the batches after it; with no snapshot, the whole log is replayed. Replay
  only reads batch headers.
- Producers are expired ``producer.id.expiration.ms`` after their last batch's timestamp
  unless they have an open transaction; expired entries are also dropped on snapshot load.

Snapshot file format (sparklog's own, version 1, big-endian): ``version int16 | crc32c
uint32 (of everything after it) | count int32`` then per producer ``producer_id int64 |
epoch int16 | coordinator_epoch int32 | txn_first_offset int64 | last_timestamp int64 |
batch_count int8`` and per batch ``first_seq int32 | last_seq int32 | first_offset int64 |
last_offset int64 | timestamp int64``. Unlike Kafka's format it keeps all retained batches,
so duplicate detection survives a restart for each of them.

Sans-IO apart from plain file I/O on snapshot files; not thread-safe (the log serialises).
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final

import crc32c

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.record_codec import CONTROL_ABORT, ControlRecord
from sparklog.protocol.records import NO_PRODUCER_EPOCH, NO_SEQUENCE, BatchHeader
from sparklog.storage.checkpoint import atomic_write
from sparklog.storage.errors import StorageError
from sparklog.storage.slices import DELETED_SUFFIX, AppendResult

__all__ = [
    "DEFAULT_PRODUCER_ID_EXPIRATION_MS",
    "NUM_BATCHES_TO_RETAIN",
    "SNAPSHOT_SUFFIX",
    "BatchMetadata",
    "CompletedTxn",
    "InvalidProducerEpochError",
    "LeaderAppendCheck",
    "OutOfOrderSequenceError",
    "ProducerStateEntry",
    "ProducerStateManager",
    "decode_snapshot",
    "duplicate_result",
    "encode_snapshot",
    "snapshot_file_name",
]

NUM_BATCHES_TO_RETAIN: Final = 5
DEFAULT_PRODUCER_ID_EXPIRATION_MS: Final = 86_400_000
SNAPSHOT_SUFFIX: Final = ".snapshot"
SNAPSHOT_VERSION: Final = 1
_INT32_MAX: Final = (1 << 31) - 1

_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqqb")
_BATCH = struct.Struct(">iiqqq")

_log = logging.getLogger(__name__)


class OutOfOrderSequenceError(StorageError):
    """A sequence gap, or a new epoch not starting at 0 (OUT_OF_ORDER_SEQUENCE_NUMBER)."""

    default_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(StorageError):
    """A batch from an epoch older than the producer's current one (INVALID_PRODUCER_EPOCH)."""

    default_code = ErrorCode.INVALID_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """What is remembered of one appended data batch."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class ProducerStateEntry:
    """One producer's state in a partition; ``batches`` are oldest first, all of ``epoch``."""

    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: tuple[BatchMetadata, ...] = ()
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def with_epoch(self, epoch: int) -> ProducerStateEntry:
        if epoch == self.epoch:
            return self
        # A new epoch restarts the sequence space, so older batches can never match again.
        return replace(self, epoch=epoch, batches=())

    def with_batch(self, epoch: int, batch: BatchMetadata) -> ProducerStateEntry:
        entry = self.with_epoch(epoch)
        kept = (*entry.batches, batch)[-NUM_BATCHES_TO_RETAIN:]
        return replace(entry, batches=kept, last_timestamp=batch.timestamp)


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction closed by the marker at ``last_offset`` (``aborted`` for ABORT)."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


@dataclass(frozen=True, slots=True)
class LeaderAppendCheck:
    """The outcome of validating a leader append: a duplicate, or the entries to commit."""

    duplicate: BatchMetadata | None
    updates: dict[int, ProducerStateEntry]


def duplicate_result(
    duplicate: BatchMetadata, log_start_offset: int, log_append_time: bool
) -> AppendResult:
    """The answer to a retried batch: the original append's offsets, nothing written."""
    return AppendResult(
        first_offset=duplicate.first_offset,
        last_offset=duplicate.last_offset,
        log_append_time=duplicate.timestamp if log_append_time else -1,
        log_start_offset=log_start_offset,
        max_timestamp=duplicate.timestamp,
        offset_of_max_timestamp=duplicate.last_offset,
        records_count=duplicate.last_offset - duplicate.first_offset + 1,
        valid_bytes=0,
        duplicate=True,
    )


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


def _metadata(header: BatchHeader) -> BatchMetadata:
    return BatchMetadata(
        first_seq=header.base_sequence,
        last_seq=header.last_sequence,
        first_offset=header.base_offset,
        last_offset=header.last_offset,
        timestamp=header.max_timestamp,
    )


def _apply(entry: ProducerStateEntry, header: BatchHeader) -> ProducerStateEntry:
    """A batch's effect on its producer's entry, unchecked (replication and replay)."""
    if header.is_control:
        # An end-transaction marker closes the open transaction; its record (commit or abort)
        # only matters to the transaction index, which is not built from here.
        return replace(
            entry.with_epoch(max(entry.epoch, header.producer_epoch)),
            current_txn_first_offset=-1,
            last_timestamp=max(entry.last_timestamp, header.max_timestamp),
        )
    updated = entry.with_batch(header.producer_epoch, _metadata(header))
    if header.is_transactional and updated.current_txn_first_offset < 0:
        updated = replace(updated, current_txn_first_offset=header.base_offset)
    return updated


def _check_client_batch(
    entry: ProducerStateEntry, header: BatchHeader, where: str
) -> ProducerStateEntry:
    """Kafka's ``ProducerAppendInfo`` checks for a data batch from a client, then the update."""
    pid, epoch, first_seq = header.producer_id, header.producer_epoch, header.base_sequence
    if epoch < entry.epoch:
        raise InvalidProducerEpochError(
            f"Epoch of producer {pid} at offset {header.base_offset} in {where} is {epoch}, "
            f"which is smaller than the last seen epoch {entry.epoch}"
        )
    if epoch != entry.epoch:
        if first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
            raise OutOfOrderSequenceError(
                f"Invalid sequence number for new epoch of producer {pid} at offset "
                f"{header.base_offset} in partition {where}: {epoch} (request epoch), "
                f"{first_seq} (seq. number), {entry.epoch} (current producer epoch)"
            )
    elif entry.epoch != NO_PRODUCER_EPOCH and not _in_sequence(entry.last_seq, first_seq):
        raise OutOfOrderSequenceError(
            f"Out of order sequence number for producer {pid} at offset {header.base_offset} "
            f"in partition {where}: {first_seq} (incoming seq. number), {entry.last_seq} "
            f"(current end sequence number)"
        )
    return _apply(entry, header)


def snapshot_file_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    body = bytearray()
    count = 0
    for entry in entries:
        count += 1
        body += _ENTRY.pack(
            entry.producer_id,
            entry.epoch,
            entry.coordinator_epoch,
            entry.current_txn_first_offset,
            entry.last_timestamp,
            len(entry.batches),
        )
        for b in entry.batches:
            body += _BATCH.pack(b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp)
    counted = struct.pack(">i", count) + bytes(body)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c.crc32c(counted)) + counted


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    """Parse a snapshot; raises ``ValueError`` on any damage (version, CRC, length)."""
    if len(data) < _HEADER.size:
        raise ValueError(f"snapshot too short: {len(data)} bytes")
    version, crc, count = _HEADER.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise ValueError(f"unsupported snapshot version {version}")
    if crc32c.crc32c(data[6:]) != crc:
        raise ValueError("snapshot CRC mismatch")
    pos = _HEADER.size
    entries: list[ProducerStateEntry] = []
    try:
        for _ in range(count):
            pid, epoch, coordinator_epoch, txn_first, last_ts, n = _ENTRY.unpack_from(data, pos)
            pos += _ENTRY.size
            batches = []
            for _ in range(n):
                batches.append(BatchMetadata(*_BATCH.unpack_from(data, pos)))
                pos += _BATCH.size
            entries.append(
                ProducerStateEntry(
                    pid, epoch, tuple(batches), last_ts, coordinator_epoch, txn_first
                )
            )
    except struct.error as exc:
        raise ValueError(f"truncated snapshot: {exc}") from exc
    if pos != len(data):
        raise ValueError(f"{len(data) - pos} trailing bytes in snapshot")
    return entries


class ProducerStateManager:
    """The producer state of the partition log in ``directory``."""

    def __init__(
        self, directory: str, expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS
    ) -> None:
        self.directory = directory
        self.expiration_ms = expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.map_end_offset = 0
        # producer id -> first offset of its open transaction (mirrors the entries).
        self._ongoing: dict[int, int] = {}
        # Completed transactions whose marker the high watermark has not passed, marker order.
        self._unreplicated: list[CompletedTxn] = []

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def _store(self, entry: ProducerStateEntry) -> None:
        self.producers[entry.producer_id] = entry
        if entry.current_txn_first_offset >= 0:
            self._ongoing[entry.producer_id] = entry.current_txn_first_offset
        else:
            self._ongoing.pop(entry.producer_id, None)

    def _reset_transactions(self) -> None:
        self._ongoing = {
            pid: e.current_txn_first_offset
            for pid, e in self.producers.items()
            if e.current_txn_first_offset >= 0
        }
        self._unreplicated = []

    # --- transactions --------------------------------------------------------------------

    @property
    def ongoing_transactions(self) -> dict[int, int]:
        """Open transactions: producer id -> first offset."""
        return dict(self._ongoing)

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of the earliest transaction not yet decided below the high
        watermark (open, or completed by a marker at or above ``high_watermark``)."""
        if self._unreplicated and self._unreplicated[0].last_offset < high_watermark:
            self._unreplicated = [t for t in self._unreplicated if t.last_offset >= high_watermark]
        firsts = [t.first_offset for t in self._unreplicated]
        firsts.extend(self._ongoing.values())
        return min(firsts) if firsts else None

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LSO right after ``completed``'s marker (Kafka's ``lastStableOffset``): the
        earliest other open transaction's first offset, else the offset after the marker."""
        others = [f for pid, f in self._ongoing.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Kafka's checks on an end-transaction marker from the coordinator."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {producer_id} is {producer_epoch}, which is smaller than "
                f"the last seen epoch {entry.epoch}"
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise StorageError(
                f"Invalid coordinator epoch for producer {producer_id}: {coordinator_epoch} "
                f"(zombie), {entry.coordinator_epoch} (current)",
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
            )

    def apply_batch(
        self, header: BatchHeader, control: ControlRecord | None = None
    ) -> CompletedTxn | None:
        """Apply one written batch unchecked; for an end-transaction marker (a control batch
        with a producer id; ``control`` is its decoded record, ``None`` if unreadable) return
        the transaction it completed."""
        self.map_end_offset = max(self.map_end_offset, header.next_offset)
        if not header.has_producer_id:
            return None
        pid = header.producer_id
        current = self.producers.get(pid) or ProducerStateEntry(pid)
        updated = _apply(current, header)
        if not header.is_control:
            self._store(updated)
            return None
        if control is not None and control.coordinator_epoch is not None:
            updated = replace(updated, coordinator_epoch=control.coordinator_epoch)
        self._store(updated)
        first = current.current_txn_first_offset
        completed = CompletedTxn(
            pid,
            first if first >= 0 else header.base_offset,
            header.last_offset,
            control is not None and control.control_type == CONTROL_ABORT,
        )
        self._unreplicated.append(completed)
        return completed

    # --- appends -------------------------------------------------------------------------

    def check_leader_append(self, headers: Sequence[BatchHeader], where: str) -> LeaderAppendCheck:
        """Validate a client's batches (offsets already assigned) without changing the state.

        Raises :class:`InvalidProducerEpochError` or :class:`OutOfOrderSequenceError`.
        """
        updates: dict[int, ProducerStateEntry] = {}
        for header in headers:
            pid = header.producer_id
            if not header.has_producer_id:
                continue
            current = updates.get(pid) or self.producers.get(pid) or ProducerStateEntry(pid)
            if not header.is_control:
                duplicate = current.find_duplicate(
                    header.producer_epoch, header.base_sequence, header.last_sequence
                )
                if duplicate is not None:
                    return LeaderAppendCheck(duplicate, {})
            updates[pid] = _check_client_batch(current, header, where)
        return LeaderAppendCheck(None, updates)

    def commit(self, updates: dict[int, ProducerStateEntry], map_end_offset: int) -> None:
        """Apply a validated leader append once its batches are written."""
        for entry in updates.values():
            self._store(entry)
        self.map_end_offset = max(self.map_end_offset, map_end_offset)

    def remove_expired(self, now_ms: int) -> int:
        """Drop producers idle for ``expiration_ms`` without an open transaction."""
        expired = [pid for pid, e in self.producers.items() if self._is_expired(e, now_ms)]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    def _is_expired(self, entry: ProducerStateEntry, now_ms: int) -> bool:
        return (
            entry.current_txn_first_offset < 0
            and now_ms - entry.last_timestamp >= self.expiration_ms
        )

    def clear(self, map_end_offset: int) -> None:
        self.producers.clear()
        self.map_end_offset = map_end_offset
        self._reset_transactions()

    # --- snapshots -----------------------------------------------------------------------

    def snapshot_path(self, offset: int) -> str:
        return os.path.join(self.directory, snapshot_file_name(offset))

    def snapshot_offsets(self) -> list[int]:
        """Offsets of the snapshot files present, ascending."""
        offsets = []
        for name in os.listdir(self.directory):
            stem = name[: -len(SNAPSHOT_SUFFIX)]
            if name.endswith(SNAPSHOT_SUFFIX) and len(stem) == 20 and stem.isdigit():
                offsets.append(int(stem))
        return sorted(offsets)

    def take_snapshot(self, durable: bool = False) -> str:
        """Write the state as ``<map_end_offset>.snapshot``; fsynced only if ``durable``.

        A roll's snapshot need not be durable: a torn one fails its CRC on load and the log is
        replayed from an older one instead.
        """
        path = self.snapshot_path(self.map_end_offset)
        data = encode_snapshot(self.producers.values())
        if durable:
            atomic_write(path, data)
        else:
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        return path

    def load(self, log_end_offset: int, now_ms: int, max_offset: int | None = None) -> int | None:
        """Reset to the newest readable snapshot at or below ``max_offset`` (default: the
        ``log_end_offset``).

        Deletes snapshots above the log end offset and unreadable ones. Returns the snapshot's
        offset (the caller replays the log from there), or ``None`` with an empty state.
        """
        self.producers.clear()
        self._reset_transactions()
        self.map_end_offset = 0
        self.delete_snapshots_after(log_end_offset)
        limit = log_end_offset if max_offset is None else min(max_offset, log_end_offset)
        for offset in reversed(self.snapshot_offsets()):
            if offset > limit:
                continue
            path = self.snapshot_path(offset)
            try:
                with open(path, "rb") as f:
                    entries = decode_snapshot(f.read())
            except (OSError, ValueError) as exc:
                _log.warning("Deleting unreadable producer snapshot %s: %s", path, exc)
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)
                continue
            self.producers = {e.producer_id: e for e in entries if not self._is_expired(e, now_ms)}
            self._reset_transactions()
            self.map_end_offset = offset
            return offset
        return None

    def delete_snapshots_after(self, offset: int) -> None:
        for found in self.snapshot_offsets():
            if found > offset:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self.snapshot_path(found))

    def mark_snapshots_deleted_below(self, offset: int) -> list[str]:
        """Rename snapshots below ``offset`` to ``*.deleted`` (removed later, with segments)."""
        renamed = []
        for found in self.snapshot_offsets():
            if found < offset:
                path = self.snapshot_path(found)
                with contextlib.suppress(FileNotFoundError):
                    os.replace(path, path + DELETED_SUFFIX)
                    renamed.append(path + DELETED_SUFFIX)
        return renamed

    def delete_all_snapshots(self) -> None:
        for found in self.snapshot_offsets():
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.snapshot_path(found))
