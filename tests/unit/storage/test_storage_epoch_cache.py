"""Leader-epoch cache: assignment rules, OffsetForLeaderEpoch answers, truncation, file format."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from sparklog.storage.epoch_cache import LeaderEpochCache


def make(tmp_path: Path, leo: list[int]) -> LeaderEpochCache:
    return LeaderEpochCache(str(tmp_path), lambda: leo[0])


def test_assign_and_file_format(tmp_path: Path) -> None:
    leo = [100]
    cache = make(tmp_path, leo)
    cache.assign(1, 0)
    cache.assign(1, 5)  # same epoch, later offset: no change
    cache.assign(3, 40)
    cache.assign(4, 70)
    assert cache.entries == [(1, 0), (3, 40), (4, 70)]
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n3\n1 0\n3 40\n4 70\n"
    assert make(tmp_path, leo).entries == cache.entries


def test_assign_removes_contradicting_entries(tmp_path: Path) -> None:
    cache = make(tmp_path, [100])
    cache.assign(1, 0)
    cache.assign(3, 40)
    cache.assign(3, 30)  # the latest epoch at a lower offset moves its start down
    assert cache.entries == [(1, 0), (3, 30)]
    cache.assign(5, 20)  # a newer epoch at an offset below the start of epoch 3
    assert cache.entries == [(1, 0), (5, 20)]


def test_assign_never_rewrites_newer_history_with_an_older_epoch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 16: a stale leadership (epoch 2, replayed from old metadata) assigned at the log
    end must not drop the entries of the leaders that came after it."""
    cache = make(tmp_path, [38_044])
    cache.assign(1, 0)
    cache.assign(3, 4_053)
    cache.assign(7, 20_000)
    before = (tmp_path / "leader-epoch-checkpoint").read_text()
    with caplog.at_level(logging.WARNING, logger="sparklog.storage.epoch_cache"):
        cache.assign(2, 38_044)  # older epoch at the log end
        cache.assign(5, 30_000)  # older epoch inside the latest epoch's range
        cache.assign(6, 1_000)  # older epoch below everything
    assert cache.entries == [(1, 0), (3, 4_053), (7, 20_000)]
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == before
    assert cache.end_offset_for_epoch(7) == (7, 38_044)
    assert sum("Ignoring leader epoch" in r.getMessage() for r in caplog.records) == 3
    # Truncation still removes newer entries; then the older epoch is the latest again.
    cache.truncate_from_end(20_000)
    cache.assign(7, 20_000)
    assert cache.entries == [(1, 0), (3, 4_053), (7, 20_000)]
    cache.assign(8, 38_044)
    assert cache.entries[-1] == (8, 38_044)


def test_end_offset_for_epoch(tmp_path: Path) -> None:
    cache = make(tmp_path, [100])
    assert cache.end_offset_for_epoch(1) == (-1, -1)
    cache.assign(2, 10)
    cache.assign(4, 40)
    cache.assign(6, 70)
    assert cache.end_offset_for_epoch(-1) == (-1, -1)
    assert cache.end_offset_for_epoch(6) == (6, 100)  # latest: the log end offset
    assert cache.end_offset_for_epoch(4) == (4, 70)
    assert cache.end_offset_for_epoch(5) == (4, 70)  # unknown epoch: largest below it
    assert cache.end_offset_for_epoch(1) == (1, 10)  # older than all: first start offset
    assert cache.end_offset_for_epoch(7) == (-1, -1)


def test_truncation(tmp_path: Path) -> None:
    cache = make(tmp_path, [100])
    for epoch, start in [(1, 0), (2, 10), (3, 20), (4, 30)]:
        cache.assign(epoch, start)
    cache.truncate_from_end(20)
    assert cache.entries == [(1, 0), (2, 10)]
    cache.truncate_from_start(15)
    assert cache.entries == [(2, 15)]
    assert cache.epoch_for_offset(16) == 2 and cache.epoch_for_offset(3) == -1
    cache.clear()
    assert make(tmp_path, [0]).entries == []


def test_garbage_file_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n2\n1 0\n")
    assert make(tmp_path, [0]).entries == []
