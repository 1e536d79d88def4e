"""The transaction index of a segment (``%020d.txnindex``): the aborted transactions whose
ABORT marker lies in that segment, which read_committed fetches return to clients.

Contract and invariants:
- File format: Kafka's ``AbortedTxn`` entries back to back, 34 bytes each, big-endian:
  ``version int16 (0) | producer_id int64 | first_offset int64 | last_offset int64 |
  last_stable_offset int64``. ``last_offset`` is the offset of the ABORT marker and
  ``first_offset`` that of the transaction's first batch (which may lie in an earlier segment);
  ``last_stable_offset`` is the LSO right after the marker was written (the first offset of the
  earliest other open transaction, else ``last_offset + 1``), which lets a scan stop early.
- Entries are appended in marker order, so ``last_offset`` strictly increases along the file.
- The file is created lazily by the first append: most segments never hold an abort, and logs
  that never see transactions (e.g. the KRaft log) have no ``.txnindex`` files at all.
- A file whose size is not a multiple of 34, or that holds an entry with an unknown version or
  out of order, is *corrupt*: :attr:`TransactionIndex.corrupt` is set with the entries emptied,
  and the log rebuilds the index by replaying the segment (as Kafka does on a failed sanity
  check).
- Durability follows the segment: :meth:`flush` fsyncs, and an unflushed segment's index is
  rebuilt by recovery.

Plain file I/O only; not thread-safe (the log serialises calls).
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
from dataclasses import dataclass
from typing import Final

from sparklog.protocol.record_codec import ControlRecord, decode_batch, decode_control_record
from sparklog.protocol.records import CorruptRecordError
from sparklog.storage.handles import read_whole

__all__ = [
    "ENTRY_SIZE",
    "TXN_INDEX_SUFFIX",
    "AbortedTxn",
    "TransactionIndex",
    "decode_entries",
    "encode_entry",
    "read_control_record",
]

TXN_INDEX_SUFFIX: Final = ".txnindex"
ENTRY_VERSION: Final = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE: Final = _ENTRY.size

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """Producer ``producer_id``'s data in ``[first_offset, last_offset]`` was aborted."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def encode_entry(txn: AbortedTxn) -> bytes:
    return _ENTRY.pack(
        ENTRY_VERSION, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
    )


def decode_entries(data: bytes) -> list[AbortedTxn]:
    """Parse a whole index file; raises ``ValueError`` if it is damaged."""
    if len(data) % ENTRY_SIZE:
        raise ValueError(f"size {len(data)} is not a multiple of {ENTRY_SIZE}")
    entries: list[AbortedTxn] = []
    for pos in range(0, len(data), ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != ENTRY_VERSION:
            raise ValueError(f"unknown entry version {version} at position {pos}")
        if entries and last <= entries[-1].last_offset:
            raise ValueError(f"entry at position {pos} is out of order")
        if first > last:
            raise ValueError(f"entry at position {pos} has first offset {first} > last {last}")
        entries.append(AbortedTxn(pid, first, last, lso))
    return entries


def read_control_record(batch: bytes | bytearray | memoryview) -> ControlRecord | None:
    """The control record of a (CRC-checked) control batch, or ``None`` if it has none or
    it cannot be read; a damaged marker then counts as a commit, which never hides data."""
    try:
        _, records = decode_batch(bytes(batch), 0, verify_crc=False)
        if not records:
            return None
        return decode_control_record(records[0])
    except (CorruptRecordError, ValueError, IndexError) as exc:
        _log.warning("Unreadable control record: %s", exc)
        return None


class TransactionIndex:
    """The aborted transactions of one segment, kept in memory and appended to ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.corrupt = False
        self._entries: list[AbortedTxn] = []
        self._dirty = False
        try:
            data = read_whole(path)  # survives a passing descriptor shortage
        except FileNotFoundError:
            return
        try:
            self._entries = decode_entries(data)
        except ValueError as exc:
            _log.warning("Corrupt transaction index %s: %s; it will be rebuilt", path, exc)
            self.corrupt = True

    @property
    def entries(self) -> tuple[AbortedTxn, ...]:
        return tuple(self._entries)

    @property
    def exists(self) -> bool:
        return os.path.exists(self.path)

    def append(self, txn: AbortedTxn) -> None:
        if self._entries and txn.last_offset <= self._entries[-1].last_offset:
            raise ValueError(
                f"The last offset of appended transactions must increase sequentially, but "
                f"{txn.last_offset} is not greater than current last offset "
                f"{self._entries[-1].last_offset} of index {self.path}"
            )
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, encode_entry(txn))
        finally:
            os.close(fd)
        self._entries.append(txn)
        self._dirty = True

    def reset(self) -> None:
        """Forget every entry and remove the file (recovery rebuilds it)."""
        self._entries = []
        self.corrupt = False
        self._dirty = False
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.path)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset``."""
        kept = [e for e in self._entries if e.last_offset < offset]
        if len(kept) == len(self._entries):
            return
        self._entries = kept
        with contextlib.suppress(FileNotFoundError):
            os.truncate(self.path, len(kept) * ENTRY_SIZE)
        self._dirty = True

    def collect(self, start_offset: int, upper_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping ``[start_offset, upper_offset)``, and whether the scan is
        complete (an entry's ``last_stable_offset`` reached ``upper_offset``: no later
        segment can hold an abort of a transaction that started below it)."""
        found: list[AbortedTxn] = []
        for txn in self._entries:
            if txn.last_offset >= start_offset and txn.first_offset < upper_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_offset:
                return found, True
        return found, False

    def flush(self) -> None:
        if not self._dirty:
            return
        with contextlib.suppress(FileNotFoundError):
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._dirty = False
