"""Parquet -> Kafka batches: the remote-fetch direction of :mod:`.transcode`.

``parquet_to_batches`` rebuilds Kafka batches from the rows: rows sharing ``batch_base_offset``
become one batch with the same base offset, lastOffsetDelta, leader epoch, producer id /
epoch, base sequence, transactional and control flags, timestamp type, and the records'
offsets, timestamps, keys, values and headers. It compresses with the codec of origin unless
told otherwise (``compression=0`` trades bytes on the wire for CPU). Known losses, invisible to
Kafka clients: a batch whose records were all compacted away has no rows and is not rebuilt;
a LogAppendTime batch's per-record create times are not kept (Kafka's readers use the batch's
max timestamp); the CRC is recomputed.

Rows are read a row group at a time; row groups whose ``batch_last_offset`` statistics end
below ``from_offset`` are skipped without being read. Known loss: the delete-horizon attribute
of a compacted batch (KIP-534) is not kept; its base timestamp becomes the first record's.
Without those losses (CreateTime batches, no delete horizon) the rebuilt batches equal the
segment's byte for byte (the property tests check it).

Batches are encoded a chunk of rows at a time by :mod:`.batch_encode`: the first
``_CHUNK_ROWS`` rows, then twice as many each time up to ``_MAX_CHUNK_ROWS``, each rounded up
to whole batches, so a small fetch encodes few rows and a long read spreads the encoder's
fixed cost; only a batch that a row group ends in the middle of is put together from two
slices (a copy). Batches are ``bytes``, or ``memoryview`` where the encoder framed an
uncompressed batch in place (:data:`.batch_encode.EncodedBatch`). A read or decode failure of
the object raises :class:`~.transcode.TranscodeError`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from typing import IO, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .batch_encode import EncodedBatch, encode_batches
from .segment_reader import RowGroupReader, parquet_file, read_row_group, row_groups
from .transcode import ENCODED_COLUMNS, TranscodeError

__all__ = ["ParquetSource", "iter_parquet_batches", "parquet_to_batches"]

ParquetSource: TypeAlias = "pq.ParquetFile | pa.Table | str | bytes | IO[bytes]"


_CHUNK_ROWS = 2048
_MAX_CHUNK_ROWS = 1 << 16


def _row_group_tables(
    source: ParquetSource,
    from_offset: int,
    columns: list[str],
    read_row_group: RowGroupReader = read_row_group,
) -> Iterator[tuple[pa.Table, bool]]:
    """The row groups that may hold ``from_offset`` on, each with whether it is the last."""
    if isinstance(source, pa.Table):
        yield source.select(columns), True
        return
    parquet = parquet_file(source)
    # A group is skipped only when every batch in it ends before from_offset: judged on the
    # batches' last offsets, not the rows', since compaction may leave a batch's last rows
    # below from_offset while the batch (and a fetch from inside it) goes on.
    try:
        groups = row_groups(parquet.metadata, "batch_last_offset", from_offset)
    except KeyError as exc:
        raise TranscodeError(str(exc.args[0])) from None
    for n, i in enumerate(groups, 1):
        yield read_row_group(parquet, i, columns), n == len(groups)


def parquet_to_batches(
    source: ParquetSource,
    from_offset: int = 0,
    max_bytes: int = 1 << 20,
    *,
    to_offset: int | None = None,
    compression: int | None = None,
    read_row_group: RowGroupReader = read_row_group,
    levels: Mapping[int, int] | None = None,
) -> bytes:
    """Kafka batches (concatenated) holding the rows from the batch that contains
    ``from_offset`` on, whole batches only, up to ``max_bytes`` (the first batch is returned
    even when larger, as Kafka does), stopping before any batch that starts at or after
    ``to_offset``. ``compression`` None keeps each batch's codec of origin; ``levels`` sets
    codec levels (:data:`.batch_encode.FAST_LEVELS` for remote fetch; None, the libraries'
    defaults, rebuilds a segment of CreateTime batches written by this codec module byte for
    byte)."""
    out: list[EncodedBatch] = []
    total = 0
    batches = iter_parquet_batches(
        source,
        from_offset,
        to_offset=to_offset,
        compression=compression,
        read_row_group=read_row_group,
        levels=levels,
    )
    for batch in batches:
        if out and total + len(batch) > max_bytes:
            break
        out.append(batch)
        total += len(batch)
        if total >= max_bytes:
            break
    return b"".join(out)


def _row_chunks(
    tables: Iterator[tuple[pa.Table, bool]], from_offset: int
) -> Iterator[tuple[pa.Table, bool, bool]]:
    """Slices starting at the first batch that ends at or after ``from_offset``: the first
    ``_CHUNK_ROWS`` rows, then twice as many each time up to ``_MAX_CHUNK_ROWS``, each rounded
    up to the end of the batch it ends in, so a slice holds whole batches except that the last
    of a row group may go on in the next one. Each with whether it ends its row group and
    whether it is the last (no row follows it)."""
    size = _CHUNK_ROWS
    for table, last_table in tables:
        rows = table.num_rows
        # Rows are sorted by offset, so rows of batches ending before from_offset lead.
        start = pc.sum(pc.less(table.column("batch_last_offset"), from_offset)).as_py() or 0
        if start >= rows:
            continue
        bases = table.column("batch_base_offset").to_numpy()
        while start < rows:
            end = int(np.searchsorted(bases, bases[min(start + size, rows) - 1], side="right"))
            yield table.slice(start, end - start), end == rows, last_table and end == rows
            start = end
            size = min(2 * size, max(_MAX_CHUNK_ROWS, _CHUNK_ROWS))


def iter_parquet_batches(
    source: ParquetSource,
    from_offset: int = 0,
    *,
    to_offset: int | None = None,
    compression: int | None = None,
    read_row_group: RowGroupReader = read_row_group,
    levels: Mapping[int, int] | None = None,
) -> Generator[EncodedBatch, None, None]:
    """The batches of :func:`parquet_to_batches`, one at a time, lazily, without a size
    bound."""
    pending: pa.Table | None = None
    try:
        tables = _row_group_tables(source, from_offset, ENCODED_COLUMNS, read_row_group)
        for chunk, table_end, last in _row_chunks(tables, from_offset):
            if pending is not None:
                chunk = pa.concat_tables([pending, chunk])
                pending = None
            if table_end and not last and chunk.num_rows:
                # The row group's last batch may continue in the next row group.
                bases = chunk.column("batch_base_offset").to_numpy()
                tail = int(np.searchsorted(bases, bases[-1], side="left"))
                pending = chunk.slice(tail)
                chunk = chunk.slice(0, tail)
            for batch in _encode_rows(chunk, from_offset, to_offset, compression, levels):
                if batch is None:
                    return
                yield batch
        if pending is not None and pending.num_rows:
            for batch in _encode_rows(pending, from_offset, to_offset, compression, levels):
                if batch is None:
                    return
                yield batch
    except (OSError, pa.ArrowException) as exc:
        raise TranscodeError(f"cannot read Parquet segment: {exc}") from exc


def _encode_rows(
    rows: pa.Table,
    from_offset: int,
    to_offset: int | None,
    compression: int | None,
    levels: Mapping[int, int] | None,
) -> Iterator[EncodedBatch | None]:
    """Encoded batches of ``rows`` (whole batches); a None means "past to_offset, stop"."""
    stop = False
    if to_offset is not None and rows.num_rows:
        bases = rows.column("batch_base_offset").to_numpy()
        cut = int(np.searchsorted(bases, to_offset, side="left"))
        stop = cut < rows.num_rows
        rows = rows.slice(0, cut)
    for batch, _, last in encode_batches(rows, compression, levels=levels):
        if last >= from_offset:
            yield batch
    if stop:
        yield None
