"""A tiered store written by hand for connector unit tests: Parquet objects in the layout's
schema and a manifest, on ``file://``, with control rows, aborted rows and chosen timestamps,
so planning and the cold reader can be tested without a broker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sparklog.protocol.kafka_uuid import random_uuid
from sparklog.tiering.layout import (
    PARQUET_SCHEMA,
    STATE_COPY_FINISHED,
    STORE_MARKER,
    Manifest,
    ManifestSegment,
    manifest_path,
    partition_dir,
    segment_stem,
    store_marker_bytes,
)


@dataclass(frozen=True, slots=True)
class Row:
    offset: int
    timestamp: int
    control: bool = False
    aborted: bool = False
    headers: tuple[tuple[str, bytes | None], ...] = ()

    @property
    def key(self) -> bytes:
        return b"k%d" % self.offset

    @property
    def value(self) -> bytes:
        return b"v%d" % self.offset


def write_segment_table(path: Path, rows: Sequence[Row], row_group_rows: int) -> int:
    table = pa.table(
        {
            "offset": [r.offset for r in rows],
            "timestamp": [r.timestamp for r in rows],
            "timestamp_type": [0] * len(rows),
            "key": [r.key for r in rows],
            "value": [r.value for r in rows],
            "headers": [
                [{"key": k, "value": v} for k, v in r.headers] if r.headers else None for r in rows
            ],
            "batch_base_offset": [r.offset for r in rows],
            "batch_last_offset": [r.offset for r in rows],
            "partition_leader_epoch": [0] * len(rows),
            "producer_id": [7 if (r.aborted or r.control) else -1 for r in rows],
            "producer_epoch": [0] * len(rows),
            "base_sequence": [0] * len(rows),
            "is_transactional": [r.aborted or r.control for r in rows],
            "is_control": [r.control for r in rows],
            "compression": [0] * len(rows),
            "aborted": [r.aborted for r in rows],
        },
        schema=PARQUET_SCHEMA,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_rows)
    return path.stat().st_size


class StoreBuilder:
    """``add_partition(topic, partition, segments)`` writes objects and the manifest."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = f"file://{root}"
        root.mkdir(parents=True, exist_ok=True)
        (root / STORE_MARKER).write_bytes(store_marker_bytes("test-cluster"))
        self.topic_ids: dict[str, str] = {}
        self.manifests: dict[tuple[str, int], Manifest] = {}

    def add_partition(
        self,
        topic: str,
        partition: int,
        segments: Sequence[Sequence[Row]],
        log_start_offset: int | None = None,
        row_group_rows: int = 4,
        counts: bool = True,
    ) -> Manifest:
        """``counts=False`` writes entries without the control/aborted/transactional counts,
        as manifests written before they existed."""
        topic_id = self.topic_ids.setdefault(topic, random_uuid())
        base_dir = partition_dir(topic, topic_id, partition)
        entries = []
        for rows in segments:
            segment_id = random_uuid()
            rel = segment_stem(rows[0].offset, segment_id) + ".parquet"
            size = write_segment_table(self.root / base_dir / rel, rows, row_group_rows)
            entries.append(
                ManifestSegment(
                    segment_id=segment_id,
                    base_offset=rows[0].offset,
                    end_offset=rows[-1].offset,
                    record_count=len(rows),
                    first_timestamp=rows[0].timestamp,
                    max_timestamp=max(r.timestamp for r in rows),
                    size_bytes=size,
                    segment_bytes=size,
                    leader_epochs=((0, rows[0].offset),),
                    path=rel,
                    state=STATE_COPY_FINISHED,
                    copied_ms=1,
                    broker_id=1,
                    leader_epoch=0,
                    control_records=sum(r.control for r in rows) if counts else None,
                    aborted_records=sum(r.aborted for r in rows) if counts else None,
                    transactional_records=(
                        sum(r.control or r.aborted for r in rows) if counts else None
                    ),
                )
            )
        manifest = Manifest(
            topic=topic,
            topic_id=topic_id,
            partition=partition,
            version=1,
            log_start_offset=segments[0][0].offset
            if log_start_offset is None
            else log_start_offset,
            segments=tuple(entries),
        )
        path = self.root / manifest_path(topic, topic_id, partition)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(manifest.to_bytes())
        self.manifests[(topic, partition)] = manifest
        return manifest

    def object_path(self, topic: str, partition: int, index: int) -> Path:
        manifest = self.manifests[(topic, partition)]
        base = partition_dir(topic, manifest.topic_id, partition)
        return self.root / base / manifest.segments[index].path
