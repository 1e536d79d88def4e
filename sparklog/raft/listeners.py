"""Delivering committed batches and leader changes to :class:`RaftListener`\\ s.

Rules (Kafka's ``KafkaRaftClient`` listener contexts):

- A listener sees every batch below the high watermark exactly once, in offset order, from
  offset 0 when it registers; the batches are read back from the log (the single source of
  truth), decoded with the injected ``decode`` (data batches) or as KRaft control records.
- A listener whose next offset is below the log start (segments deleted after a snapshot)
  first gets the latest snapshot (``handle_load_snapshot``), then batches from its end.
- ``handle_leader_change`` follows the batches: when this replica leads, a listener hears of
  it only once it has seen every batch before the epoch's first offset, so the state machine
  above is complete before it starts writing; followers announce the leader at once.
- Callbacks run synchronously inside the replica's calls; a listener must not call back into
  the replica's append path (that would reorder deliveries) - checked by ``delivering``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from sparklog.protocol.record_codec import decode_batch
from sparklog.protocol.records import BatchHeader, iter_batches
from sparklog.raft.client import CommittedBatch, LeaderAndEpoch, LoadedSnapshot, RaftListener
from sparklog.raft.control_records import decode_control_record
from sparklog.raft.log import ReplicatedLog
from sparklog.raft.snapshot_format import SnapshotContents

T = TypeVar("T")


def committed_batch(
    data: bytes | memoryview, pos: int, header: BatchHeader, decode: Callable[[bytes], T]
) -> CommittedBatch[T]:
    """The committed batch at ``pos`` of ``data``, its records decoded for listeners."""
    _, records = decode_batch(data, pos)
    if header.is_control:
        controls = [decode_control_record(r.key, r.value) for r in records]
        return CommittedBatch(
            header.base_offset,
            header.last_offset,
            header.partition_leader_epoch,
            header.max_timestamp,
            (),
            tuple(c for c in controls if c is not None),
            header.size_in_bytes,
        )
    return CommittedBatch(
        header.base_offset,
        header.last_offset,
        header.partition_leader_epoch,
        header.max_timestamp,
        tuple(decode(r.value or b"") for r in records),
        (),
        header.size_in_bytes,
    )


_READ_CHUNK_BYTES = 1 << 20


@dataclass(slots=True)
class _Registration(Generic[T]):
    listener: RaftListener[T]
    next_offset: int
    last_leader: LeaderAndEpoch | None = None


def _no_snapshot() -> SnapshotContents | None:
    return None


class ListenerDispatcher(Generic[T]):
    def __init__(
        self,
        log: ReplicatedLog,
        decode: Callable[[bytes], T],
        latest_snapshot: Callable[[], SnapshotContents | None] = _no_snapshot,
    ) -> None:
        self._log = log
        self._decode = decode
        self._latest_snapshot = latest_snapshot
        self._registrations: list[_Registration[T]] = []
        self.delivering = False

    def register(self, listener: RaftListener[T]) -> None:
        self._registrations.append(_Registration(listener, 0))

    def min_next_offset(self) -> int | None:
        """The offset the slowest listener reads next (``None`` without listeners)."""
        return min((r.next_offset for r in self._registrations), default=None)

    def unregister(self, listener: RaftListener[T]) -> None:
        self._registrations = [r for r in self._registrations if r.listener is not listener]

    def deliver(
        self, high_watermark: int, leader: LeaderAndEpoch, leader_epoch_start: int | None
    ) -> None:
        """Hand every listener its missing committed batches, then the leader if it changed.

        ``leader_epoch_start`` is the first offset of this replica's epoch when it leads.
        """
        if self.delivering:
            return
        self.delivering = True
        try:
            for registration in list(self._registrations):
                self._deliver(registration, high_watermark)
                caught_up = (
                    leader_epoch_start is None or registration.next_offset >= leader_epoch_start
                )
                if caught_up and registration.last_leader != leader:
                    registration.last_leader = leader
                    registration.listener.handle_leader_change(leader)
        finally:
            self.delivering = False

    def _load_snapshot(self, registration: _Registration[T]) -> None:
        start = self._log.log_start_offset
        contents = self._latest_snapshot()
        if contents is None or contents.snapshot_id.end_offset < start:
            raise RuntimeError(f"the metadata log starts at {start} but no snapshot reaches it")
        handler = getattr(registration.listener, "handle_load_snapshot", None)
        if handler is None:
            raise RuntimeError(
                f"{registration.listener!r} reads offset {registration.next_offset}, below the "
                f"log start {start}, and cannot load snapshots (no handle_load_snapshot)"
            )
        snapshot_id = contents.snapshot_id
        handler(
            LoadedSnapshot(
                snapshot_id.end_offset,
                snapshot_id.epoch,
                contents.last_contained_timestamp,
                tuple(self._decode(value) for value in contents.records),
                contents.size_in_bytes,
            )
        )
        registration.next_offset = snapshot_id.end_offset

    def _deliver(self, registration: _Registration[T], high_watermark: int) -> None:
        if registration.next_offset < self._log.log_start_offset:
            self._load_snapshot(registration)
        while registration.next_offset < high_watermark:
            data = self._log.read(registration.next_offset, _READ_CHUNK_BYTES)
            progressed = False
            for pos, header in iter_batches(data):
                if header.last_offset < registration.next_offset:
                    continue
                if header.next_offset > high_watermark:
                    break
                batch: CommittedBatch[T] = committed_batch(data, pos, header, self._decode)
                registration.next_offset = header.next_offset
                progressed = True
                registration.listener.handle_commit(batch)
            if not progressed:
                raise RuntimeError(
                    f"metadata log read at offset {registration.next_offset} returned no "
                    f"complete batch below the high watermark {high_watermark}"
                )
