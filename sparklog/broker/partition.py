"""One partition replica as the broker sees it: its log, its role and its high watermark.

The replication decisions are the sans-IO cores' (:mod:`sparklog.replication`): while this
broker leads the partition a :class:`~sparklog.replication.leader.LeaderCore` tracks the
followers, the ISR and the HW; while it follows, a
:class:`~sparklog.replication.follower.FollowerCore` says what to fetch and applies what the
leader returns. This class adapts them to the metadata image and keeps the broker-facing view.

Invariants:
- Only the leader accepts produce; it stamps its leader epoch on every batch it appends.
- The high watermark is the minimum log end offset over the maximal ISR, held while the ISR is
  under min ISR (seed 004, KIP-966); on the leader it never moves backwards and never passes
  the log end offset. A single-replica partition commits on append.
- The last stable offset is the log's: the high watermark, held back to the first offset of
  the earliest transaction that is open or whose marker the high watermark has not passed.
- Metadata with an older leader epoch or partition epoch, or the same leader epoch and a
  partition epoch not newer than ours, is stale and ignored; so is a leader epoch below the
  latest epoch of our log (old metadata replayed after a restart, when ours is still -1).
- A request naming a leader epoch older than ours is FENCED_LEADER_EPOCH, newer is
  UNKNOWN_LEADER_EPOCH (KIP-320).
"""

from __future__ import annotations

import enum
import logging
import time
from dataclasses import dataclass

from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.replication.follower import FollowerCore
from sparklog.replication.leader import DEFAULT_REPLICA_LAG_TIME_MAX_MS, LeaderCore
from sparklog.replication.messages import BrokerStatus, PartitionView
from sparklog.storage.log import Log

_log = logging.getLogger(__name__)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What the metadata log says about a partition (leader, ISR, epochs)."""

    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class RoleChange(enum.Enum):
    NONE = "none"
    """Stale or no change of role or leader epoch."""
    LEADER = "leader"
    """We lead a new leader epoch (or changed from follower)."""
    LEADER_UPDATED = "leader_updated"
    """Still leader for the same epoch; ISR or assignment changed."""
    FOLLOWER = "follower"
    """We follow a new leader or leader epoch: (re)start fetching."""


class Partition:
    def __init__(
        self,
        topic: str,
        index: int,
        topic_id: bytes,
        log: Log,
        local_id: int,
        *,
        replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS,
    ) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.local_id = local_id
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.local_broker_epoch = -1
        self.state = PartitionState(-1, -1, -1, (), ())
        self.leader_core: LeaderCore | None = None
        self.follower_core: FollowerCore | None = None

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, epoch={self.state.leader_epoch})"

    @property
    def is_leader(self) -> bool:
        return self.leader_core is not None and self.state.leader == self.local_id

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

    @property
    def isr(self) -> tuple[int, ...]:
        """The committed ISR: the leader's own view while we lead, else the metadata's."""
        core = self.leader_core
        if core is None:
            return self.state.isr
        committed = core.isr
        ordered = [r for r in self.state.replicas if r in committed]
        return tuple(ordered + sorted(committed.difference(ordered)))

    @property
    def min_insync_replicas(self) -> int:
        return self.log.config.min_insync_replicas

    @property
    def is_under_min_isr(self) -> bool:
        return self.leader_core is not None and self.leader_core.is_under_min_isr

    @property
    def is_under_replicated(self) -> bool:
        return self.leader_core is not None and self.leader_core.is_under_replicated

    def apply_state(
        self,
        state: PartitionState,
        now_ms: int | None = None,
        brokers: dict[int, BrokerStatus] | None = None,
    ) -> RoleChange:
        """Adopt a new leader/ISR from the metadata log; stale epochs are ignored."""
        if (
            state.leader_epoch < self.state.leader_epoch
            or state.partition_epoch < self.state.partition_epoch
            or (
                state.leader_epoch == self.state.leader_epoch
                and state.partition_epoch <= self.state.partition_epoch
            )
        ):
            return RoleChange.NONE
        if state.leader_epoch < self.log.latest_epoch:
            # Kafka's makeLeader/makeFollower skip a state older than what the replica knows;
            # after a restart what we know is our log: it holds a newer leader's batches.
            _log.warning(
                "Skipped the state change of %s-%d to %s: the log already holds leader epoch %d",
                self.topic,
                self.index,
                state,
                self.log.latest_epoch,
            )
            return RoleChange.NONE
        now = _now_ms() if now_ms is None else now_ms
        was_leader = self.is_leader
        new_leader_epoch = state.leader_epoch != self.state.leader_epoch
        self.state = state
        view = PartitionView(
            state.leader, state.leader_epoch, state.partition_epoch, state.replicas, state.isr
        )
        if state.leader == self.local_id:
            self.follower_core = None
            core = self.leader_core
            if core is None:
                core = self.leader_core = LeaderCore(
                    self.local_id,
                    self.log,
                    replica_lag_time_max_ms=self.replica_lag_time_max_ms,
                    min_insync_replicas=self.min_insync_replicas,
                    local_broker_epoch=self.local_broker_epoch,
                )
            if brokers is not None:
                core.update_brokers(brokers)
            core.become_leader(view, now)
            if not was_leader or new_leader_epoch:
                return RoleChange.LEADER
            return RoleChange.LEADER_UPDATED
        self.leader_core = None
        follower = self.follower_core
        if follower is None:
            follower = self.follower_core = FollowerCore(self.local_id, self.log)
        changed = follower.become_follower(view)
        return RoleChange.FOLLOWER if changed or was_leader else RoleChange.NONE

    def check_leader(self, current_leader_epoch: int = -1) -> None:
        """Raise the error a client expects when we cannot serve as leader."""
        if current_leader_epoch >= 0:
            if current_leader_epoch < self.state.leader_epoch:
                raise KafkaApiError(ErrorCode.FENCED_LEADER_EPOCH, "fenced leader epoch")
            if current_leader_epoch > self.state.leader_epoch:
                raise KafkaApiError(ErrorCode.UNKNOWN_LEADER_EPOCH, "unknown leader epoch")
        if not self.is_leader:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "not the leader")

    def maybe_advance_hw(self, now_ms: int | None = None) -> bool:
        """Recompute the leader's HW (after an append); returns True if it moved."""
        core = self.leader_core
        if core is None:
            return False
        core.min_insync_replicas = self.min_insync_replicas
        return core.maybe_increment_hw(_now_ms() if now_ms is None else now_ms)
