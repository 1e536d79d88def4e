"""The segment file handle pool: LRU bound, reopen on demand, pinning, EMFILE handling."""

from __future__ import annotations

import errno
import os
import resource
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparklog.protocol.errors import ErrorCode
from sparklog.storage.config import LogConfig
from sparklog.storage.handles import (
    HandlePool,
    PooledFile,
    TooManyOpenFilesError,
    default_pool,
    derive_capacity,
    is_out_of_descriptors,
    open_unpooled,
    read_whole,
)
from sparklog.storage.log import Log
from tests.unit.storage.storage_helpers import FakeClock, batch


def _files(tmp_path: Path, pool: HandlePool, count: int) -> list[PooledFile]:
    files = []
    for i in range(count):
        path = tmp_path / f"f{i}"
        path.write_bytes(bytes([i]) * 8)
        files.append(PooledFile(str(path), os.O_RDWR, pool))
    return files


def _read(pooled: PooledFile) -> bytes:
    with pooled as fd:
        return os.pread(fd, 8, 0)


def test_capacity_bounds_open_descriptors_and_evicts_least_recently_used(
    tmp_path: Path,
) -> None:
    pool = HandlePool(3)
    files = _files(tmp_path, pool, 5)
    for pooled in files[:3]:
        _read(pooled)
    assert pool.open_count == 3
    _read(files[0])  # most recently used now: files[1] is the eldest
    _read(files[3])
    assert pool.open_count == 3
    assert not files[1].is_open
    assert files[0].is_open and files[2].is_open and files[3].is_open
    assert pool.evictions == 1


def test_a_closed_descriptor_is_reopened_with_the_same_contents(tmp_path: Path) -> None:
    pool = HandlePool(1)
    a, b = _files(tmp_path, pool, 2)
    with a as fd:
        os.pwrite(fd, b"written!", 0)
    assert _read(b) == bytes([1]) * 8
    assert not a.is_open
    assert _read(a) == b"written!"
    assert pool.opens == 3


def test_a_pinned_descriptor_is_never_closed_by_eviction(tmp_path: Path) -> None:
    pool = HandlePool(2)
    a, b, c, d = _files(tmp_path, pool, 4)
    with a as fd_a:
        with b as fd_b:
            _read(c)  # the pool is over its bound while a and b are pinned
            assert a.is_open and b.is_open
            assert os.pread(fd_a, 1, 0) == b"\x00"
            assert os.pread(fd_b, 1, 0) == b"\x01"
        _read(d)
        assert a.is_open
        assert os.pread(fd_a, 1, 0) == b"\x00"
    assert pool.open_count <= 2


def test_close_while_pinned_waits_for_the_last_release(tmp_path: Path) -> None:
    pool = HandlePool(4)
    (a,) = _files(tmp_path, pool, 1)
    with a as fd:
        a.close()
        assert a.is_open
        assert os.pread(fd, 1, 0) == b"\x00"
    assert not a.is_open
    assert pool.open_count == 0
    assert _read(a) == b"\x00" * 8  # and it can still be used afterwards


def test_pins_hold_across_threads(tmp_path: Path) -> None:
    """A flusher thread's pinned descriptor survives evictions made by the log's thread."""
    pool = HandlePool(2)
    files = _files(tmp_path, pool, 6)
    stop = threading.Event()
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            while not stop.is_set():
                with files[0] as fd:
                    assert os.pread(fd, 1, 0) == b"\x00"
                    os.fsync(fd)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            for i, pooled in enumerate(files[1:], 1):
                assert _read(pooled) == bytes([i]) * 8
    finally:
        stop.set()
        thread.join(10)
    assert not errors
    assert pool.evictions > 0


def test_derived_capacity_leaves_headroom() -> None:
    assert derive_capacity(1024) == 512
    assert derive_capacity(300) == 44  # 256 left for sockets and the rest
    assert derive_capacity(64) == 32
    assert derive_capacity(1 << 20) == 1 << 19
    assert derive_capacity(resource.RLIM_INFINITY) == 1 << 19
    assert default_pool().capacity >= 32


@pytest.fixture
def low_nofile() -> Iterator[int]:
    """RLIMIT_NOFILE lowered to just above what this process has open, for one test."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = len(os.listdir("/proc/self/fd"))
    limit = in_use + 8
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        yield limit
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_out_of_descriptors_closes_idle_files_and_retries(
    tmp_path: Path, low_nofile: int, caplog: pytest.LogCaptureFixture
) -> None:
    pool = HandlePool(64)  # bound above the rlimit: only EMFILE stops it
    files = _files(tmp_path, pool, 20)
    for i, pooled in enumerate(files):
        assert _read(pooled) == bytes([i]) * 8
    assert pool.exhaustions >= 1
    assert pool.open_count < 20
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings and "Out of file descriptors opening" in warnings[0]
    assert len(warnings) <= pool.exhaustions.bit_length()  # 1st, 2nd, 4th, ... only


def test_out_of_descriptors_with_everything_pinned_is_a_storage_error(
    tmp_path: Path, low_nofile: int
) -> None:
    pool = HandlePool(64)
    files = _files(tmp_path, pool, 20)
    pinned: list[PooledFile] = []
    with pytest.raises(TooManyOpenFilesError) as raised:
        for pooled in files:
            pooled.__enter__()
            pinned.append(pooled)
    for pooled in pinned:
        pooled.__exit__(None, None, None)
    assert raised.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert "Too many open files" in str(raised.value.message)
    assert is_out_of_descriptors(raised.value)
    assert is_out_of_descriptors(OSError(errno.EMFILE, "x"))
    assert not is_out_of_descriptors(OSError(errno.ENOSPC, "x"))
    # Once released, the same files open again.
    assert _read(files[-1]) == bytes([19]) * 8


def test_open_unpooled_frees_idle_pooled_descriptors(tmp_path: Path, low_nofile: int) -> None:
    pool = HandlePool(64)
    files = _files(tmp_path, pool, 6)
    for pooled in files:
        _read(pooled)
    held = []
    try:
        while True:  # use up the rest of the limit with raw descriptors
            held.append(os.open(str(tmp_path / "f0"), os.O_RDONLY))
    except OSError:
        pass
    try:
        fd = open_unpooled(str(tmp_path / "f1"), os.O_RDONLY, pool)
        os.close(fd)
        assert pool.open_count == 0
        for pooled in files:
            _read(pooled)  # takes the freed descriptors back
        assert read_whole(str(tmp_path / "f2"), pool) == bytes([2]) * 8
    finally:
        for fd in held:
            os.close(fd)


def test_many_logs_keep_at_most_the_pool_bound_open(tmp_path: Path) -> None:
    """200 partition logs, written and read, with a pool of 16: never more than 16 segment
    descriptors open, and every log still reads back what it was given."""
    pool = default_pool()
    capacity = pool.capacity
    pool.set_capacity(16)
    before = len(os.listdir("/proc/self/fd"))
    logs = []
    try:
        for i in range(200):
            log = Log.open(str(tmp_path / f"t-{i}"), LogConfig(), FakeClock())
            log.append_as_leader(batch(key=f"v{i}".encode()), 0)
            logs.append(log)
            assert pool.open_count <= 16
        assert len(os.listdir("/proc/self/fd")) - before <= 16
        for i, log in enumerate(logs):
            assert f"v{i}".encode() in log.read(0, 1 << 20).read_bytes()
            log.flush()
            assert pool.open_count <= 16
        logs[7].close()  # reopened from disk: the same log end offset
        reopened = Log.open(str(tmp_path / "t-7"), LogConfig(), FakeClock())
        assert reopened.log_end_offset == 1
        reopened.close()
    finally:
        for log in logs:
            log.close()
        pool.set_capacity(capacity)


def test_a_file_slice_outlives_the_segment_descriptor(tmp_path: Path) -> None:
    """Fetch responses carry FileSlices that open their own descriptor when sent, so closing
    the segment's pooled descriptor (eviction, or the log closing) never breaks them."""
    log = Log.open(str(tmp_path / "t-0"), LogConfig(), FakeClock())
    log.append_as_leader(batch(key=b"kept"), 0)
    read = log.read(0, 1 << 20)
    pool = default_pool()
    pool.close_idle()
    assert not any(s._file.is_open for s in log.segments)
    assert b"kept" in read.read_bytes()
    log.close()
    assert b"kept" in read.read_bytes()
    (region,) = read.slices
    fd = region.open_fd()
    try:
        assert os.fstat(fd).st_size == region.length
    finally:
        os.close(fd)
