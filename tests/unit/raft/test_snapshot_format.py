"""KRaft snapshot bytes and stores: header/footer framing, corruption, atomic freeze on disk."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.raft.snapshot_format import SnapshotFormatError, build_snapshot, parse_snapshot
from sparklog.raft.snapshots import (
    FileSnapshotStore,
    MemorySnapshotStore,
    SnapshotId,
    SnapshotNotFoundError,
    SnapshotStore,
    read_all,
)
from sparklog.raft.voters import VoterSet
from tests.sim.cluster import voter_node

SID = SnapshotId(42, 3)
VOTERS = VoterSet.of([voter_node(1), voter_node(2), voter_node(3)])


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.binary(max_size=300), max_size=60),
    epoch=st.integers(0, 1000),
    with_voters=st.booleans(),
    batch_bytes=st.integers(64, 4096),
)
def test_build_then_parse_round_trips(
    values: list[bytes], epoch: int, with_voters: bool, batch_bytes: int
) -> None:
    sid = SnapshotId(len(values) + 10, epoch)
    data = build_snapshot(
        sid,
        values,
        last_contained_timestamp=123,
        kraft_version=1 if with_voters else 0,
        voters=VOTERS,
        max_batch_bytes=batch_bytes,
    )
    contents = parse_snapshot(sid, data)
    assert list(contents.records) == values
    assert contents.last_contained_timestamp == 123
    assert contents.size_in_bytes == len(data)
    if with_voters:
        assert contents.voters == VOTERS and contents.kraft_version == 1
    else:
        assert contents.voters is None and contents.kraft_version is None


def _snapshot() -> bytes:
    return build_snapshot(
        SID, [b"a" * 50, b"b" * 70, b"c"], last_contained_timestamp=9, kraft_version=1,
        voters=VOTERS, max_batch_bytes=100,
    )  # fmt: skip


def test_every_truncation_is_rejected() -> None:
    data = _snapshot()
    for cut in range(len(data)):
        with pytest.raises(SnapshotFormatError):
            parse_snapshot(SID, data[:cut])


def test_trailing_bytes_and_reordered_batches_are_rejected() -> None:
    data = _snapshot()
    with pytest.raises(SnapshotFormatError):
        parse_snapshot(SID, data + b"\x00" * 3)
    with pytest.raises(SnapshotFormatError):
        parse_snapshot(SID, data + data)  # batches after the footer
    header_only = build_snapshot(SID, [], last_contained_timestamp=1)
    # An empty snapshot is header + footer; dropping the header must fail.
    footer_start = len(header_only) // 2
    assert parse_snapshot(SID, header_only).records == ()
    with pytest.raises(SnapshotFormatError):
        parse_snapshot(SID, header_only[footer_start:])


@settings(max_examples=200, deadline=None)
@given(position=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_a_corrupted_byte_never_raises_anything_else(position: int, byte: int) -> None:
    data = bytearray(_snapshot())
    position %= len(data)
    data[position] = byte
    with contextlib.suppress(SnapshotFormatError):
        parse_snapshot(SID, bytes(data))


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SnapshotStore:
    if request.param == "memory":
        return MemorySnapshotStore()
    return FileSnapshotStore(str(tmp_path))


def test_store_conformance(store: SnapshotStore) -> None:
    assert store.latest() is None
    writer = store.begin(SnapshotId(10, 1))
    writer.append(b"hello ")
    writer.append(b"world")
    assert writer.size == 11
    assert store.latest() is None  # a partial snapshot is invisible
    with pytest.raises(SnapshotNotFoundError):
        store.size(SnapshotId(10, 1))
    writer.freeze()
    with pytest.raises(ValueError):
        writer.append(b"more")
    assert store.latest() == SnapshotId(10, 1)
    assert store.read(SnapshotId(10, 1), 6, 3) == b"wor"
    assert read_all(store, SnapshotId(10, 1)) == b"hello world"
    aborted = store.begin(SnapshotId(30, 2))
    aborted.append(b"x")
    aborted.abort()
    second = store.begin(SnapshotId(20, 2))
    second.append(b"second")
    second.freeze()
    assert store.snapshot_ids() == [SnapshotId(10, 1), SnapshotId(20, 2)]
    assert store.delete_before(SnapshotId(20, 2)) == 1
    assert store.snapshot_ids() == [SnapshotId(20, 2)]
    with pytest.raises(SnapshotNotFoundError):
        store.read(SnapshotId(10, 1), 0, 1)


def test_file_store_layout_and_crash_leftovers(tmp_path: Path) -> None:
    store = FileSnapshotStore(str(tmp_path))
    writer = store.begin(SnapshotId(1234, 5))
    writer.append(b"data")
    partial = tmp_path / "00000000000000001234-0000000005.checkpoint.part"
    assert partial.exists()
    # A crash before freeze: the reopened store drops the partial file and sees nothing.
    reopened = FileSnapshotStore(str(tmp_path))
    assert not partial.exists() and reopened.latest() is None
    writer = reopened.begin(SnapshotId(1234, 5))
    writer.append(b"data")
    writer.freeze()
    assert sorted(os.listdir(tmp_path)) == ["00000000000000001234-0000000005.checkpoint"]
    assert SnapshotId.parse_file_name("00000000000000001234-0000000005.checkpoint") == (
        SnapshotId(1234, 5)
    )
    assert SnapshotId.parse_file_name("00000000000000001234.log") is None
    (tmp_path / "00000000000000000001-0000000001.checkpoint.deleted").write_bytes(b"x")
    assert FileSnapshotStore(str(tmp_path)).snapshot_ids() == [SnapshotId(1234, 5)]
    assert sorted(os.listdir(tmp_path)) == ["00000000000000001234-0000000005.checkpoint"]
