"""The leader's replication state machine for one partition (Kafka's ``Partition`` as leader).

Everything the leader decides about its followers lives here; this module does no I/O, keeps no
clock and does not know how fetches or AlterPartition requests travel. The driver feeds it the
metadata (:meth:`LeaderCore.become_leader`, :meth:`LeaderCore.update_brokers`), follower
fetches (:meth:`LeaderCore.on_follower_fetch`), AlterPartition responses and ``now_ms``, and
carries out what it returns.

Invariants:
- The high watermark only moves forward while we lead, never past our LEO, and only to the
  minimum LEO over the *maximal* ISR (committed ISR plus a replica being added) and over the
  caught-up, ISR-eligible replicas about to join. It does not move while the committed ISR is
  smaller than the effective min ISR, ``min(min.insync.replicas, replication factor)``
  (KIP-966).
- A follower's state is updated only by a fetch that passed the epoch and divergence checks;
  a follower is *caught up* when its LEO equals ours or it reached, within
  ``replica.lag.time.max.ms``, the LEO we had at its previous fetch.
- At most one AlterPartition is in flight; a response for another proposal is stale and
  ignored. A refused change rolls back to the committed ISR; a change the controller may have
  seen stays pending until the metadata image says what happened.
- A view whose leader epoch is below the latest epoch in our log is stale (a restart replaying
  old metadata): it is refused, whatever this core saw before.
- A follower joins the ISR only when its LEO reaches both the HW and the start offset of our
  leader epoch, and its broker is unfenced, not shutting down and of the epoch we know.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from sparklog.protocol.errors import ErrorCode
from sparklog.replication.isr import CommittedIsr, IsrState, PendingExpandIsr, PendingShrinkIsr
from sparklog.replication.log import ReplicaLog
from sparklog.replication.messages import (
    UNKNOWN_OFFSET,
    AlterPartitionOutcome,
    AlterPartitionProposal,
    BrokerStatus,
    EpochEndOffset,
    FollowerFetch,
    FollowerFetchResult,
    PartitionView,
)

DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000
_PROPOSAL_IDS = itertools.count(1)

# Refusals after which the committed ISR is known to be unchanged: safe to roll back.
_ROLLBACK_ERRORS = frozenset({ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.INELIGIBLE_REPLICA})
# Our view of the partition is older than the controller's: only the metadata image can tell
# us the truth. (STALE_BROKER_EPOCH is not one: it is about this broker's registration, not the
# partition, so no partition change will ever settle it. As Kafka's AlterPartitionManager does,
# the proposal is sent again, with the broker epoch of the registration we hold by then; the
# chaos run with seed 42 had eight partitions wait forever for metadata after their leader
# re-registered, their ISR never restored.)
_AWAIT_METADATA_ERRORS = frozenset(
    {
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.NEW_LEADER_ELECTED,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
    }
)


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """The leader's knowledge of one follower (Kafka's ``ReplicaState``).

    ``last_caught_up_time_ms`` is None when the follower was never seen caught up.
    ``broker_epoch`` is None before its first fetch of this leadership.
    """

    log_start_offset: int = UNKNOWN_OFFSET
    log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_time_ms: int | None = None
    last_caught_up_time_ms: int | None = None
    broker_epoch: int | None = None

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        if self.log_end_offset == leader_end_offset:
            return True
        caught_up = self.last_caught_up_time_ms
        return caught_up is not None and now_ms - caught_up <= max_lag_ms

    def after_fetch(
        self,
        fetch_offset: int,
        log_start_offset: int,
        now_ms: int,
        leader_end_offset: int,
        broker_epoch: int,
    ) -> ReplicaState:
        caught_up = self.last_caught_up_time_ms
        if fetch_offset >= leader_end_offset:
            caught_up = now_ms if caught_up is None else max(caught_up, now_ms)
        elif (
            fetch_offset >= self.last_fetch_leader_log_end_offset
            and self.last_fetch_time_ms is not None
        ):
            # It reached what we had at its previous fetch: caught up as of that fetch.
            previous = self.last_fetch_time_ms
            caught_up = previous if caught_up is None else max(caught_up, previous)
        return ReplicaState(
            log_start_offset=log_start_offset,
            log_end_offset=fetch_offset,
            last_fetch_leader_log_end_offset=leader_end_offset,
            last_fetch_time_ms=now_ms,
            last_caught_up_time_ms=caught_up,
            broker_epoch=broker_epoch,
        )


class LeaderCore:
    """Leader-side replication of one partition hosted on broker ``local_id``.

    Create one when the broker becomes leader and drop it when it stops leading.
    ``brokers`` starts unknown: until :meth:`update_brokers` is called every replica is ISR
    eligible (convenient for tests); afterwards only registered, unfenced brokers are.
    """

    def __init__(
        self,
        local_id: int,
        log: ReplicaLog,
        *,
        replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS,
        min_insync_replicas: int = 1,
        local_broker_epoch: int = -1,
    ) -> None:
        self.local_id = local_id
        self.log = log
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.min_insync_replicas = min_insync_replicas
        self.local_broker_epoch = local_broker_epoch
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.leader_epoch_start_offset = UNKNOWN_OFFSET
        self.isr_state: IsrState = CommittedIsr(frozenset())
        self._followers: dict[int, ReplicaState] = {}
        self._brokers: dict[int, BrokerStatus] | None = None
        self._pending: AlterPartitionProposal | None = None
        # Unique across every LeaderCore of the process: an answer to an earlier leadership's
        # proposal can then never be taken for one of ours.
        self._next_proposal_id = next(_PROPOSAL_IDS)

    # -- views ---------------------------------------------------------------------------------
    @property
    def isr(self) -> frozenset[int]:
        """The last ISR the controller committed."""
        return self.isr_state.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr_state.maximal_isr

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def pending_proposal(self) -> AlterPartitionProposal | None:
        """The AlterPartition in flight, to (re)send; None when the ISR is committed."""
        return self._pending

    @property
    def effective_min_isr(self) -> int:
        return max(1, min(self.min_insync_replicas, len(self.replicas) or 1))

    @property
    def is_under_min_isr(self) -> bool:
        return len(self.isr) < self.effective_min_isr

    @property
    def is_under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    def replica_state(self, replica_id: int) -> ReplicaState | None:
        return self._followers.get(replica_id)

    # -- metadata --------------------------------------------------------------------------------
    def become_leader(self, view: PartitionView, now_ms: int) -> bool:
        """Adopt leader/ISR from the metadata image; False when ``view`` is stale.

        A new leader epoch records its start offset (our LEO) in the epoch cache and resets the
        followers' states: ISR members count as caught up now, the others as never.
        """
        if view.leader != self.local_id:
            raise ValueError(f"broker {self.local_id} is not the leader in {view}")
        if view.leader_epoch < self.leader_epoch or view.partition_epoch < self.partition_epoch:
            return False
        if view.leader_epoch == self.leader_epoch and view.partition_epoch == self.partition_epoch:
            return False
        if view.leader_epoch < self.log.latest_epoch:
            # Our log already holds a newer leader's batches: this view is history (replayed
            # metadata), and leading it would rewrite the epoch cache below them.
            return False
        new_leader_epoch = view.leader_epoch > self.leader_epoch
        first_epoch = self.leader_epoch < 0
        isr = frozenset(view.isr)
        self.replicas = tuple(view.replicas)
        self.partition_epoch = view.partition_epoch
        self.isr_state = CommittedIsr(isr)
        self._pending = None
        followers = [r for r in self.replicas if r != self.local_id]
        if new_leader_epoch:
            start = self.log.log_end_offset
            self.log.epoch_cache.assign(view.leader_epoch, start)
            self.leader_epoch = view.leader_epoch
            self.leader_epoch_start_offset = start
            self._followers = {
                r: self._reset(self._followers.get(r), r in isr, now_ms, start, first_epoch)
                for r in followers
            }
        else:
            self._followers = {r: self._followers.get(r, ReplicaState()) for r in followers}
        self.maybe_increment_hw(now_ms)
        return True

    @staticmethod
    def _reset(
        current: ReplicaState | None,
        in_sync: bool,
        now_ms: int,
        leader_end_offset: int,
        new_leader: bool,
    ) -> ReplicaState:
        caught_up = now_ms if in_sync else None
        if new_leader or current is None:
            return ReplicaState(last_caught_up_time_ms=caught_up)
        # Re-elected: keep what we know of its log, but a follower out of the ISR must fetch
        # again before it can count as caught up.
        return replace(
            current,
            last_fetch_leader_log_end_offset=leader_end_offset,
            last_fetch_time_ms=now_ms if in_sync else None,
            last_caught_up_time_ms=caught_up,
        )

    def update_brokers(self, brokers: dict[int, BrokerStatus]) -> None:
        """The registered brokers as the metadata image states them (ISR eligibility)."""
        self._brokers = dict(brokers)

    def _broker_epoch(self, broker_id: int) -> int:
        if broker_id == self.local_id and self.local_broker_epoch >= 0:
            return self.local_broker_epoch
        state = self._followers.get(broker_id)
        if state is not None and state.broker_epoch is not None and state.broker_epoch >= 0:
            return state.broker_epoch
        if self._brokers is not None and broker_id in self._brokers:
            return self._brokers[broker_id].broker_epoch
        return -1

    def is_isr_eligible(self, replica_id: int) -> bool:
        state = self._followers.get(replica_id)
        if state is None:
            return False
        if self._brokers is None:
            return True
        broker = self._brokers.get(replica_id)
        if broker is None or broker.fenced or broker.in_controlled_shutdown:
            return False
        stored = state.broker_epoch
        return stored is not None and (stored == -1 or stored == broker.broker_epoch)

    # -- follower fetches ------------------------------------------------------------------------
    def on_follower_fetch(self, fetch: FollowerFetch, now_ms: int) -> FollowerFetchResult:
        """Validate and account one follower fetch partition (Kafka's ``fetchRecords``)."""
        log = self.log
        if fetch.current_leader_epoch >= 0 and fetch.current_leader_epoch != self.leader_epoch:
            code = (
                ErrorCode.FENCED_LEADER_EPOCH
                if fetch.current_leader_epoch < self.leader_epoch
                else ErrorCode.UNKNOWN_LEADER_EPOCH
            )
            return self._error(code)
        state = self._followers.get(fetch.replica_id)
        if state is None:
            return self._error(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if (
            fetch.broker_epoch >= 0
            and state.broker_epoch is not None
            and state.broker_epoch > fetch.broker_epoch
        ):
            # A fetch from an older incarnation of the broker, overtaken by a newer one.
            return self._error(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        start, end = log.log_start_offset, log.log_end_offset
        if fetch.last_fetched_epoch >= 0:
            epoch, epoch_end = log.end_offset_for_epoch(fetch.last_fetched_epoch)
            if epoch < 0 or epoch_end < 0 or fetch.fetch_offset < start:
                return self._error(ErrorCode.OFFSET_OUT_OF_RANGE)
            if epoch < fetch.last_fetched_epoch or epoch_end < fetch.fetch_offset:
                return FollowerFetchResult(
                    error=0,
                    high_watermark=log.high_watermark,
                    log_start_offset=start,
                    log_end_offset=end,
                    diverging_epoch=EpochEndOffset(epoch, epoch_end),
                )
        if fetch.fetch_offset < start or fetch.fetch_offset > end:
            return self._error(ErrorCode.OFFSET_OUT_OF_RANGE)
        self._followers[fetch.replica_id] = state.after_fetch(
            fetch.fetch_offset, fetch.log_start_offset, now_ms, end, fetch.broker_epoch
        )
        proposal = self._maybe_expand_isr(fetch.replica_id, now_ms)
        hw_changed = self.maybe_increment_hw(now_ms)
        return FollowerFetchResult(
            error=0,
            high_watermark=log.high_watermark,
            log_start_offset=start,
            log_end_offset=end,
            hw_changed=hw_changed,
            proposal=proposal,
        )

    def _error(self, code: ErrorCode) -> FollowerFetchResult:
        log = self.log
        return FollowerFetchResult(
            error=int(code),
            high_watermark=log.high_watermark,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
        )

    # -- high watermark --------------------------------------------------------------------------
    def maybe_increment_hw(self, now_ms: int) -> bool:
        """Recompute the HW after an append, a fetch or an ISR change; True if it moved."""
        if self.is_under_min_isr:
            return False
        leader_end = self.log.log_end_offset
        new_hw = leader_end
        maximal = self.maximal_isr
        for replica_id, state in self._followers.items():
            if state.log_end_offset >= new_hw:
                continue
            joining = state.is_caught_up(
                leader_end, now_ms, self.replica_lag_time_max_ms
            ) and self.is_isr_eligible(replica_id)
            if replica_id in maximal or joining:
                new_hw = state.log_end_offset
        if new_hw > self.log.high_watermark:
            self.log.high_watermark = new_hw
            return True
        return False

    def check_enough_replicas(self, required_offset: int) -> tuple[bool, int]:
        """acks=all: ``(done, error)`` for a produce whose records end before
        ``required_offset`` (Kafka's ``checkEnoughReplicasReachOffset``)."""
        if self.log.high_watermark >= required_offset:
            if self.effective_min_isr <= len(self.maximal_isr):
                return True, int(ErrorCode.NONE)
            return True, int(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
        return False, int(ErrorCode.NONE)

    # -- ISR changes -----------------------------------------------------------------------------
    def _is_follower_in_sync(self, state: ReplicaState) -> bool:
        end = state.log_end_offset
        return (
            end >= self.log.high_watermark
            and self.leader_epoch_start_offset >= 0
            and end >= self.leader_epoch_start_offset
        )

    def _maybe_expand_isr(self, replica_id: int, now_ms: int) -> AlterPartitionProposal | None:
        current = self.isr_state
        if not isinstance(current, CommittedIsr) or replica_id in current.isr:
            return None
        state = self._followers[replica_id]
        if not self._is_follower_in_sync(state) or not self.is_isr_eligible(replica_id):
            return None
        proposal = self._propose(current.isr | {replica_id}, expand=True)
        self.isr_state = PendingExpandIsr(replica_id, proposal.proposal_id, current)
        return proposal

    def out_of_sync_replicas(self, now_ms: int) -> frozenset[int]:
        """ISR followers that did not catch up within ``replica.lag.time.max.ms``."""
        if self.isr_state.is_inflight:
            return frozenset()
        leader_end = self.log.log_end_offset
        lag = self.replica_lag_time_max_ms
        out: set[int] = set()
        for replica_id in self.isr - {self.local_id}:
            state = self._followers.get(replica_id)
            if state is None or not state.is_caught_up(leader_end, now_ms, lag):
                out.add(replica_id)
        return frozenset(out)

    def maybe_shrink_isr(self, now_ms: int) -> AlterPartitionProposal | None:
        """Propose removing lagging followers (call it periodically, as Kafka's
        ``isr-expiration`` task does every ``replica.lag.time.max.ms / 2``)."""
        current = self.isr_state
        if not isinstance(current, CommittedIsr):
            return None
        out = self.out_of_sync_replicas(now_ms)
        if not out:
            return None
        proposal = self._propose(current.isr - out, expand=False)
        self.isr_state = PendingShrinkIsr(out, proposal.proposal_id, current)
        return proposal

    def _propose(self, isr: frozenset[int], *, expand: bool) -> AlterPartitionProposal:
        # The leader first, then the others in assignment order: stable and readable.
        ordered = [self.local_id] if self.local_id in isr else []
        ordered += [r for r in self.replicas if r in isr and r != self.local_id]
        ordered += sorted(r for r in isr if r not in ordered)
        proposal = AlterPartitionProposal(
            proposal_id=self._next_proposal_id,
            leader_id=self.local_id,
            leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch,
            new_isr=tuple((r, self._broker_epoch(r)) for r in ordered),
            expand=expand,
        )
        self._next_proposal_id = next(_PROPOSAL_IDS)
        self._pending = proposal
        return proposal

    def on_alter_partition_response(
        self,
        proposal_id: int,
        error: int,
        now_ms: int,
        *,
        leader_epoch: int = -1,
        partition_epoch: int = -1,
        isr: tuple[int, ...] = (),
    ) -> AlterPartitionOutcome:
        """Apply the controller's answer to proposal ``proposal_id``.

        ``error`` is the partition's error (or the request's, or REQUEST_TIMED_OUT when no
        answer came). Compare :attr:`high_watermark` before and after: a committed change can
        let it advance.
        """
        pending = self._pending
        if pending is None or pending.proposal_id != proposal_id:
            return AlterPartitionOutcome.STALE
        if error == ErrorCode.NONE:
            if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
                return AlterPartitionOutcome.STALE
            self.isr_state = CommittedIsr(frozenset(isr))
            self.partition_epoch = partition_epoch
            self._pending = None
            self.maybe_increment_hw(now_ms)
            return AlterPartitionOutcome.APPLIED
        if error in _ROLLBACK_ERRORS:
            state = self.isr_state
            if not isinstance(state, CommittedIsr):
                self.isr_state = state.last_committed
            self._pending = None
            self.maybe_increment_hw(now_ms)
            return AlterPartitionOutcome.ROLLED_BACK
        if error in _AWAIT_METADATA_ERRORS:
            return AlterPartitionOutcome.AWAIT_METADATA
        return AlterPartitionOutcome.RETRY
