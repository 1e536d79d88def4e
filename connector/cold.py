"""Executor-side cold reader: one tiered Parquet object's offset range as Arrow batches.

Contract of :func:`read_cold`: yields batches in the schema of :mod:`.schema`, rows with
``start <= offset < end`` in offset order, never a control row, and under read_committed never a
row of an aborted transaction (the layout's precomputed ``aborted`` flag). Row groups whose
``offset`` statistics lie outside the range are not read. The object is opened through the
tiered store's fsspec seam, so every URL the store supports (file://, s3://...) works.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sparklog.tiering.store import open_store

from .planning import ColdPiece
from .schema import build_batch

__all__ = ["read_cold"]

_COLUMNS = ["offset", "timestamp", "timestamp_type", "key", "value", "is_control", "aborted"]


def _row_groups(meta: pq.FileMetaData, start: int, end: int) -> list[int]:
    column = meta.schema.names.index("offset")
    chosen = []
    for index in range(meta.num_row_groups):
        stats = meta.row_group(index).column(column).statistics
        if stats is not None and stats.has_min_max and (stats.max < start or stats.min >= end):
            continue
        chosen.append(index)
    return chosen


def read_cold(piece: ColdPiece) -> Iterator[pa.RecordBatch]:
    store = open_store(piece.store_url, dict(piece.store_options))
    columns = [*_COLUMNS, "headers"] if piece.include_headers else _COLUMNS
    with store.open_input(piece.path) as handle:
        parquet = pq.ParquetFile(handle)
        for group in _row_groups(parquet.metadata, piece.start, piece.end):
            table = parquet.read_row_group(group, columns=columns)
            offsets = table.column("offset")
            mask = pc.and_(
                pc.and_(pc.greater_equal(offsets, piece.start), pc.less(offsets, piece.end)),
                pc.invert(table.column("is_control").fill_null(False)),
            )
            if piece.read_committed:
                mask = pc.and_(mask, pc.invert(table.column("aborted").fill_null(False)))
            table = table.filter(mask)
            if table.num_rows == 0:
                continue
            table = table.combine_chunks()
            yield build_batch(
                topic=piece.topic,
                partition=piece.partition,
                keys=table.column("key").chunk(0),
                values=table.column("value").chunk(0),
                offsets=table.column("offset").chunk(0),
                timestamps_ms=table.column("timestamp").chunk(0),
                timestamp_types=table.column("timestamp_type").chunk(0),
                headers=table.column("headers").chunk(0) if piece.include_headers else None,
                include_headers=piece.include_headers,
            )
