"""Executor-side cold reader: a cold piece's tiered Parquet objects as Arrow batches.

Contract of :func:`read_cold`: yields batches in the schema of :mod:`.schema`, rows with
``start <= offset < end`` in offset order (the piece's objects are read one after another),
never a control row, and under read_committed never a row of an aborted transaction (the
layout's precomputed ``aborted`` flag). Row groups whose ``offset`` statistics lie outside the
range are not read. Objects are opened through the tiered store's fsspec seam, so every URL the
store supports (file://, s3://...) works.

Batches hold at most :data:`BATCH_ROWS` rows and are zero-copy slices of what pyarrow read
(a batch never spans two row groups); only the columns whose type differs from the output
schema are computed (timestamp ms -> us, timestamp type int8 -> int32, headers), and rows are
filtered only when a row group holds rows to drop. Spark's Python data source passes yielded
batches to the JVM as they are, so their size is the unit of its per-batch overhead.

An object deleted between planning and reading (retention) is data loss: with
``failOnDataLoss`` the read fails with :class:`~.offsets.DataLossError` naming the topic,
partition and the object's offsets; otherwise those offsets are skipped and logged and the
next object is read. Offsets without rows (control records, aborted transactions) are not data
loss.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from sparklog.tiering.segment_reader import parquet_file, read_rows
from sparklog.tiering.store import ObjectNotFoundError, ObjectStore, open_store

from .offsets import DataLossError
from .planning import ColdObject, ColdPiece
from .schema import HEADERS_TYPE, arrow_schema

__all__ = ["BATCH_ROWS", "read_cold"]

log = logging.getLogger(__name__)

#: Most rows in one yielded batch.
BATCH_ROWS: Final = 1 << 16

_COLUMNS: Final = ["offset", "timestamp", "timestamp_type", "key", "value", "is_control"]
_TIMESTAMP_TYPE: Final = pa.timestamp("us", tz="UTC")


def read_cold(piece: ColdPiece) -> Iterator[pa.RecordBatch]:
    store = open_store(piece.store_url, dict(piece.store_options))
    columns = list(_COLUMNS)
    if piece.read_committed:
        columns.append("aborted")
    if piece.include_headers:
        columns.append("headers")
    for obj in piece.objects:
        start, end = max(piece.start, obj.start), min(piece.end, obj.end)
        if start < end:
            yield from _read_object(store, piece, obj, start, end, columns)


def _read_object(
    store: ObjectStore,
    piece: ColdPiece,
    obj: ColdObject,
    start: int,
    end: int,
    columns: list[str],
) -> Iterator[pa.RecordBatch]:
    try:
        handle = store.open_input(obj.path)
    except ObjectNotFoundError:
        message = (
            f"offsets [{start}, {end}) of {piece.topic}-{piece.partition} are gone:"
            f" the tiered object {obj.path} was deleted (retention) after planning"
        )
        if piece.fail_on_data_loss:
            raise DataLossError(
                f"Some data may have been lost because they are not available any more;"
                f" {message}. Set the source option failOnDataLoss to false to skip them."
            ) from None
        log.warning("failOnDataLoss=false: %s; skipping them", message)
        return
    with handle:
        parquet = parquet_file(handle)
        for table in read_rows(parquet, start, end, columns, read_committed=piece.read_committed):
            for batch in table.to_batches(max_chunksize=BATCH_ROWS):
                if batch.num_rows:
                    yield _output_batch(piece, batch)


def _output_batch(piece: ColdPiece, batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` (the Parquet layout's columns) in the connector's schema."""
    count = batch.num_rows
    micros = pc.multiply(batch.column("timestamp"), 1000)
    columns = [
        batch.column("key"),
        batch.column("value"),
        pa.repeat(pa.scalar(piece.topic, pa.string()), count),
        pa.repeat(pa.scalar(piece.partition, pa.int32()), count),
        batch.column("offset"),
        micros.cast(_TIMESTAMP_TYPE),
        batch.column("timestamp_type").cast(pa.int32()),
    ]
    if piece.include_headers:
        columns.append(batch.column("headers").cast(HEADERS_TYPE))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(piece.include_headers))
