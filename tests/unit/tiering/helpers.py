"""Segment files and metadata for the tiering tests."""

from __future__ import annotations

from pathlib import Path

from sparklog.protocol.kafka_uuid import random_uuid
from sparklog.protocol.record_codec import build_batch
from sparklog.tiering.metadata import (
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    TopicIdPartition,
)

TOPIC_ID = random_uuid()
TP = TopicIdPartition(TOPIC_ID, "orders", 0)


def write_segment(
    directory: Path, base_offset: int, count: int, per_batch: int = 10, epoch: int = 0
) -> tuple[str, int]:
    """A .log file of ``count`` records from ``base_offset``; returns (path, end offset)."""
    data = bytearray()
    offset = base_offset
    while offset < base_offset + count:
        n = min(per_batch, base_offset + count - offset)
        records = [
            (f"k{o}".encode(), f"value-{o}".encode(), [("h", f"{o}".encode())], 1_000 + o)
            for o in range(offset, offset + n)
        ]
        data += build_batch(
            records, base_offset=offset, compression=4, partition_leader_epoch=epoch
        )
        offset += n
    path = directory / f"{base_offset:020d}.log"
    path.write_bytes(bytes(data))
    return str(path), base_offset + count - 1


def segment_metadata(
    path: str, base: int, end: int, tp: TopicIdPartition = TP, epoch: int = 0
) -> tuple[RemoteLogSegmentMetadata, LogSegmentData]:
    metadata = RemoteLogSegmentMetadata(
        remote_log_segment_id=RemoteLogSegmentId.generate(tp),
        start_offset=base,
        end_offset=end,
        max_timestamp_ms=1_000 + end,
        broker_id=1,
        event_timestamp_ms=0,
        segment_size_in_bytes=Path(path).stat().st_size,
        segment_leader_epochs=((epoch, base),),
        leader_epoch=epoch,
    )
    return metadata, LogSegmentData(path, ((epoch, base),))
