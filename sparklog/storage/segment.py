"""One log segment: a ``.log`` file of v2 batches plus its ``.index``, ``.timeindex`` and
(lazily created, see :mod:`sparklog.storage.txn_index`) ``.txnindex``.

Contract and invariants:
- Files are named by the segment base offset, ``%020d.log|.index|.timeindex``; every batch in
  the file has ``base_offset >= base`` and ``last_offset - base < 2**31``, and offsets increase
  from batch to batch.
- Descriptors: the ``.log`` file is a :class:`~sparklog.storage.handles.PooledFile`, opened
  on demand and closed whenever the node-wide pool is over its bound; every use pins it
  (``with self._file as fd``), so no call ever sees it closed mid-operation. Creating or
  opening a segment keeps no descriptor open.
- Only whole batches are ever appended, with one positional write per append; the records are
  never decoded. Index entries come from batch headers alone.
- Index rule (Kafka's ``LogSegment.append``), applied identically when appending and when
  rebuilding, so a rebuilt index equals the incrementally built one: for each batch, first
  fold its max timestamp into the running maximum, then, if more than
  ``index.interval.bytes`` were written since the last entry, add an offset entry (batch last
  offset -> batch position) and a time entry (running max timestamp -> its offset) and reset
  the counter; finally add the batch size to the counter.
- The running state after the last index entry (counter, max timestamp, next offset) is
  recomputed from the last entry by a short header scan whenever a segment is opened or
  truncated (:meth:`_restore_tail_state`).
- :meth:`recover` CRC-checks every batch, truncates the file at the first bad one and rebuilds
  both indexes; it never raises for bad bytes. It empties the transaction index and marks it
  stale (:attr:`LogSegment.txn_index_stale`): only the log can rebuild it, by replaying the
  producer state from before the segment (:mod:`sparklog.storage.log_txn`). A corrupt
  ``.txnindex`` found on open is treated the same way.
- The transaction index holds the aborted transactions whose ABORT marker is in this segment;
  truncation drops the entries of removed markers, and it is deleted and renamed with the
  segment's other files (:meth:`file_paths` lists it once it exists).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from sparklog.protocol.record_codec import decode_batch
from sparklog.protocol.records import (
    RECORD_BATCH_OVERHEAD,
    BatchHeader,
    CorruptRecordError,
    parse_batch_header,
    validate_batch,
)
from sparklog.storage.config import LogConfig
from sparklog.storage.handles import PooledFile, open_unpooled
from sparklog.storage.index import OffsetIndex, TimeIndex
from sparklog.storage.slices import DELETED_SUFFIX, FileSlice, TimestampAndOffset
from sparklog.storage.txn_index import TXN_INDEX_SUFFIX, TransactionIndex

LOG_SUFFIX: Final = ".log"
INDEX_SUFFIX: Final = ".index"
TIME_INDEX_SUFFIX: Final = ".timeindex"
_INT32_MAX: Final = (1 << 31) - 1
_LOG_OVERHEAD: Final = 12


class _StaleIndexError(Exception):
    """An index that passed the shape checks but disagrees with the log: rebuild it."""


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


@dataclass(slots=True)
class RecoveryResult:
    """What :meth:`LogSegment.recover` found: bytes kept and cut, epochs seen in order."""

    valid_bytes: int
    truncated_bytes: int
    epoch_starts: list[tuple[int, int]] = field(default_factory=list)


class LogSegment:
    """A segment file with its sparse indexes; not thread-safe (the log serialises calls)."""

    def __init__(
        self,
        directory: str,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_bytes: int,
        now_ms: int,
        create: bool,
        file_suffix: str = "",
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.max_index_bytes = max_index_bytes
        # The log cleaner builds a replacement segment as ``*.cleaned`` files (see cleaner.py).
        self.file_suffix = file_suffix
        self.path = os.path.join(
            directory, segment_file_name(base_offset, LOG_SUFFIX) + file_suffix
        )
        if create:
            os.close(open_unpooled(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL))
            self.size = 0
        else:
            self.size = os.stat(self.path).st_size
        # Opened on demand and closed under pressure (see sparklog.storage.handles).
        self._file = PooledFile(self.path, os.O_RDWR)
        self.created_ms = now_ms
        self.offset_index = OffsetIndex(
            self._index_path(INDEX_SUFFIX), base_offset, max_index_bytes
        )
        self.time_index = TimeIndex(
            self._index_path(TIME_INDEX_SUFFIX), base_offset, max_index_bytes
        )
        self.txn_index = TransactionIndex(self._index_path(TXN_INDEX_SUFFIX))
        # Set when the transaction index must be rebuilt by the log's producer-state replay.
        self.txn_index_stale = False
        if self.txn_index.corrupt:
            self.txn_index.reset()
            self.txn_index_stale = True
        self.bytes_since_last_index_entry = 0
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.next_offset = base_offset
        self.rolling_timestamp: int | None = None
        self.indexes_rebuilt = False
        # Set when the file ends in a partial batch although no recovery was planned.
        self.needs_recovery = False
        if create:
            self.offset_index.reset([])
            self.time_index.reset([])
            # A leftover index of an earlier segment at this base would describe other data.
            self.txn_index.reset()
        else:
            self._load_indexes()

    # --- opening -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: str,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        file_suffix: str = "",
    ) -> LogSegment:
        return cls(
            directory,
            base_offset,
            index_interval_bytes=config.index_interval_bytes,
            max_index_bytes=config.segment_index_bytes,
            now_ms=now_ms,
            create=True,
            file_suffix=file_suffix,
        )

    @classmethod
    def open(cls, directory: str, base_offset: int, config: LogConfig, now_ms: int) -> LogSegment:
        """Open an existing segment; indexes failing the sanity check are rebuilt."""
        return cls(
            directory,
            base_offset,
            index_interval_bytes=config.index_interval_bytes,
            max_index_bytes=config.segment_index_bytes,
            now_ms=now_ms,
            create=False,
        )

    def _index_path(self, suffix: str) -> str:
        name = segment_file_name(self.base_offset, suffix) + self.file_suffix
        return os.path.join(self.directory, name)

    def _load_indexes(self) -> None:
        offset_index = OffsetIndex.load(
            self.offset_index.path, self.base_offset, self.max_index_bytes, self.size
        )
        time_index = None
        if offset_index is not None:
            time_index = TimeIndex.load(
                self.time_index.path,
                self.base_offset,
                self.max_index_bytes,
                self.base_offset + _INT32_MAX,
            )
        if offset_index is None or time_index is None:
            self.rebuild_indexes()
            return
        self.offset_index, self.time_index = offset_index, time_index
        try:
            self._restore_tail_state()
        except _StaleIndexError:
            self.rebuild_indexes()
            return
        except CorruptRecordError:
            self.needs_recovery = True
            return
        if self.time_index.keys and self.time_index.values[-1] >= self.next_offset:
            # A time entry pointing past the data: the index outlived a lost tail.
            self.rebuild_indexes()

    def rebuild_indexes(self) -> None:
        """Rebuild both indexes from the log, without CRC checks or truncation."""
        self.offset_index.reset([])
        self.time_index.reset([])
        self._reset_state()
        for pos, header in self.iter_headers(0):
            self._index_batch(pos, header)
        self.indexes_rebuilt = True

    def _reset_state(self) -> None:
        self.bytes_since_last_index_entry = 0
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.next_offset = self.base_offset
        self.rolling_timestamp = None

    def _restore_tail_state(self) -> None:
        """Recompute the running state from the last index entries and a short scan."""
        self._reset_state()
        start = 0
        last_offset_entry = self.offset_index.last_entry
        if last_offset_entry is not None:
            start = last_offset_entry[1]
        last_time_entry = self.time_index.last_entry
        if last_time_entry is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last_time_entry
        if self.size > 0:
            first = self.read_header_at(0)
            self.rolling_timestamp = first.max_timestamp
        scanned_to = start
        since = 0
        for pos, header in self.iter_headers(start):
            if pos == start and last_offset_entry is not None:
                if header.last_offset != last_offset_entry[0]:
                    raise _StaleIndexError(f"{self.offset_index.path}: last entry is not a batch")
            elif since > self.index_interval_bytes:
                # The rule would have indexed this batch: entries were lost (e.g. a torn index).
                raise _StaleIndexError(f"{self.offset_index.path}: entries missing at {pos}")
            since += header.size_in_bytes
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp = header.max_timestamp
                self.offset_of_max_timestamp = header.last_offset
            self.next_offset = header.next_offset
            scanned_to = pos + header.size_in_bytes
        if scanned_to != self.size:
            raise CorruptRecordError(f"{self.path}: partial batch at position {scanned_to}")
        self.bytes_since_last_index_entry = self.size - start

    # --- reading headers -----------------------------------------------------------------

    def read_header_at(self, position: int) -> BatchHeader:
        with self._file as fd:
            data = os.pread(fd, RECORD_BATCH_OVERHEAD, position)
        return parse_batch_header(data)

    def iter_headers(self, start: int, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """Yield ``(position, header)`` of whole batches in ``[start, end)`` (unchecked)."""
        limit = self.size if end is None else end
        pos = start
        while limit - pos >= RECORD_BATCH_OVERHEAD:
            header = self.read_header_at(pos)
            size = header.size_in_bytes
            if size < RECORD_BATCH_OVERHEAD or pos + size > limit:
                return
            yield pos, header
            pos += size

    def read_batch_bytes(self, position: int, size: int) -> bytes:
        with self._file as fd:
            return os.pread(fd, size, position)

    # --- appending -----------------------------------------------------------------------

    def _index_batch(self, position: int, header: BatchHeader) -> None:
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(header.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += header.size_in_bytes
        if position == 0:
            self.rolling_timestamp = header.max_timestamp
        self.next_offset = header.next_offset

    def append(self, data: bytes | bytearray | memoryview, batches: list[BatchHeader]) -> None:
        """Write whole batches (already validated, offsets assigned) at the end of the file."""
        if not batches:
            return
        if batches[0].base_offset < self.next_offset or batches[0].base_offset < self.base_offset:
            raise ValueError(
                f"append at offset {batches[0].base_offset} below segment next offset "
                f"{self.next_offset}"
            )
        if batches[-1].last_offset - self.base_offset > _INT32_MAX:
            raise ValueError(f"offset {batches[-1].last_offset} does not fit segment")
        view = memoryview(data)
        start = self.size
        written = 0
        with self._file as fd:
            while written < len(view):
                written += os.pwrite(fd, view[written:], start + written)
        position = start
        for header in batches:
            self._index_batch(position, header)
            position += header.size_in_bytes
        self.size = position

    def can_hold(self, last_offset: int) -> bool:
        return last_offset - self.base_offset <= _INT32_MAX

    @property
    def indexes_full(self) -> bool:
        return self.offset_index.is_full or self.time_index.is_full

    @property
    def largest_timestamp(self) -> int:
        """Max batch timestamp, or the file's mtime when no batch has one (Kafka's rule)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.stat(self.path).st_mtime * 1000)

    # --- lookups -------------------------------------------------------------------------

    def translate_offset(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``."""
        _, start = self.offset_index.lookup(offset)
        for pos, header in self.iter_headers(start):
            if header.last_offset >= offset:
                return pos, header
        return None

    def read(
        self, start_offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool
    ) -> tuple[FileSlice, int] | None:
        """Batch-aligned slice from the batch holding ``start_offset``; ``None`` if this segment
        has no batch at or after it. Returns the slice and the first batch's base offset."""
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        start_pos, first = found
        limit = self.size
        if (max_offset is None or max_offset >= self.next_offset) and (
            limit - start_pos <= max_bytes
            or (min_one_batch and first.next_offset == self.next_offset)
        ):
            # A tailing reader: the rest of the segment fits, no header scan needed.
            return FileSlice(self.path, start_pos, limit - start_pos), first.base_offset
        end = start_pos
        header: BatchHeader | None = first
        pos = start_pos
        while pos < limit:
            if header is None:
                if limit - pos < RECORD_BATCH_OVERHEAD:
                    break
                header = self.read_header_at(pos)
            size = header.size_in_bytes
            if pos + size > limit:
                break
            if max_offset is not None and header.last_offset >= max_offset:
                break
            if end - start_pos + size > max_bytes and not (min_one_batch and end == start_pos):
                break
            end = pos + size
            pos = end
            header = None
        return FileSlice(self.path, start_pos, end - start_pos), first.base_offset

    def _first_record_at_or_after(
        self, position: int, header: BatchHeader, timestamp: int, min_offset: int
    ) -> TimestampAndOffset | None:
        data = self.read_batch_bytes(position, header.size_in_bytes)
        _, records = decode_batch(data, 0, verify_crc=False)
        for record in records:
            if record.timestamp >= timestamp and record.offset >= min_offset:
                return TimestampAndOffset(
                    record.timestamp, record.offset, header.partition_leader_epoch
                )
        return None

    def find_offset_by_timestamp(
        self, timestamp: int, min_offset: int
    ) -> TimestampAndOffset | None:
        """First record at offset >= ``min_offset`` with a timestamp >= ``timestamp``."""
        _, indexed_offset = self.time_index.lookup(timestamp)
        _, position = self.offset_index.lookup(max(indexed_offset, min_offset))
        for pos, header in self.iter_headers(position):
            if header.max_timestamp >= timestamp and header.last_offset >= min_offset:
                found = self._first_record_at_or_after(pos, header, timestamp, min_offset)
                if found is not None:
                    return found
        return None

    def max_timestamp_record(self) -> TimestampAndOffset | None:
        """The first record carrying this segment's max timestamp."""
        if self.offset_of_max_timestamp < 0:
            return None
        found = self.translate_offset(self.offset_of_max_timestamp)
        if found is None:
            return None
        pos, header = found
        return self._first_record_at_or_after(pos, header, self.max_timestamp, 0)

    # --- recovery and truncation ---------------------------------------------------------

    def recover(self) -> RecoveryResult:
        """CRC-check every batch, cut the file at the first invalid one, rebuild indexes."""
        self.offset_index.reset([])
        self.time_index.reset([])
        self.txn_index.reset()
        self.txn_index_stale = True
        self._reset_state()
        result = RecoveryResult(0, 0)
        with self._file as fd:
            file_size = os.fstat(fd).st_size
            self.size = file_size
            pos = 0
            last_epoch = -1
            while file_size - pos >= RECORD_BATCH_OVERHEAD:
                head = os.pread(fd, _LOG_OVERHEAD, pos)
                batch_size = int.from_bytes(head[8:12], "big", signed=True) + _LOG_OVERHEAD
                if batch_size < RECORD_BATCH_OVERHEAD or pos + batch_size > file_size:
                    break
                data = os.pread(fd, batch_size, pos)
                try:
                    header = validate_batch(data, 0)
                except CorruptRecordError:
                    break
                if header.base_offset < self.next_offset or not self.can_hold(header.last_offset):
                    break
                self._index_batch(pos, header)
                if header.partition_leader_epoch > last_epoch:
                    last_epoch = header.partition_leader_epoch
                    result.epoch_starts.append((last_epoch, header.base_offset))
                pos += batch_size
            result.valid_bytes = pos
            result.truncated_bytes = file_size - pos
            if result.truncated_bytes:
                os.ftruncate(fd, pos)
        self.size = pos
        self.indexes_rebuilt = True
        return result

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position = found[0]
        removed = self.size - position
        with self._file as fd:
            os.ftruncate(fd, position)
        self.size = position
        self.offset_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        # Entries are keyed by batch last offsets, so none of the survivors names a cut batch.
        self.time_index.truncate_to(offset)
        try:
            self._restore_tail_state()
        except _StaleIndexError:
            self.rebuild_indexes()
        return removed

    # --- durability and lifecycle --------------------------------------------------------

    def flush(self) -> None:
        with self._file as fd:
            os.fsync(fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        self._file.close()
        self.offset_index.close()
        self.time_index.close()

    def file_paths(self) -> list[str]:
        paths = [self.path, self.offset_index.path, self.time_index.path]
        if self.txn_index.exists:
            paths.append(self.txn_index.path)
        return paths

    def mark_deleted(self) -> list[str]:
        """Rename the files to ``*.deleted`` (removed later); returns the new paths."""
        self.close()
        renamed = []
        for path in self.file_paths():
            try:
                os.replace(path, path + DELETED_SUFFIX)
                renamed.append(path + DELETED_SUFFIX)
            except FileNotFoundError:
                pass
        return renamed

    def delete_now(self) -> None:
        self.close()
        for path in self.file_paths():
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
