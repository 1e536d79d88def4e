"""The tiered store's layout: object paths, the manifest document and the Parquet schema.

THIS LAYOUT IS A CONTRACT shared with readers that have only the store URL (the Spark
connector, ``sparklog tiering``, a plain pyarrow + fsspec script). Change it only together with
``FORMAT_VERSION``.

Store root: any fsspec URL (``file:///path``, ``s3://bucket/prefix``, ``memory://x``...). Paths
below are relative to the root and always use ``/``::

    _sparklog.json                      {"format": 1, "cluster_id": "<id>"}, written once
    topics/{topic}/{topic_id}/{partition}/manifest.json
    topics/{topic}/{topic_id}/{partition}/segments/{base:020d}-{segment_id}.parquet
    topics/{topic}/{topic_id}/{partition}/segments/{base:020d}-{segment_id}.leader-epoch-checkpoint
    topics/{topic}/{topic_id}/{partition}/segments/{base:020d}-{segment_id}.snapshot
    topics/{topic}/{topic_id}/{partition}/segments/{base:020d}-{segment_id}.txnindex  (optional)

``topic_id`` and ``segment_id`` are Kafka uuids in their 22-character base64url text form. A
topic deleted and re-created under the same name gets a new ``topic_id`` directory.

- ``*.leader-epoch-checkpoint``: Kafka's text format ``0\\n<count>\\n<epoch> <start_offset>\\n...``
  holding the leader-epoch entries of the segment's offset range.
- ``*.snapshot``: the producer-state snapshot of the segment's end; an empty object while the
  broker keeps no producer-state snapshots (a reader must accept a zero-length file).
- ``*.txnindex``: the segment's transaction index (KIP-405 ``IndexType.TRANSACTION``): the
  aborted transactions whose ABORT marker lies in the segment, in Kafka's ``AbortedTxn`` format,
  34 bytes per entry, big-endian, ``version int16 (0) | producer_id int64 | first_offset int64 |
  last_offset int64 (the marker) | last_stable_offset int64``, ``last_offset`` strictly
  increasing. Zero-length when the segment holds no abort. Optional: stores written before it
  existed have none, and an absent object means no aborted transactions. Brokers read it to
  answer read_committed fetches of tiered offsets; Spark readers use the ``aborted`` column.
- ``manifest.json`` (the RemoteLogMetadataManager's state of the partition) is replaced
  atomically (one PUT, or temp file + rename on ``file://``), so a reader sees an old or a new
  manifest, never a partial one. It lists only segments whose copy finished
  (``COPY_SEGMENT_FINISHED``) or whose deletion started (``DELETE_SEGMENT_STARTED``; readers
  must skip those), sorted by ``base_offset``, without overlaps::

    {"format": 1, "topic": str, "topic_id": str, "partition": int,
     "version": int (+1 on every write), "log_start_offset": int,
     "segments": [{"segment_id": str, "base_offset": int, "end_offset": int (inclusive),
                   "record_count": int, "first_timestamp": int, "max_timestamp": int,
                   "size_bytes": int (the parquet object), "segment_bytes": int (the .log),
                   "leader_epochs": [[epoch, start_offset], ...],
                   "path": "segments/....parquet" (relative to the partition directory),
                   "state": "COPY_SEGMENT_FINISHED" | "DELETE_SEGMENT_STARTED",
                   "copied_ms": int, "broker_id": int, "leader_epoch": int,
                   "control_records": int, "aborted_records": int,
                   "transactional_records": int}, ...]}

  The three ``*_records`` counts (rows of control batches, rows with ``aborted`` set, rows of
  transactional batches) are optional: manifests written before they existed lack them, and a
  reader must then assume the object may hold control and aborted rows. With them, a reader
  that wants a whole object and sees ``control_records == 0`` (and, under read_committed,
  ``aborted_records == 0``) may read the object without any row filter.

  ``log_start_offset`` is the first offset a reader may serve; records of a segment below it
  are logically deleted even while the object still exists.
- A segment object without a manifest entry is garbage (a crashed or abandoned copy) and is
  deleted by the broker that loads the partition.

Parquet objects: one row per record, sorted by offset, zstd, row groups of about
``sparklog.remote.storage.parquet.row.group.rows`` rows, statistics on every column but
``key``, ``value`` and ``headers`` (so on ``offset``, ``timestamp`` and ``batch_last_offset``;
older objects also have them on those three, and readers must not rely on either).
Columns, in this order (see ``PARQUET_SCHEMA``)::

    offset int64 not null              timestamp int64 not null (ms; LogAppendTime batches: the
    timestamp_type int8 not null         broker's time, i.e. the batch max timestamp)
    key binary (null key)              value binary (null = tombstone)
    headers list<struct<key: string not null, value: binary>> (null when no headers)
    batch_base_offset int64            batch_last_offset int64 (base + lastOffsetDelta)
    partition_leader_epoch int32       producer_id int64     producer_epoch int16
    base_sequence int32                is_transactional bool is_control bool
    compression int8 (codec of origin: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)
    aborted bool (data record of an aborted transaction)

File key/value metadata: ``sparklog.format`` = "1", ``topic``, ``partition``, ``base_offset``,
``end_offset`` (decimal strings).

Readers: drop ``is_control`` rows always; for read_committed also drop ``aborted`` rows.
"""

from __future__ import annotations

import itertools
import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pyarrow as pa

from sparklog.protocol.kafka_uuid import uuid_from_str

from .metadata import AbortedTxn

FORMAT_VERSION: Final = 1
STORE_MARKER: Final = "_sparklog.json"
TOPICS_DIR: Final = "topics"
MANIFEST_NAME: Final = "manifest.json"
SEGMENTS_DIR: Final = "segments"
PARQUET_SUFFIX: Final = ".parquet"
EPOCH_SUFFIX: Final = ".leader-epoch-checkpoint"
SNAPSHOT_SUFFIX: Final = ".snapshot"
TXN_INDEX_SUFFIX: Final = ".txnindex"
SEGMENT_SUFFIXES: Final = (PARQUET_SUFFIX, EPOCH_SUFFIX, SNAPSHOT_SUFFIX, TXN_INDEX_SUFFIX)
TXN_ENTRY_SIZE: Final = 34
_TXN_ENTRY: Final = struct.Struct(">hqqqq")

STATE_COPY_FINISHED: Final = "COPY_SEGMENT_FINISHED"
STATE_DELETE_STARTED: Final = "DELETE_SEGMENT_STARTED"
MANIFEST_STATES: Final = (STATE_COPY_FINISHED, STATE_DELETE_STARTED)

HEADER_TYPE: Final = pa.list_(
    pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())])
)
PARQUET_SCHEMA: Final = pa.schema(
    [
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", pa.int64(), nullable=False),
        pa.field("timestamp_type", pa.int8(), nullable=False),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("headers", HEADER_TYPE),
        pa.field("batch_base_offset", pa.int64()),
        pa.field("batch_last_offset", pa.int64()),
        pa.field("partition_leader_epoch", pa.int32()),
        pa.field("producer_id", pa.int64()),
        pa.field("producer_epoch", pa.int16()),
        pa.field("base_sequence", pa.int32()),
        pa.field("is_transactional", pa.bool_()),
        pa.field("is_control", pa.bool_()),
        pa.field("compression", pa.int8()),
        pa.field("aborted", pa.bool_()),
    ]
)


class LayoutError(ValueError):
    """A name or document that does not follow the layout (bad topic name, corrupt manifest)."""


def check_topic_name(topic: str) -> str:
    # Kafka's legal topic characters; they are also safe in every object-store key.
    if not topic or len(topic) > 249 or topic in (".", ".."):
        raise LayoutError(f"invalid topic name {topic!r}")
    if any(not (c.isascii() and (c.isalnum() or c in "._-")) for c in topic):
        raise LayoutError(f"invalid topic name {topic!r}: only [a-zA-Z0-9._-] are allowed")
    return topic


def partition_dir(topic: str, topic_id: str, partition: int) -> str:
    check_topic_name(topic)
    uuid_from_str(topic_id)
    if partition < 0:
        raise LayoutError(f"invalid partition {partition}")
    return f"{TOPICS_DIR}/{topic}/{topic_id}/{partition}"


def manifest_path(topic: str, topic_id: str, partition: int) -> str:
    return f"{partition_dir(topic, topic_id, partition)}/{MANIFEST_NAME}"


def segment_stem(base_offset: int, segment_id: str) -> str:
    """``segments/{base:020d}-{segment_id}``, relative to the partition directory."""
    uuid_from_str(segment_id)
    return f"{SEGMENTS_DIR}/{base_offset:020d}-{segment_id}"


def parse_segment_object(name: str) -> tuple[int, str, str] | None:
    """``(base_offset, segment_id, suffix)`` of a segment object's file name, else None."""
    for suffix in SEGMENT_SUFFIXES:
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            base, sep, segment_id = stem.partition("-")
            if sep and len(base) == 20 and base.isdigit() and len(segment_id) == 22:
                return int(base), segment_id, suffix
    return None


def format_epoch_checkpoint(entries: Sequence[tuple[int, int]]) -> bytes:
    lines = ["0", str(len(entries))] + [f"{epoch} {start}" for epoch, start in entries]
    return ("\n".join(lines) + "\n").encode()


def parse_epoch_checkpoint(data: bytes) -> list[tuple[int, int]]:
    lines = data.decode("utf-8", errors="replace").splitlines()
    try:
        if lines[0].strip() != "0":
            raise LayoutError(f"leader-epoch checkpoint version {lines[0]!r} is not 0")
        count = int(lines[1])
        entries = [tuple(int(p) for p in line.split()) for line in lines[2:] if line.strip()]
    except (IndexError, ValueError) as exc:
        raise LayoutError(f"malformed leader-epoch checkpoint: {exc}") from None
    if len(entries) != count or any(len(e) != 2 for e in entries):
        raise LayoutError(f"malformed leader-epoch checkpoint: expected {count} entries")
    return [(e[0], e[1]) for e in entries]


def format_txn_index(entries: Sequence[AbortedTxn]) -> bytes:
    """The ``.txnindex`` object of ``entries`` (in marker order; b"" when none)."""
    return b"".join(
        _TXN_ENTRY.pack(0, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
        for t in entries
    )


def parse_txn_index(data: bytes) -> tuple[AbortedTxn, ...]:
    """The entries of a ``.txnindex`` object; :class:`LayoutError` if it is damaged."""
    if len(data) % TXN_ENTRY_SIZE:
        raise LayoutError(f"transaction index size {len(data)} is not a multiple of 34")
    entries: list[AbortedTxn] = []
    for pos in range(0, len(data), TXN_ENTRY_SIZE):
        version, producer_id, first, last, lso = _TXN_ENTRY.unpack_from(data, pos)
        if version != 0:
            raise LayoutError(f"transaction index entry version {version} at {pos} is not 0")
        if first > last or (entries and last <= entries[-1].last_offset):
            raise LayoutError(f"transaction index entry at {pos} is out of order")
        entries.append(AbortedTxn(producer_id, first, last, lso))
    return tuple(entries)


@dataclass(frozen=True, slots=True)
class ManifestSegment:
    """One entry of ``manifest.json`` (see the module docstring for each field)."""

    segment_id: str
    base_offset: int
    end_offset: int
    record_count: int
    first_timestamp: int
    max_timestamp: int
    size_bytes: int
    segment_bytes: int
    leader_epochs: tuple[tuple[int, int], ...]
    path: str
    state: str
    copied_ms: int
    broker_id: int
    leader_epoch: int
    #: None when the manifest predates these counts (then nothing is known about them).
    control_records: int | None = None
    aborted_records: int | None = None
    transactional_records: int | None = None

    def rows_to_drop(self, read_committed: bool) -> int | None:
        """Rows a reader drops from the whole object (control, and aborted under
        read_committed); None when the manifest does not say."""
        if self.control_records is None or self.aborted_records is None:
            return None
        return self.control_records + (self.aborted_records if read_committed else 0)

    def to_json(self) -> dict[str, Any]:
        counts = {
            name: value
            for name, value in (
                ("control_records", self.control_records),
                ("aborted_records", self.aborted_records),
                ("transactional_records", self.transactional_records),
            )
            if value is not None
        }
        return {
            "segment_id": self.segment_id,
            "base_offset": self.base_offset,
            "end_offset": self.end_offset,
            "record_count": self.record_count,
            "first_timestamp": self.first_timestamp,
            "max_timestamp": self.max_timestamp,
            "size_bytes": self.size_bytes,
            "segment_bytes": self.segment_bytes,
            "leader_epochs": [list(e) for e in self.leader_epochs],
            "path": self.path,
            "state": self.state,
            "copied_ms": self.copied_ms,
            "broker_id": self.broker_id,
            "leader_epoch": self.leader_epoch,
        } | counts

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ManifestSegment:
        try:
            segment = cls(
                segment_id=str(doc["segment_id"]),
                base_offset=_int(doc["base_offset"]),
                end_offset=_int(doc["end_offset"]),
                record_count=_int(doc["record_count"]),
                first_timestamp=_int(doc["first_timestamp"]),
                max_timestamp=_int(doc["max_timestamp"]),
                size_bytes=_int(doc["size_bytes"]),
                segment_bytes=_int(doc["segment_bytes"]),
                leader_epochs=tuple((_int(e), _int(s)) for e, s in doc["leader_epochs"]),
                path=str(doc["path"]),
                state=str(doc["state"]),
                copied_ms=_int(doc["copied_ms"]),
                broker_id=_int(doc["broker_id"]),
                leader_epoch=_int(doc["leader_epoch"]),
                control_records=_optional_int(doc.get("control_records")),
                aborted_records=_optional_int(doc.get("aborted_records")),
                transactional_records=_optional_int(doc.get("transactional_records")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise LayoutError(f"malformed manifest segment entry: {exc!r}") from None
        if segment.state not in MANIFEST_STATES:
            raise LayoutError(f"manifest segment {segment.segment_id} has state {segment.state}")
        if segment.end_offset < segment.base_offset:
            raise LayoutError(f"manifest segment {segment.segment_id} ends before it starts")
        return segment


@dataclass(frozen=True, slots=True)
class Manifest:
    """The decoded ``manifest.json`` of one partition."""

    topic: str
    topic_id: str
    partition: int
    version: int = 0
    log_start_offset: int = 0
    segments: tuple[ManifestSegment, ...] = field(default=())

    @property
    def finished_segments(self) -> tuple[ManifestSegment, ...]:
        """The segments a reader may read (deletion not started), by base offset."""
        return tuple(s for s in self.segments if s.state == STATE_COPY_FINISHED)

    def to_bytes(self) -> bytes:
        doc = {
            "format": FORMAT_VERSION,
            "topic": self.topic,
            "topic_id": self.topic_id,
            "partition": self.partition,
            "version": self.version,
            "log_start_offset": self.log_start_offset,
            "segments": [s.to_json() for s in self.segments],
        }
        return json.dumps(doc, indent=1).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Manifest:
        try:
            doc = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LayoutError(f"manifest is not JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise LayoutError("manifest is not a JSON object")
        if doc.get("format") != FORMAT_VERSION:
            raise LayoutError(
                f"manifest format {doc.get('format')!r} is not {FORMAT_VERSION}: upgrade sparklog"
            )
        try:
            segments = tuple(ManifestSegment.from_json(s) for s in doc["segments"])
            manifest = cls(
                topic=str(doc["topic"]),
                topic_id=str(doc["topic_id"]),
                partition=_int(doc["partition"]),
                version=_int(doc["version"]),
                log_start_offset=_int(doc["log_start_offset"]),
                segments=segments,
            )
        except (KeyError, TypeError) as exc:
            raise LayoutError(f"malformed manifest: {exc!r}") from None
        if any(a.end_offset >= b.base_offset for a, b in itertools.pairwise(segments)):
            raise LayoutError("manifest segments are not sorted or overlap")
        return manifest


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _optional_int(value: Any) -> int | None:
    return None if value is None else _int(value)


def store_marker_bytes(cluster_id: str) -> bytes:
    return json.dumps({"format": FORMAT_VERSION, "cluster_id": cluster_id}).encode()


def parse_store_marker(data: bytes) -> str:
    """The cluster id recorded in ``_sparklog.json``."""
    try:
        doc = json.loads(data)
        if doc["format"] != FORMAT_VERSION:
            raise LayoutError(f"store format {doc['format']!r} is not {FORMAT_VERSION}")
        return str(doc["cluster_id"])
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise LayoutError(f"malformed {STORE_MARKER}: {exc!r}") from None
