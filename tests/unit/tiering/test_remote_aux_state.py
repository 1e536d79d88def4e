"""A follower rebuilt from the tier (KIP-405's remote log aux state), on real logs and a real
``file://`` store: the leader's closed segments are copied as the remote log manager copies
them (epochs, producer snapshot at the segment end), then an empty follower log is rebuilt for
the leader's local log start and catches up from the leader's local batches.

Also the copy of a segment straddling the store's end: only the batches above it are copied."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sparklog.broker.remote_aux_state import (
    TierStateUnavailable,
    apply_tier_state,
    read_tier_state,
)
from sparklog.broker.remote_log_manager import segment_epochs
from sparklog.broker.remote_segments import copy_source, tail_position
from sparklog.protocol.record_codec import build_batch
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from sparklog.tiering.layout import PARQUET_SUFFIX
from sparklog.tiering.metadata import (
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
)
from sparklog.tiering.rlmm import RemoteLogMetadataManager
from sparklog.tiering.rsm import RemoteStorageManager, segment_object_paths
from sparklog.tiering.store import open_store
from tests.unit.tiering.helpers import TP

CLUSTER = "test-cluster"


class _Clock:
    def __call__(self) -> int:
        return 1_000_000


def _batch(pid: int, seq: int, count: int) -> bytes:
    return build_batch(
        [(b"k%d" % i, b"v%d" % i, (), 1_000_000) for i in range(count)],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
    )


def _leader(directory: Path) -> Log:
    """Segments [0, 6) epoch 0 (producer 7), [6, 12) epochs 0 then 2 (producers 7, 8),
    [12, 15) epoch 5 (producer 8), and an active segment from 15, epoch 5."""
    log = Log.open(str(directory / "t-0"), LogConfig(), _Clock())
    log.append_as_leader(_batch(7, 0, 3), 0)
    log.append_as_leader(_batch(7, 3, 3), 0)
    log.roll()
    log.append_as_leader(_batch(7, 6, 2), 0)
    log.append_as_leader(_batch(8, 0, 4), 2)
    log.roll()
    log.append_as_leader(_batch(8, 4, 3), 5)
    log.roll()
    log.append_as_leader(_batch(7, 8, 2), 5)
    return log


def _copy(log: Log, rsm: RemoteStorageManager, rlmm: RemoteLogMetadataManager, index: int) -> None:
    """Copy closed segment ``index`` as the remote log manager does."""
    segment = log.segments[index]
    end = segment.next_offset - 1
    metadata = RemoteLogSegmentMetadata(
        remote_log_segment_id=RemoteLogSegmentId.generate(TP),
        start_offset=segment.base_offset,
        end_offset=end,
        max_timestamp_ms=segment.largest_timestamp,
        broker_id=1,
        event_timestamp_ms=0,
        segment_size_in_bytes=segment.size,
        segment_leader_epochs=segment_epochs(log, segment.base_offset, end),
        leader_epoch=5,
    )
    snapshot = log.producer_state.snapshot_path(segment.next_offset)
    assert os.path.exists(snapshot)
    data = LogSegmentData(segment.path, metadata.segment_leader_epochs, snapshot)
    rlmm.add_remote_log_segment_metadata(metadata)
    copied = rsm.copy_log_segment_data(metadata, data)
    rlmm.update_remote_log_segment_metadata(
        metadata.remote_log_segment_id, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, copied=copied
    )


def _producers(log: Log) -> dict[int, tuple[int, int]]:
    return {pid: (e.epoch, e.last_seq) for pid, e in log.producer_state.producers.items()}


def test_follower_rebuilt_from_the_store_matches_the_leader(tmp_path: Path) -> None:
    store = open_store(f"file://{tmp_path}/remote")
    rsm = RemoteStorageManager(store, cluster_id=CLUSTER)
    leader = _leader(tmp_path / "leader")
    writer = RemoteLogMetadataManager(store)
    for index in range(3):
        _copy(leader, rsm, writer, index)
    # The follower's own view of the store: a fresh manager, as on another broker.
    state = read_tier_state(RemoteLogMetadataManager(store), rsm, TP, leader_local_start=12)
    assert (state.next_offset, state.log_start_offset) == (12, 0)

    follower = Log.open(str(tmp_path / "follower" / "t-0"), LogConfig(), _Clock())
    follower.append_as_leader(_batch(9, 0, 5), 1)  # a history the rebuild must discard
    apply_tier_state(follower, state, now_ms=1_000_000)
    assert (follower.log_start_offset, follower.log_end_offset) == (0, 12)
    assert follower.local_log_start_offset == 12
    assert follower.epoch_cache.entries == [(0, 0), (2, 8)]
    # The producer state as of offset 12 on the leader: producer 7 at seq 7, 8 at seq 3.
    assert _producers(follower) == {7: (0, 7), 8: (0, 3)}

    # Catching up from the leader's local batches gives the leader's epochs and producers.
    while follower.log_end_offset < leader.log_end_offset:
        follower.append_as_follower(leader.read(follower.log_end_offset, 1 << 20).read_bytes())
    assert follower.log_end_offset == leader.log_end_offset
    assert follower.epoch_cache.entries == leader.epoch_cache.entries
    assert _producers(follower) == _producers(leader)


def test_rebuild_needs_a_remote_segment_below_the_leader_local_start(tmp_path: Path) -> None:
    store = open_store(f"file://{tmp_path}/remote")
    rsm = RemoteStorageManager(store, cluster_id=CLUSTER)
    leader = _leader(tmp_path / "leader")
    _copy(leader, rsm, RemoteLogMetadataManager(store), 0)
    with pytest.raises(TierStateUnavailable):
        read_tier_state(RemoteLogMetadataManager(store), rsm, TP, leader_local_start=12)
    state = read_tier_state(RemoteLogMetadataManager(store), rsm, TP, leader_local_start=6)
    assert state.next_offset == 6 and state.epochs == ((0, 0),)


def test_a_straddling_segment_is_copied_from_the_first_batch_above_the_store(
    tmp_path: Path,
) -> None:
    leader = _leader(tmp_path / "leader")
    segment = leader.segments[1]  # [6, 12): batches at 6 and 8
    assert tail_position(segment, 7) is None  # not a batch boundary
    position = tail_position(segment, 8)
    assert position is not None and position > 0
    store = open_store(f"file://{tmp_path}/remote")
    rsm = RemoteStorageManager(store, cluster_id=CLUSTER)
    metadata = RemoteLogSegmentMetadata(
        remote_log_segment_id=RemoteLogSegmentId.generate(TP),
        start_offset=8,
        end_offset=11,
        max_timestamp_ms=1_000_000,
        broker_id=1,
        event_timestamp_ms=0,
        segment_size_in_bytes=segment.size - position,
        segment_leader_epochs=segment_epochs(leader, 8, 11),
    )
    data = LogSegmentData(segment.path, metadata.segment_leader_epochs)
    with copy_source(data, position) as tail:
        assert tail.log_path != segment.path
        copied = rsm.copy_log_segment_data(metadata, tail)
    assert not os.path.exists(tail.log_path)
    assert (copied.first_offset, copied.last_offset, copied.record_count) == (8, 11, 4)
    path = segment_object_paths(metadata)[PARQUET_SUFFIX]
    with store.open_input(path) as source:
        offsets = pq.read_table(source, columns=["offset"])["offset"].to_pylist()
    assert offsets == [8, 9, 10, 11]
    assert metadata.segment_leader_epochs == ((2, 8),)
