"""Segments written by the real log engine (sparklog.storage) tier and come back intact."""

from __future__ import annotations

from pathlib import Path

from sparklog.protocol.record_codec import build_batch
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from sparklog.tiering.metadata import (
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
)
from sparklog.tiering.reader import TieredStoreReader
from sparklog.tiering.rlmm import RemoteLogMetadataManager
from sparklog.tiering.rsm import RemoteStorageManager
from sparklog.tiering.store import open_store
from tests.unit.tiering.helpers import TP


def test_rolled_segments_round_trip_byte_for_byte(tmp_path: Path) -> None:
    now = 1_700_000_000_000
    log = Log.open(
        str(tmp_path / "orders-0"),
        LogConfig(internal_segment_bytes=2048, index_interval_bytes=64),
        lambda: now,
    )
    for i in range(60):
        records = [
            (b"k%d" % (i * 5 + j), b"v" * (j + 1), [("n", b"%d" % j)], now + i) for j in range(5)
        ]
        log.append_as_leader(bytearray(build_batch(records)), leader_epoch=0 if i < 30 else 3)
    log.roll()
    closed = log.segments[:-1]
    assert len(closed) > 3

    store = open_store(f"file://{tmp_path}/remote")
    rsm = RemoteStorageManager(store, cluster_id="c", row_group_rows=7)
    rlmm = RemoteLogMetadataManager(store)
    for segment, following in zip(closed, log.segments[1:], strict=True):
        metadata = RemoteLogSegmentMetadata(
            RemoteLogSegmentId.generate(TP),
            segment.base_offset,
            following.base_offset - 1,
            segment.largest_timestamp,
            1,
            now,
            Path(segment.path).stat().st_size,
        )
        rlmm.add_remote_log_segment_metadata(metadata)
        copied = rsm.copy_log_segment_data(metadata, LogSegmentData(segment.path))
        rlmm.update_remote_log_segment_metadata(
            metadata.remote_log_segment_id,
            RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
            copied=copied,
        )
        original = Path(segment.path).read_bytes()
        # Uncompressed CreateTime batches re-encode to the very same bytes.
        assert rsm.fetch_log_segment(metadata, segment.base_offset, 1 << 30) == original

        assert rsm.fetch_leader_epoch_checkpoint(metadata) == list(copied.leader_epochs)

    manifest = rlmm.manifest(TP)
    assert all(s.leader_epochs for s in manifest.segments)
    assert {epoch for s in manifest.segments for epoch, _ in s.leader_epochs} == {0, 3}
    table = TieredStoreReader(store).read_records("orders", 0)
    assert table.column("offset").to_pylist() == list(range(300))
    assert table.column("key").to_pylist()[123] == b"k123"
    assert sum(s.record_count for s in manifest.segments) == 300
    log.close()
