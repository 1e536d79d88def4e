"""Value objects the log hands out: file slices, read results, append results.

Contract: a :class:`FileSlice` names bytes of a segment file by path, position and length; it
holds no open descriptor (segments' own descriptors are pooled and may be closed at any time,
see :mod:`sparklog.storage.handles`), so it can cross threads and be handed to
``os.sendfile``, which opens a descriptor of its own for the send. A segment
deleted by retention is renamed ``<name>.deleted`` and only removed after
``file.delete.delay.ms``, so :meth:`FileSlice.open_fd` falls back to that name and a slice
taken just before a deletion stays readable for that long. Bytes cut off by a truncation read
short; callers must cope with a slice shorter than ``length`` (a fetch then carries fewer
batches, which Kafka clients accept).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sparklog.storage.handles import open_unpooled

DELETED_SUFFIX = ".deleted"


@dataclass(frozen=True, slots=True)
class FileSlice:
    """``length`` bytes of file ``path`` starting at ``position``, batch aligned."""

    path: str
    position: int
    length: int

    def open_fd(self) -> int:
        """A read-only descriptor for the slice's file (the caller closes it). Out of
        descriptors, it raises :class:`~sparklog.storage.handles.TooManyOpenFilesError`."""
        try:
            return open_unpooled(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return open_unpooled(self.path + DELETED_SUFFIX, os.O_RDONLY)

    def read_bytes(self) -> bytes:
        fd = self.open_fd()
        try:
            chunks: list[bytes] = []
            done = 0
            while done < self.length:
                chunk = os.pread(fd, self.length - done, self.position + done)
                if not chunk:
                    break
                chunks.append(chunk)
                done += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)


@dataclass(frozen=True, slots=True)
class LogReadResult:
    """What :meth:`Log.read` returns: zero or more slices plus the log's offsets at read time.

    ``first_batch_offset`` is the base offset of the first batch returned (it may be below the
    requested offset, as in Kafka), or -1 if nothing was returned.
    """

    slices: tuple[FileSlice, ...]
    first_batch_offset: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int

    @property
    def size(self) -> int:
        return sum(s.length for s in self.slices)

    def read_bytes(self) -> bytes:
        return b"".join(s.read_bytes() for s in self.slices)


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Outcome of an append: the offsets assigned and the timestamps Produce must return.

    ``log_append_time`` is -1 unless the topic uses LogAppendTime. For an empty append,
    ``first_offset`` is -1 and ``last_offset`` is -1. ``duplicate`` marks an idempotent
    producer's retry of a batch already in the log: nothing was written and the offsets are
    those of the original append (Produce answers it with NONE and the original base offset).
    """

    first_offset: int
    last_offset: int
    log_append_time: int
    log_start_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    records_count: int
    valid_bytes: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    """A ListOffsets answer: a record's timestamp, offset and the leader epoch of its batch."""

    timestamp: int
    offset: int
    leader_epoch: int
