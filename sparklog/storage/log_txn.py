"""Transactions in a partition log: end-transaction markers, the last stable offset (LSO), the
per-segment transaction indexes, and the producer-state replay that rebuilds them.

:class:`Transactions`, a component of :class:`~sparklog.storage.log.Log`, is given the log's
:class:`~sparklog.storage.log_state.LogState`, its producer state and the log's ``append`` (the
write path shared with data batches); it keeps no state of its own. Contract and invariants:
- ``last_stable_offset = min(first_unstable_offset, high_watermark)``; the first unstable offset
  is the earliest first offset of a transaction that is open, or whose marker is not yet below
  the high watermark (Kafka's unreplicated transactions), and never below the log start offset.
  Without transactions the LSO is the high watermark. read_committed readers stop at it.
- Markers are written only by :meth:`Transactions.append_control_marker` (the coordinator's
  path; client produce requests may not carry control batches) and by replication. Every
  ABORT marker adds an :class:`~sparklog.storage.txn_index.AbortedTxn` to the transaction
  index of the segment that holds the marker, in the same call that writes it.
- After a crash, recovered segments have stale (emptied) transaction indexes: the producer
  state is then loaded from the newest snapshot at or below the first stale segment and the
  log replayed from there, re-adding every ABORT of the stale segments. Any other reload
  (clean open, truncation) loads the newest snapshot below the log end offset. Replay decodes
  only control batches; data batches are read by header.
- :meth:`Transactions.collect_aborted_transactions` returns the aborted transactions whose
  marker is at or after ``start_offset`` and whose data begins below ``upper_offset``, scanning
  indexes from the segment holding ``start_offset`` until an entry's stored LSO shows that no
  later abort can reach below ``upper_offset`` (Kafka's ``TxnIndexSearchResult.isComplete``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

from sparklog.protocol.record_codec import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    ControlRecord,
    build_control_batch,
)
from sparklog.protocol.records import BatchHeader, parse_batch_header, set_log_append_time
from sparklog.storage.log_state import LogState
from sparklog.storage.producer_state import ProducerStateManager
from sparklog.storage.segment import LogSegment
from sparklog.storage.slices import AppendResult, LogReadResult
from sparklog.storage.txn_index import AbortedTxn, read_control_record

__all__ = ["Transactions"]

_Buffer = bytes | bytearray | memoryview
# The log's write path: (buffer, batch headers, now_ms, log append time or -1) -> result.
Append = Callable[[_Buffer, list[BatchHeader], int, int], AppendResult]


class Transactions:
    """Markers, the last stable offset and the transaction indexes of one partition log."""

    def __init__(
        self, state: LogState, producer_state: ProducerStateManager, append: Append
    ) -> None:
        self._state = state
        self._producer_state = producer_state
        self._append = append

    # --- the last stable offset ----------------------------------------------------------

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest undecided (or unreplicated) transaction."""
        state = self._state
        first = self._producer_state.first_unstable_offset(state.high_watermark)
        return None if first is None else max(first, state.log_start_offset)

    @property
    def last_stable_offset(self) -> int:
        first = self.first_unstable_offset
        hw = self._state.high_watermark
        return hw if first is None or first >= hw else first

    # --- markers ---------------------------------------------------------------------------

    def append_control_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        committed: bool,
        leader_epoch: int,
        now_ms: int | None = None,
    ) -> int:
        """Append a COMMIT or ABORT marker for ``producer_id`` at the log end; its offset.

        Raises :class:`~sparklog.storage.producer_state.InvalidProducerEpochError` for an
        epoch below the producer's and TRANSACTION_COORDINATOR_FENCED for a coordinator
        epoch below the last one seen; nothing is written then.
        """
        state = self._state
        self._producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch)
        now = state.clock() if now_ms is None else now_ms
        control_type = CONTROL_COMMIT if committed else CONTROL_ABORT
        offset = state.log_end_offset
        batch = bytearray(
            build_control_batch(
                control_type,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                coordinator_epoch=coordinator_epoch,
                base_offset=offset,
                partition_leader_epoch=leader_epoch,
                timestamp=now,
            )
        )
        append_time = -1
        if state.config.log_append_time:
            header = set_log_append_time(batch, 0, now)
            append_time = now
        else:
            header = parse_batch_header(batch)
        self._append(batch, [header], now, append_time)
        control = ControlRecord(control_type, 0, coordinator_epoch)
        self._track_batch(header, control, state.active_segment)
        return offset

    def _track_batch(
        self, header: BatchHeader, control: ControlRecord | None, segment: LogSegment
    ) -> None:
        """Apply a written batch to the producer state; index it if it is an ABORT."""
        producers = self._producer_state
        completed = producers.apply_batch(header, control)
        if completed is not None and completed.aborted:
            segment.txn_index.append(
                AbortedTxn(
                    completed.producer_id,
                    completed.first_offset,
                    completed.last_offset,
                    producers.last_stable_offset_after(completed),
                )
            )

    def track_replicated(self, buf: _Buffer, batches: list[tuple[int, BatchHeader]]) -> None:
        """Apply batches just appended to the active segment (follower path)."""
        segment = self._state.active_segment
        view = memoryview(buf)
        for pos, header in batches:
            control = None
            if header.is_control and header.has_producer_id:
                control = read_control_record(view[pos : pos + header.size_in_bytes])
            self._track_batch(header, control, segment)

    # --- reading ---------------------------------------------------------------------------

    def collect_aborted_transactions(
        self, start_offset: int, upper_offset: int
    ) -> list[AbortedTxn]:
        """Aborted transactions with a marker at or after ``start_offset`` and data below
        ``upper_offset``, in marker order."""
        if upper_offset <= start_offset:
            return []
        index = max(bisect.bisect_right(self._state.bases, start_offset) - 1, 0)
        found: list[AbortedTxn] = []
        for segment in self._state.segments[index:]:
            entries, complete = segment.txn_index.collect(start_offset, upper_offset)
            found.extend(entries)
            if complete:
                break
        return found

    def aborted_transactions_for_read(
        self, start_offset: int, result: LogReadResult, max_offset: int | None
    ) -> list[AbortedTxn]:
        """The aborted transactions a read_committed fetch returns with ``result``: bounded
        by the end of the segment that served it, as Kafka bounds them (a superset of what
        the batches need, which clients accept)."""
        if not result.slices or result.first_batch_offset < 0:
            return []
        index = max(bisect.bisect_right(self._state.bases, result.first_batch_offset) - 1, 0)
        upper = self._state.segments[index].next_offset
        if max_offset is not None:
            upper = min(upper, max_offset)
        return self.collect_aborted_transactions(start_offset, upper)

    # --- loading ---------------------------------------------------------------------------

    def reload_producer_state(self) -> None:
        """Load the newest usable snapshot and replay the batches after it, rebuilding the
        transaction index of every stale segment on the way."""
        state = self._producer_state
        segments = self._state.segments
        stale = [s.base_offset for s in segments if s.txn_index_stale]
        end = self._state.log_end_offset
        loaded = state.load(end, self._state.clock(), min(stale) if stale else None)
        start = 0 if loaded is None else loaded
        for i, segment in enumerate(segments):
            following = segments[i + 1].base_offset if i + 1 < len(segments) else None
            if following is not None and following <= start:
                continue
            for pos, header in segment.iter_headers(0):
                if header.base_offset < start:
                    continue
                control = None
                if header.is_control and header.has_producer_id:
                    data = segment.read_batch_bytes(pos, header.size_in_bytes)
                    control = read_control_record(data)
                if segment.txn_index_stale:
                    self._track_batch(header, control, segment)
                else:
                    state.apply_batch(header, control)
            segment.txn_index_stale = False
        state.map_end_offset = end
