"""Where KRaft snapshots live: frozen ``.checkpoint`` files and the partial one being written.

A snapshot is named by its :class:`SnapshotId`: ``end_offset`` is exclusive (the snapshot holds
the state after every record below it) and ``epoch`` is the leader epoch of the last record it
contains, as in Kafka's ``OffsetAndEpoch``. The bytes are a sequence of v2 record batches (see
:mod:`sparklog.raft.snapshot_format`); a store only moves bytes.

Two stores implement :class:`SnapshotStore`:

- :class:`FileSnapshotStore` keeps Kafka's layout in the metadata partition directory:
  ``{end_offset:020d}-{epoch:010d}.checkpoint``, written as ``.checkpoint.part`` and renamed
  only after an fsync (then the directory is fsynced), so a crash leaves either the whole
  frozen snapshot or no snapshot; stray ``.part`` / ``.deleted`` files are removed on open.
- :class:`MemorySnapshotStore` keeps bytes in a dict for the simulator; frozen snapshots
  survive a simulated crash, a partial one is simply never frozen.

Invariants: a frozen snapshot never changes; ``latest()`` is the frozen snapshot with the
largest id; a partial snapshot is invisible to readers until :meth:`SnapshotWriter.freeze`.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

from sparklog.storage.checkpoint import fsync_dir

CHECKPOINT_SUFFIX: Final = ".checkpoint"
PARTIAL_SUFFIX: Final = ".checkpoint.part"
DELETED_SUFFIX: Final = ".checkpoint.deleted"
_NAME: Final = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


class SnapshotNotFoundError(KeyError):
    """No frozen snapshot with that id (it was never written, or was deleted)."""


@dataclass(frozen=True, slots=True, order=True)
class SnapshotId:
    end_offset: int
    epoch: int

    def file_name(self, suffix: str = CHECKPOINT_SUFFIX) -> str:
        return f"{self.end_offset:020d}-{self.epoch:010d}{suffix}"

    @staticmethod
    def parse_file_name(name: str) -> SnapshotId | None:
        match = _NAME.match(name)
        if match is None:
            return None
        return SnapshotId(int(match.group(1)), int(match.group(2)))


class SnapshotWriter(Protocol):
    @property
    def snapshot_id(self) -> SnapshotId: ...

    @property
    def size(self) -> int:
        """Bytes appended so far."""
        ...

    def append(self, data: bytes) -> None: ...

    def freeze(self) -> None:
        """Make the snapshot durable and visible; the writer is closed afterwards."""
        ...

    def abort(self) -> None: ...


class SnapshotStore(Protocol):
    def snapshot_ids(self) -> list[SnapshotId]:
        """Every frozen snapshot, oldest first."""
        ...

    def latest(self) -> SnapshotId | None: ...

    def size(self, snapshot_id: SnapshotId) -> int: ...

    def read(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes: ...

    def begin(self, snapshot_id: SnapshotId) -> SnapshotWriter:
        """Start writing a snapshot (replacing any partial one with the same id)."""
        ...

    def delete_before(self, snapshot_id: SnapshotId) -> int:
        """Delete every frozen snapshot older than ``snapshot_id``; returns how many."""
        ...


def read_all(store: SnapshotStore, snapshot_id: SnapshotId) -> bytes:
    return store.read(snapshot_id, 0, store.size(snapshot_id))


# -- in memory ----------------------------------------------------------------------------------


class _MemoryWriter:
    def __init__(self, store: MemorySnapshotStore, snapshot_id: SnapshotId) -> None:
        self._store = store
        self._id = snapshot_id
        self._chunks: list[bytes] = []
        self._size = 0
        self._open = True

    @property
    def snapshot_id(self) -> SnapshotId:
        return self._id

    @property
    def size(self) -> int:
        return self._size

    def append(self, data: bytes) -> None:
        if not self._open:
            raise ValueError(f"snapshot {self._id} is no longer open")
        self._chunks.append(bytes(data))
        self._size += len(data)

    def freeze(self) -> None:
        if not self._open:
            raise ValueError(f"snapshot {self._id} is no longer open")
        self._open = False
        self._store.frozen[self._id] = b"".join(self._chunks)

    def abort(self) -> None:
        self._open = False


class MemorySnapshotStore:
    """Snapshots in memory (the simulator's disk): frozen ones survive a replica's crash."""

    def __init__(self) -> None:
        self.frozen: dict[SnapshotId, bytes] = {}

    def snapshot_ids(self) -> list[SnapshotId]:
        return sorted(self.frozen)

    def latest(self) -> SnapshotId | None:
        return max(self.frozen) if self.frozen else None

    def size(self, snapshot_id: SnapshotId) -> int:
        return len(self._get(snapshot_id))

    def read(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        return self._get(snapshot_id)[position : position + max_bytes]

    def _get(self, snapshot_id: SnapshotId) -> bytes:
        data = self.frozen.get(snapshot_id)
        if data is None:
            raise SnapshotNotFoundError(snapshot_id)
        return data

    def begin(self, snapshot_id: SnapshotId) -> SnapshotWriter:
        return _MemoryWriter(self, snapshot_id)

    def delete_before(self, snapshot_id: SnapshotId) -> int:
        old = [s for s in self.frozen if s < snapshot_id]
        for s in old:
            del self.frozen[s]
        return len(old)


# -- on disk ------------------------------------------------------------------------------------


class _FileWriter:
    def __init__(
        self, directory: str, snapshot_id: SnapshotId, on_frozen: Callable[[SnapshotId], None]
    ) -> None:
        self._on_frozen = on_frozen
        self._directory = directory
        self._id = snapshot_id
        self._partial = os.path.join(directory, snapshot_id.file_name(PARTIAL_SUFFIX))
        self._file = open(self._partial, "wb")  # noqa: SIM115 - closed by freeze/abort
        self._size = 0

    @property
    def snapshot_id(self) -> SnapshotId:
        return self._id

    @property
    def size(self) -> int:
        return self._size

    def append(self, data: bytes) -> None:
        if self._file.closed:
            raise ValueError(f"snapshot {self._id} is no longer open")
        self._file.write(data)
        self._size += len(data)

    def freeze(self) -> None:
        if self._file.closed:
            raise ValueError(f"snapshot {self._id} is no longer open")
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self._partial, os.path.join(self._directory, self._id.file_name()))
        fsync_dir(self._directory)
        self._on_frozen(self._id)

    def abort(self) -> None:
        if not self._file.closed:
            self._file.close()
        with contextlib.suppress(FileNotFoundError):
            os.remove(self._partial)


class FileSnapshotStore:
    """Snapshots as ``.checkpoint`` files in ``directory`` (the metadata partition dir)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):
            # A partial snapshot is a download or a generation a crash interrupted.
            if name.endswith((PARTIAL_SUFFIX, DELETED_SUFFIX)):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(directory, name))
        # This store is the only writer of the directory's snapshots, so the listing is read
        # once and kept current (the core asks for the latest id on every message).
        found = (SnapshotId.parse_file_name(n) for n in os.listdir(directory))
        self._ids = sorted(s for s in found if s is not None)

    def path(self, snapshot_id: SnapshotId) -> str:
        return os.path.join(self.directory, snapshot_id.file_name())

    def snapshot_ids(self) -> list[SnapshotId]:
        return list(self._ids)

    def latest(self) -> SnapshotId | None:
        return self._ids[-1] if self._ids else None

    def _frozen(self, snapshot_id: SnapshotId) -> None:
        if snapshot_id not in self._ids:
            self._ids.append(snapshot_id)
            self._ids.sort()

    def size(self, snapshot_id: SnapshotId) -> int:
        try:
            return os.path.getsize(self.path(snapshot_id))
        except FileNotFoundError:
            raise SnapshotNotFoundError(snapshot_id) from None

    def read(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        try:
            with open(self.path(snapshot_id), "rb") as f:
                f.seek(position)
                return f.read(max_bytes)
        except FileNotFoundError:
            raise SnapshotNotFoundError(snapshot_id) from None

    def begin(self, snapshot_id: SnapshotId) -> SnapshotWriter:
        return _FileWriter(self.directory, snapshot_id, self._frozen)

    def delete_before(self, snapshot_id: SnapshotId) -> int:
        deleted = 0
        for old in self.snapshot_ids():
            if old >= snapshot_id:
                continue
            path = self.path(old)
            # Renamed first so a crash mid-way never leaves a half-deleted ``.checkpoint``.
            doomed = path[: -len(CHECKPOINT_SUFFIX)] + DELETED_SUFFIX
            os.replace(path, doomed)
            self._ids.remove(old)
            os.remove(doomed)
            deleted += 1
        if deleted:
            fsync_dir(self.directory)
        return deleted
