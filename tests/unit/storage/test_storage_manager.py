"""LogManager: checkpoints, clean-shutdown marker, crash recovery, index rebuilds, deletion."""

from __future__ import annotations

import os
from pathlib import Path

from sparklog.protocol.records import iter_batches
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from sparklog.storage.manager import CLEAN_SHUTDOWN_FILE, LogManager
from tests.unit.storage.storage_helpers import FakeClock, batch

CONFIG = LogConfig(internal_segment_bytes=600, index_interval_bytes=100)


def manager(tmp_path: Path, clock: FakeClock, dirs: int = 1) -> LogManager:
    m = LogManager([str(tmp_path / f"d{i}") for i in range(dirs)], CONFIG, clock)
    m.load()
    return m


def fill(log: Log, batches: int, epoch: int = 1) -> None:
    for _ in range(batches):
        log.append_as_leader(batch(3), epoch)


def all_batches(log: Log) -> list[bytes]:
    out = []
    for seg in log.segments:
        data = seg.read_batch_bytes(0, seg.size)
        out += [data[p : p + h.size_in_bytes] for p, h in iter_batches(data)]
    return out


def test_clean_shutdown_and_reload(tmp_path: Path, clock: FakeClock) -> None:
    m = manager(tmp_path, clock, dirs=2)
    a = m.create_log("orders", 0, b"\x07" * 16)
    b = m.create_log("orders", 1, b"\x07" * 16)
    assert os.path.dirname(a.directory) != os.path.dirname(b.directory)  # spread over dirs
    fill(a, 10)
    fill(b, 2)
    a.high_watermark = 21
    expected = all_batches(a)
    m.shutdown()
    d0 = tmp_path / "d0"
    assert (d0 / CLEAN_SHUTDOWN_FILE).exists()
    assert (d0 / "recovery-point-offset-checkpoint").read_text() == "0\n1\norders 0 30\n"
    assert (d0 / "replication-offset-checkpoint").read_text() == "0\n1\norders 0 21\n"
    assert (d0 / "log-start-offset-checkpoint").read_text() == "0\n1\norders 0 0\n"

    m2 = manager(tmp_path, clock, dirs=2)
    assert not (d0 / CLEAN_SHUTDOWN_FILE).exists()  # removed before serving
    a2 = m2.get_log("orders", 0)
    assert a2 is not None and all_batches(a2) == expected
    assert (a2.log_end_offset, a2.recovery_point, a2.high_watermark) == (30, 30, 21)
    assert a2.topic_id == b"\x07" * 16
    assert not any(s.indexes_rebuilt for s in a2.segments)
    assert {(log.topic, log.partition) for log in m2.all_logs()} == {("orders", 0), ("orders", 1)}


def test_the_broker_epoch_of_a_clean_shutdown_is_remembered(
    tmp_path: Path, clock: FakeClock
) -> None:
    m = manager(tmp_path, clock, dirs=2)
    assert m.previous_broker_epoch == -1  # never shut down cleanly
    m.shutdown(broker_epoch=42)
    m2 = manager(tmp_path, clock, dirs=2)
    assert m2.previous_broker_epoch == 42
    m2.checkpoint()  # a crash now: no marker is written
    m3 = manager(tmp_path, clock, dirs=2)
    assert m3.previous_broker_epoch == -1
    m3.shutdown(broker_epoch=7)
    os.remove(tmp_path / "d1" / CLEAN_SHUTDOWN_FILE)  # one dir did not shut down cleanly
    assert manager(tmp_path, clock, dirs=2).previous_broker_epoch == -1


def test_crash_recovers_a_prefix(tmp_path: Path, clock: FakeClock) -> None:
    m = manager(tmp_path, clock)
    log = m.create_log("t", 0, None)
    fill(log, 8)
    log.flush()
    m.checkpoint()
    durable = all_batches(log)
    fill(log, 8)
    everything = all_batches(log)
    # Tear the active segment in the middle of its last batch; no clean shutdown.
    active = log.active_segment.path
    os.truncate(active, os.path.getsize(active) - 5)
    m2 = manager(tmp_path, clock)
    log2 = m2.get_log("t", 0)
    assert log2 is not None
    recovered = all_batches(log2)
    assert recovered == everything[: len(recovered)]
    assert len(recovered) == len(everything) - 1
    assert recovered[: len(durable)] == durable
    assert log2.log_end_offset == 3 * len(recovered)
    assert log2.recovery_point == 24


def test_corruption_in_a_middle_segment_drops_later_segments(
    tmp_path: Path, clock: FakeClock
) -> None:
    m = manager(tmp_path, clock)
    log = m.create_log("t", 0, None)
    fill(log, 20, epoch=1)
    fill(log, 5, epoch=2)
    assert len(log.segments) > 3
    victim = log.segments[1]
    with open(victim.path, "r+b") as f:
        f.seek(victim.size - 3)
        f.write(b"\xff\xff\xff")  # damage the CRC-covered tail of its last batch
    m2 = manager(tmp_path, clock)
    log2 = m2.get_log("t", 0)
    assert log2 is not None
    assert len(log2.segments) == 2
    assert log2.log_end_offset == log2.segments[-1].next_offset < 60
    assert log2.epoch_cache.entries == [(1, 0)]  # epoch 2 started after the cut


def test_missing_or_corrupt_index_is_rebuilt_after_clean_shutdown(
    tmp_path: Path, clock: FakeClock
) -> None:
    m = manager(tmp_path, clock)
    log = m.create_log("t", 0, None)
    fill(log, 12)
    seg0, seg1 = log.segments[0], log.segments[1]
    original = [(s.offset_index.to_bytes(), s.time_index.to_bytes()) for s in (seg0, seg1)]
    m.shutdown()
    os.remove(seg0.offset_index.path)
    with open(seg1.offset_index.path, "ab") as f:
        f.write(b"\x00\x00\x00")  # no longer a multiple of 8
    m2 = manager(tmp_path, clock)
    log2 = m2.get_log("t", 0)
    assert log2 is not None
    new0, new1 = log2.segments[0], log2.segments[1]
    assert new0.indexes_rebuilt and new1.indexes_rebuilt
    assert [(s.offset_index.to_bytes(), s.time_index.to_bytes()) for s in (new0, new1)] == original
    assert Path(new0.offset_index.path).read_bytes() == original[0][0]


def test_temp_files_and_deleted_dirs_are_swept(tmp_path: Path, clock: FakeClock) -> None:
    m = manager(tmp_path, clock)
    log = m.create_log("t", 0, None)
    fill(log, 2)
    m.shutdown()
    directory = Path(log.directory)
    for name in [
        "00000000000000000000.log.deleted",
        "00000000000000000003.cleaned",
        "00000000000000000099.index",
        "leader-epoch-checkpoint.tmp",
    ]:
        (directory / name).write_bytes(b"junk")
    leftover = tmp_path / "d0" / "gone-0.abc-delete"
    leftover.mkdir()
    m2 = manager(tmp_path, clock)
    names = sorted(os.listdir(directory))
    assert names == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "00000000000000000006.snapshot",  # the producer state at clean shutdown
        "leader-epoch-checkpoint",
    ]
    assert not leftover.exists()
    assert m2.get_log("gone", 0) is None


def test_delete_log(tmp_path: Path, clock: FakeClock) -> None:
    m = manager(tmp_path, clock)
    log = m.create_log("t", 3, None)
    fill(log, 2)
    assert m.delete_log("t", 3)
    assert not os.path.exists(log.directory)
    assert os.listdir(tmp_path / "d0") and not [
        n for n in os.listdir(tmp_path / "d0") if n.startswith("t-3")
    ]
    assert m.get_log("t", 3) is None and not m.delete_log("t", 3)


def test_retention_pass_and_flush_due(tmp_path: Path, clock: FakeClock) -> None:
    config = LogConfig(
        internal_segment_bytes=600, retention_ms=1000, flush_ms=500, file_delete_delay_ms=10
    )
    m = LogManager([str(tmp_path / "d")], config, clock)
    m.load()
    log = m.create_log("t", 0, None)
    for _ in range(10):
        log.append_as_leader(batch(3, ts=clock.now_ms), 0)
    log.high_watermark = log.log_end_offset
    assert m.flush_due(clock.now_ms) == 0
    clock.advance(600)
    assert m.flush_due(clock.now_ms) == 1 and log.recovery_point == log.log_end_offset
    clock.advance(2000)
    assert m.retention_pass(clock.now_ms) > 0
    assert any(n.endswith(".deleted") for n in os.listdir(log.directory))
    clock.advance(20)
    m.retention_pass(clock.now_ms)
    assert not any(n.endswith(".deleted") for n in os.listdir(log.directory))


def test_index_missing_its_tail_or_pointing_nowhere_is_rebuilt(
    tmp_path: Path, clock: FakeClock
) -> None:
    m = manager(tmp_path, clock)
    log = m.create_log("t", 0, None)
    fill(log, 12)
    seg0, seg1 = log.segments[0], log.segments[1]
    assert len(seg0.offset_index) >= 2 and len(seg1.offset_index) >= 1
    original = [s.offset_index.to_bytes() for s in (seg0, seg1)]
    m.shutdown()
    os.truncate(seg0.offset_index.path, 8)  # a valid shape, but entries lost
    with open(seg1.offset_index.path, "r+b") as f:
        f.seek(len(original[1]) - 4)
        f.write((1).to_bytes(4, "big"))  # the last entry now points inside a batch
    log2 = manager(tmp_path, clock).get_log("t", 0)
    assert log2 is not None
    assert [s.offset_index.to_bytes() for s in log2.segments[:2]] == original
    assert all(s.indexes_rebuilt for s in log2.segments[:2])
