"""The hot tail of a native batch read, materialised once as Parquet on the driver.

A Python data source query has a fixed cost of its own (a planning worker, Python tasks, Arrow
IPC into the JVM): about 0.16-0.25 s on a 2-core machine, more than Spark's whole ``count()``
of 2M tiered rows. So when the driver's files are the executors' files (``local`` master) and
the hot tail is small, :func:`materialise` reads the planned hot pieces on the driver (the
brokers' read service, :func:`.hot.read_hot`, the pieces in parallel threads), writes their
rows as Parquet files in the tier's columns (:data:`TAIL_SCHEMA`: ``offset``, ``timestamp``
in ms, ``timestamp_type``, ``key``, ``value``, ``headers`` with ``includeHeaders``) and the
native plan scans them with the tier's objects, in the same Parquet relation when it can (one
relation and no union: a second relation cost a ``count()`` about as much as reading the tail).

Contract:
- :func:`materialise` returns one :class:`TailFile` per piece with rows (pieces that read no
  row give none): its path, partition, offsets and exact size in bytes; or None when it
  declines: a non-local master, more than :data:`MAX_OFFSETS` offsets
  or :data:`MAX_BYTES` in all, or the cache full. The caller then reads the pieces with the
  data source. Batches are streamed into the files, one in memory per thread.
- Rows are exactly what the data source would yield for the piece (same reader: control and
  aborted records already dropped, the range already trimmed), so every file is filter-free in
  the native plan's sense; they are read when
  the DataFrame is built rather than when an action runs; a read failure (data loss,
  unreachable leader) surfaces there.
- Files are cached per piece (leader, topic, topic id, partition, range, isolation, headers):
  offsets below the high watermark (and under read_committed below the last stable offset,
  where every transaction is decided) never change, so a second read of the same range reuses
  the file.
  Files live in one temporary directory per driver process, removed at exit; the cache holds
  at most :data:`CACHE_BYTES` (beyond that, reads decline) and never deletes a file a
  DataFrame may still name.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .hot import read_hot
from .planning import HotPiece
from .schema import HEADERS_TYPE

__all__ = ["CACHE_BYTES", "MAX_BYTES", "MAX_OFFSETS", "TailFile", "clear", "materialise"]

#: Largest hot tail read on the driver (offsets of all pieces, and bytes of their Arrow batches:
#: a read that passes the bytes stops and declines); larger tails are read by tasks.
MAX_OFFSETS: Final = 2_000_000
MAX_BYTES: Final = 256 << 20
#: Most bytes of Parquet files the driver keeps for hot tails.
CACHE_BYTES: Final = 2 << 30
_THREADS: Final = 4
#: The files' columns: the tier's (``sparklog.tiering.layout.PARQUET_SCHEMA``) that a read
#: needs, so one Parquet scan with the tier's read schema covers tier objects and tail files
#: (``is_control`` and ``aborted`` are absent: Spark reads them as null).
TAIL_SCHEMA: Final = pa.schema(
    [
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.int64()),
        pa.field("timestamp_type", pa.int8()),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
    ]
)
_TAIL_SCHEMA_HEADERS: Final = TAIL_SCHEMA.append(pa.field("headers", HEADERS_TYPE))


@dataclass(frozen=True, slots=True)
class TailFile:
    """A written tail: ``path`` (local) holds ``partition``'s offsets ``[start, end)``."""

    path: str
    topic: str
    partition: int
    start: int
    end: int
    size_bytes: int


def _tier_columns(batch: pa.RecordBatch, include_headers: bool) -> pa.RecordBatch:
    """A batch of the Kafka schema (:mod:`.schema`) in :data:`TAIL_SCHEMA`'s columns."""
    micros = batch.column("timestamp").cast(pa.int64())
    columns = [
        batch.column("offset"),
        pc.divide(micros, 1000),  # exact: the reader made the micros from ms
        batch.column("timestampType").cast(pa.int8()),
        batch.column("key"),
        batch.column("value"),
    ]
    if include_headers:
        columns.append(batch.column("headers"))
    return pa.RecordBatch.from_arrays(
        columns, schema=_TAIL_SCHEMA_HEADERS if include_headers else TAIL_SCHEMA
    )


_lock = threading.Lock()
_files: dict[tuple[object, ...], TailFile | None] = {}
_state: dict[str, object] = {"dir": None, "bytes": 0}


def _key(piece: HotPiece) -> tuple[object, ...]:
    # The leader's address too: a topic id can be unknown (empty), and two clusters may share
    # topic names; a new leader only costs a cache miss.
    return (
        piece.broker,
        piece.topic,
        piece.topic_id,
        piece.partition,
        piece.start,
        piece.end,
        piece.read_committed,
        piece.include_headers,
    )


def _directory() -> str:
    with _lock:
        path = _state["dir"]
        if path is None:
            path = tempfile.mkdtemp(prefix="sparklog-hot-tail-")
            atexit.register(shutil.rmtree, path, True)
            _state["dir"] = path
        assert isinstance(path, str)
        return path


class _Budget:
    """Bytes one :func:`materialise` call may still write (shared by its threads)."""

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.lock = threading.Lock()

    def take(self, size: int) -> bool:
        with self.lock:
            self.left -= size
            return self.left >= 0


class _OverBudget(Exception):
    pass


def _write(piece: HotPiece, budget: _Budget) -> TailFile | None:
    """Stream ``piece``'s batches into a Parquet file (one batch in memory at a time)."""
    path = (
        f"{_directory()}/{piece.topic}-{piece.partition}-{piece.start}-{uuid.uuid4().hex}.parquet"
    )
    writer: pq.ParquetWriter | None = None
    try:
        for batch in read_hot(piece):
            if not batch.num_rows:
                continue
            if not budget.take(batch.nbytes):
                raise _OverBudget
            if writer is None:
                writer = pq.ParquetWriter(
                    path,
                    _TAIL_SCHEMA_HEADERS if piece.include_headers else TAIL_SCHEMA,
                    compression="none",
                    use_dictionary=False,
                    write_statistics=["offset", "timestamp"],
                )
            writer.write_batch(_tier_columns(batch, piece.include_headers), row_group_size=1 << 20)
    except BaseException:
        if writer is not None:
            writer.close()
            os.unlink(path)
        raise
    if writer is None:
        return None
    writer.close()
    return TailFile(
        path, piece.topic, piece.partition, piece.start, piece.end, os.path.getsize(path)
    )


def materialise(pieces: Sequence[HotPiece], local_master: bool) -> list[TailFile] | None:
    """The Parquet files holding ``pieces``' rows, or None (see the module docstring)."""
    if not local_master or sum(p.end - p.start for p in pieces) > MAX_OFFSETS:
        return None
    with _lock:
        cached = {k: _files[k] for k in map(_key, pieces) if k in _files}
        used = _state["bytes"]
    assert isinstance(used, int)
    missing = [p for p in pieces if _key(p) not in cached]
    if not missing:
        return [tail for p in pieces if (tail := cached[_key(p)]) is not None]
    if used >= CACHE_BYTES:
        return None
    budget = _Budget(min(MAX_BYTES, CACHE_BYTES - used))
    with ThreadPoolExecutor(min(_THREADS, len(missing))) as pool:
        futures = [pool.submit(_write, piece, budget) for piece in missing]
        outcomes = [_outcome(f) for f in futures]
    failure = next((o for o in outcomes if isinstance(o, BaseException)), None)
    if failure is not None:
        for outcome in outcomes:
            if isinstance(outcome, TailFile):
                os.unlink(outcome.path)
        if isinstance(failure, _OverBudget):
            return None
        raise failure
    with _lock:
        for piece, outcome in zip(missing, outcomes, strict=True):
            assert not isinstance(outcome, BaseException)
            _files[_key(piece)] = outcome
            cached[_key(piece)] = outcome
            total = _state["bytes"]
            assert isinstance(total, int)
            _state["bytes"] = total + (outcome.size_bytes if outcome is not None else 0)
    return [tail for p in pieces if (tail := cached[_key(p)]) is not None]


def _outcome(future: Future[TailFile | None]) -> TailFile | BaseException | None:
    try:
        return future.result()
    except BaseException as exc:
        return exc


def clear() -> None:
    """Forget and delete every cached file (benchmarks measuring a first read, tests): a
    DataFrame built before must not run again."""
    with _lock:
        entries = list(_files.values())
        _files.clear()
        _state["bytes"] = 0
    for tail in entries:
        if tail is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tail.path)
