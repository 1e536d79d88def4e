"""Sparse segment indexes: the offset index and the time index.

File formats (Kafka's, big-endian, no header, no checksum):
- ``.index``: entries of (relative offset int32, file position int32), 8 bytes each. The key
  is the *last* offset of an indexed batch and the value that batch's position, so
  ``lookup(target)`` (the greatest key <= target) names a batch at or before the one holding
  ``target``; a short forward scan of batch headers finds it.
- ``.timeindex``: entries of (timestamp int64, relative offset int32), 12 bytes each. The
  timestamp is the segment's running maximum when the entry was written, so entries are
  strictly increasing in timestamp and non-decreasing in offset.

Descriptors: an index holds none between calls; appends and fsyncs go through a
:class:`~sparklog.storage.handles.PooledFile`, which the node-wide pool may close at any time.

Invariants: entries are kept in memory (two parallel lists, binary searched) and mirror the
file exactly; the file is never preallocated, so its size is always ``8 * len`` or
``12 * len``. Because indexes carry no checksum, :meth:`SparseIndex.load` runs Kafka's sanity
checks (size is a multiple of the entry size, keys strictly increasing, values in range) and
returns ``None`` when the file must be rebuilt from the log.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import struct
from abc import ABC, abstractmethod
from typing import Final

from sparklog.storage.handles import PooledFile, open_unpooled, read_whole

_OFFSET_ENTRY: Final = struct.Struct(">ii")
_TIME_ENTRY: Final = struct.Struct(">qi")
OFFSET_ENTRY_SIZE: Final = _OFFSET_ENTRY.size
TIME_ENTRY_SIZE: Final = _TIME_ENTRY.size


class SparseIndex(ABC):
    """Common machinery: an append-only file of fixed-size entries mirrored in memory."""

    entry_size: int = 0

    def __init__(self, path: str, base_offset: int, max_index_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.entry_size)
        # Opened on the first append and closed under pressure (sparklog.storage.handles).
        self._file: PooledFile | None = None

    # Subclasses fill these with their parsed entries; both lists are sorted.
    keys: list[int]
    values: list[int]

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def is_full(self) -> bool:
        return len(self.keys) >= self.max_entries

    @property
    def last_entry(self) -> tuple[int, int] | None:
        return (self.keys[-1], self.values[-1]) if self.keys else None

    @abstractmethod
    def to_bytes(self) -> bytes:
        """Every entry in this index's on-disk layout."""

    def reset(self, entries: list[tuple[int, int]]) -> None:
        self.keys = [k for k, _ in entries]
        self.values = [v for _, v in entries]
        self._rewrite(self.to_bytes())

    def _keep_first(self, keep: int) -> None:
        """Drop every entry from position ``keep`` on, on disk too."""
        if keep == len(self.keys):
            return
        del self.keys[keep:]
        del self.values[keep:]
        self._rewrite(self.to_bytes())

    def _handle(self) -> PooledFile:
        if self._file is None:
            self._file = PooledFile(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        return self._file

    def _write(self, data: bytes) -> None:
        with self._handle() as fd:
            os.write(fd, data)

    def _rewrite(self, data: bytes) -> None:
        """Replace the whole file (used after truncation and rebuild)."""
        self.close()
        fd = open_unpooled(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def flush(self) -> None:
        with self._handle() as fd:
            os.fsync(fd)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def delete(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.path)


def _whole_entries(path: str, entry_size: int) -> bytes | None:
    """An index file's bytes; None if it is missing or not a whole number of entries."""
    try:
        data = read_whole(path)
    except FileNotFoundError:
        return None
    return None if len(data) % entry_size else data


class OffsetIndex(SparseIndex):
    """Offset -> file position, keyed by the absolute last offset of an indexed batch."""

    entry_size = OFFSET_ENTRY_SIZE

    def __init__(self, path: str, base_offset: int, max_index_bytes: int) -> None:
        super().__init__(path, base_offset, max_index_bytes)
        self.keys = []
        self.values = []

    @classmethod
    def load(
        cls, path: str, base_offset: int, max_index_bytes: int, log_size: int
    ) -> OffsetIndex | None:
        """Read an existing index; ``None`` if it is missing or fails the sanity check."""
        data = _whole_entries(path, OFFSET_ENTRY_SIZE)
        if data is None:
            return None
        index = cls(path, base_offset, max_index_bytes)
        last_key, last_pos = -1, -1
        for relative, position in _OFFSET_ENTRY.iter_unpack(data):
            if relative <= last_key or position <= last_pos or position >= log_size:
                return None
            last_key, last_pos = relative, position
            index.keys.append(base_offset + relative)
            index.values.append(position)
        return index

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        if self.keys and offset <= self.keys[-1]:
            raise ValueError(f"index offset {offset} not above last {self.keys[-1]}")
        self._write(_OFFSET_ENTRY.pack(relative, position))
        self.keys.append(offset)
        self.values.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """``(offset, position)`` of the greatest entry <= ``offset``, else the segment start."""
        i = bisect.bisect_right(self.keys, offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.keys[i], self.values[i]

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose key is >= ``offset``."""
        self._keep_first(bisect.bisect_left(self.keys, offset))

    def to_bytes(self) -> bytes:
        return b"".join(
            _OFFSET_ENTRY.pack(k - self.base_offset, v)
            for k, v in zip(self.keys, self.values, strict=True)
        )


class TimeIndex(SparseIndex):
    """Running max timestamp -> absolute offset of the batch that set it."""

    entry_size = TIME_ENTRY_SIZE

    def __init__(self, path: str, base_offset: int, max_index_bytes: int) -> None:
        super().__init__(path, base_offset, max_index_bytes)
        self.keys = []  # timestamps
        self.values = []  # absolute offsets

    @classmethod
    def load(
        cls, path: str, base_offset: int, max_index_bytes: int, next_offset_bound: int
    ) -> TimeIndex | None:
        data = _whole_entries(path, TIME_ENTRY_SIZE)
        if data is None:
            return None
        index = cls(path, base_offset, max_index_bytes)
        last_ts, last_rel = None, -1
        for timestamp, relative in _TIME_ENTRY.iter_unpack(data):
            if (last_ts is not None and timestamp <= last_ts) or relative < last_rel:
                return None
            if relative < 0 or base_offset + relative >= next_offset_bound:
                return None
            last_ts, last_rel = timestamp, relative
            index.keys.append(timestamp)
            index.values.append(base_offset + relative)
        return index

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Append if ``timestamp`` is above the last entry's (entries stay increasing)."""
        if self.keys and timestamp <= self.keys[-1]:
            return False
        if self.values and offset < self.values[-1]:
            raise ValueError(f"time index offset {offset} below last {self.values[-1]}")
        self._write(_TIME_ENTRY.pack(timestamp, offset - self.base_offset))
        self.keys.append(timestamp)
        self.values.append(offset)
        return True

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """``(timestamp, offset)`` of the greatest entry with timestamp <= target.

        If none, ``(-1, base_offset)``: the search starts at the segment's beginning.
        """
        i = bisect.bisect_right(self.keys, timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self.keys[i], self.values[i]

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset is >= ``offset``."""
        self._keep_first(bisect.bisect_left(self.values, offset))

    def to_bytes(self) -> bytes:
        return b"".join(
            _TIME_ENTRY.pack(t, o - self.base_offset)
            for t, o in zip(self.keys, self.values, strict=True)
        )
