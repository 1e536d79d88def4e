"""Offset and time indexes: lookups, truncation, persistence and sanity checks."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.storage.index import OffsetIndex, TimeIndex


def test_offset_index_lookup_and_persistence(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000100.index")
    index = OffsetIndex(path, 100, 1024)
    index.reset([])
    for offset, position in [(105, 0), (110, 400), (130, 900)]:
        index.append(offset, position)
    assert index.lookup(99) == (100, 0)
    assert index.lookup(105) == (105, 0)
    assert index.lookup(129) == (110, 400)
    assert index.lookup(10**9) == (130, 900)
    index.close()
    with open(path, "rb") as f:
        raw = f.read()
    assert raw == struct.pack(">iiiiii", 5, 0, 10, 400, 30, 900)
    loaded = OffsetIndex.load(path, 100, 1024, log_size=1000)
    assert loaded is not None and loaded.keys == [105, 110, 130]
    assert OffsetIndex.load(path, 100, 1024, log_size=900) is None  # position past the log


def test_offset_index_truncate(tmp_path: Path) -> None:
    path = str(tmp_path / "x.index")
    index = OffsetIndex(path, 0, 1024)
    index.reset([(5, 0), (10, 100), (20, 200)])
    index.truncate_to(10)
    assert index.keys == [5]
    assert os.path.getsize(path) == 8
    index.append(12, 50)
    assert OffsetIndex.load(path, 0, 1024, 1000) is not None


def test_offset_index_sanity_check_rejects_damage(tmp_path: Path) -> None:
    path = str(tmp_path / "x.index")
    with open(path, "wb") as f:
        f.write(struct.pack(">ii", 5, 10) + b"\x00\x01")  # not a multiple of 8
    assert OffsetIndex.load(path, 0, 1024, 1000) is None
    with open(path, "wb") as f:
        f.write(struct.pack(">iiii", 5, 10, 5, 20))  # offsets not increasing
    assert OffsetIndex.load(path, 0, 1024, 1000) is None
    assert OffsetIndex.load(str(tmp_path / "missing.index"), 0, 1024, 1000) is None


def test_index_full(tmp_path: Path) -> None:
    index = OffsetIndex(str(tmp_path / "x.index"), 0, 16)
    index.append(1, 0)
    assert not index.is_full
    index.append(2, 10)
    assert index.is_full


def test_time_index(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000010.timeindex")
    index = TimeIndex(path, 10, 1200)
    index.reset([])
    assert index.maybe_append(1000, 12)
    assert not index.maybe_append(1000, 15)  # not increasing: skipped
    assert index.maybe_append(2000, 20)
    assert index.lookup(999) == (-1, 10)
    assert index.lookup(1500) == (1000, 12)
    assert index.lookup(5000) == (2000, 20)
    index.close()
    with open(path, "rb") as f:
        assert f.read() == struct.pack(">qiqi", 1000, 2, 2000, 10)
    loaded = TimeIndex.load(path, 10, 1200, 100)
    assert loaded is not None and loaded.keys == [1000, 2000]
    loaded.truncate_to(20)
    assert loaded.keys == [1000]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=50, unique=True), st.integers(0, 10**6))
def test_lookup_is_greatest_entry_at_or_below(
    tmp_path_factory: object, keys: list[int], target: int
) -> None:
    keys.sort()
    index = OffsetIndex("/nonexistent/never-written.index", 0, 1 << 20)
    index.keys = list(keys)
    index.values = list(range(len(keys)))
    below = [k for k in keys if k <= target]
    expected = (below[-1], keys.index(below[-1])) if below else (0, 0)
    assert index.lookup(target) == expected
