"""The one-voter KRaft quorum: this node is the only voter, hence always the leader.

Rules (the subset of KRaft that holds when the voter set is ``{this node}``):

- On :meth:`SingleVoterRaft.start` the replica reads ``quorum-state`` and the log, takes the
  epoch ``max(stored epoch, last epoch in the log) + 1``, persists the new election state
  BEFORE writing anything in that epoch, and appends a ``LeaderChangeMessage`` control batch,
  as a freshly elected Kafka leader does. Epochs therefore strictly increase across restarts.
- Every append is one batch stamped with the current epoch and fsynced before it counts; a
  majority of one is reached the moment the fsync returns, so the high watermark equals the log
  end offset after every append. Nothing uncommitted is ever visible to a listener.
- Listeners get every committed batch, in order, exactly once, starting at the log start when
  they register; the log is the single source of truth, so listeners read batches back from
  it rather than from the caller's buffers.
- Sans-IO with respect to networking: no threads, no event loop. The caller drives it; all
  callbacks run inside ``start``, ``register_listener`` and ``schedule_append``.

A test double: nodes run :class:`sparklog.raft.core.RaftReplica` (multi-voter KRaft with
Pre-Vote, BeginQuorumEpoch, Fetch replication, snapshots and KIP-853 voter changes). This
one-voter :class:`~sparklog.raft.client.RaftClient` checks the seam's contract over a real
log on disk with nothing else moving.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from sparklog.protocol.record_codec import RecordInput, build_batch
from sparklog.protocol.records import iter_batches
from sparklog.raft.client import (
    MAX_BATCH_SIZE_BYTES,
    NO_LEADER,
    CommittedBatch,
    LeaderAndEpoch,
    NotLeaderError,
    RaftListener,
)
from sparklog.raft.control_records import encode_control_record
from sparklog.raft.listeners import committed_batch
from sparklog.raft.quorum_state import ElectionState, QuorumStateStore

T = TypeVar("T")

_READ_CHUNK_BYTES = 1 << 20


class _AppendInfo(Protocol):
    @property
    def last_offset(self) -> int: ...


class _ReadInfo(Protocol):
    def read_bytes(self) -> bytes: ...


class RaftLog(Protocol):
    """What the replica needs of a partition log (``sparklog.storage.Log`` satisfies it)."""

    def append_as_leader(self, records: bytes, leader_epoch: int) -> _AppendInfo: ...

    def read(
        self, start_offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool
    ) -> _ReadInfo: ...

    def flush(self) -> None: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def log_start_offset(self) -> int: ...

    high_watermark: int


@dataclass(slots=True)
class _Registration(Generic[T]):
    listener: RaftListener[T]
    next_offset: int
    last_leader: LeaderAndEpoch | None = None


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


class SingleVoterRaft(Generic[T]):
    """A :class:`~sparklog.raft.client.RaftClient` for a quorum of exactly one voter."""

    def __init__(
        self,
        log: RaftLog,
        node_id: int,
        state_store: QuorumStateStore,
        decode: Callable[[bytes], T],
        *,
        clock_ms: Callable[[], int] = _wall_clock_ms,
    ) -> None:
        self._log = log
        self._node_id = node_id
        self._store = state_store
        self._decode = decode
        self._clock_ms = clock_ms
        self._leader = LeaderAndEpoch(NO_LEADER, 0)
        self._high_watermark = 0
        self._listeners: list[_Registration[T]] = []
        self._started = False
        self._delivering = False

    # -- RaftClient --------------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return self._leader

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    def start(self) -> LeaderAndEpoch:
        """Become leader of a new epoch (see the module rules); returns it."""
        if self._started:
            raise RuntimeError("SingleVoterRaft.start called twice")
        stored = self._store.read()
        stored_epoch = stored.leader_epoch if stored is not None else 0
        epoch = max(stored_epoch, self._last_epoch_in_log()) + 1
        self._store.write(ElectionState(leader_epoch=epoch, leader_id=self._node_id))
        # Everything already in the log was committed by an earlier incarnation of this only
        # voter (an append counts only after its fsync), so it is committed now too.
        self._high_watermark = self._log.log_end_offset
        self._log.high_watermark = self._high_watermark
        self._leader = LeaderAndEpoch(self._node_id, epoch)
        self._started = True
        key, value = encode_control_record(
            "LeaderChangeMessage",
            {
                "leader_id": self._node_id,
                "voters": [{"voter_id": self._node_id}],
                "granting_voters": [{"voter_id": self._node_id}],
            },
        )
        batch = build_batch(
            [RecordInput(key, value, timestamp=self._clock_ms())],
            partition_leader_epoch=epoch,
            is_control=True,
        )
        self._append_and_commit(batch, epoch)
        return self._leader

    def register_listener(self, listener: RaftListener[T]) -> None:
        registration = _Registration(listener, self._log.log_start_offset)
        self._listeners.append(registration)
        self._delivering = True
        try:
            self._deliver(registration)
        finally:
            self._delivering = False

    def unregister_listener(self, listener: RaftListener[T]) -> None:
        self._listeners = [r for r in self._listeners if r.listener is not listener]

    def schedule_append(self, epoch: int, records: Sequence[bytes]) -> int:
        if not self._started or epoch != self._leader.epoch:
            raise NotLeaderError(
                f"node {self._node_id} is not the leader of epoch {epoch} (current: {self._leader})"
            )
        if not records:
            raise ValueError("schedule_append needs at least one record")
        if self._delivering:
            # A listener appending from inside a callback would see its own batch re-entrantly
            # and out of order; the controller appends from its driver instead.
            raise RuntimeError("schedule_append called from inside a raft listener callback")
        now = self._clock_ms()
        batch = build_batch(
            [RecordInput(None, value, timestamp=now) for value in records],
            partition_leader_epoch=epoch,
        )
        if len(batch) > MAX_BATCH_SIZE_BYTES:
            raise ValueError(
                f"metadata batch of {len(batch)} bytes exceeds {MAX_BATCH_SIZE_BYTES} bytes"
            )
        return self._append_and_commit(batch, epoch)

    # -- internals ---------------------------------------------------------------------------

    def _append_and_commit(self, batch: bytes, epoch: int) -> int:
        info = self._log.append_as_leader(batch, epoch)
        self._log.flush()
        self._high_watermark = info.last_offset + 1
        self._log.high_watermark = self._high_watermark
        self._delivering = True
        try:
            for registration in list(self._listeners):
                self._deliver(registration)
        finally:
            self._delivering = False
        return info.last_offset

    def _last_epoch_in_log(self) -> int:
        last_epoch = 0
        for header_epoch in self._scan_epochs():
            last_epoch = max(last_epoch, header_epoch)
        return last_epoch

    def _scan_epochs(self) -> list[int]:
        epochs: list[int] = []
        offset = self._log.log_start_offset
        end = self._log.log_end_offset
        while offset < end:
            data = self._log.read(offset, _READ_CHUNK_BYTES, end, True).read_bytes()
            next_offset = offset
            for _, header in iter_batches(data):
                epochs.append(header.partition_leader_epoch)
                next_offset = header.next_offset
            if next_offset == offset:
                break
            offset = next_offset
        return epochs

    def _deliver(self, registration: _Registration[T]) -> None:
        """Hand ``registration`` every committed batch it has not seen, then the leader."""
        while registration.next_offset < self._high_watermark:
            data = self._log.read(
                registration.next_offset, _READ_CHUNK_BYTES, self._high_watermark, True
            ).read_bytes()
            progressed = False
            for pos, header in iter_batches(data):
                if header.last_offset < registration.next_offset:
                    continue
                if header.next_offset > self._high_watermark:
                    break
                batch: CommittedBatch[T] = committed_batch(data, pos, header, self._decode)
                registration.next_offset = header.next_offset
                progressed = True
                registration.listener.handle_commit(batch)
            if not progressed:
                raise RuntimeError(
                    f"metadata log read at offset {registration.next_offset} returned no "
                    f"complete batch below the high watermark {self._high_watermark}"
                )
        if self._started and registration.last_leader != self._leader:
            registration.last_leader = self._leader
            registration.listener.handle_leader_change(self._leader)
