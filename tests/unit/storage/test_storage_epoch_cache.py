"""Leader-epoch cache: assignment rules, OffsetForLeaderEpoch answers, truncation, file format."""

from __future__ import annotations

from pathlib import Path

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
    cache.assign(2, 30)  # a lower epoch at a lower offset replaces epoch 3
    assert cache.entries == [(1, 0), (2, 30)]
    cache.assign(5, 20)  # offset below the start of epoch 2
    assert cache.entries == [(1, 0), (5, 20)]


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
