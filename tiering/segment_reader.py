"""THE reader of the tier's Parquet segment objects (the layout of :mod:`.layout`).

Every module that reads a segment object goes through here: the broker (remote fetch through
:mod:`.rsm` and :mod:`.transcode`, remote offset-for-timestamp), :class:`.reader.TieredStoreReader`
(the CLI and scripts) and the Spark connector (cold reads, offset-for-timestamp when planning).
Manifests are read by :class:`.reader.TieredStoreReader` (URL-only) and :mod:`.rlmm` (brokers).

Contract:

- :func:`open_segment` opens an object of an :class:`~.store.ObjectStore` as a
  ``pyarrow.parquet.ParquetFile`` (``metadata`` a cached footer, to skip reading it again); the
  context manager closes the store handle. :func:`parquet_file` does the same for a handle,
  bytes or a path already open.
- :func:`row_groups` lists the row groups whose statistics on one column may hold values in
  ``[low, high)``; a group without statistics is always listed. Statistics are looked up by
  leaf path, so columns after the nested ``headers`` are found too.
- :func:`read_rows` yields, row group by row group (only the groups :func:`row_groups` lists
  for ``offset``), the rows with ``start <= offset < end``, never a control row, and under
  read_committed no row with ``aborted`` set; a group whose rows all pass is yielded as read
  (no copy).
- :func:`first_at_or_after` is ListOffsets by timestamp in one object: the
  ``(timestamp, offset)`` of the first row (lowest offset) at or above ``min_offset`` whose
  timestamp is at least the target, or None. It reads only the ``offset``, ``timestamp`` (and
  ``is_control``) columns of the groups whose ``timestamp`` and ``offset`` statistics allow a
  hit, in offset order, and stops at the first group with one: never a full-table scan.

Blocking (pyarrow I/O); callers on an event loop run it in a worker thread.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import IO, Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .store import ObjectStore

__all__ = [
    "RowGroupReader",
    "first_at_or_after",
    "open_segment",
    "parquet_file",
    "read_row_group",
    "read_rows",
    "row_groups",
]

RowGroupReader: TypeAlias = Callable[[pq.ParquetFile, int, list[str]], pa.Table]
"""Reads row group ``i`` of a file with the given columns (a cache can stand in)."""


def read_row_group(parquet: pq.ParquetFile, index: int, columns: list[str]) -> pa.Table:
    return parquet.read_row_group(index, columns=columns)


def parquet_file(
    source: pq.ParquetFile | str | bytes | IO[bytes] | Any,
    metadata: pq.FileMetaData | None = None,
) -> pq.ParquetFile:
    """``source`` (an open handle, bytes, a local path or a ParquetFile) as a ParquetFile."""
    if isinstance(source, pq.ParquetFile):
        return source
    if isinstance(source, bytes):
        source = pa.BufferReader(source)
    return pq.ParquetFile(source, metadata=metadata)


@contextlib.contextmanager
def open_segment(
    store: ObjectStore, path: str, metadata: pq.FileMetaData | None = None
) -> Iterator[pq.ParquetFile]:
    """The segment object at ``path`` in ``store``, open while the context lasts."""
    with store.open_input(path) as handle:
        yield parquet_file(handle, metadata)


def _leaf(metadata: pq.FileMetaData, column: str) -> int:
    schema = metadata.schema
    for index in range(len(schema)):
        if schema.column(index).path == column:
            return index
    raise KeyError(f"Parquet object has no {column!r} column: not a sparklog segment")


def row_groups(
    metadata: pq.FileMetaData, column: str, low: int | None = None, high: int | None = None
) -> list[int]:
    """Row groups whose ``column`` statistics may hold a value in ``[low, high)``."""
    leaf = _leaf(metadata, column)
    chosen = []
    for index in range(metadata.num_row_groups):
        stats = metadata.row_group(index).column(leaf).statistics
        if stats is not None and stats.has_min_max:
            if low is not None and stats.max < low:
                continue
            if high is not None and stats.min >= high:
                continue
        chosen.append(index)
    return chosen


def read_rows(
    parquet: pq.ParquetFile,
    start: int,
    end: int | None,
    columns: list[str] | None = None,
    *,
    read_committed: bool = False,
) -> Iterator[pa.Table]:
    """The readable rows of ``[start, end)``, one table per row group read, in offset order.

    ``columns`` None reads every column; otherwise ``offset``, ``is_control`` (and
    ``aborted`` under read_committed) must be among them."""
    names = list(parquet.schema_arrow.names) if columns is None else columns
    for group in row_groups(parquet.metadata, "offset", start, end):
        table = parquet.read_row_group(group, columns=names)
        offsets = table.column("offset")
        mask = pc.and_(
            pc.greater_equal(offsets, start),
            pc.invert(table.column("is_control").fill_null(False)),
        )
        if end is not None:
            mask = pc.and_(mask, pc.less(offsets, end))
        if read_committed:
            mask = pc.and_(mask, pc.invert(table.column("aborted").fill_null(False)))
        # Most row groups keep every row: filtering would copy the value buffers for nothing.
        if not pc.all(mask).as_py():
            table = table.filter(mask)
        yield table


def first_at_or_after(
    parquet: pq.ParquetFile,
    timestamp: int,
    min_offset: int = 0,
    *,
    skip_control: bool = False,
    read_group: RowGroupReader = read_row_group,
) -> tuple[int, int] | None:
    """``(timestamp, offset)`` of the first row at or above ``min_offset`` whose timestamp is
    at least ``timestamp`` (``skip_control``: not a control row); None if there is none."""
    metadata = parquet.metadata
    late = set(row_groups(metadata, "timestamp", timestamp))
    columns = ["offset", "timestamp", "is_control"] if skip_control else ["offset", "timestamp"]
    for group in row_groups(metadata, "offset", min_offset):
        if group not in late:
            continue
        table = read_group(parquet, group, columns)
        mask = pc.and_(
            pc.greater_equal(table.column("timestamp"), timestamp),
            pc.greater_equal(table.column("offset"), min_offset),
        )
        if skip_control:
            mask = pc.and_(mask, pc.invert(table.column("is_control").fill_null(False)))
        hits = table.filter(mask)
        if hits.num_rows:
            # Rows are sorted by offset: the first hit is the lowest offset.
            return int(hits.column("timestamp")[0].as_py()), int(hits.column("offset")[0].as_py())
    return None
