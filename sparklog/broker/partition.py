"""One partition replica as the broker sees it: its log, its role and its high watermark.

Invariants:
- Only the leader accepts produce; it stamps its leader epoch on every batch it appends.
- The high watermark is the minimum log end offset over the ISR (seed 004). It never moves
  backwards on the leader and never passes the log end offset. In this release the ISR of every
  partition on a single node is the node itself, so an append advances the high watermark at
  once; the replication issue brings follower LEO tracking into :meth:`maybe_advance_hw`.
- The last stable offset is the log's: the high watermark, held back to the first offset of
  the earliest transaction that is open or whose marker the high watermark has not passed.
- A request naming a leader epoch older than ours is FENCED_LEADER_EPOCH, newer is
  UNKNOWN_LEADER_EPOCH (KIP-320).
"""

from __future__ import annotations

from dataclasses import dataclass

from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.storage.log import Log


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What the metadata log says about a partition (leader, ISR, epochs)."""

    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class Partition:
    def __init__(self, topic: str, index: int, topic_id: bytes, log: Log, local_id: int) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.local_id = local_id
        self.state = PartitionState(-1, -1, -1, (), ())

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, epoch={self.state.leader_epoch})"

    @property
    def is_leader(self) -> bool:
        return self.state.leader == self.local_id

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def apply_state(self, state: PartitionState) -> bool:
        """Adopt a new leader/ISR from the metadata log; stale epochs are ignored.

        Returns True when this replica just became leader for a new epoch.
        """
        if state.leader_epoch < self.state.leader_epoch or (
            state.leader_epoch == self.state.leader_epoch
            and state.partition_epoch <= self.state.partition_epoch
        ):
            return False
        new_leader_epoch = state.leader_epoch != self.state.leader_epoch
        self.state = state
        if self.is_leader and new_leader_epoch:
            self.log.epoch_cache.assign(state.leader_epoch, self.log.log_end_offset)
            self.maybe_advance_hw()
            return True
        return False

    def check_leader(self, current_leader_epoch: int = -1) -> None:
        """Raise the error a client expects when we cannot serve as leader."""
        if current_leader_epoch >= 0:
            if current_leader_epoch < self.state.leader_epoch:
                raise KafkaApiError(ErrorCode.FENCED_LEADER_EPOCH, "fenced leader epoch")
            if current_leader_epoch > self.state.leader_epoch:
                raise KafkaApiError(ErrorCode.UNKNOWN_LEADER_EPOCH, "unknown leader epoch")
        if not self.is_leader:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "not the leader")

    def maybe_advance_hw(self) -> bool:
        """Move the HW to the minimum LEO over the ISR; returns True if it moved."""
        # With one replica in the ISR (this node) the minimum LEO is our own.
        new_hw = self.log.log_end_offset
        if new_hw > self.log.high_watermark:
            self.log.high_watermark = new_hw
            return True
        return False
