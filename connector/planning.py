"""Driver-side planning: which partitions, which offsets, and which piece reads from where.

Contract of :func:`plan`:
- Partitions come from Metadata (``subscribe``/``subscribePattern``/``assign``), or, with
  ``sparklog.read.from=store``, from the store's manifests alone (no broker is contacted).
- Each partition's range is ``[start, end)``: earliest is the log start offset, latest the high
  watermark (read_uncommitted) or the last stable offset (read_committed), from ListOffsets; in
  store-only mode the manifest's ``log_start_offset`` and the end of its last finished segment.
- The range is cut at the tier boundary: offsets inside finished remote segments become
  :class:`ColdPiece` s (one or more per segment), the rest :class:`HotPiece` s read from the
  leader. ``brokers`` mode plans only hot pieces (the broker serves tiered offsets itself).
- A start below the earliest offset is data loss: with ``failOnDataLoss`` it fails naming the
  partition and the lost range, otherwise the range starts at the earliest offset.
- Pieces are split so none exceeds ``maxRecordsPerPartition`` offsets, then the largest ones are
  halved until there are at least ``minPartitions`` (when offsets allow). Pieces are frozen,
  picklable and carry everything an executor needs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql.datasource import InputPartition

from sparklog.client.connection import KafkaConnection
from sparklog.tiering.layout import partition_dir
from sparklog.tiering.reader import TieredStoreReader

from .options import EARLIEST, LATEST, OptionError, SourceOptions

__all__ = ["ColdPiece", "DataLossError", "HotPiece", "PartitionRange", "plan"]


class DataLossError(RuntimeError):
    """Requested offsets no longer exist and ``failOnDataLoss`` is true."""


@dataclass(frozen=True, slots=True)
class PartitionRange:
    topic: str
    partition: int
    start: int
    end: int


@dataclass(frozen=True)
class ColdPiece(InputPartition):
    """Offsets ``[start, end)`` of one tiered Parquet object (``path``, relative to the store)."""

    topic: str
    partition: int
    start: int
    end: int
    path: str
    store_url: str
    store_options: Mapping[str, Any] = field(default_factory=dict)
    read_committed: bool = False
    include_headers: bool = False


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


Piece = ColdPiece | HotPiece


@dataclass(frozen=True, slots=True)
class _BrokerPartition:
    topic: str
    topic_id: bytes
    partition: int
    leader: str


def _select_topics(options: SourceOptions, available: Iterable[str]) -> list[str]:
    names = sorted(set(available))
    if options.subscribe is not None:
        return [t for t in options.subscribe if t in names]
    if options.subscribe_pattern is not None:
        pattern = re.compile(options.subscribe_pattern)
        return [t for t in names if pattern.fullmatch(t)]
    assert options.assign is not None
    return sorted({t for t, _ in options.assign})


def _broker_partitions(conn: KafkaConnection, options: SourceOptions) -> list[_BrokerPartition]:
    topics = None if options.subscribe_pattern is not None else _select_topics(options, [])
    if options.subscribe is not None:
        topics = list(options.subscribe)
    response = conn.request(
        "Metadata",
        {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    brokers = {b["node_id"]: f"{b['host']}:{b['port']}" for b in response["brokers"]}
    found = {t["name"]: t for t in response["topics"] if t["error_code"] == 0}
    wanted = set(options.assign or ())
    result = []
    for name in _select_topics(options, found):
        if name not in found:
            continue
        topic = found[name]
        for p in topic["partitions"]:
            if options.assign is not None and (name, p["partition_index"]) not in wanted:
                continue
            leader = brokers.get(p["leader_id"])
            if leader is None:
                raise RuntimeError(f"{name}-{p['partition_index']} has no leader")
            result.append(
                _BrokerPartition(name, bytes(topic["topic_id"]), p["partition_index"], leader)
            )
    if options.assign is not None:
        missing = wanted - {(b.topic, b.partition) for b in result}
        if missing:
            raise OptionError(f"Option 'assign': unknown partitions {sorted(missing)}")
    return sorted(result, key=lambda b: (b.topic, b.partition))


def _list_offsets(
    conn: KafkaConnection, parts: list[_BrokerPartition], spec: int, read_committed: bool
) -> dict[tuple[str, int], int]:
    by_topic: dict[str, list[int]] = {}
    for b in parts:
        by_topic.setdefault(b.topic, []).append(b.partition)
    response = conn.request(
        "ListOffsets",
        {
            "replica_id": -1,
            "isolation_level": 1 if read_committed else 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": p, "current_leader_epoch": -1, "timestamp": spec}
                        for p in partitions
                    ],
                }
                for topic, partitions in by_topic.items()
            ],
            "timeout_ms": 30_000,
        },
    )
    result = {}
    for topic in response["topics"]:
        for p in topic["partitions"]:
            if p["error_code"] != 0:
                raise RuntimeError(
                    f"ListOffsets for {topic['name']}-{p['partition_index']} failed with error"
                    f" {p['error_code']}"
                )
            result[(topic["name"], p["partition_index"])] = int(p["offset"])
    return result


def _resolve(
    options: SourceOptions, topic: str, partition: int, earliest: int, latest: int
) -> PartitionRange | None:
    starting, ending = options.starting.lookup(), options.ending.lookup()
    if options.starting.default is None and (topic, partition) not in starting:
        raise OptionError(
            "If startingOffsets contains specific offsets, you must specify all TopicPartitions."
            f" Missing: {topic}-{partition}"
        )
    start = starting.get((topic, partition), options.starting.default or EARLIEST)
    end = ending.get((topic, partition), options.ending.default or LATEST)
    start = earliest if start == EARLIEST else start
    end = latest if end == LATEST else min(end, latest)
    if start < earliest:
        if options.fail_on_data_loss:
            raise DataLossError(
                f"Offsets [{start}, {earliest}) of {topic}-{partition} are gone (the log starts at"
                f" {earliest}). Some data may have been lost because they are not available any"
                " more. Set failOnDataLoss to false to skip them."
            )
        start = earliest
    return PartitionRange(topic, partition, start, end) if start < end else None


def _cut(
    options: SourceOptions,
    rng: PartitionRange,
    store: TieredStoreReader | None,
    hot: _BrokerPartition | None,
) -> list[Piece]:
    pieces: list[Piece] = []
    cursor = rng.start
    if store is not None and options.uses_store:
        try:
            manifest = store.read_manifest(rng.topic, rng.partition)
        except LookupError:
            manifest = None
        if manifest is not None:
            base = partition_dir(manifest.topic, manifest.topic_id, manifest.partition)
            for segment in store.segments_for_range(manifest, rng.start, rng.end):
                low = max(cursor, segment.base_offset, manifest.log_start_offset)
                high = min(rng.end, segment.end_offset + 1)
                if low >= high:
                    continue
                if hot is not None and cursor < low:
                    pieces.append(_hot(options, hot, cursor, low))
                pieces.append(
                    ColdPiece(
                        rng.topic,
                        rng.partition,
                        low,
                        high,
                        f"{base}/{segment.path}",
                        options.store_url or "",
                        dict(options.store_options),
                        options.read_committed,
                        options.include_headers,
                    )
                )
                cursor = high
    if hot is not None and cursor < rng.end:
        pieces.append(_hot(options, hot, cursor, rng.end))
    return pieces


def _hot(options: SourceOptions, b: _BrokerPartition, start: int, end: int) -> HotPiece:
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
    )


def _split(pieces: list[Piece], max_records: int | None, min_partitions: int | None) -> list[Piece]:
    out: list[Piece] = []
    for piece in pieces:
        step = max_records or (piece.end - piece.start)
        out.extend(
            replace(piece, start=s, end=min(s + step, piece.end))
            for s in range(piece.start, piece.end, step)
        )
    while min_partitions is not None and len(out) < min_partitions:
        largest = max(out, key=lambda p: p.end - p.start, default=None)
        if largest is None or largest.end - largest.start < 2:
            break
        middle = largest.start + (largest.end - largest.start) // 2
        index = out.index(largest)
        out[index : index + 1] = [replace(largest, end=middle), replace(largest, start=middle)]
    return out


def _store_ranges(
    options: SourceOptions, store: TieredStoreReader
) -> list[tuple[PartitionRange | None, None]]:
    result: list[tuple[PartitionRange | None, None]] = []
    wanted = set(options.assign or ())
    for topic in _select_topics(options, store.list_topics()):
        try:
            partitions = store.list_partitions(topic)
        except LookupError:
            continue
        for partition in partitions:
            if options.assign is not None and (topic, partition) not in wanted:
                continue
            manifest = store.read_manifest(topic, partition)
            finished = manifest.finished_segments
            if not finished:
                continue
            earliest = max(manifest.log_start_offset, finished[0].base_offset)
            latest = finished[-1].end_offset + 1
            result.append((_resolve(options, topic, partition, earliest, latest), None))
    return result


def plan(options: SourceOptions) -> list[Piece]:
    """Every piece of the batch read, ordered by topic, partition and offset."""
    store = (
        TieredStoreReader.open(options.store_url, dict(options.store_options))
        if options.uses_store and options.store_url
        else None
    )
    pieces: list[Piece] = []
    if not options.uses_brokers:
        assert store is not None
        for rng, _ in _store_ranges(options, store):
            if rng is not None:
                pieces.extend(_cut(options, rng, store, None))
    else:
        assert options.bootstrap_servers is not None
        bootstrap = options.bootstrap_servers.split(",")[0].strip()
        with KafkaConnection.connect(bootstrap, client_id="sparklog-connector") as conn:
            parts = _broker_partitions(conn, options)
            # One node answers for all here; multi-broker clusters need per-leader requests.
            earliest = _list_offsets(conn, parts, EARLIEST, options.read_committed)
            latest = _list_offsets(conn, parts, LATEST, options.read_committed)
        for b in parts:
            key = (b.topic, b.partition)
            rng = _resolve(options, b.topic, b.partition, earliest[key], latest[key])
            if rng is not None:
                pieces.extend(_cut(options, rng, store, b))
    return _split(pieces, options.max_records_per_partition, options.min_partitions)
