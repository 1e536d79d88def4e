"""The remote transaction index (``.txnindex`` objects, KIP-405 ``IndexType.TRANSACTION``):
layout codec, upload with each copy, reads (absent = none, cached), deletion and orphans."""

from __future__ import annotations

import builtins
import dataclasses
from pathlib import Path
from typing import IO

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.storage.txn_index import AbortedTxn as LocalAbortedTxn
from sparklog.storage.txn_index import encode_entry
from sparklog.tiering.layout import (
    TXN_INDEX_SUFFIX,
    LayoutError,
    format_txn_index,
    parse_segment_object,
    parse_txn_index,
)
from sparklog.tiering.metadata import AbortedTxn, LogSegmentData, RemoteLogSegmentState
from sparklog.tiering.rlmm import RemoteLogMetadataManager
from sparklog.tiering.rsm import (
    RemoteResourceNotFoundError,
    RemoteStorageError,
    RemoteStorageManager,
    segment_object_paths,
)
from sparklog.tiering.store import ObjectStore, open_store
from tests.unit.tiering.helpers import TP, segment_metadata, write_segment

_I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@st.composite
def _entries(draw: st.DrawFn) -> list[AbortedTxn]:
    count = draw(st.integers(min_value=0, max_value=20))
    last = draw(st.integers(min_value=0, max_value=1_000))
    entries = []
    for _ in range(count):
        last += draw(st.integers(min_value=1, max_value=1_000))
        first = draw(st.integers(min_value=0, max_value=last))
        entries.append(AbortedTxn(draw(_I64), first, last, draw(_I64)))
    return entries


@settings(max_examples=200, deadline=None)
@given(_entries())
def test_codec_round_trips_and_matches_the_local_index_format(entries: list[AbortedTxn]) -> None:
    data = format_txn_index(entries)
    assert len(data) == 34 * len(entries)
    assert parse_txn_index(data) == tuple(entries)
    # Same bytes as the broker's own .txnindex files (Kafka's AbortedTxn format).
    local = b"".join(
        encode_entry(
            LocalAbortedTxn(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
        )
        for t in entries
    )
    assert data == local


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00" * 33, "multiple of 34"),
        (format_txn_index([AbortedTxn(1, 0, 5, 6)]) + b"\x00", "multiple of 34"),
        (b"\x00\x01" + format_txn_index([AbortedTxn(1, 0, 5, 6)])[2:], "version 1"),
        (format_txn_index([AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 0, 5, 6)]), "out of order"),
        (format_txn_index([AbortedTxn(1, 9, 5, 6)]), "out of order"),
    ],
)
def test_damaged_index_is_a_layout_error(data: bytes, message: str) -> None:
    with pytest.raises(LayoutError, match=message):
        parse_txn_index(data)


def test_txnindex_objects_are_segment_objects() -> None:
    name = f"{7:020d}-{'A' * 22}{TXN_INDEX_SUFFIX}"
    assert parse_segment_object(name) == (7, "A" * 22, TXN_INDEX_SUFFIX)


class CountingStore:
    """Counts ``read_bytes`` calls per path on top of a real store."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.reads: dict[str, int] = {}

    @property
    def url(self) -> str:
        return self.inner.url

    def read_bytes(self, path: str) -> bytes:
        self.reads[path] = self.reads.get(path, 0) + 1
        return self.inner.read_bytes(path)

    def open_input(self, path: str) -> IO[bytes]:
        return self.inner.open_input(path)

    def write_atomic(self, path: str, data: bytes) -> None:
        self.inner.write_atomic(path, data)

    def put_file(self, path: str, local_path: str) -> None:
        self.inner.put_file(path, local_path)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def size(self, path: str) -> int:
        return self.inner.size(path)

    def list(self, prefix: str = "") -> builtins.list[str]:
        return self.inner.list(prefix)

    def list_dir(self, prefix: str = "") -> builtins.list[str]:
        return self.inner.list_dir(prefix)

    def delete(self, path: str) -> None:
        self.inner.delete(path)


ENTRIES = (AbortedTxn(1000, 3, 17, 18), AbortedTxn(1001, 12, 25, 26))


def test_copy_uploads_the_segment_transaction_index(tmp_path: Path) -> None:
    store = CountingStore(open_store(f"file://{tmp_path}/store"))
    rsm = RemoteStorageManager(store, cluster_id="c")
    path, end = write_segment(tmp_path, 0, 40)
    metadata, data = segment_metadata(path, 0, end)
    rsm.copy_log_segment_data(
        metadata, LogSegmentData(path, data.leader_epochs, transaction_index=ENTRIES)
    )
    object_path = segment_object_paths(metadata)[TXN_INDEX_SUFFIX]
    assert object_path.endswith(f"segments/{0:020d}-{metadata.segment_id}.txnindex")
    assert store.read_bytes(object_path) == format_txn_index(ENTRIES)
    assert rsm.fetch_transaction_index(metadata) == ENTRIES


def test_segment_without_aborts_gets_a_zero_length_index(tmp_path: Path) -> None:
    store = open_store(f"file://{tmp_path}/store")
    rsm = RemoteStorageManager(store, cluster_id="c")
    path, end = write_segment(tmp_path, 0, 40)
    metadata, data = segment_metadata(path, 0, end)
    rsm.copy_log_segment_data(metadata, data)
    assert store.read_bytes(segment_object_paths(metadata)[TXN_INDEX_SUFFIX]) == b""
    assert rsm.fetch_transaction_index(metadata) == ()


def test_absent_index_means_no_aborted_transactions(tmp_path: Path) -> None:
    """Stores written before the .txnindex object existed stay readable."""
    store = CountingStore(open_store(f"file://{tmp_path}/store"))
    rsm = RemoteStorageManager(store, cluster_id="c")
    path, end = write_segment(tmp_path, 0, 40)
    metadata, data = segment_metadata(path, 0, end)
    rsm.copy_log_segment_data(
        metadata, LogSegmentData(path, data.leader_epochs, transaction_index=ENTRIES)
    )
    object_path = segment_object_paths(metadata)[TXN_INDEX_SUFFIX]
    store.delete(object_path)
    fresh = RemoteStorageManager(store, cluster_id="c")
    assert fresh.fetch_transaction_index(metadata) == ()
    assert fresh.fetch_log_segment(metadata, 0)  # the segment itself still serves


def test_index_reads_are_cached_and_a_copy_refreshes_them(tmp_path: Path) -> None:
    store = CountingStore(open_store(f"file://{tmp_path}/store"))
    rsm = RemoteStorageManager(store, cluster_id="c")
    path, end = write_segment(tmp_path, 0, 40)
    metadata, data = segment_metadata(path, 0, end)
    rsm.copy_log_segment_data(
        metadata, LogSegmentData(path, data.leader_epochs, transaction_index=ENTRIES)
    )
    object_path = segment_object_paths(metadata)[TXN_INDEX_SUFFIX]
    for _ in range(5):
        assert rsm.fetch_transaction_index(metadata) == ENTRIES
    assert store.reads[object_path] == 1
    # A retried copy of the same segment id may carry a different index: never stale.
    rsm.copy_log_segment_data(
        metadata, LogSegmentData(path, data.leader_epochs, transaction_index=ENTRIES[:1])
    )
    assert rsm.fetch_transaction_index(metadata) == ENTRIES[:1]
    assert store.reads[object_path] == 2


def test_cache_is_bounded(tmp_path: Path) -> None:
    store = CountingStore(open_store(f"file://{tmp_path}/store"))
    rsm = RemoteStorageManager(store, cluster_id="c", txn_index_cache_entries=3)
    metadatas = []
    for base in (0, 40, 80):
        path, end = write_segment(tmp_path, base, 40)
        metadata, data = segment_metadata(path, base, end)
        index = (AbortedTxn(1, base, base + 5, base + 6), AbortedTxn(2, base, base + 9, base + 10))
        rsm.copy_log_segment_data(
            metadata, LogSegmentData(path, data.leader_epochs, transaction_index=index)
        )
        metadatas.append(metadata)
    for metadata in metadatas:
        rsm.fetch_transaction_index(metadata)
    rsm.fetch_transaction_index(metadatas[-1])
    rsm.fetch_transaction_index(metadatas[0])
    paths = [segment_object_paths(m)[TXN_INDEX_SUFFIX] for m in metadatas]
    assert store.reads[paths[-1]] == 1  # most recent stayed cached
    assert store.reads[paths[0]] == 2  # evicted, read again


def test_damaged_index_is_a_remote_storage_error(tmp_path: Path) -> None:
    store = open_store(f"file://{tmp_path}/store")
    rsm = RemoteStorageManager(store, cluster_id="c")
    path, end = write_segment(tmp_path, 0, 40)
    metadata, data = segment_metadata(path, 0, end)
    rsm.copy_log_segment_data(metadata, data)
    store.write_atomic(segment_object_paths(metadata)[TXN_INDEX_SUFFIX], b"\x01" * 35)
    with pytest.raises(RemoteStorageError, match="multiple of 34") as info:
        rsm.fetch_transaction_index(metadata)
    assert not isinstance(info.value, RemoteResourceNotFoundError)


def test_delete_removes_the_index_and_drops_it_from_the_cache(tmp_path: Path) -> None:
    store = open_store(f"file://{tmp_path}/store")
    rsm = RemoteStorageManager(store, cluster_id="c")
    path, end = write_segment(tmp_path, 0, 40)
    metadata, data = segment_metadata(path, 0, end)
    rsm.copy_log_segment_data(
        metadata, LogSegmentData(path, data.leader_epochs, transaction_index=ENTRIES)
    )
    assert rsm.fetch_transaction_index(metadata) == ENTRIES
    rsm.delete_log_segment_data(metadata)
    assert not store.exists(segment_object_paths(metadata)[TXN_INDEX_SUFFIX])
    assert store.list(f"topics/{TP.topic}") == []
    assert rsm.fetch_transaction_index(metadata) == ()


def test_orphan_index_objects_are_deleted_on_load(tmp_path: Path) -> None:
    store = open_store(f"file://{tmp_path}/store")
    rsm = RemoteStorageManager(store, cluster_id="c")
    rlmm = RemoteLogMetadataManager(store)
    kept_path, kept_end = write_segment(tmp_path, 0, 40)
    kept, kept_data = segment_metadata(kept_path, 0, kept_end)
    rlmm.add_remote_log_segment_metadata(kept)
    copied = rsm.copy_log_segment_data(
        kept, LogSegmentData(kept_path, kept_data.leader_epochs, transaction_index=ENTRIES)
    )
    rlmm.update_remote_log_segment_metadata(
        kept.remote_log_segment_id, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, copied=copied
    )
    orphan_path, orphan_end = write_segment(tmp_path, 40, 40)
    orphan, orphan_data = segment_metadata(orphan_path, 40, orphan_end)
    rsm.copy_log_segment_data(orphan, orphan_data)  # a copy that never reached the manifest

    RemoteLogMetadataManager(store).load(TP)
    assert store.exists(segment_object_paths(kept)[TXN_INDEX_SUFFIX])
    assert not any(store.exists(p) for p in segment_object_paths(orphan).values())


def test_read_committed_scans_list_only_segments_that_may_hold_markers(tmp_path: Path) -> None:
    """A segment whose manifest entry counts no transactional row has no ABORT marker, so an
    empty .txnindex: ``transaction_index_segments`` leaves it out (an entry without counts is
    kept); segment lookups by offset find every finished segment, gaps answer None."""
    store = open_store(f"file://{tmp_path}/store")
    rsm = RemoteStorageManager(store, cluster_id="c")
    rlmm = RemoteLogMetadataManager(store)
    finished = []
    for base, transactional in ((0, 0), (40, 3), (80, None), (120, 0)):
        path, end = write_segment(tmp_path, base, 40)
        metadata, data = segment_metadata(path, base, end)
        rlmm.add_remote_log_segment_metadata(metadata)
        copied = rsm.copy_log_segment_data(metadata, data)
        rlmm.update_remote_log_segment_metadata(
            metadata.remote_log_segment_id,
            RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
            copied=dataclasses.replace(copied, transactional_records=transactional),
        )
        finished.append(metadata)

    def listed(from_offset: int, below: int) -> list[int]:
        return [m.start_offset for m in rlmm.transaction_index_segments(TP, from_offset, below)]

    assert listed(0, 1 << 62) == [40, 80]
    assert listed(81, 1 << 62) == [80]
    assert listed(0, 80) == [40]
    for metadata in finished:
        for offset in (metadata.start_offset, metadata.end_offset):
            found = rlmm.remote_log_segment_metadata(TP, offset)
            assert found is not None
            assert found.remote_log_segment_id == metadata.remote_log_segment_id
    assert rlmm.remote_log_segment_metadata(TP, finished[-1].end_offset + 1) is None
