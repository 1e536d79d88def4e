"""The state of one share-partition (a share group's view of one topic partition), as a partition
leader keeps it (Kafka's SharePartition).

Rules kept here:

- The in-flight window is ``[start_offset, end_offset)``. Every offset below ``start_offset``
  is done (acknowledged or archived) for the group; every offset at or above ``end_offset`` has
  never been acquired. Each offset in the window has a state (Available, Acquired,
  Acknowledged, Archived) and a delivery count.
- Acquisition hands an offset to one member under a lock that ends ``lock_duration_ms`` later
  and adds one to its delivery count. Only Available offsets (and new offsets at the end of the
  window) are acquired, so an offset is never held by two members at once.
- An acknowledgement applies only to offsets the acknowledging member holds: ACCEPT makes them
  Acknowledged, REJECT and GAP Archived, RELEASE Available again, RENEW extends the lock. A
  batch that names any other offset fails whole (INVALID_RECORD_STATE) and changes nothing.
- A released offset (RELEASE, an expired lock, its member leaving) whose delivery count reached
  ``delivery_count_limit`` is Archived instead of Available: it is never delivered again.
- The window never holds more than ``max_in_flight`` offsets: once full, only Available offsets
  inside it are acquired, until the start offset moves.
- ``start_offset`` moves past every leading Acknowledged or Archived offset; an Acknowledged
  offset is therefore never acquired again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum

from sparklog.protocol.errors import ErrorCode


class RecordState(IntEnum):
    """Kafka's RecordState values (they are persisted in ``__share_group_state``)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass(slots=True)
class InFlightRecord:
    state: RecordState
    delivery_count: int
    member_id: str = ""
    lock_deadline_ms: int = 0


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """Consecutive offsets acquired by one fetch with the same delivery count."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """A batch read from the log: its offsets and whether its records may be delivered
    (control batches and, under read_committed, aborted batches may not)."""

    base_offset: int
    last_offset: int
    deliverable: bool = True


@dataclass(frozen=True, slots=True)
class AckBatch:
    first_offset: int
    last_offset: int
    types: tuple[int, ...]

    def type_at(self, offset: int) -> int:
        if len(self.types) == 1:
            return self.types[0]
        return self.types[offset - self.first_offset]


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A run of offsets with the same state and delivery count (what the share coordinator
    persists and what describe tools show)."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    max_in_flight: int = 2000


class SharePartition:
    """One share group's delivery state of one partition; see the module docstring."""

    def __init__(self, start_offset: int, config: SharePartitionConfig) -> None:
        self.config = config
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.state_epoch = 0
        self._records: dict[int, InFlightRecord] = {}
        # observers for SharePartitionMetrics: records whose acquisition lock timed out, and
        # the size of each run of records acquired (the broker marks its meters with them)
        self.on_lock_timeout: Callable[[int], None] | None = None
        self.on_acquired: Callable[[int], None] | None = None

    # -- reading the state ------------------------------------------------------------------

    def record(self, offset: int) -> InFlightRecord | None:
        return self._records.get(offset)

    def in_flight_count(self) -> int:
        return self.end_offset - self.start_offset

    def next_fetch_offset(self, at_or_after: int = 0) -> int:
        """The first offset a fetch should read from: the first Available offset of the window
        at or after ``at_or_after``, else the end of the window."""
        for offset in range(max(self.start_offset, at_or_after), self.end_offset):
            if self._records[offset].state == RecordState.AVAILABLE:
                return offset
        return self.end_offset

    def has_available(self, readable_end: int) -> bool:
        """Whether a fetch could acquire anything with the log readable up to ``readable_end``."""
        if self.end_offset < readable_end and self.in_flight_count() < self.config.max_in_flight:
            return True
        return any(r.state == RecordState.AVAILABLE for r in self._records.values())

    def state_batches(self) -> list[StateBatch]:
        """The window as runs of equal (state, delivery count)."""
        out: list[StateBatch] = []
        for offset in range(self.start_offset, self.end_offset):
            rec = self._records[offset]
            state = RecordState.AVAILABLE if rec.state == RecordState.ACQUIRED else rec.state
            last = out[-1] if out else None
            if (
                last is not None
                and last.last_offset == offset - 1
                and last.state == state
                and last.delivery_count == rec.delivery_count
            ):
                out[-1] = StateBatch(last.first_offset, offset, state, rec.delivery_count)
            else:
                out.append(StateBatch(offset, offset, state, rec.delivery_count))
        return out

    # -- changing the state -----------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        batches: Iterable[FetchedBatch],
        max_records: int,
        now_ms: int,
        *,
        strict: bool = False,
    ) -> list[AcquiredRange]:
        """Acquire for ``member_id`` the Available offsets of ``batches`` (read from the log in
        offset order), up to ``max_records`` deliverable offsets (whole batches unless
        ``strict``). Offsets of undeliverable batches are archived, never handed out."""
        self.expire_locks(now_ms)
        deadline = now_ms + self.config.lock_duration_ms
        acquired: list[tuple[int, int]] = []  # (offset, delivery count)
        count = 0
        for batch in batches:
            if count >= max_records:
                break
            for offset in range(max(batch.base_offset, self.start_offset), batch.last_offset + 1):
                if strict and count >= max_records:
                    break
                if offset > self.end_offset and not self._fill_gap(offset):
                    # The log holds nothing between the end of the window and this batch (the
                    # caller reads from at most the window's end): those offsets are gaps.
                    break
                if offset == self.end_offset:
                    if self.in_flight_count() >= self.config.max_in_flight:
                        break
                    self._records[offset] = InFlightRecord(RecordState.AVAILABLE, 0)
                    self.end_offset += 1
                rec = self._records[offset]
                if rec.state != RecordState.AVAILABLE:
                    continue
                if not batch.deliverable:
                    rec.state = RecordState.ARCHIVED
                    continue
                rec.state = RecordState.ACQUIRED
                rec.delivery_count += 1
                rec.member_id = member_id
                rec.lock_deadline_ms = deadline
                acquired.append((offset, rec.delivery_count))
                count += 1
        self._advance_start()
        ranges = list(_ranges(acquired))
        if self.on_acquired is not None:
            for r in ranges:
                self.on_acquired(r.last_offset - r.first_offset + 1)
        return ranges

    def acknowledge(self, member_id: str, batches: list[AckBatch], now_ms: int) -> ErrorCode:
        """Apply a partition's acknowledgement batches all or nothing."""
        self.expire_locks(now_ms)
        for batch in batches:
            error = self._check_ack(member_id, batch)
            if error != ErrorCode.NONE:
                return error
        for batch in batches:
            for offset in range(batch.first_offset, batch.last_offset + 1):
                self._apply(self._records[offset], AcknowledgeType(batch.type_at(offset)), now_ms)
        self._advance_start()
        return ErrorCode.NONE

    def release_member(self, member_id: str) -> int:
        """Release every offset ``member_id`` holds (its share session closed or it left)."""
        released = 0
        for rec in self._records.values():
            if rec.state == RecordState.ACQUIRED and rec.member_id == member_id:
                self._release(rec)
                released += 1
        self._advance_start()
        return released

    def expire_locks(self, now_ms: int) -> int:
        """Release the offsets whose acquisition lock ended at or before ``now_ms``."""
        expired = 0
        for rec in self._records.values():
            if rec.state == RecordState.ACQUIRED and rec.lock_deadline_ms <= now_ms:
                self._release(rec)
                expired += 1
        if expired:
            self._advance_start()
            if self.on_lock_timeout is not None:
                self.on_lock_timeout(expired)
        return expired

    def truncate_below(self, offset: int) -> None:
        """Forget offsets below ``offset`` (the log start moved past them: they are gone)."""
        if offset <= self.start_offset:
            return
        if offset >= self.end_offset:
            self._records.clear()
            self.start_offset = self.end_offset = offset
            return
        for o in range(self.start_offset, offset):
            del self._records[o]
        self.start_offset = offset

    def reset_start(self, offset: int) -> None:
        """Start the window afresh at ``offset`` (reset-offsets on an empty group, or the log
        start moving past the window): every state is forgotten."""
        self._records.clear()
        self.start_offset = self.end_offset = offset
        self.state_epoch += 1

    def load(self, start_offset: int, batches: Iterable[StateBatch]) -> None:
        """Rebuild the window from persisted state (a new leader, after failover). Nothing is
        Acquired after a load: locks do not survive a leader change."""
        self._records.clear()
        self.start_offset = self.end_offset = start_offset
        for batch in batches:
            for offset in range(max(batch.first_offset, start_offset), batch.last_offset + 1):
                while self.end_offset < offset:  # a run not persisted: never delivered
                    self._records[self.end_offset] = InFlightRecord(RecordState.AVAILABLE, 0)
                    self.end_offset += 1
                state = batch.state
                if state == RecordState.ACQUIRED:
                    state = RecordState.AVAILABLE
                self._records[offset] = InFlightRecord(state, batch.delivery_count)
                self.end_offset = offset + 1
        self._advance_start()

    # -- internals --------------------------------------------------------------------------

    def _check_ack(self, member_id: str, batch: AckBatch) -> ErrorCode:
        size = batch.last_offset - batch.first_offset + 1
        if size <= 0 or len(batch.types) not in (1, size):
            return ErrorCode.INVALID_REQUEST
        if any(t not in AcknowledgeType._value2member_map_ for t in batch.types):
            return ErrorCode.INVALID_REQUEST
        for offset in range(batch.first_offset, batch.last_offset + 1):
            rec = self._records.get(offset)
            if rec is None or rec.state != RecordState.ACQUIRED or rec.member_id != member_id:
                return ErrorCode.INVALID_RECORD_STATE
        return ErrorCode.NONE

    def _apply(self, rec: InFlightRecord, ack: AcknowledgeType, now_ms: int) -> None:
        if ack == AcknowledgeType.ACCEPT:
            rec.state = RecordState.ACKNOWLEDGED
        elif ack in (AcknowledgeType.REJECT, AcknowledgeType.GAP):
            rec.state = RecordState.ARCHIVED
        elif ack == AcknowledgeType.RELEASE:
            self._release(rec)
            return
        else:  # RENEW
            rec.lock_deadline_ms = now_ms + self.config.lock_duration_ms
            return
        rec.member_id = ""

    def _release(self, rec: InFlightRecord) -> None:
        if rec.delivery_count >= self.config.delivery_count_limit:
            rec.state = RecordState.ARCHIVED
        else:
            rec.state = RecordState.AVAILABLE
        rec.member_id = ""
        rec.lock_deadline_ms = 0

    def _fill_gap(self, offset: int) -> bool:
        """Archive the absent offsets from the end of the window up to ``offset`` (exclusive)
        and add ``offset`` as Available; False when the in-flight cap forbids it."""
        if self.in_flight_count() + (offset - self.end_offset) >= self.config.max_in_flight:
            return False
        while self.end_offset < offset:
            self._records[self.end_offset] = InFlightRecord(RecordState.ARCHIVED, 0)
            self.end_offset += 1
        self._advance_start()
        return True

    def _advance_start(self) -> None:
        while self.start_offset < self.end_offset:
            rec = self._records[self.start_offset]
            if rec.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            del self._records[self.start_offset]
            self.start_offset += 1


def _ranges(acquired: list[tuple[int, int]]) -> Iterator[AcquiredRange]:
    first = last = count = -1
    for offset, delivery_count in acquired:
        if count == delivery_count and offset == last + 1:
            last = offset
            continue
        if count != -1:
            yield AcquiredRange(first, last, count)
        first = last = offset
        count = delivery_count
    if count != -1:
        yield AcquiredRange(first, last, count)
