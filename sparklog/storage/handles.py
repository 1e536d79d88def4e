"""A bounded, least-recently-used pool of the open file descriptors of segment files.

A node hosting 20,000 partitions cannot keep a ``.log``, ``.index`` and ``.timeindex``
descriptor open per segment under ``ulimit -n 1024``. Kafka opens indexes on demand
(``LazyIndex``); here every segment file is a :class:`PooledFile` that opens its descriptor on
first use and may have it closed again whenever the pool is over its bound.

Contract and invariants:
- At most :attr:`HandlePool.capacity` pooled descriptors are open, except while more than that
  are *pinned* at once (a pinned descriptor is never closed; the pool then runs over its bound
  until they are released).
- A descriptor is pinned for exactly the extent of ``with pooled as fd:``; callers never keep
  the integer past that block. Outside it the descriptor may be closed at any time (by another
  file's open, on any thread) and is reopened transparently by the next ``with``.
- :meth:`PooledFile.close` while pinned (another thread is using the file) closes the
  descriptor when the last pin is released.
- The pool is shared by the log's thread and the threads that flush and clean logs, so its
  bookkeeping is under a lock; it starts no thread itself.
- Running out of descriptors (EMFILE / ENFILE) while opening closes every idle pooled
  descriptor and retries once (with a warning on the 1st, 2nd, 4th, 8th, ... time, so a
  shortage is visible without flooding the log); if the open still fails,
  :class:`TooManyOpenFilesError` (a :class:`~sparklog.storage.errors.StorageError`,
  KAFKA_STORAGE_ERROR) is raised. It is a per-request, per-partition failure the node
  survives, never a log directory failure: the disk is fine and the same open succeeds once
  descriptors are free again.
- The process-wide pool (:func:`default_pool`) starts with a capacity derived from
  ``RLIMIT_NOFILE`` (:func:`derive_capacity`); the node may change it once at start
  (``sparklog.log.open.files.max``).
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import threading
from collections import OrderedDict
from typing import Final

from sparklog.protocol.errors import ErrorCode
from sparklog.storage.errors import StorageError

__all__ = [
    "HandlePool",
    "PooledFile",
    "TooManyOpenFilesError",
    "configure_default_pool",
    "default_pool",
    "derive_capacity",
    "is_out_of_descriptors",
    "open_unpooled",
    "read_whole",
]

_log = logging.getLogger(__name__)

# Descriptors kept out of the pool's reach: sockets, the metadata log, checkpoints, pipes.
MIN_HEADROOM: Final = 256
MIN_CAPACITY: Final = 32
_EXHAUSTED: Final = frozenset({errno.EMFILE, errno.ENFILE})


def is_out_of_descriptors(exc: BaseException) -> bool:
    """True for EMFILE / ENFILE (and :class:`TooManyOpenFilesError`): the process or the
    system ran out of file descriptors. Not a disk failure: nothing to take offline."""
    if isinstance(exc, TooManyOpenFilesError):
        return True
    return isinstance(exc, OSError) and exc.errno in _EXHAUSTED


class TooManyOpenFilesError(StorageError):
    """A segment file could not be opened: the process is out of file descriptors."""

    default_code = ErrorCode.KAFKA_STORAGE_ERROR


def derive_capacity(soft_limit: int | None = None) -> int:
    """Half the ``RLIMIT_NOFILE`` soft limit, leaving at least :data:`MIN_HEADROOM`
    descriptors for everything else; never below :data:`MIN_CAPACITY`."""
    if soft_limit is None:
        soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft_limit == resource.RLIM_INFINITY or soft_limit <= 0:
        soft_limit = 1 << 20
    return max(MIN_CAPACITY, min(soft_limit // 2, soft_limit - MIN_HEADROOM))


class PooledFile:
    """One file opened on demand through a :class:`HandlePool`.

    ``with pooled as fd:`` yields an open descriptor, pinned for the block. ``flags`` are used
    for every (re)open, so they should not include ``O_TRUNC`` or ``O_EXCL``.
    """

    __slots__ = ("_close_pending", "_fd", "_pins", "flags", "path", "pool")

    def __init__(self, path: str, flags: int, pool: HandlePool | None = None) -> None:
        self.path = path
        self.flags = flags
        self.pool = pool if pool is not None else default_pool()
        self._fd: int | None = None
        self._pins = 0
        self._close_pending = False

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> int:
        return self.pool.acquire(self)

    def __exit__(self, *exc_info: object) -> None:
        self.pool.release(self)

    def close(self) -> None:
        """Close the descriptor now, or when its last pin is released."""
        self.pool.close(self)

    def __repr__(self) -> str:
        return f"PooledFile({self.path!r}, open={self.is_open}, pins={self._pins})"


class HandlePool:
    """At most ``capacity`` open :class:`PooledFile` descriptors, least recently used closed
    first."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = capacity
        self._open: OrderedDict[PooledFile, None] = OrderedDict()
        self._lock = threading.Lock()
        # Counters for metrics and tests.
        self.opens = 0
        self.evictions = 0
        self.exhaustions = 0

    @property
    def open_count(self) -> int:
        return len(self._open)

    def set_capacity(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        with self._lock:
            self.capacity = capacity
            self._evict_locked(len(self._open) - capacity)

    def acquire(self, pooled: PooledFile) -> int:
        """Pin ``pooled`` and return its descriptor, opening it (and closing idle ones)."""
        with self._lock:
            fd = pooled._fd
            if fd is not None:
                self._open.move_to_end(pooled)
                pooled._pins += 1
                return fd
            self._evict_locked(len(self._open) + 1 - self.capacity)
            fd = self._open_locked(pooled)
            pooled._fd = fd
            pooled._pins += 1
            self._open[pooled] = None
            self.opens += 1
            return fd

    def release(self, pooled: PooledFile) -> None:
        with self._lock:
            pooled._pins -= 1
            if pooled._pins == 0 and pooled._close_pending:
                self._close_locked(pooled)

    def close(self, pooled: PooledFile) -> None:
        with self._lock:
            if pooled._pins:
                pooled._close_pending = True
            else:
                self._close_locked(pooled)

    def close_idle(self) -> int:
        """Close every unpinned descriptor; how many were closed."""
        with self._lock:
            return self._evict_locked(len(self._open))

    def _open_locked(self, pooled: PooledFile) -> int:
        try:
            return os.open(pooled.path, pooled.flags, 0o644)
        except OSError as exc:
            if exc.errno not in _EXHAUSTED:
                raise
        freed = self._evict_locked(len(self._open))
        self.note_exhaustion(pooled.path, freed)
        try:
            return os.open(pooled.path, pooled.flags, 0o644)
        except OSError as exc:
            if exc.errno not in _EXHAUSTED:
                raise
            raise TooManyOpenFilesError(
                f"Cannot open {pooled.path}: {os.strerror(exc.errno or 0)} (the pool closed "
                f"{freed} idle segment file(s) and holds {len(self._open)} pinned; raise "
                "RLIMIT_NOFILE or lower sparklog.log.open.files.max)"
            ) from exc

    def note_exhaustion(self, path: str, freed: int) -> None:
        """Count an EMFILE / ENFILE; warn on the 1st, 2nd, 4th, 8th, ... (bounded volume)."""
        self.exhaustions += 1
        if self.exhaustions & (self.exhaustions - 1) == 0:
            _log.warning(
                "Out of file descriptors opening %s: closed %d idle segment file(s) and "
                "retried (%d time(s) so far; the pool keeps at most %d, RLIMIT_NOFILE is %d)",
                path,
                freed,
                self.exhaustions,
                self.capacity,
                resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            )

    def _evict_locked(self, count: int) -> int:
        closed = 0
        if count <= 0:
            return 0
        for pooled in list(self._open):
            if closed >= count:
                break
            if pooled._pins == 0:
                self._close_locked(pooled)
                self.evictions += 1
                closed += 1
        return closed

    def _close_locked(self, pooled: PooledFile) -> None:
        pooled._close_pending = False
        fd = pooled._fd
        if fd is None:
            return
        pooled._fd = None
        self._open.pop(pooled, None)
        os.close(fd)


def open_unpooled(path: str, flags: int, pool: HandlePool | None = None) -> int:
    """``os.open`` for a short-lived descriptor the caller closes (rewrites, sendfile): on
    EMFILE / ENFILE the pool's idle descriptors are closed and the open retried once, then
    :class:`TooManyOpenFilesError`."""
    try:
        return os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno not in _EXHAUSTED:
            raise
    target = pool if pool is not None else default_pool()
    freed = target.close_idle()
    target.note_exhaustion(path, freed)
    try:
        return os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno not in _EXHAUSTED:
            raise
        raise TooManyOpenFilesError(
            f"Cannot open {path}: {os.strerror(exc.errno or 0)} (closed {freed} idle segment "
            "file(s) first)"
        ) from exc


def read_whole(path: str, pool: HandlePool | None = None) -> bytes:
    """A whole (small) file through :func:`open_unpooled`: index loads that must not fail
    for a passing descriptor shortage."""
    fd = open_unpooled(path, os.O_RDONLY, pool)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def configure_default_pool(max_open: int) -> HandlePool:
    """Set the process-wide pool's bound: ``max_open``, or :func:`derive_capacity` if 0."""
    pool = default_pool()
    pool.set_capacity(max_open if max_open > 0 else derive_capacity())
    return pool


_default_pool: HandlePool | None = None


def default_pool() -> HandlePool:
    """The process-wide pool every segment file uses unless given another."""
    global _default_pool
    if _default_pool is None:
        _default_pool = HandlePool(derive_capacity())
    return _default_pool
