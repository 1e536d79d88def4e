"""Remote fetch cursors: a consumer reading a tiered segment in order resumes the batch
encoder where its previous fetch stopped, instead of opening the object, locating its offset
and encoding again from there.

Contract:

- A :class:`FetchCursor` wraps the lazy batch iterator of one fetch
  (:func:`.parquet_batches.iter_parquet_batches`) and the object handle it reads from. ``read``
  returns whole batches up to ``max_bytes`` (at least one, as Kafka does) and keeps the batch
  that did not fit for the next read, so no batch is encoded twice or lost.
- :class:`FetchCursors` holds idle cursors by ``(path, next offset, options)``: a fetch whose
  offset is exactly where a cursor stopped (the offset after its last batch, which is what a
  consumer asks for next) takes it; any other fetch starts afresh. A cursor is used by one
  fetch at a time (taken out while in use). A cursor may also be put before its first read,
  at the offset it starts from (a prefetch of the next segment: ``next_offset`` set by hand).
  At most ``max_cursors`` are kept, holding at most
  ``max_bytes`` by their ``weight`` (the decoded row group a cursor may pin), least recently
  used closed first (the one just put is always kept), and one idle for ``idle_s`` is closed
  when the next one is put. A copy or delete of a segment closes its cursors
  (:meth:`FetchCursors.forget`).
- The batches a cursor returns are exactly those a fresh fetch from the same offset returns
  (the iterator is the same; only its position is kept). :meth:`FetchCursor.read_ahead`
  encodes the next fetch's batches early (the RSM runs it on a worker thread right after a
  fetch), in the same order. Blocking like the rest of the tier: call from worker threads.
- :class:`FetchedChunks` keeps the answers of recent fetches (size-bounded, LRU) for readers
  that read the same range again; a chunk is exactly a fresh fetch's answer from its offset,
  cut at a batch boundary when the new fetch allows fewer bytes.
"""

from __future__ import annotations

import struct
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from typing import Final

from .batch_encode import EncodedBatch

__all__ = ["FetchCursor", "FetchCursors", "FetchedChunks"]

_BASE_OFFSET: Final = struct.Struct(">q")
_LAST_OFFSET_DELTA: Final = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT: Final = 23


def _next_offset(batch: EncodedBatch) -> int:
    """The offset after a v2 batch: base offset + lastOffsetDelta + 1."""
    (base,) = _BASE_OFFSET.unpack_from(batch, 0)
    (delta,) = _LAST_OFFSET_DELTA.unpack_from(batch, _LAST_OFFSET_DELTA_AT)
    return int(base) + int(delta) + 1


class FetchCursor:
    """The rest of one fetch's batches; see the module docstring. Thread-safe: ``read``,
    ``read_ahead`` and ``close`` take turns."""

    def __init__(
        self, batches: Iterator[EncodedBatch], close: Callable[[], None], weight: int = 0
    ) -> None:
        self._batches = batches
        self.weight = weight
        self._close = close
        self._ready: deque[EncodedBatch] = deque()  # encoded ahead of the next read, in order
        self._ready_bytes = 0
        self._error: Exception | None = None
        self._closed = False
        self._lock = threading.Lock()
        self.exhausted = False
        self.next_offset = -1
        self.used_at = time.monotonic()

    def _next(self) -> EncodedBatch | None:
        if self._ready:
            batch = self._ready.popleft()
            self._ready_bytes -= len(batch)
            return batch
        if self._error is not None:
            raise self._error
        return next(self._batches, None)

    def read(self, max_bytes: int) -> EncodedBatch:
        out: list[EncodedBatch] = []
        total = 0
        with self._lock:
            while True:
                batch = self._next()
                if batch is None:
                    self.exhausted = True
                    break
                if out and total + len(batch) > max_bytes:
                    self._ready.appendleft(batch)
                    self._ready_bytes += len(batch)
                    break
                out.append(batch)
                total += len(batch)
                self.next_offset = _next_offset(batch)
                if total >= max_bytes:
                    break
            self.used_at = time.monotonic()
        return out[0] if len(out) == 1 else b"".join(out)

    def read_ahead(self, max_bytes: int) -> None:
        """Encode the next ``max_bytes`` of batches now (from a worker thread while the last
        answer travels and the consumer reads it), so the next read finds them ready. An
        error is kept and raised by the read that reaches it."""
        with self._lock:
            if self._closed or self._error is not None:
                return
            try:
                while self._ready_bytes < max_bytes:
                    batch = next(self._batches, None)
                    if batch is None:
                        return
                    self._ready.append(batch)
                    self._ready_bytes += len(batch)
            except Exception as exc:
                self._error = exc

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._close()


class FetchCursors:
    """Idle cursors by key; see the module docstring."""

    def __init__(
        self, max_cursors: int = 16, idle_s: float = 60.0, max_bytes: int = 256 << 20
    ) -> None:
        self._max = max_cursors
        self._idle_s = idle_s
        self._max_bytes = max_bytes
        self._bytes = 0
        self._cursors: OrderedDict[tuple[str, int, Hashable], FetchCursor] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, path: str, offset: int, options: Hashable) -> FetchCursor | None:
        with self._lock:
            cursor = self._cursors.pop((path, offset, options), None)
            if cursor is not None:
                self._bytes -= cursor.weight
            return cursor

    def has(self, path: str, offset: int, options: Hashable) -> bool:
        with self._lock:
            return (path, offset, options) in self._cursors

    def put(self, path: str, options: Hashable, cursor: FetchCursor) -> None:
        """Keep ``cursor`` for a fetch at its next offset, or close it if it is spent."""
        if cursor.exhausted or cursor.next_offset < 0 or self._max <= 0:
            cursor.close()
            return
        closing: list[FetchCursor] = []
        with self._lock:
            key = (path, cursor.next_offset, options)
            old = self._cursors.pop(key, None)
            if old is not None:
                self._bytes -= old.weight
                closing.append(old)
            self._cursors[key] = cursor
            self._bytes += cursor.weight
            stale = time.monotonic() - self._idle_s
            while len(self._cursors) > 1:  # never the one just put
                first = next(iter(self._cursors.values()))
                within = len(self._cursors) <= self._max and self._bytes <= self._max_bytes
                if within and first.used_at >= stale:
                    break
                evicted = self._cursors.popitem(last=False)[1]
                self._bytes -= evicted.weight
                closing.append(evicted)
        for spent in closing:
            spent.close()

    def forget(self, path: str) -> None:
        with self._lock:
            keys = [key for key in self._cursors if key[0] == path]
            closing = [self._cursors.pop(key) for key in keys]
            self._bytes -= sum(cursor.weight for cursor in closing)
        for cursor in closing:
            cursor.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._cursors)


_BATCH_LENGTH: Final = struct.Struct(">i")
_LOG_OVERHEAD: Final = 12  # baseOffset int64 + batchLength int32


def _cut(records: EncodedBatch, max_bytes: int) -> EncodedBatch:
    """The whole batches of ``records`` that fit in ``max_bytes`` (at least the first)."""
    if len(records) <= max_bytes:
        return records
    end = 0
    while end < len(records):
        (length,) = _BATCH_LENGTH.unpack_from(records, end + 8)
        following = end + _LOG_OVERHEAD + int(length)
        if end and following > max_bytes:
            break
        end = following
    return records[:end]


class FetchedChunks:
    """Answers of recent remote fetches (rebuilt batch bytes) by ``(path, start offset,
    options)``, least recently used evicted first, at most ``max_bytes`` held (0: none kept).

    A reader reading a tiered range again (a second consumer group, a replay, a restarted
    job) gets the bytes a first reader's fetches rebuilt instead of decoding and encoding the
    segment again; the chunks chain (each one's next offset is the next one's key), so a
    sequential re-read hits every chunk. A chunk is put with the byte limit of the fetch that
    made it (``limit``; ``None`` when it reached the end of what the fetch could read): a
    ``get`` with a larger limit misses (a fresh fetch would return more), one with a smaller
    limit returns the chunk's whole batches that fit (at least one, as a fetch does). So a hit
    is exactly a fresh fetch's answer from the same offset (a segment id's objects never
    change); a copy or delete of the segment drops its chunks (:meth:`forget`).
    """

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._chunks: OrderedDict[tuple[str, int, Hashable], tuple[bytes, int | None]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def get(self, path: str, offset: int, options: Hashable, max_bytes: int) -> EncodedBatch | None:
        with self._lock:
            entry = self._chunks.get((path, offset, options))
            if entry is None or (entry[1] is not None and entry[1] < max_bytes):
                return None
            self._chunks.move_to_end((path, offset, options))
        return _cut(entry[0], max_bytes)

    def has(self, path: str, offset: int, options: Hashable) -> bool:
        with self._lock:
            return (path, offset, options) in self._chunks

    def put(
        self, path: str, offset: int, options: Hashable, records: EncodedBatch, limit: int | None
    ) -> None:
        if not records or len(records) > self._max_bytes:
            return
        # A view pins the whole buffer it was framed in: keep only its bytes.
        records = bytes(records)
        with self._lock:
            old = self._chunks.pop((path, offset, options), None)
            self._bytes += len(records) - (len(old[0]) if old is not None else 0)
            self._chunks[(path, offset, options)] = (records, limit)
            while self._bytes > self._max_bytes:
                self._bytes -= len(self._chunks.popitem(last=False)[1][0])

    def forget(self, path: str) -> None:
        with self._lock:
            for key in [key for key in self._chunks if key[0] == path]:
                self._bytes -= len(self._chunks.pop(key)[0])

    @property
    def held_bytes(self) -> int:
        with self._lock:
            return self._bytes
