"""RSM + RLMM lifecycle against real stores: copy, finish, fetch, delete, crash and restart."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparklog.protocol.kafka_uuid import random_uuid
from sparklog.protocol.record_codec import decode_batch
from sparklog.protocol.records import iter_batches
from sparklog.tiering.layout import LayoutError, Manifest, manifest_path, partition_dir
from sparklog.tiering.metadata import (
    IllegalStateTransition,
    RemoteLogSegmentId,
    RemoteLogSegmentState,
    TopicIdPartition,
)
from sparklog.tiering.reader import TieredStoreReader
from sparklog.tiering.rlmm import (
    ManifestConflictError,
    OverlappingSegmentError,
    RemoteLogMetadataManager,
)
from sparklog.tiering.rsm import (
    RemoteResourceNotFoundError,
    RemoteStorageError,
    RemoteStorageManager,
)
from sparklog.tiering.store import ObjectStore, open_store
from tests.conftest import MotoS3
from tests.unit.tiering.faulty_store import FaultyStore
from tests.unit.tiering.helpers import TP, segment_metadata, write_segment

FINISHED = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
STARTED = RemoteLogSegmentState.COPY_SEGMENT_STARTED
DELETE_STARTED = RemoteLogSegmentState.DELETE_SEGMENT_STARTED
DELETE_FINISHED = RemoteLogSegmentState.DELETE_SEGMENT_FINISHED
CLUSTER = "test-cluster"


@pytest.fixture(params=["file", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    if request.param == "file":
        yield open_store(f"file://{tmp_path}/remote")
    else:
        moto: MotoS3 = request.getfixturevalue("moto_s3")
        yield open_store(f"s3://{moto.new_bucket()}/remote", moto.options())


@pytest.fixture
def file_store(tmp_path: Path) -> ObjectStore:
    return open_store(f"file://{tmp_path}/remote")


def copy_and_finish(
    rsm: RemoteStorageManager, rlmm: RemoteLogMetadataManager, tmp: Path, base: int, count: int
) -> RemoteLogSegmentId:
    path, end = write_segment(tmp, base, count)
    metadata, data = segment_metadata(path, base, end)
    rlmm.add_remote_log_segment_metadata(metadata)
    copied = rsm.copy_log_segment_data(metadata, data)
    rlmm.update_remote_log_segment_metadata(metadata.remote_log_segment_id, FINISHED, copied=copied)
    return metadata.remote_log_segment_id


def test_copy_fetch_and_read(store: ObjectStore, tmp_path: Path) -> None:
    rsm = RemoteStorageManager(store, cluster_id=CLUSTER, row_group_rows=16)
    rlmm = RemoteLogMetadataManager(store)
    path, end = write_segment(tmp_path, 100, 50)
    metadata, data = segment_metadata(path, 100, end)
    rlmm.add_remote_log_segment_metadata(metadata)
    copied = rsm.copy_log_segment_data(metadata, data)
    assert rlmm.manifest(TP).segments == ()
    assert rlmm.list_remote_log_segments(TP) == []
    assert rlmm.list_remote_log_segments(TP, [STARTED])[0].segment_id == metadata.segment_id
    assert TieredStoreReader(store).list_topics() == []

    rlmm.update_remote_log_segment_metadata(metadata.remote_log_segment_id, FINISHED, copied=copied)
    manifest = rlmm.manifest(TP)
    assert manifest.version == 1
    (entry,) = manifest.segments
    assert (entry.base_offset, entry.end_offset, entry.record_count) == (100, 149, 50)
    assert (entry.first_timestamp, entry.max_timestamp) == (1100, 1149)
    assert entry.leader_epochs == ((0, 100),)
    assert entry.path.startswith("segments/00000000000000000100-")
    assert rlmm.highest_copied_offset(TP) == 149
    assert rlmm.remote_log_start_offset(TP) == 100
    found = rlmm.remote_log_segment_metadata(TP, 120)
    assert found is not None and found.segment_id == metadata.segment_id
    assert rlmm.remote_log_segment_metadata(TP, 150) is None

    batches = rsm.fetch_log_segment(metadata, 125, 1 << 20)
    records = [r for pos, _ in iter_batches(batches) for r in decode_batch(batches, pos)[1]]
    assert records[0].offset == 120 and records[-1].offset == 149
    assert [r.value for r in records] == [f"value-{o}".encode() for o in range(120, 150)]
    assert records[0].headers == (("h", b"120"),)
    assert rsm.fetch_leader_epoch_checkpoint(metadata) == [(0, 100)]
    assert rsm.fetch_producer_snapshot(metadata) == b""

    reader = TieredStoreReader(store)
    assert reader.cluster_id() == CLUSTER
    assert reader.list_topics() == ["orders"]
    assert reader.list_partitions("orders") == [0]
    table = reader.read_records("orders", 0, 110, 130)
    assert table.column("offset").to_pylist() == list(range(110, 130))
    assert reader.read_records("orders", 0).num_rows == 50


def test_state_transitions_are_validated(file_store: ObjectStore, tmp_path: Path) -> None:
    rsm = RemoteStorageManager(file_store, cluster_id=CLUSTER)
    rlmm = RemoteLogMetadataManager(file_store)
    path, end = write_segment(tmp_path, 0, 10)
    metadata, data = segment_metadata(path, 0, end)
    unknown = RemoteLogSegmentId(TP, random_uuid())
    with pytest.raises(IllegalStateTransition, match="no state"):
        rlmm.update_remote_log_segment_metadata(unknown, FINISHED)
    rlmm.add_remote_log_segment_metadata(metadata)
    rlmm.add_remote_log_segment_metadata(metadata)  # self transition: a retry
    with pytest.raises(IllegalStateTransition):
        rlmm.update_remote_log_segment_metadata(metadata.remote_log_segment_id, DELETE_FINISHED)
    with pytest.raises(ValueError, match="CopiedSegment"):
        rlmm.update_remote_log_segment_metadata(metadata.remote_log_segment_id, FINISHED)
    copied = rsm.copy_log_segment_data(metadata, data)
    segment_id = metadata.remote_log_segment_id
    rlmm.update_remote_log_segment_metadata(segment_id, FINISHED, copied=copied)
    rlmm.update_remote_log_segment_metadata(segment_id, FINISHED, copied=copied)
    assert rlmm.manifest(TP).version == 1  # the retry wrote nothing
    with pytest.raises(
        IllegalStateTransition, match="COPY_SEGMENT_FINISHED -> COPY_SEGMENT_STARTED"
    ):
        rlmm.add_remote_log_segment_metadata(metadata)
    with pytest.raises(IllegalStateTransition):
        rlmm.update_remote_log_segment_metadata(segment_id, DELETE_FINISHED)


def test_delete_lifecycle(store: ObjectStore, tmp_path: Path) -> None:
    rsm = RemoteStorageManager(store, cluster_id=CLUSTER)
    rlmm = RemoteLogMetadataManager(store)
    first = copy_and_finish(rsm, rlmm, tmp_path, 0, 10)
    copy_and_finish(rsm, rlmm, tmp_path, 10, 10)
    reader = TieredStoreReader(store)
    assert reader.read_records("orders", 0).num_rows == 20

    rlmm.update_remote_log_segment_metadata(first, DELETE_STARTED)
    manifest = reader.read_manifest("orders", 0)
    assert manifest.log_start_offset == 10
    assert [s.state for s in manifest.segments] == [
        "DELETE_SEGMENT_STARTED",
        "COPY_SEGMENT_FINISHED",
    ]
    assert reader.read_records("orders", 0).column("offset").to_pylist() == list(range(10, 20))
    assert rlmm.remote_log_start_offset(TP) == 10
    assert rlmm.remote_log_segment_metadata(TP, 5) is None
    (deleting,) = rlmm.list_remote_log_segments(TP, [DELETE_STARTED])
    rsm.delete_log_segment_data(deleting)
    rsm.delete_log_segment_data(deleting)
    rlmm.update_remote_log_segment_metadata(first, DELETE_FINISHED)
    assert len(reader.read_manifest("orders", 0).segments) == 1
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_log_segment(deleting, 0, 100)
    base = partition_dir(TP.topic, TP.topic_id, 0)
    assert not [p for p in store.list(base) if first.id in p]


def test_crash_between_upload_and_manifest(store: ObjectStore, tmp_path: Path) -> None:
    rsm = RemoteStorageManager(store, cluster_id=CLUSTER)
    rlmm = RemoteLogMetadataManager(store)
    copy_and_finish(rsm, rlmm, tmp_path, 0, 10)
    path, end = write_segment(tmp_path, 10, 10)
    crashed, data = segment_metadata(path, 10, end)
    rlmm.add_remote_log_segment_metadata(crashed)
    rsm.copy_log_segment_data(crashed, data)
    # The node dies here: objects uploaded, manifest not updated.
    reader = TieredStoreReader(store)
    assert reader.read_records("orders", 0).num_rows == 10

    restarted = RemoteLogMetadataManager(store)
    manifest = restarted.load(TP)
    assert len(manifest.segments) == 1
    base = partition_dir(TP.topic, TP.topic_id, 0)
    assert not [p for p in store.list(base) if crashed.segment_id in p]
    assert restarted.highest_copied_offset(TP) == 9

    # The re-copy (a new id, as Kafka does) and a retry of it under the same id.
    recopy, data = segment_metadata(path, 10, end)
    restarted.add_remote_log_segment_metadata(recopy)
    rsm2 = RemoteStorageManager(store, cluster_id=CLUSTER)
    rsm2.copy_log_segment_data(recopy, data)
    copied = rsm2.copy_log_segment_data(recopy, data)
    restarted.update_remote_log_segment_metadata(
        recopy.remote_log_segment_id, FINISHED, copied=copied
    )
    offsets = reader.read_records("orders", 0).column("offset").to_pylist()
    assert offsets == list(range(20))
    assert len([p for p in store.list(base) if p.endswith(".parquet")]) == 2


def test_same_range_supersedes_and_partial_overlap_is_refused(
    file_store: ObjectStore, tmp_path: Path
) -> None:
    rsm = RemoteStorageManager(file_store, cluster_id=CLUSTER)
    rlmm = RemoteLogMetadataManager(file_store)
    old = copy_and_finish(rsm, rlmm, tmp_path, 0, 10)
    new = copy_and_finish(rsm, rlmm, tmp_path, 0, 10)
    assert [s.segment_id for s in rlmm.manifest(TP).segments] == [new.id]
    base = partition_dir(TP.topic, TP.topic_id, 0)
    assert not [p for p in file_store.list(base) if old.id in p]
    path, end = write_segment(tmp_path, 5, 10)
    metadata, data = segment_metadata(path, 5, end)
    rlmm.add_remote_log_segment_metadata(metadata)
    copied = rsm.copy_log_segment_data(metadata, data)
    with pytest.raises(OverlappingSegmentError):
        rlmm.update_remote_log_segment_metadata(
            metadata.remote_log_segment_id, FINISHED, copied=copied
        )
    assert len(rlmm.manifest(TP).segments) == 1


def test_offsets_outside_metadata_are_refused(file_store: ObjectStore, tmp_path: Path) -> None:
    rsm = RemoteStorageManager(file_store, cluster_id=CLUSTER)
    path, _ = write_segment(tmp_path, 0, 10)
    metadata, data = segment_metadata(path, 0, 5)
    with pytest.raises(RemoteStorageError, match="outside"):
        rsm.copy_log_segment_data(metadata, data)


def test_stale_writer_gets_a_conflict(file_store: ObjectStore, tmp_path: Path) -> None:
    rsm = RemoteStorageManager(file_store, cluster_id=CLUSTER)
    leader_a = RemoteLogMetadataManager(file_store)
    leader_a.load(TP)
    leader_b = RemoteLogMetadataManager(file_store)
    copy_and_finish(rsm, leader_b, tmp_path, 0, 10)
    with pytest.raises(ManifestConflictError):
        copy_and_finish(rsm, leader_a, tmp_path, 10, 10)
    assert leader_a.manifest(TP).version == 1  # reloaded
    copy_and_finish(rsm, leader_a, tmp_path, 20, 10)
    assert [s.base_offset for s in leader_a.manifest(TP).segments] == [0, 20]


def test_readers_never_parse_a_partial_manifest(store: ObjectStore, tmp_path: Path) -> None:
    rsm = RemoteStorageManager(store, cluster_id=CLUSTER)
    rlmm = RemoteLogMetadataManager(store)
    path = manifest_path(TP.topic, TP.topic_id, 0)
    stop = threading.Event()
    versions: list[int] = []
    failures: list[BaseException] = []

    def reader() -> None:
        while not stop.is_set():
            try:
                versions.append(Manifest.from_bytes(store.read_bytes(path)).version)
            except LayoutError as exc:
                failures.append(exc)
            except Exception:
                pass  # not written yet

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(8):
            copy_and_finish(rsm, rlmm, tmp_path, i * 5, 5)
    finally:
        stop.set()
        thread.join(10)
    assert not failures
    assert versions == sorted(versions)


def test_store_of_another_cluster_is_refused(file_store: ObjectStore, tmp_path: Path) -> None:
    copy_and_finish(
        RemoteStorageManager(file_store, cluster_id="one"),
        RemoteLogMetadataManager(file_store),
        tmp_path,
        0,
        5,
    )
    other = RemoteStorageManager(file_store, cluster_id="two")
    path, end = write_segment(tmp_path, 5, 5)
    metadata, data = segment_metadata(path, 5, end)
    with pytest.raises(RemoteStorageError, match="belongs to cluster one"):
        other.copy_log_segment_data(metadata, data)


@pytest.mark.parametrize("every", [3, 4, 7, 11])
def test_torn_writes_are_clean_errors(tmp_path: Path, every: int) -> None:
    """A backend that tears writes breaks the store's contract; callers still get only
    RemoteStorageErrors (never a pyarrow, json or fsspec exception)."""
    inner = open_store(f"file://{tmp_path}/remote")
    faulty = FaultyStore(inner, fail_every=every, truncate_writes=True)
    rsm = RemoteStorageManager(faulty, cluster_id=CLUSTER, row_group_rows=8)
    rlmm = RemoteLogMetadataManager(faulty)
    errors = 0
    for i in range(12):
        try:
            copy_and_finish(rsm, rlmm, tmp_path, i * 10, 10)
            for metadata in rlmm.list_remote_log_segments(TP):
                rsm.fetch_log_segment(metadata, metadata.start_offset, 1 << 20)
            TieredStoreReader(faulty).read_records("orders", 0)
        except RemoteStorageError:
            errors += 1
        except LookupError:
            pass
    assert errors > 0


@pytest.mark.parametrize("every", [3, 4, 7])
def test_faults_leave_store_and_manifest_consistent(tmp_path: Path, every: int) -> None:
    inner = open_store(f"file://{tmp_path}/remote")
    faulty = FaultyStore(inner, fail_every=every)
    rsm = RemoteStorageManager(faulty, cluster_id=CLUSTER, row_group_rows=8)
    rlmm = RemoteLogMetadataManager(faulty)
    done = 0
    base = 0
    for _ in range(12):
        try:
            copy_and_finish(rsm, rlmm, tmp_path, base, 10)
            base += 10
            done += 1
        except RemoteStorageError as exc:
            assert "injected fault" in str(exc)
            with contextlib.suppress(RemoteStorageError):
                rlmm.load(TP)
    # A restart on a healthy store: the manifest and the objects agree, records are readable.
    restarted = RemoteLogMetadataManager(inner)
    manifest = restarted.load(TP)
    assert len(manifest.segments) == done
    prefix = partition_dir(TP.topic, TP.topic_id, 0) + "/segments"
    names = {p.rsplit("/", 1)[-1].split(".")[0] for p in inner.list(prefix)}
    assert names == {s.path.split("/")[-1].split(".")[0] for s in manifest.segments}
    rows = TieredStoreReader(inner).read_records("orders", 0) if done else None
    if rows is not None:
        assert rows.column("offset").to_pylist() == list(range(done * 10))


def test_truncated_parquet_is_a_clean_error(tmp_path: Path) -> None:
    inner = open_store(f"file://{tmp_path}/remote")
    rsm = RemoteStorageManager(inner, cluster_id=CLUSTER)
    rlmm = RemoteLogMetadataManager(inner)
    segment_id = copy_and_finish(rsm, rlmm, tmp_path, 0, 50)
    (metadata,) = rlmm.list_remote_log_segments(TP)
    assert metadata.remote_log_segment_id == segment_id
    manifest = rlmm.manifest(TP)
    path = partition_dir(TP.topic, TP.topic_id, 0) + "/" + manifest.segments[0].path
    inner.write_atomic(path, inner.read_bytes(path)[:-100])
    with pytest.raises(RemoteStorageError):
        rsm.fetch_log_segment(metadata, 0, 1000)
    with pytest.raises(RemoteStorageError):
        TieredStoreReader(inner).read_records("orders", 0)


def test_reader_with_only_the_url(moto_s3: MotoS3, tmp_path: Path) -> None:
    url = f"s3://{moto_s3.new_bucket()}/store"
    store = open_store(url, moto_s3.options())
    rsm = RemoteStorageManager(store, cluster_id=CLUSTER)
    rlmm = RemoteLogMetadataManager(store)
    copy_and_finish(rsm, rlmm, tmp_path, 0, 30)
    other_tp = TopicIdPartition(TP.topic_id, "orders", 3)
    path, end = write_segment(tmp_path, 0, 5)
    metadata, data = segment_metadata(path, 0, end, tp=other_tp)
    rlmm.add_remote_log_segment_metadata(metadata)
    rlmm.update_remote_log_segment_metadata(
        metadata.remote_log_segment_id, FINISHED, copied=rsm.copy_log_segment_data(metadata, data)
    )
    reader = TieredStoreReader.open(url, moto_s3.options())
    assert reader.list_topics() == ["orders"]
    assert reader.list_partitions("orders") == [0, 3]
    assert reader.read_records("orders", 3).num_rows == 5
    assert reader.read_records("orders", 0, 25).column("offset").to_pylist() == list(range(25, 30))
    with pytest.raises(LookupError, match="orders"):
        reader.read_records("nope", 0)
    with pytest.raises(LookupError, match=r"\[0, 3\]"):
        reader.read_records("orders", 1)
    assert uuid.UUID(int=0)  # keeps the import list honest for readers of this test
