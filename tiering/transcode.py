"""Segment <-> Parquet transcoding: Kafka record batches to one row per record, and back.

``segment_to_parquet`` decodes (and decompresses) every batch of a closed segment, checking
each CRC, and writes the rows of :data:`~sparklog.tiering.layout.PARQUET_SCHEMA` in offset
order, ``row_group_rows`` rows per row group (the last may be shorter), zstd (``key`` and
``value`` uncompressed when their first values do not compress: :mod:`.column_codecs`), with
statistics (not on ``key``, ``value``, ``headers``). zstd batches stating their size are
decompressed straight into the decode run's region.
A segment that is torn or corrupt raises :class:`TranscodeError`; a closed segment has no
partial tail, so one is corruption too.

``parquet_to_batches`` and ``iter_parquet_batches`` (the other direction, rebuilding Kafka
batches for a remote fetch) are in :mod:`.parquet_batches`.

Both directions are vectorised and share their record decoder with the Spark connector: a
segment's batches are checked (CRC, counts) and decompressed once each, one Python step per
batch, then decoded into Arrow arrays a run of batches at a time by
:mod:`.batch_decode` (headers included; odd batches fall back to record_codec's loop,
exactly). Rebuilt batches are encoded a chunk of rows at a time by :mod:`.batch_encode`.
"""

from __future__ import annotations

import base64
import dataclasses
import mmap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sparklog.protocol import compression as codecs
from sparklog.protocol.records import (
    RECORDS_OFFSET,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchHeader,
    Buffer,
    CorruptRecordError,
    check_framed_batch,
    iter_batches,
)

from .batch_decode import BatchRecords, RecordArrays, decode_records
from .column_codecs import LazyWriter, compression_option
from .layout import FORMAT_VERSION, HEADER_TYPE, PARQUET_SCHEMA
from .metadata import AbortedTxn

__all__ = [
    "DEFAULT_ROW_GROUP_ROWS",
    "ENCODED_COLUMNS",
    "SegmentStats",
    "TranscodeError",
    "open_parquet_writer",
    "segment_to_parquet",
]

DEFAULT_ROW_GROUP_ROWS = 131072
_NO_TIMESTAMP = -1
_DICTIONARY_COLUMNS = [
    "timestamp_type",
    "batch_base_offset",
    "batch_last_offset",
    "partition_leader_epoch",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "is_transactional",
    "is_control",
    "compression",
    "aborted",
]
_BATCH_COLUMNS = _DICTIONARY_COLUMNS
# Sorted integers: delta encoding writes them faster and smaller than plain + zstd (every
# Parquet reader reads it; the encoding is not part of the layout contract).
_DELTA_COLUMNS = {"offset": "DELTA_BINARY_PACKED", "timestamp": "DELTA_BINARY_PACKED"}
# A decode run ends at this many records or bytes of records (numpy's cost per call is
# fixed; the bytes bound keeps a run's region in cache).
_RUN_RECORDS = 1 << 16
_RUN_BYTES = 4 << 20
_ROW_COLUMNS = ["offset", "timestamp", "key", "value", "headers"]
# What rebuilding batches reads: ``aborted`` is for readers of the objects, not the encoder.
ENCODED_COLUMNS = _ROW_COLUMNS + [name for name in _BATCH_COLUMNS if name != "aborted"]
# A run's decompressed payloads are copied back to back into one buffer of this size (or one
# batch's size if larger), so the decoder reads them in place and keys and values are written
# from it as binary_view arrays: one copy of the records' bytes between codec and writer.
_REGION_BYTES = _RUN_BYTES + (1 << 20)
_VIEW_COLUMNS = ("key", "value")
# The writer is given binary_view keys and values; the file says binary, as every reader
# expects: the Parquet types are the same (BYTE_ARRAY) and the Arrow schema stored in the
# footer is the layout's, written by hand.
_WRITE_SCHEMA = pa.schema(
    [f.with_type(pa.binary_view()) if f.name in _VIEW_COLUMNS else f for f in PARQUET_SCHEMA]
)
# Pages of 256 KiB (Arrow's default is 1 MiB): zstd's level 1 then works on tables that
# stay in cache, which writes 100-byte records about 8% faster for 1% more bytes.
_DATA_PAGE_BYTES = 256 << 10
# Statistics on every column but the record bytes: min/max of keys, values and header bytes
# prune nothing (no reader filters on them) and cost a compare per value on every write.
_STATISTICS_COLUMNS = [
    name for name in PARQUET_SCHEMA.names if name not in ("key", "value", "headers")
]
_ARROW_SCHEMA_KEY = "ARROW:schema"
_ARROW_SCHEMA = base64.b64encode(PARQUET_SCHEMA.serialize().to_pybytes()).decode()


class TranscodeError(ValueError):
    """A segment or Parquet object that cannot be transcoded (corrupt, torn, wrong schema)."""


@dataclass(frozen=True, slots=True)
class SegmentStats:
    """Facts gathered while transcoding: offsets of the first and last batch (-1 when the
    segment holds no batch), record count, first record's and max timestamps (-1 when none),
    and the leader-epoch lineage seen in the batches."""

    base_offset: int
    end_offset: int
    record_count: int
    batch_count: int
    first_timestamp: int
    max_timestamp: int
    leader_epochs: tuple[tuple[int, int], ...]
    segment_bytes: int
    #: Rows of control batches (COMMIT/ABORT markers), of aborted transactions (the
    #: ``aborted`` column) and of transactional batches (markers included).
    control_count: int = 0
    aborted_count: int = 0
    transactional_count: int = 0


class _PendingRows:
    """Tables of rows not yet written; :meth:`take` cuts exactly ``n`` rows off the front so
    row groups keep their configured size whatever the decode runs were."""

    def __init__(self) -> None:
        self._tables: list[pa.Table] = []
        self.rows = 0

    def add(self, table: pa.Table) -> None:
        self._tables.append(table)
        self.rows += table.num_rows

    def take(self, n: int) -> pa.Table:
        table = pa.concat_tables(self._tables) if self._tables else _WRITE_SCHEMA.empty_table()
        head, rest = table.slice(0, n), table.slice(n)
        self._tables = [rest] if rest.num_rows else []
        self.rows = rest.num_rows
        return head


class _Run:
    """Batches waiting to be decoded together, with the per-batch column values of their rows
    (numpy's cost per call is fixed, so a run spans many batches)."""

    def __init__(self) -> None:
        self.batches: list[BatchRecords] = []
        self.fields: dict[str, list[int]] = {name: [] for name in _BATCH_COLUMNS}
        self.records = 0
        self.bytes = 0
        self._region: memoryview | None = None
        self._used = 0
        self._in_region = 0

    def fits(self, size: int) -> bool:
        """Whether a payload of ``size`` bytes fits this run's region (an empty run's region
        is made big enough)."""
        return self._region is None or self._used + size <= len(self._region)

    def decompress_into(
        self, compressed: memoryview, size: int, header: BatchHeader
    ) -> BatchRecords | None:
        """The zstd frame ``compressed`` (of ``size`` bytes decompressed, with one spare byte
        that :meth:`fits`) decompressed straight into the region, or None when it is not one
        such frame (the caller then decompresses it the general way)."""
        if self._region is None:
            self._region = np.empty(max(_REGION_BYTES, size + 1), dtype=np.uint8).data
        start = self._used
        if codecs.zstd_decompress_into(compressed, self._region[start:]) != size:
            return None
        self._used += size
        self._in_region += 1
        return _records_of(header, self._region, start, start + size)

    def into_region(self, batch: BatchRecords) -> BatchRecords:
        """``batch`` (a decompressed payload that :meth:`fits`) copied into the region."""
        size = batch.end - batch.pos
        if self._region is None:
            self._region = np.empty(max(_REGION_BYTES, size), dtype=np.uint8).data
        start = self._used
        with memoryview(batch.payload) as payload:
            self._region[start : start + size] = payload.cast("B")[batch.pos : batch.end]
        self._used += size
        self._in_region += 1
        return dataclasses.replace(batch, payload=self._region, pos=start, end=start + size)

    def add(self, batch: BatchRecords, header: BatchHeader, aborted: bool) -> None:
        self.batches.append(batch)
        self.records += batch.count
        self.bytes += batch.end - batch.pos
        values = (
            header.timestamp_type,
            header.base_offset,
            header.last_offset,
            header.partition_leader_epoch,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            header.is_transactional,
            header.is_control,
            header.compression,
            aborted,
        )
        for name, value in zip(_BATCH_COLUMNS, values, strict=True):
            self.fields[name].append(value)

    def table(self) -> tuple[pa.Table, RecordArrays]:
        # Views only into the region: the source log (codec none) is closed after the copy.
        views = self._in_region == len(self.batches)
        decoded = decode_records(self.batches, HEADER_TYPE, views=views)
        columns: dict[str, pa.Array] = {
            "offset": pa.array(decoded.offsets),
            "timestamp": pa.array(decoded.timestamps),
            "key": decoded.keys,
            "value": decoded.values,
            "headers": decoded.headers,
        }
        for name in _BATCH_COLUMNS:
            field_type = PARQUET_SCHEMA.field(name).type
            per_batch = np.array(self.fields[name], dtype=field_type.to_pandas_dtype())
            columns[name] = pa.array(np.repeat(per_batch, decoded.batch_rows), field_type)
        for name in _VIEW_COLUMNS:
            if columns[name].type != pa.binary_view():
                columns[name] = columns[name].cast(pa.binary_view())
        arrays = [columns[name] for name in PARQUET_SCHEMA.names]
        return pa.Table.from_arrays(arrays, schema=_WRITE_SCHEMA), decoded


def _aborted_lookup(aborted_txns: Sequence[AbortedTxn]) -> dict[int, list[tuple[int, int]]]:
    ranges: dict[int, list[tuple[int, int]]] = {}
    for txn in aborted_txns:
        ranges.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
    return ranges


def _open_source(source: str | Buffer) -> tuple[Buffer, Any]:
    if isinstance(source, str):
        with open(source, "rb") as f:
            size = f.seek(0, 2)
            if size == 0:
                return b"", None
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        return memoryview(mapped), mapped
    return source, None


def open_parquet_writer(
    sink: Any, *, views: bool = False, codec_by_column: Mapping[str, str] | None = None
) -> pq.ParquetWriter:
    """A writer of :data:`PARQUET_SCHEMA` rows to ``sink`` (a path or an Arrow stream) with
    the layout's options: zstd (``codec_by_column`` may name another codec for a column, see
    :mod:`.column_codecs`), statistics on every column but ``key``, ``value`` and
    ``headers``. With ``views`` it takes tables
    whose keys and values are binary_view (``_WRITE_SCHEMA``) and writes the same file."""
    writer = pq.ParquetWriter(
        sink,
        _WRITE_SCHEMA if views else PARQUET_SCHEMA,
        compression=(
            compression_option(PARQUET_SCHEMA, codec_by_column) if codec_by_column else "zstd"
        ),
        use_dictionary=_DICTIONARY_COLUMNS,
        column_encoding=_DELTA_COLUMNS,
        write_statistics=_STATISTICS_COLUMNS,
        data_page_size=_DATA_PAGE_BYTES,
        store_schema=not views,
    )
    if views:
        writer.add_key_value_metadata({_ARROW_SCHEMA_KEY: _ARROW_SCHEMA})
    return writer


def segment_to_parquet(
    source: str | Buffer,
    aborted_txns: Sequence[AbortedTxn] = (),
    *,
    row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
    out: str | None = None,
    topic: str = "",
    partition: int = -1,
) -> tuple[bytes | str, SegmentStats]:
    """Transcode a segment (a ``.log`` path or its bytes). Writes to the local file ``out``
    and returns its path, or returns the Parquet bytes when ``out`` is None."""
    if row_group_rows < 1:
        raise ValueError("row_group_rows must be at least 1")
    buf, mapped = _open_source(source)
    sink: Any = out if out is not None else pa.BufferOutputStream()
    try:
        writer = LazyWriter(
            lambda chosen: open_parquet_writer(sink, views=True, codec_by_column=chosen)
        )
        try:
            stats = _transcode_into(writer, buf, aborted_txns, row_group_rows)
            writer.add_key_value_metadata(
                {
                    "sparklog.format": str(FORMAT_VERSION),
                    "topic": topic,
                    "partition": str(partition),
                    "base_offset": str(stats.base_offset),
                    "end_offset": str(stats.end_offset),
                }
            )
        finally:
            writer.close()
    finally:
        if mapped is not None:
            if isinstance(buf, memoryview):
                buf.release()
            mapped.close()
    if out is not None:
        return out, stats
    return bytes(sink.getvalue().to_pybytes()), stats


def _transcode_into(
    writer: LazyWriter,
    buf: Buffer,
    aborted_txns: Sequence[AbortedTxn],
    row_group_rows: int,
) -> SegmentStats:
    aborted_ranges = _aborted_lookup(aborted_txns)
    pending = _PendingRows()
    run = _Run()
    base_offset = end_offset = first_timestamp = max_timestamp = _NO_TIMESTAMP
    record_count = batch_count = 0
    control_count = aborted_count = transactional_count = 0
    epochs: list[tuple[int, int]] = []
    position = 0

    def flush() -> None:
        nonlocal run, first_timestamp, max_timestamp, record_count
        table, decoded = run.table()
        run = _Run()
        if decoded.rows:
            if record_count == 0:
                first_timestamp = int(decoded.timestamps[0])
            max_timestamp = max(max_timestamp, int(decoded.timestamps.max()))
            record_count += decoded.rows
        pending.add(table)
        while pending.rows >= row_group_rows:
            writer.write_table(pending.take(row_group_rows), row_group_size=row_group_rows)

    view = memoryview(buf)
    try:
        for position, framed in iter_batches(buf):
            header = check_framed_batch(buf, position, framed)
            if batch_count == 0:
                base_offset = header.base_offset
            batch_count += 1
            end_offset = header.last_offset
            epoch = header.partition_leader_epoch
            if epoch >= 0 and (not epochs or epoch > epochs[-1][0]):
                epochs.append((epoch, header.base_offset))
            batch_end = position + header.size_in_bytes
            if header.records_count:
                aborted = _is_aborted(header, aborted_ranges)
                records = None
                if header.compression == codecs.ZSTD:
                    with view[position + RECORDS_OFFSET : batch_end] as compressed:
                        size = codecs.zstd_content_size(compressed)
                        if 0 <= size <= codecs.DEFAULT_MAX_DECOMPRESSED_BYTES:
                            if not run.fits(size + 1):
                                flush()
                            records = run.decompress_into(compressed, size, header)
                if records is None:
                    records = _batch_records(buf, position, batch_end, header)
                    if header.compression:
                        if not run.fits(records.end - records.pos):
                            flush()
                        records = run.into_region(records)
                run.add(records, header, aborted)
                control_count += header.records_count if header.is_control else 0
                aborted_count += header.records_count if aborted else 0
                transactional_count += header.records_count if header.is_transactional else 0
                if run.records >= _RUN_RECORDS or run.bytes >= _RUN_BYTES:
                    flush()
            position = batch_end
        if run.batches:
            flush()
    except CorruptRecordError as exc:
        raise TranscodeError(f"segment is corrupt at byte {position}: {exc}") from exc
    finally:
        view.release()
    if position != len(buf):
        raise TranscodeError(
            f"segment has {len(buf) - position} trailing bytes at byte {position} that are not"
            " a whole batch (a closed segment must not have a torn tail)"
        )
    if pending.rows or record_count == 0:
        writer.write_table(pending.take(pending.rows), row_group_size=row_group_rows)
    return SegmentStats(
        base_offset=base_offset,
        end_offset=end_offset,
        record_count=record_count,
        batch_count=batch_count,
        first_timestamp=first_timestamp,
        max_timestamp=max_timestamp,
        leader_epochs=tuple(epochs),
        segment_bytes=len(buf),
        control_count=control_count,
        aborted_count=aborted_count,
        transactional_count=transactional_count,
    )


def _is_aborted(header: BatchHeader, aborted_ranges: dict[int, list[tuple[int, int]]]) -> bool:
    if not header.is_transactional or header.is_control:
        return False
    ranges = aborted_ranges.get(header.producer_id, ())
    return any(first <= header.base_offset <= last for first, last in ranges)


def _batch_records(buf: Buffer, position: int, end: int, header: BatchHeader) -> BatchRecords:
    """The batch's records region: in place for codec none, else decompressed once."""
    if header.compression:
        with memoryview(buf) as view:
            compressed = view[position + RECORDS_OFFSET : end]
            try:
                payload: Buffer = codecs.decompress(header.compression, compressed)
            except codecs.CompressionError as exc:
                raise CorruptRecordError(str(exc), exc.code) from exc
            finally:
                compressed.release()
        records_pos, records_end = 0, len(payload)
    else:
        payload, records_pos, records_end = buf, position + RECORDS_OFFSET, end
    return _records_of(header, payload, records_pos, records_end)


def _records_of(header: BatchHeader, payload: Buffer, pos: int, end: int) -> BatchRecords:
    return BatchRecords(
        payload=payload,
        pos=pos,
        end=end,
        count=header.records_count,
        base_offset=header.base_offset,
        base_timestamp=header.base_timestamp,
        max_timestamp=header.max_timestamp,
        log_append=header.timestamp_type == TIMESTAMP_LOG_APPEND_TIME,
    )
