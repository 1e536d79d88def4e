"""RemoteStorageManager (KIP-405): copies a closed segment to the store as Parquet plus its
leader-epoch checkpoint, producer snapshot and transaction index, serves Kafka batches and the
transaction index back from it, deletes it.

Contract:

- Object names come from :mod:`sparklog.tiering.layout`; the manifest is not touched here (the
  RemoteLogMetadataManager owns it), so an object written here is invisible to readers until
  the RLMM records the copy as finished. A crash mid-copy leaves at worst orphan objects, which
  the RLMM deletes when it loads the partition.
- ``copy_log_segment_data`` is idempotent: copying the same segment id again overwrites the
  same objects with the same content. It transcodes to a local temporary file, then uploads
  (each object is replaced in one step). It checks that the batches lie inside the metadata's
  offset range. The first copy to a store writes ``_sparklog.json``; a store written by another
  cluster is refused.
- ``fetch_log_segment`` returns whole Kafka batches re-encoded from the rows (see
  :mod:`sparklog.tiering.transcode`) starting with the batch that holds ``start_offset``,
  compressed at the codecs' fast levels. Decoded row groups are cached (bounded by bytes),
  and a fetch from where another stopped resumes its encoder (:mod:`.fetch_cursor`), which
  a worker thread has already run ahead by one fetch's bytes. ``prefetch_log_segment`` starts
  such a cursor at a given offset before any fetch asks (returns at once; the broker calls it
  for the next segment when a fetch reaches a segment's end); the fetch then takes it.
- ``fetch_transaction_index`` returns the segment's aborted transactions (its ``.txnindex``;
  none when the object is absent, as in stores written before it existed). The small decoded
  indexes are cached (LRU, bounded by entry count); a copy or delete of the segment drops its
  entry, and a segment id's objects never change otherwise.
- ``delete_log_segment_data`` removes every object of the segment; deleting twice is fine.
- Every failure is a :class:`RemoteStorageError`; a missing object is
  :class:`RemoteResourceNotFoundError`. Blocking: call from a worker thread, never an event loop.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from .batch_encode import FAST_LEVELS, EncodedBatch
from .config import TieringConfig
from .fetch_cursor import FetchCursor, FetchCursors, FetchedChunks
from .layout import (
    EPOCH_SUFFIX,
    PARQUET_SUFFIX,
    SNAPSHOT_SUFFIX,
    STORE_MARKER,
    TXN_INDEX_SUFFIX,
    LayoutError,
    format_epoch_checkpoint,
    format_txn_index,
    parse_epoch_checkpoint,
    parse_store_marker,
    parse_txn_index,
    partition_dir,
    segment_stem,
    store_marker_bytes,
)
from .metadata import AbortedTxn, CopiedSegment, LogSegmentData, RemoteLogSegmentMetadata
from .parquet_batches import iter_parquet_batches
from .segment_reader import RowGroupReader, parquet_file
from .store import ObjectNotFoundError, ObjectStore, StoreError, open_store
from .transcode import DEFAULT_ROW_GROUP_ROWS, TranscodeError, segment_to_parquet

# Threads encoding the next fetch of sequential remote readers ahead of their request.
_READ_AHEAD_THREADS = 2

__all__ = [
    "RemoteResourceNotFoundError",
    "RemoteStorageError",
    "RemoteStorageManager",
    "segment_object_paths",
]


class RemoteStorageError(Exception):
    """A remote storage operation failed (Kafka's RemoteStorageException)."""


class RemoteResourceNotFoundError(RemoteStorageError):
    """The remote object does not exist (Kafka's RemoteResourceNotFoundException)."""


def segment_object_paths(metadata: RemoteLogSegmentMetadata) -> dict[str, str]:
    """Root-relative paths of the segment's objects, by suffix (``.parquet``...)."""
    tp = metadata.topic_id_partition
    base = partition_dir(tp.topic, tp.topic_id, tp.partition)
    stem = segment_stem(metadata.start_offset, metadata.segment_id)
    suffixes = (PARQUET_SUFFIX, EPOCH_SUFFIX, SNAPSHOT_SUFFIX, TXN_INDEX_SUFFIX)
    return {s: f"{base}/{stem}{s}" for s in suffixes}


def _wrap(what: str, exc: Exception) -> RemoteStorageError:
    if isinstance(exc, ObjectNotFoundError):
        return RemoteResourceNotFoundError(f"{what}: {exc}")
    return RemoteStorageError(f"{what}: {exc}")


class _RowGroupCache:
    """Decoded row groups of recently fetched segments, least recently used evicted first.

    A consumer catching up reads a segment sequentially in ~1 MiB fetches; without this every
    fetch would decode its whole row group again. Holds at most ``max_bytes`` of Arrow data,
    except that the row group just read is always kept (so a row group larger than the budget
    is decoded once per sequential pass, not once per fetch)."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, int, tuple[str, ...]], pa.Table] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._metadata: OrderedDict[str, pq.FileMetaData] = OrderedDict()

    def reader(self, path: str) -> RowGroupReader:
        def read(parquet: pq.ParquetFile, index: int, columns: list[str]) -> pa.Table:
            key = (path, index, tuple(columns))
            with self._lock:
                table = self._entries.get(key)
                if table is not None:
                    self._entries.move_to_end(key)
                    return table
            # One thread: the columns of a remote fetch's row group are small, and fanning
            # them out to Arrow's pool cost more CPU than it saved (fetches run concurrently).
            table = parquet.read_row_group(index, columns=columns, use_threads=False)
            with self._lock:
                if key not in self._entries:
                    self._entries[key] = table
                    self._bytes += table.nbytes
                while self._bytes > self._max_bytes and len(self._entries) > 1:
                    _, evicted = self._entries.popitem(last=False)
                    self._bytes -= evicted.nbytes
            return table

        return read

    def metadata(self, path: str) -> pq.FileMetaData | None:
        with self._lock:
            return self._metadata.get(path)

    def put_metadata(self, path: str, metadata: pq.FileMetaData) -> None:
        with self._lock:
            self._metadata[path] = metadata
            while len(self._metadata) > 256:
                self._metadata.popitem(last=False)

    def forget(self, path: str) -> None:
        with self._lock:
            self._metadata.pop(path, None)
            for key in [k for k in self._entries if k[0] == path]:
                self._bytes -= self._entries.pop(key).nbytes


class _TxnIndexCache:
    """Decoded ``.txnindex`` objects by path, least recently used evicted first.

    A read_committed consumer's every remote fetch scans the transaction indexes from its
    segment onwards, so without this each fetch would GET several small objects. Bounded by
    the number of entries held (an empty index counts as one), not by objects."""

    def __init__(self, max_entries: int) -> None:
        self._max_entries = max_entries
        self._indexes: OrderedDict[str, tuple[AbortedTxn, ...]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def get(self, path: str) -> tuple[AbortedTxn, ...] | None:
        with self._lock:
            entries = self._indexes.get(path)
            if entries is not None:
                self._indexes.move_to_end(path)
            return entries

    def put(self, path: str, entries: tuple[AbortedTxn, ...]) -> None:
        with self._lock:
            old = self._indexes.pop(path, None)
            if old is not None:
                self._held -= max(len(old), 1)
            self._indexes[path] = entries
            self._held += max(len(entries), 1)
            while self._held > self._max_entries and len(self._indexes) > 1:
                _, evicted = self._indexes.popitem(last=False)
                self._held -= max(len(evicted), 1)

    def forget(self, path: str) -> None:
        with self._lock:
            old = self._indexes.pop(path, None)
            if old is not None:
                self._held -= max(len(old), 1)


class RemoteStorageManager:
    """Copies, fetches and deletes segments in one store. Thread-safe.

    ``fetch_cache_bytes`` bounds the decoded row groups kept for sequential remote fetches;
    ``txn_index_cache_entries`` the aborted-transaction entries of cached ``.txnindex`` objects;
    ``fetched_chunk_bytes`` the rebuilt batch bytes kept for readers of the same range again
    (``sparklog.remote.storage.fetch.cache.bytes``; 0 keeps none).
    """

    def __init__(
        self,
        store: ObjectStore,
        *,
        cluster_id: str,
        row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
        tmp_dir: str | None = None,
        fetch_cache_bytes: int = 64 << 20,
        txn_index_cache_entries: int = 100_000,
        fetched_chunk_bytes: int = 0,
    ) -> None:
        self._cache = _RowGroupCache(fetch_cache_bytes)
        self._cursors = FetchCursors()
        self._chunks = FetchedChunks(fetched_chunk_bytes)
        self._read_ahead: ThreadPoolExecutor | None = None
        self._txn_indexes = _TxnIndexCache(txn_index_cache_entries)
        self._store = store
        self._cluster_id = cluster_id
        self._row_group_rows = row_group_rows
        self._tmp_dir = tmp_dir
        self._marker_checked = False
        self._lock = threading.Lock()

    @classmethod
    def from_config(
        cls, config: TieringConfig, *, cluster_id: str, tmp_dir: str | None = None
    ) -> RemoteStorageManager:
        store = open_store(config.storage_url, config.storage_options())
        return cls(
            store,
            cluster_id=cluster_id,
            row_group_rows=config.row_group_rows,
            tmp_dir=tmp_dir,
            fetched_chunk_bytes=config.fetch_cache_bytes,
        )

    @property
    def store(self) -> ObjectStore:
        return self._store

    def ensure_store_marker(self) -> None:
        """Write ``_sparklog.json`` once; refuse a store that belongs to another cluster."""
        with self._lock:
            if self._marker_checked:
                return
            try:
                try:
                    owner = parse_store_marker(self._store.read_bytes(STORE_MARKER))
                except ObjectNotFoundError:
                    self._store.write_atomic(STORE_MARKER, store_marker_bytes(self._cluster_id))
                    owner = self._cluster_id
            except (StoreError, LayoutError) as exc:
                raise _wrap(f"cannot check {self._store.url}/{STORE_MARKER}", exc) from exc
            if owner != self._cluster_id:
                raise RemoteStorageError(
                    f"store {self._store.url} belongs to cluster {owner}, not {self._cluster_id}:"
                    " give each cluster its own sparklog.remote.storage.url"
                )
            self._marker_checked = True

    def copy_log_segment_data(
        self, metadata: RemoteLogSegmentMetadata, segment_data: LogSegmentData
    ) -> CopiedSegment:
        """Transcode and upload one segment; the result feeds the RLMM's FINISHED update."""
        self.ensure_store_marker()
        paths = segment_object_paths(metadata)
        self._cache.forget(paths[PARQUET_SUFFIX])
        self._cursors.forget(paths[PARQUET_SUFFIX])
        self._chunks.forget(paths[PARQUET_SUFFIX])
        self._txn_indexes.forget(paths[TXN_INDEX_SUFFIX])
        tp = metadata.topic_id_partition
        fd, local = tempfile.mkstemp(suffix=".parquet", dir=self._tmp_dir)
        os.close(fd)
        try:
            try:
                _, stats = segment_to_parquet(
                    segment_data.log_path,
                    segment_data.aborted_txns,
                    row_group_rows=self._row_group_rows,
                    out=local,
                    topic=tp.topic,
                    partition=tp.partition,
                )
            except (OSError, TranscodeError) as exc:
                raise RemoteStorageError(
                    f"cannot transcode {segment_data.log_path} for"
                    f" {metadata.remote_log_segment_id}: {exc}"
                ) from exc
            if stats.batch_count and (
                stats.base_offset < metadata.start_offset or stats.end_offset > metadata.end_offset
            ):
                raise RemoteStorageError(
                    f"{segment_data.log_path} holds offsets [{stats.base_offset},"
                    f" {stats.end_offset}] outside the segment metadata's"
                    f" [{metadata.start_offset}, {metadata.end_offset}]"
                )
            # Without a lineage from the caller, the batches' own epochs are the lineage.
            epochs = (
                metadata.segment_leader_epochs or segment_data.leader_epochs or stats.leader_epochs
            )
            snapshot = b""
            if segment_data.producer_snapshot_path is not None:
                with open(segment_data.producer_snapshot_path, "rb") as f:
                    snapshot = f.read()
            size = os.path.getsize(local)
            try:
                self._store.write_atomic(paths[EPOCH_SUFFIX], format_epoch_checkpoint(epochs))
                self._store.write_atomic(paths[SNAPSHOT_SUFFIX], snapshot)
                self._store.write_atomic(
                    paths[TXN_INDEX_SUFFIX], format_txn_index(segment_data.transaction_index)
                )
                self._store.put_file(paths[PARQUET_SUFFIX], local)
            except StoreError as exc:
                raise _wrap(f"cannot upload {metadata.remote_log_segment_id}", exc) from exc
        finally:
            with contextlib.suppress(OSError):
                os.unlink(local)
        return CopiedSegment(
            path=segment_stem(metadata.start_offset, metadata.segment_id) + PARQUET_SUFFIX,
            size_bytes=size,
            record_count=stats.record_count,
            first_offset=stats.base_offset,
            last_offset=stats.end_offset,
            first_timestamp=stats.first_timestamp,
            max_timestamp=stats.max_timestamp,
            leader_epochs=tuple(epochs),
            control_records=stats.control_count,
            aborted_records=stats.aborted_count,
            transactional_records=stats.transactional_count,
        )

    def fetch_log_segment(
        self,
        metadata: RemoteLogSegmentMetadata,
        start_offset: int,
        max_bytes: int = 1 << 20,
        *,
        to_offset: int | None = None,
        compression: int | None = None,
    ) -> EncodedBatch:
        """Kafka batches from the batch holding ``start_offset`` on, up to ``max_bytes`` (at
        least one batch), stopping before batches at or after ``to_offset``: ``bytes``, or a
        ``memoryview`` of one batch framed in place (:mod:`.batch_encode`)."""
        path = segment_object_paths(metadata)[PARQUET_SUFFIX]
        options = (to_offset, compression)
        chunk = self._chunks.get(path, start_offset, options, max_bytes)
        if chunk is not None:
            return chunk
        # A consumer reading on from where its last fetch stopped resumes that fetch's cursor.
        cursor = self._cursors.take(path, start_offset, options)
        try:
            if cursor is None:
                cursor = self._open_cursor(path, start_offset, to_offset, compression)
            records = cursor.read(max_bytes)
        except (StoreError, TranscodeError) as exc:
            if cursor is not None:
                cursor.close()
            raise _wrap(f"cannot fetch {metadata.remote_log_segment_id}", exc) from exc
        except Exception as exc:
            if cursor is not None:
                cursor.close()
            # pyarrow raises its own errors for a damaged footer; keep them out of callers.
            raise RemoteStorageError(
                f"cannot read {self._store.url}/{path}: {type(exc).__name__}: {exc}"
            ) from exc
        self._chunks.put(
            path, start_offset, options, records, None if cursor.exhausted else max_bytes
        )
        self._cursors.put(path, options, cursor)
        if not cursor.exhausted:
            self._read_ahead_pool().submit(cursor.read_ahead, max_bytes)
        return records

    def prefetch_log_segment(
        self,
        metadata: RemoteLogSegmentMetadata,
        start_offset: int,
        max_bytes: int = 1 << 20,
        *,
        to_offset: int | None = None,
        compression: int | None = None,
    ) -> None:
        """Start, on a worker thread, what :meth:`fetch_log_segment` of the same arguments
        would do, and keep it as a cursor at ``start_offset`` with ``max_bytes`` of batches
        encoded: a sequential reader that reached the end of the previous segment asks for
        this next. Returns at once; a cursor already there is kept; errors are left for the
        fetch itself to meet and report."""
        path = segment_object_paths(metadata)[PARQUET_SUFFIX]
        options = (to_offset, compression)

        def prefetch() -> None:
            if self._cursors.has(path, start_offset, options) or self._chunks.has(
                path, start_offset, options
            ):
                return
            try:
                cursor = self._open_cursor(path, start_offset, to_offset, compression)
            except Exception:
                return  # the fetch opens it again and reports what is wrong
            cursor.next_offset = start_offset
            # Listed before it encodes: a fetch arriving meanwhile takes it and waits for the
            # batches under way instead of encoding them a second time.
            self._cursors.put(path, options, cursor)
            cursor.read_ahead(max_bytes)

        self._read_ahead_pool().submit(prefetch)

    def _read_ahead_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._read_ahead is None:
                self._read_ahead = ThreadPoolExecutor(
                    _READ_AHEAD_THREADS, thread_name_prefix="sparklog-remote-read-ahead"
                )
            return self._read_ahead

    def _open_cursor(
        self, path: str, start_offset: int, to_offset: int | None, compression: int | None
    ) -> FetchCursor:
        stack = contextlib.ExitStack()
        try:
            handle = stack.enter_context(self._store.open_input(path))
            parquet = parquet_file(handle, self._cache.metadata(path))
            self._cache.put_metadata(path, parquet.metadata)
            batches = iter_parquet_batches(
                parquet,
                start_offset,
                to_offset=to_offset,
                compression=compression,
                read_row_group=self._cache.reader(path),
                levels=FAST_LEVELS,
            )
        except BaseException:
            stack.close()
            raise
        stack.callback(batches.close)
        metadata = parquet.metadata
        # What the cursor may pin: one decoded row group (Arrow's size is about Parquet's
        # uncompressed size).
        weight = max(
            (metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups)),
            default=0,
        )
        return FetchCursor(batches, stack.close, weight)

    def fetch_leader_epoch_checkpoint(
        self, metadata: RemoteLogSegmentMetadata
    ) -> list[tuple[int, int]]:
        path = segment_object_paths(metadata)[EPOCH_SUFFIX]
        try:
            return parse_epoch_checkpoint(self._store.read_bytes(path))
        except (StoreError, LayoutError) as exc:
            raise _wrap(f"cannot read {path}", exc) from exc

    def fetch_producer_snapshot(self, metadata: RemoteLogSegmentMetadata) -> bytes:
        path = segment_object_paths(metadata)[SNAPSHOT_SUFFIX]
        try:
            return self._store.read_bytes(path)
        except StoreError as exc:
            raise _wrap(f"cannot read {path}", exc) from exc

    def fetch_transaction_index(self, metadata: RemoteLogSegmentMetadata) -> tuple[AbortedTxn, ...]:
        """The segment's aborted transactions (marker in the segment), in marker order."""
        path = segment_object_paths(metadata)[TXN_INDEX_SUFFIX]
        cached = self._txn_indexes.get(path)
        if cached is not None:
            return cached
        try:
            entries = parse_txn_index(self._store.read_bytes(path))
        except ObjectNotFoundError:
            entries = ()
        except (StoreError, LayoutError) as exc:
            raise _wrap(f"cannot read {path}", exc) from exc
        self._txn_indexes.put(path, entries)
        return entries

    def delete_log_segment_data(self, metadata: RemoteLogSegmentMetadata) -> None:
        # Parquet first: once it is gone the segment cannot be served even if we stop here.
        paths = segment_object_paths(metadata)
        self._cache.forget(paths[PARQUET_SUFFIX])
        self._cursors.forget(paths[PARQUET_SUFFIX])
        self._chunks.forget(paths[PARQUET_SUFFIX])
        self._txn_indexes.forget(paths[TXN_INDEX_SUFFIX])
        try:
            for path in paths.values():
                self._store.delete(path)
        except StoreError as exc:
            raise _wrap(f"cannot delete {metadata.remote_log_segment_id}", exc) from exc

    def __repr__(self) -> str:
        return f"RemoteStorageManager({self._store.url!r})"
