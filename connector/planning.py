"""Driver-side planning: which piece of which partition reads from where.

Contract of :func:`plan`:
- Partitions and their ``[start, end)`` ranges come from :mod:`.offsets` (Metadata and
  ListOffsets, or the store's manifests alone with ``sparklog.read.from=store``; the data-loss
  rule and timestamp resolution live there).
- A range is cut at the tier boundary: offsets inside finished remote segments become
  :class:`ColdPiece` s, the rest :class:`HotPiece` s read from the leader. ``brokers`` mode
  plans only hot pieces (the broker serves tiered offsets itself).
- Consecutive tiered objects of one partition are merged into one cold piece (its ``objects``,
  read in offset order) while the objects add up to at most :data:`COLD_PIECE_BYTES`, Spark's
  default ``spark.sql.files.maxPartitionBytes``: a task reads about as much as a Parquet scan
  task would, instead of one small task per segment. A piece always holds at least one object.
- Then pieces are split so none exceeds ``maxRecordsPerPartition`` offsets, and the largest
  ones are halved until there are at least ``minPartitions`` (when offsets allow). A split cold
  piece keeps only the objects that overlap its offsets. Pieces are frozen, picklable, ordered
  by topic, partition and offset, tile each range without gap or overlap, and carry everything
  an executor needs. A cold object that lies wholly inside its range and whose manifest entry
  counts nothing to drop is ``filter_free`` (the native batch plan reads it unfiltered).
- One planning pass reads each manifest once (:func:`batch_pieces` shares one store).

The offset-resolution names (:func:`partition_states`, :func:`resolve_range`,
:class:`PartitionRange`, ...) are re-exported here for the stream reader; :func:`plan_ranges`
turns ranges into pieces for batch and stream alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from pyspark.sql.datasource import InputPartition

from sparklog.connector.security import SecurityParams, security_params
from sparklog.tiering.layout import Manifest, partition_dir
from sparklog.tiering.reader import TieredStoreReader

from .offsets import (
    NO_MATCH,
    BrokerPartition,
    DataLossError,
    PartitionRange,
    PartitionState,
    data_loss_message,
    open_tiered_store,
    partition_states,
    resolve_range,
    store_offset_for_timestamp,
)
from .options import SourceOptions

if TYPE_CHECKING:
    from .pushdown import Restriction

__all__ = [
    "COLD_PIECE_BYTES",
    "NO_MATCH",
    "ColdObject",
    "ColdPiece",
    "DataLossError",
    "HotPiece",
    "PartitionRange",
    "PartitionState",
    "Piece",
    "batch_pieces",
    "cut_ranges",
    "data_loss_message",
    "hot_pieces_from_json",
    "hot_pieces_to_json",
    "partition_states",
    "plan",
    "plan_ranges",
    "resolve_range",
    "split_pieces",
    "store_offset_for_timestamp",
]

#: Most tiered-object bytes one merged cold piece reads (Spark's maxPartitionBytes default).
COLD_PIECE_BYTES: Final = 128 << 20


@dataclass(frozen=True, slots=True)
class ColdObject:
    """One tiered Parquet object (``path``, relative to the store) holding readable offsets
    ``[start, end)``; ``size_bytes`` is its size as the manifest lists it."""

    path: str
    start: int
    end: int
    size_bytes: int = 0
    #: Every row of the object is wanted: it lies wholly inside the range and its manifest
    #: entry counts no control row (nor, under read_committed, an aborted one).
    filter_free: bool = False
    #: The manifest's newest record timestamp of the object (None: not known).
    max_timestamp: int | None = None


@dataclass(frozen=True)
class ColdPiece(InputPartition):
    """Offsets ``[start, end)`` of a partition, read from ``objects`` in order; every object
    overlaps the range and together they cover it."""

    topic: str
    partition: int
    start: int
    end: int
    objects: tuple[ColdObject, ...]
    store_url: str
    store_options: Mapping[str, Any] = field(default_factory=dict)
    read_committed: bool = False
    include_headers: bool = False
    fail_on_data_loss: bool = True


@dataclass(frozen=True)
class HotPiece(InputPartition):
    """Offsets ``[start, end)`` of a partition, fetched from its leader ``broker``."""

    topic: str
    partition: int
    start: int
    end: int
    broker: str
    topic_id: bytes = b""
    read_committed: bool = False
    include_headers: bool = False
    fail_on_data_loss: bool = True
    hot_protocol: str = "grpc"
    # kafka.security.protocol / kafka.sasl.* / kafka.ssl.* (sparklog.connector.security).
    security: SecurityParams = field(default=(), repr=False)


Piece = ColdPiece | HotPiece


def _cold(options: SourceOptions, rng: PartitionRange, objects: list[ColdObject]) -> ColdPiece:
    return ColdPiece(
        rng.topic,
        rng.partition,
        objects[0].start,
        objects[-1].end,
        tuple(objects),
        options.store_url or "",
        dict(options.store_options),
        options.read_committed,
        options.include_headers,
        options.fail_on_data_loss,
    )


def _hot(options: SourceOptions, b: BrokerPartition, start: int, end: int) -> HotPiece:
    return HotPiece(
        b.topic,
        b.partition,
        start,
        end,
        b.leader,
        b.topic_id,
        options.read_committed,
        options.include_headers,
        options.fail_on_data_loss,
        options.hot_protocol,
        security_params(options.kafka_params),
    )


def _cut(
    options: SourceOptions,
    rng: PartitionRange,
    store: TieredStoreReader | None,
    hot: BrokerPartition | None,
) -> list[Piece]:
    pieces: list[Piece] = []
    cursor = rng.start
    run: list[ColdObject] = []  # consecutive objects not yet made into a piece

    def close_run() -> None:
        if run:
            pieces.append(_cold(options, rng, run))
            run.clear()

    if store is not None and options.uses_store:
        try:
            manifest: Manifest | None = store.read_manifest(rng.topic, rng.partition)
        except LookupError:
            manifest = None
        if manifest is not None:
            base = partition_dir(manifest.topic, manifest.topic_id, manifest.partition)
            for segment in store.segments_for_range(manifest, rng.start, rng.end):
                low = max(cursor, segment.base_offset, manifest.log_start_offset)
                high = min(rng.end, segment.end_offset + 1)
                if low >= high:
                    continue
                if cursor < low:
                    # A hole in the tiered offsets (not expected in a well-formed manifest):
                    # the broker fills it when there is one; a cold piece never spans it.
                    close_run()
                    if hot is not None:
                        pieces.append(_hot(options, hot, cursor, low))
                whole = low == segment.base_offset and high == segment.end_offset + 1
                obj = ColdObject(
                    f"{base}/{segment.path}",
                    low,
                    high,
                    segment.size_bytes,
                    whole and segment.rows_to_drop(options.read_committed) == 0,
                    segment.max_timestamp,
                )
                if run and sum(o.size_bytes for o in run) + obj.size_bytes > COLD_PIECE_BYTES:
                    close_run()
                run.append(obj)
                cursor = high
    close_run()
    if hot is not None and cursor < rng.end:
        pieces.append(_hot(options, hot, cursor, rng.end))
    return pieces


def _slice(piece: Piece, start: int, end: int) -> Piece:
    """``piece`` narrowed to ``[start, end)``; a cold piece keeps the objects it still needs."""
    if isinstance(piece, ColdPiece):
        objects = tuple(o for o in piece.objects if o.start < end and o.end > start)
        return replace(piece, start=start, end=end, objects=objects)
    return replace(piece, start=start, end=end)


def split_pieces(
    pieces: list[Piece], max_records: int | None, min_partitions: int | None
) -> list[Piece]:
    """Cut pieces to at most ``max_records`` offsets, then halve the largest until there are
    ``min_partitions`` (or nothing is left to halve). Order and coverage are kept."""
    out: list[Piece] = []
    for piece in pieces:
        step = max_records or (piece.end - piece.start)
        out.extend(
            _slice(piece, s, min(s + step, piece.end)) for s in range(piece.start, piece.end, step)
        )
    while min_partitions is not None and len(out) < min_partitions:
        index = max(range(len(out)), key=lambda i: out[i].end - out[i].start, default=None)
        if index is None or out[index].end - out[index].start < 2:
            break
        largest = out[index]
        middle = largest.start + (largest.end - largest.start) // 2
        out[index : index + 1] = [
            _slice(largest, largest.start, middle),
            _slice(largest, middle, largest.end),
        ]
    return out


def cut_ranges(
    options: SourceOptions,
    states: Mapping[tuple[str, int], PartitionState],
    ranges: Iterable[PartitionRange],
    store: TieredStoreReader | None = None,
) -> list[Piece]:
    """The pieces that read ``ranges``, cut at the tier boundary and cold objects merged, not
    split yet; ``states`` give each partition's leader."""
    store = store or open_tiered_store(options)
    pieces: list[Piece] = []
    for rng in ranges:
        if rng.start >= rng.end:
            continue
        state = states[(rng.topic, rng.partition)]
        hot = (
            None
            if state.leader is None or not options.uses_brokers
            else BrokerPartition(state.topic, state.topic_id, state.partition, state.leader)
        )
        pieces.extend(_cut(options, rng, store, hot))
    return pieces


def plan_ranges(
    options: SourceOptions,
    states: Mapping[tuple[str, int], PartitionState],
    ranges: Iterable[PartitionRange],
    store: TieredStoreReader | None = None,
) -> list[Piece]:
    """The pieces that read ``ranges`` (:func:`cut_ranges`, then split by
    ``maxRecordsPerPartition`` / ``minPartitions``)."""
    pieces = cut_ranges(options, states, ranges, store)
    return split_pieces(pieces, options.max_records_per_partition, options.min_partitions)


def batch_pieces(options: SourceOptions, restriction: Restriction | None = None) -> list[Piece]:
    """The batch read's pieces before splitting: partitions resolved and ranges cut with one
    store, so each manifest is read once. A pushed-down ``restriction`` narrows the ranges and
    leaves out tiered objects too old for it."""
    store = open_tiered_store(options)
    states = partition_states(options, store=store)
    ranges = []
    for key in sorted(states):
        state = states[key]
        rng = resolve_range(
            options,
            state.topic,
            state.partition,
            state.earliest,
            state.latest,
            state.start_for_timestamp,
            state.end_for_timestamp,
        )
        if rng is not None and restriction is not None:
            clipped = restriction.clip(rng.partition, rng.start, rng.end)
            rng = None if clipped is None else replace(rng, start=clipped[0], end=clipped[1])
        if rng is not None:
            ranges.append(rng)
    pieces = cut_ranges(options, states, ranges, store)
    if restriction is None or restriction.min_timestamp_ms is None:
        return pieces
    kept: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, ColdPiece):
            objects = [o for o in piece.objects if restriction.keeps_timestamp(o.max_timestamp)]
            if not objects:
                continue
            if len(objects) < len(piece.objects):
                # Dropped objects leave gaps that no row of the scan could fill.
                piece = replace(piece, objects=tuple(objects))
        kept.append(piece)
    return kept


def plan(options: SourceOptions, restriction: Restriction | None = None) -> list[Piece]:
    """Every piece of the batch read, ordered by topic, partition and offset."""
    pieces = batch_pieces(options, restriction)
    return split_pieces(pieces, options.max_records_per_partition, options.min_partitions)


def hot_pieces_to_json(pieces: Iterable[HotPiece]) -> str:
    """Hot pieces as the JSON the native batch plan hands to the ``sparklog`` source."""
    return json.dumps(
        [
            {
                "topic": p.topic,
                "partition": p.partition,
                "start": p.start,
                "end": p.end,
                "broker": p.broker,
                "topic_id": p.topic_id.hex(),
                "read_committed": p.read_committed,
                "include_headers": p.include_headers,
                "fail_on_data_loss": p.fail_on_data_loss,
                "hot_protocol": p.hot_protocol,
            }
            for p in pieces
        ]
    )


def hot_pieces_from_json(text: str) -> list[HotPiece]:
    return [
        HotPiece(
            str(d["topic"]),
            int(d["partition"]),
            int(d["start"]),
            int(d["end"]),
            str(d["broker"]),
            bytes.fromhex(d["topic_id"]),
            bool(d["read_committed"]),
            bool(d["include_headers"]),
            bool(d["fail_on_data_loss"]),
            str(d["hot_protocol"]),
        )
        for d in json.loads(text)
    ]
