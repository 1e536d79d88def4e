"""The consensus seam: what the metadata layer sees of KRaft (Kafka's ``RaftClient``).

Everything above this seam (the controller, the metadata loader, the broker's publishers) talks
to the metadata log only through :class:`RaftClient`; everything below it
(:class:`~sparklog.raft.core.RaftReplica`, the multi-voter KRaft state machine with
Vote/BeginQuorumEpoch/Fetch, or a test double such as ``tests/unit/raft``'s one-voter
``SingleVoterRaft``) can be swapped without touching the layers above.

Contract, as in Kafka:

- ``schedule_append(epoch, records)`` appends one batch of already-encoded records as leader of
  ``epoch``; it fails with :class:`NotLeaderError` if this node is not the leader of that epoch.
  The records of one call are atomic: they commit together or not at all.
- A listener sees committed batches exactly once each, in offset order, starting from the log
  start when it registers (so a late listener still rebuilds the full state), via
  ``handle_commit``. Control batches (leader changes) are delivered too, with their control
  records in ``control_records`` and no ``records``, so listeners can track offsets and epochs.
- ``handle_leader_change`` is called whenever the leader or epoch changes, after every batch
  of the previous epoch has been delivered.
- Snapshots (KIP-630): a listener whose next offset is below the log start (a new listener on
  a replica that deleted old segments, or a replica that downloaded the leader's snapshot) is
  first handed the latest snapshot through ``handle_load_snapshot`` (a
  :class:`SnapshotListener`): it must replace its whole state with the snapshot's, then
  batches follow from the snapshot's end offset. A listener without that method cannot
  follow such a log and the replica raises.
- The client is sans-IO and single-threaded: callbacks run synchronously inside the caller's
  call (``register_listener``, ``schedule_append``, ``start``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

T_co = TypeVar("T_co", covariant=True)
T_contra = TypeVar("T_contra", contravariant=True)

NO_LEADER = -1
METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
# Kafka's KafkaRaftClient.MAX_BATCH_SIZE_BYTES: one metadata batch never exceeds this.
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024


class NotLeaderError(Exception):
    """An append for an epoch this node does not lead (Kafka's NotLeaderException)."""


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader_id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class CommittedBatch(Generic[T_co]):
    """One committed batch of the log: its offsets, leader epoch and decoded records."""

    base_offset: int
    last_offset: int
    epoch: int
    append_timestamp: int
    records: Sequence[T_co] = ()
    control_records: Sequence[object] = field(default=())
    size_in_bytes: int = 0


@dataclass(frozen=True, slots=True)
class LoadedSnapshot(Generic[T_co]):
    """A committed snapshot: the state after every record below ``end_offset``."""

    end_offset: int
    epoch: int
    last_contained_timestamp: int
    records: Sequence[T_co] = ()
    size_in_bytes: int = 0

    @property
    def last_contained_offset(self) -> int:
        return self.end_offset - 1


class RaftListener(Protocol[T_contra]):
    def handle_commit(self, batch: CommittedBatch[T_contra]) -> None: ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None: ...


class SnapshotListener(RaftListener[T_contra], Protocol[T_contra]):
    def handle_load_snapshot(self, snapshot: LoadedSnapshot[T_contra]) -> None: ...


class RaftClient(Protocol[T_co]):
    def register_listener(self, listener: RaftListener[T_co]) -> None: ...

    def unregister_listener(self, listener: RaftListener[T_co]) -> None: ...

    def schedule_append(self, epoch: int, records: Sequence[bytes]) -> int:
        """Append one atomic batch as leader of ``epoch``; returns its last offset."""
        ...

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch: ...

    @property
    def high_watermark(self) -> int:
        """The offset after the last committed record."""
        ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def node_id(self) -> int: ...
