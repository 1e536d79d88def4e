"""Segment <-> Parquet transcoding: Kafka record batches to one row per record, and back.

``segment_to_parquet`` decodes (and decompresses) every batch of a closed segment, checking
each CRC, and writes the rows of :data:`~sparklog.tiering.layout.PARQUET_SCHEMA` in offset
order, ``row_group_rows`` rows per row group (the last may be shorter), zstd, with statistics.
A segment that is torn or corrupt raises :class:`TranscodeError`; a closed segment has no
partial tail, so one is corruption too.

``parquet_to_batches`` rebuilds Kafka batches from the rows: rows sharing ``batch_base_offset``
become one batch with the same base offset, lastOffsetDelta, leader epoch, producer id /
epoch, base sequence, transactional and control flags, timestamp type, and the records'
offsets, timestamps, keys, values and headers. It compresses with the codec of origin unless
told otherwise (``compression=0`` trades bytes on the wire for CPU). Known losses, invisible to
Kafka clients: a batch whose records were all compacted away has no rows and is not rebuilt;
a LogAppendTime batch's per-record create times are not kept (Kafka's readers use the batch's
max timestamp); the CRC is recomputed.

Rows are read a row group at a time; row groups whose offset statistics end below
``from_offset`` are skipped without being read.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sparklog.protocol.record_codec import Record, build_batch, decode_batch
from sparklog.protocol.records import (
    TIMESTAMP_LOG_APPEND_TIME,
    Buffer,
    CorruptRecordError,
    iter_batches,
)

from .layout import FORMAT_VERSION, HEADER_TYPE, PARQUET_SCHEMA
from .metadata import AbortedTxn

__all__ = [
    "DEFAULT_ROW_GROUP_ROWS",
    "SegmentStats",
    "TranscodeError",
    "parquet_to_batches",
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
_ROW_COLUMNS = ["offset", "timestamp", "key", "value", "headers"]


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


class _Columns:
    """Column lists of rows not yet written; ``take`` turns a prefix into an Arrow table."""

    def __init__(self) -> None:
        self.data: dict[str, list[Any]] = {name: [] for name in PARQUET_SCHEMA.names}

    def __len__(self) -> int:
        return len(self.data["offset"])

    def add_batch(self, fields: dict[str, Any], records: list[Record], aborted: bool) -> None:
        n = len(records)
        data = self.data
        data["offset"].extend([r.offset for r in records])
        data["timestamp"].extend([r.timestamp for r in records])
        data["key"].extend([r.key for r in records])
        data["value"].extend([r.value for r in records])
        data["headers"].extend([r.headers or None for r in records])
        for name, value in fields.items():
            data[name].extend([value] * n)
        data["aborted"].extend([aborted] * n)

    def take(self, n: int) -> pa.Table:
        arrays = []
        for field in PARQUET_SCHEMA:
            values = self.data[field.name]
            head, self.data[field.name] = values[:n], values[n:]
            if field.name == "headers":
                arrays.append(_headers_array(head))
            else:
                arrays.append(pa.array(head, type=field.type))
        return pa.Table.from_arrays(arrays, schema=PARQUET_SCHEMA)


def _headers_array(rows: list[tuple[tuple[str, bytes | None], ...] | None]) -> pa.Array:
    if all(h is None for h in rows):
        return pa.nulls(len(rows), HEADER_TYPE)
    offsets = [0]
    mask: list[bool] = []
    keys: list[str] = []
    values: list[bytes | None] = []
    for headers in rows:
        if headers is None:
            mask.append(True)
        else:
            mask.append(False)
            for key, value in headers:
                keys.append(key)
                values.append(value)
        offsets.append(len(keys))
    struct = pa.StructArray.from_arrays(
        [pa.array(keys, pa.string()), pa.array(values, pa.binary())],
        fields=list(HEADER_TYPE.value_type),
    )
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), struct, type=HEADER_TYPE, mask=pa.array(mask, pa.bool_())
    )


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
        writer = pq.ParquetWriter(
            sink,
            PARQUET_SCHEMA,
            compression="zstd",
            use_dictionary=_DICTIONARY_COLUMNS,
            write_statistics=True,
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
    writer: pq.ParquetWriter,
    buf: Buffer,
    aborted_txns: Sequence[AbortedTxn],
    row_group_rows: int,
) -> SegmentStats:
    aborted_ranges = _aborted_lookup(aborted_txns)
    columns = _Columns()
    base_offset = end_offset = first_timestamp = max_timestamp = _NO_TIMESTAMP
    record_count = batch_count = 0
    epochs: list[tuple[int, int]] = []
    position = 0
    try:
        for position, header in iter_batches(buf):
            _, records = decode_batch(buf, position)
            if batch_count == 0:
                base_offset = header.base_offset
            batch_count += 1
            end_offset = header.last_offset
            epoch = header.partition_leader_epoch
            if epoch >= 0 and (not epochs or epoch > epochs[-1][0]):
                epochs.append((epoch, header.base_offset))
            if not records:
                continue
            if record_count == 0:
                first_timestamp = records[0].timestamp
            record_count += len(records)
            max_timestamp = max(max_timestamp, max(r.timestamp for r in records))
            aborted = False
            if header.is_transactional and not header.is_control:
                ranges = aborted_ranges.get(header.producer_id, ())
                aborted = any(first <= header.base_offset <= last for first, last in ranges)
            fields = {
                "timestamp_type": header.timestamp_type,
                "batch_base_offset": header.base_offset,
                "batch_last_offset": header.last_offset,
                "partition_leader_epoch": epoch,
                "producer_id": header.producer_id,
                "producer_epoch": header.producer_epoch,
                "base_sequence": header.base_sequence,
                "is_transactional": header.is_transactional,
                "is_control": header.is_control,
                "compression": header.compression,
            }
            columns.add_batch(fields, records, aborted)
            while len(columns) >= row_group_rows:
                writer.write_table(columns.take(row_group_rows), row_group_size=row_group_rows)
            position += header.size_in_bytes
    except CorruptRecordError as exc:
        raise TranscodeError(f"segment is corrupt at byte {position}: {exc}") from exc
    if position != len(buf):
        raise TranscodeError(
            f"segment has {len(buf) - position} trailing bytes at byte {position} that are not"
            " a whole batch (a closed segment must not have a torn tail)"
        )
    if len(columns) or record_count == 0:
        writer.write_table(columns.take(len(columns)), row_group_size=row_group_rows)
    return SegmentStats(
        base_offset=base_offset,
        end_offset=end_offset,
        record_count=record_count,
        batch_count=batch_count,
        first_timestamp=first_timestamp,
        max_timestamp=max_timestamp,
        leader_epochs=tuple(epochs),
        segment_bytes=len(buf),
    )


ParquetSource: TypeAlias = "pq.ParquetFile | pa.Table | str | bytes | IO[bytes]"


RowGroupReader: TypeAlias = "Callable[[pq.ParquetFile, int, list[str]], pa.Table]"
"""Reads row group ``i`` of a file with the given columns (a cache can stand in)."""

_CHUNK_ROWS = 2048


def _read_row_group(parquet: pq.ParquetFile, index: int, columns: list[str]) -> pa.Table:
    return parquet.read_row_group(index, columns=columns)


def _row_group_tables(
    source: ParquetSource,
    from_offset: int,
    columns: list[str],
    read_row_group: RowGroupReader = _read_row_group,
) -> Iterator[pa.Table]:
    if isinstance(source, pa.Table):
        yield source.select(columns)
        return
    if isinstance(source, bytes):
        source = pa.BufferReader(source)
    parquet = source if isinstance(source, pq.ParquetFile) else pq.ParquetFile(source)
    # Statistics are per leaf column: find leaves by path (nested headers add two leaves).
    leaves = {parquet.schema.column(i).path: i for i in range(len(parquet.schema))}
    offset_index = leaves.get("offset", -1)
    base_index = leaves.get("batch_base_offset", -1)
    if offset_index < 0 or base_index < 0:
        raise TranscodeError("Parquet object has no 'offset' column: not a sparklog segment")
    count = parquet.num_row_groups
    for i in range(count):
        if _ends_before(parquet, i, offset_index, from_offset) and (
            i + 1 == count or not _continues(parquet, i, offset_index, base_index)
        ):
            continue
        yield read_row_group(parquet, i, columns)


def _stats(parquet: pq.ParquetFile, group: int, column: int) -> Any:
    statistics = parquet.metadata.row_group(group).column(column).statistics
    return statistics if statistics is not None and statistics.has_min_max else None


def _ends_before(parquet: pq.ParquetFile, group: int, column: int, offset: int) -> bool:
    statistics = _stats(parquet, group, column)
    return statistics is not None and statistics.max < offset


def _continues(parquet: pq.ParquetFile, group: int, offset_col: int, base_col: int) -> bool:
    """Whether the last batch of row group ``group`` continues into the next one (so the
    group must be read to rebuild that batch whole)."""
    here = _stats(parquet, group, offset_col)
    following = _stats(parquet, group + 1, base_col)
    return here is None or following is None or following.min <= here.max


def parquet_to_batches(
    source: ParquetSource,
    from_offset: int = 0,
    max_bytes: int = 1 << 20,
    *,
    to_offset: int | None = None,
    compression: int | None = None,
    read_row_group: RowGroupReader = _read_row_group,
) -> bytes:
    """Kafka batches (concatenated) holding the rows from the batch that contains
    ``from_offset`` on, whole batches only, up to ``max_bytes`` (the first batch is returned
    even when larger, as Kafka does), stopping before any batch that starts at or after
    ``to_offset``. ``compression`` None keeps each batch's codec of origin."""
    out: list[bytes] = []
    total = 0
    batches = iter_parquet_batches(
        source,
        from_offset,
        to_offset=to_offset,
        compression=compression,
        read_row_group=read_row_group,
    )
    for batch in batches:
        if out and total + len(batch) > max_bytes:
            break
        out.append(batch)
        total += len(batch)
        if total >= max_bytes:
            break
    return b"".join(out)


def _row_chunks(tables: Iterator[pa.Table], from_offset: int) -> Iterator[pa.Table]:
    """Slices of at most ``_CHUNK_ROWS`` rows, starting at the first batch that ends at or
    after ``from_offset``, so only the rows a fetch needs become Python objects."""
    for table in tables:
        # Rows are sorted by offset, so rows of batches ending before from_offset lead.
        skip = pc.sum(pc.less(table.column("batch_last_offset"), from_offset)).as_py() or 0
        for start in range(skip, table.num_rows, _CHUNK_ROWS):
            yield table.slice(start, _CHUNK_ROWS)


def iter_parquet_batches(
    source: ParquetSource,
    from_offset: int = 0,
    *,
    to_offset: int | None = None,
    compression: int | None = None,
    read_row_group: RowGroupReader = _read_row_group,
) -> Iterator[bytes]:
    """The batches of :func:`parquet_to_batches`, one at a time, lazily, without a size
    bound."""
    names = _ROW_COLUMNS + _BATCH_COLUMNS
    pending: dict[str, list[Any]] | None = None
    try:
        tables = _row_group_tables(source, from_offset, names, read_row_group)
        for table in _row_chunks(tables, from_offset):
            rows = {name: table.column(name).to_pylist() for name in names}
            if pending is not None:
                rows = {name: pending[name] + rows[name] for name in names}
            # The last batch of a chunk may continue in the next one.
            tail = _last_batch_start(rows["batch_base_offset"])
            pending = {name: values[tail:] for name, values in rows.items()}
            for batch in _encode_batches(rows, 0, tail, from_offset, to_offset, compression):
                if batch is None:
                    return
                yield batch
        if pending is not None:
            for batch in _encode_batches(
                pending, 0, len(pending["offset"]), from_offset, to_offset, compression
            ):
                if batch is None:
                    return
                yield batch
    except (OSError, pa.ArrowException) as exc:
        raise TranscodeError(f"cannot read Parquet segment: {exc}") from exc


def _last_batch_start(bases: list[int]) -> int:
    if not bases:
        return 0
    last = bases[-1]
    i = len(bases) - 1
    while i > 0 and bases[i - 1] == last:
        i -= 1
    return i


def _encode_batches(
    rows: dict[str, list[Any]],
    start: int,
    end: int,
    from_offset: int,
    to_offset: int | None,
    compression: int | None,
) -> Iterator[bytes | None]:
    """Yields encoded batches of rows[start:end]; a None means "past to_offset, stop"."""
    bases = rows["batch_base_offset"]
    i = start
    while i < end:
        base = bases[i]
        j = i + 1
        while j < end and bases[j] == base:
            j += 1
        last = rows["batch_last_offset"][i]
        if to_offset is not None and base >= to_offset:
            yield None
            return
        if last >= from_offset:
            yield _encode_one(rows, i, j, compression)
        i = j


def _encode_one(rows: dict[str, list[Any]], i: int, j: int, compression: int | None) -> bytes:
    offsets, timestamps = rows["offset"], rows["timestamp"]
    keys, values, headers = rows["key"], rows["value"], rows["headers"]
    records = [
        Record(
            offsets[k],
            timestamps[k],
            keys[k],
            values[k],
            tuple((h["key"], h["value"]) for h in headers[k]) if headers[k] else (),
        )
        for k in range(i, j)
    ]
    base = rows["batch_base_offset"][i]
    log_append = rows["timestamp_type"][i] == TIMESTAMP_LOG_APPEND_TIME
    return build_batch(
        records,
        base_offset=base,
        compression=rows["compression"][i] if compression is None else compression,
        timestamp_type=rows["timestamp_type"][i],
        producer_id=rows["producer_id"][i],
        producer_epoch=rows["producer_epoch"][i],
        base_sequence=rows["base_sequence"][i],
        partition_leader_epoch=rows["partition_leader_epoch"][i],
        is_transactional=rows["is_transactional"][i],
        is_control=rows["is_control"][i],
        last_offset_delta=rows["batch_last_offset"][i] - base,
        max_timestamp=max(timestamps[i:j]) if log_append else None,
    )
