"""LeaderCore: follower tracking, HW, divergence answers, ISR shrink / expand, AlterPartition."""

from __future__ import annotations

from sparklog.protocol.errors import ErrorCode
from sparklog.replication.isr import CommittedIsr, PendingExpandIsr, PendingShrinkIsr
from sparklog.replication.leader import LeaderCore
from sparklog.replication.log import ReplicaLog
from sparklog.replication.messages import (
    AlterPartitionOutcome,
    BrokerStatus,
    EpochEndOffset,
    FollowerFetch,
    FollowerFetchResult,
    PartitionView,
)
from sparklog.storage.log import Log
from tests.sim.replication.memory_log import InMemoryLog
from tests.unit.replication.helpers import leader_append

LAG = 30_000


def make_leader(
    isr: tuple[int, ...] = (1, 2, 3), min_isr: int = 2, epoch: int = 5, now_ms: int = 0
) -> LeaderCore:
    leader = LeaderCore(1, InMemoryLog(), min_insync_replicas=min_isr, replica_lag_time_max_ms=LAG)
    assert leader.become_leader(PartitionView(1, epoch, 10, (1, 2, 3), isr), now_ms)
    return leader


def fetch(
    leader: LeaderCore, replica: int, offset: int, now_ms: int, **kw: int
) -> FollowerFetchResult:
    return leader.on_follower_fetch(
        FollowerFetch(replica_id=replica, fetch_offset=offset, **kw), now_ms
    )


def _storage_log_is_a_replica_log(log: Log) -> ReplicaLog:
    # Checked by mypy on this file: fails if the storage engine's Log stops satisfying it.
    return log


def _memory_log_is_a_replica_log(log: InMemoryLog) -> ReplicaLog:
    return log


def test_become_leader_assigns_epoch_start_offset() -> None:
    leader = make_leader()
    leader_append(leader, 3)
    assert leader.become_leader(PartitionView(1, 6, 11, (1, 2, 3), (1, 2, 3)), 10)
    assert leader.leader_epoch_start_offset == 3
    assert leader.log.epoch_cache.start_offset_of(6) == 3
    # Stale and repeated views are ignored.
    assert not leader.become_leader(PartitionView(1, 5, 12, (1, 2, 3), (1,)), 10)
    assert not leader.become_leader(PartitionView(1, 6, 11, (1, 2, 3), (1,)), 10)
    assert leader.isr == {1, 2, 3}


def test_hw_is_min_leo_over_isr_and_never_moves_back() -> None:
    leader = make_leader()
    leader_append(leader, 10)
    assert leader.high_watermark == 0  # followers' LEOs are unknown after election
    assert fetch(leader, 2, 4, 1).high_watermark == 0
    assert fetch(leader, 3, 7, 1).high_watermark == 4
    assert fetch(leader, 2, 10, 2).high_watermark == 7
    result = fetch(leader, 3, 10, 3)
    assert result.hw_changed and result.high_watermark == 10
    # A follower reporting a lower offset (it truncated) cannot pull the HW back.
    fetch(leader, 3, 5, 4)
    assert leader.high_watermark == 10


def test_hw_holds_while_under_min_isr() -> None:
    leader = make_leader(isr=(1,), min_isr=2)
    leader_append(leader, 5)
    assert leader.is_under_min_isr
    assert leader.high_watermark == 0
    # With min.insync.replicas 1 the leader alone commits.
    alone = make_leader(isr=(1,), min_isr=1)
    leader_append(alone, 5)
    assert alone.high_watermark == 5


def test_effective_min_isr_is_capped_by_replication_factor() -> None:
    leader = LeaderCore(1, InMemoryLog(), min_insync_replicas=3)
    leader.become_leader(PartitionView(1, 0, 0, (1,), (1,)), 0)
    assert leader.effective_min_isr == 1
    leader_append(leader, 2)
    assert leader.high_watermark == 2


def test_fetch_epoch_checks() -> None:
    leader = make_leader(epoch=5)
    assert fetch(leader, 2, 0, 0, current_leader_epoch=4).error == ErrorCode.FENCED_LEADER_EPOCH
    assert fetch(leader, 2, 0, 0, current_leader_epoch=6).error == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert fetch(leader, 9, 0, 0).error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert fetch(leader, 2, 1, 0).error == ErrorCode.OFFSET_OUT_OF_RANGE  # beyond the LEO
    ok = fetch(leader, 2, 0, 0, current_leader_epoch=5)
    assert ok.error == 0 and ok.should_read


def test_stale_broker_epoch_fetch_is_refused() -> None:
    leader = make_leader()
    assert fetch(leader, 2, 0, 0, broker_epoch=7).error == 0
    assert fetch(leader, 2, 0, 1, broker_epoch=6).error == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_diverging_epoch_answer() -> None:
    leader = make_leader(epoch=1)
    leader_append(leader, 5)  # epoch 1: [0, 5)
    leader.become_leader(PartitionView(1, 3, 11, (1, 2, 3), (1, 2, 3)), 0)
    leader_append(leader, 5)  # epoch 3: [5, 10)
    # The follower has epoch 2 up to offset 8: our epoch <= 2 is 1, ending at 5.
    result = fetch(leader, 2, 8, 0, last_fetched_epoch=2)
    assert result.diverging_epoch == EpochEndOffset(1, 5)
    assert not result.should_read
    # Epoch 1 up to 7 is past our end of epoch 1.
    assert fetch(leader, 2, 7, 0, last_fetched_epoch=1).diverging_epoch == EpochEndOffset(1, 5)
    # Consistent positions read normally.
    assert fetch(leader, 2, 5, 0, last_fetched_epoch=1).diverging_epoch is None
    assert fetch(leader, 2, 9, 0, last_fetched_epoch=3).diverging_epoch is None
    # A diverging fetch does not count as progress.
    assert leader.replica_state(3) is not None
    state = leader.replica_state(3)
    assert state is not None and state.log_end_offset == -1


def test_caught_up_rule_uses_leo_at_previous_fetch() -> None:
    leader = make_leader(isr=(1, 2, 3), min_isr=1)
    leader_append(leader, 10)
    fetch(leader, 2, 10, 1_000)  # caught up at t=1000
    leader_append(leader, 10)  # LEO 20
    fetch(leader, 2, 10, 2_000)  # behind; the previous fetch saw LEO 10 -> caught up as of 1000
    leader_append(leader, 10)  # LEO 30
    fetch(leader, 2, 20, 3_000)  # reaches LEO at previous fetch (20): caught up as of 2000
    state = leader.replica_state(2)
    assert state is not None and state.last_caught_up_time_ms == 2_000
    fetch(leader, 3, 30, 3_000)
    assert leader.out_of_sync_replicas(2_000 + LAG) == frozenset()
    assert leader.out_of_sync_replicas(2_001 + LAG) == {2}


def test_isr_shrink_then_commit_lets_hw_advance() -> None:
    leader = make_leader(isr=(1, 2, 3), min_isr=2)
    leader_append(leader, 4)
    fetch(leader, 2, 4, 100)
    assert leader.high_watermark == 0  # replica 3 (in the ISR) has fetched nothing
    proposal = leader.maybe_shrink_isr(LAG + 1)
    assert proposal is not None and not proposal.expand
    assert proposal.isr_ids == (1, 2)
    assert isinstance(leader.isr_state, PendingShrinkIsr)
    # Pessimistic: the HW still waits for 3 while the removal is in flight.
    assert not leader.maybe_increment_hw(LAG + 1)
    assert leader.maybe_shrink_isr(LAG + 2) is None  # one change in flight at a time
    outcome = leader.on_alter_partition_response(
        proposal.proposal_id, 0, LAG + 2, leader_epoch=5, partition_epoch=11, isr=(1, 2)
    )
    assert outcome is AlterPartitionOutcome.APPLIED
    assert leader.isr == {1, 2} and leader.partition_epoch == 11
    assert leader.high_watermark == 4


def test_isr_expand_is_optimistic_and_needs_epoch_start() -> None:
    leader = make_leader(isr=(1, 2), min_isr=1)
    leader_append(leader, 6)  # epoch 5 starts at 0
    leader.become_leader(PartitionView(1, 6, 11, (1, 2, 3), (1, 2)), 0)  # epoch 6 starts at 6
    fetch(leader, 2, 6, 0)
    assert leader.high_watermark == 6
    assert fetch(leader, 3, 5, 0).proposal is None  # below the HW
    leader_append(leader, 2)  # LEO 8
    result = fetch(leader, 3, 6, 1)
    assert result.proposal is not None and result.proposal.expand
    assert result.proposal.isr_ids == (1, 2, 3)
    assert isinstance(leader.isr_state, PendingExpandIsr)
    assert leader.maximal_isr == {1, 2, 3} and leader.isr == {1, 2}
    fetch(leader, 2, 8, 2)
    assert leader.high_watermark == 6  # waits for the joining replica
    fetch(leader, 3, 8, 3)
    assert leader.high_watermark == 8


def test_alter_partition_errors() -> None:
    leader = make_leader(isr=(1, 2), min_isr=1)
    leader_append(leader, 1)
    fetch(leader, 2, 1, 0)
    proposal = fetch(leader, 3, 1, 0).proposal
    assert proposal is not None
    pid = proposal.proposal_id
    assert leader.on_alter_partition_response(pid + 1, 0, 0) is AlterPartitionOutcome.STALE
    assert (
        leader.on_alter_partition_response(pid, ErrorCode.NOT_CONTROLLER, 0)
        is AlterPartitionOutcome.RETRY
    )
    assert leader.pending_proposal == proposal
    # A stale broker epoch is this broker's registration, not the partition: no metadata about
    # the partition will settle it, so the proposal is retried (with the new broker epoch).
    assert (
        leader.on_alter_partition_response(pid, ErrorCode.STALE_BROKER_EPOCH, 0)
        is AlterPartitionOutcome.RETRY
    )
    assert leader.pending_proposal == proposal
    assert (
        leader.on_alter_partition_response(pid, ErrorCode.INVALID_UPDATE_VERSION, 0)
        is AlterPartitionOutcome.AWAIT_METADATA
    )
    assert isinstance(leader.isr_state, PendingExpandIsr)
    assert (
        leader.on_alter_partition_response(pid, ErrorCode.OPERATION_NOT_ATTEMPTED, 0)
        is AlterPartitionOutcome.ROLLED_BACK
    )
    assert not leader.isr_state.is_inflight and leader.isr == {1, 2}
    assert leader.pending_proposal is None
    # A success answering a proposal that is no longer pending is ignored.
    assert leader.on_alter_partition_response(pid, 0, 0, leader_epoch=5, partition_epoch=11) is (
        AlterPartitionOutcome.STALE
    )


def test_metadata_update_settles_a_pending_change() -> None:
    leader = make_leader(isr=(1, 2), min_isr=1)
    leader_append(leader, 1)
    fetch(leader, 2, 1, 0)
    proposal = fetch(leader, 3, 1, 0).proposal
    assert proposal is not None
    assert leader.become_leader(PartitionView(1, 5, 11, (1, 2, 3), (1, 2, 3)), 1)
    assert leader.isr_state == CommittedIsr(frozenset({1, 2, 3}))
    assert (
        leader.on_alter_partition_response(
            proposal.proposal_id, 0, 1, leader_epoch=5, partition_epoch=11, isr=(1, 2, 3)
        )
        is AlterPartitionOutcome.STALE
    )


def test_broker_eligibility_and_epochs_in_proposal() -> None:
    leader = make_leader(isr=(1, 2), min_isr=1)
    leader.local_broker_epoch = 100
    leader.update_brokers(
        {
            1: BrokerStatus(1, 100),
            2: BrokerStatus(2, 200),
            3: BrokerStatus(3, 300, fenced=True),
        }
    )
    leader_append(leader, 1)
    fetch(leader, 2, 1, 0, broker_epoch=200)
    assert fetch(leader, 3, 1, 0, broker_epoch=300).proposal is None  # fenced
    leader.update_brokers(
        {1: BrokerStatus(1, 100), 2: BrokerStatus(2, 200), 3: BrokerStatus(3, 301)}
    )
    assert fetch(leader, 3, 1, 1, broker_epoch=300).proposal is None  # epoch mismatch
    proposal = fetch(leader, 3, 1, 2, broker_epoch=301).proposal
    assert proposal is not None
    assert proposal.new_isr == ((1, 100), (2, 200), (3, 301))


def test_check_enough_replicas() -> None:
    leader = make_leader(isr=(1, 2), min_isr=2)
    leader_append(leader, 3)
    assert leader.check_enough_replicas(3) == (False, 0)
    fetch(leader, 2, 3, 0)
    assert leader.check_enough_replicas(3) == (True, 0)
    # The ISR shrank below min ISR after the append: done, but with an error.
    leader.become_leader(PartitionView(1, 5, 11, (1, 2, 3), (1,)), 0)
    assert leader.check_enough_replicas(3) == (True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)


def test_new_leader_epoch_resets_follower_state() -> None:
    leader = make_leader(isr=(1, 2, 3), min_isr=1)
    leader_append(leader, 3)
    fetch(leader, 2, 3, 0)
    fetch(leader, 3, 3, 0)
    assert leader.high_watermark == 3
    leader.become_leader(PartitionView(1, 6, 11, (1, 2, 3), (1, 2, 3)), 5)
    state = leader.replica_state(2)
    # Re-elected: LEO kept, caught up as of now (in the ISR).
    assert state is not None and state.log_end_offset == 3 and state.last_caught_up_time_ms == 5
    fresh = LeaderCore(1, leader.log, min_insync_replicas=1)
    fresh.become_leader(PartitionView(1, 7, 12, (1, 2, 3), (1, 3)), 9)
    s2, s3 = fresh.replica_state(2), fresh.replica_state(3)
    assert s2 is not None and s2.log_end_offset == -1 and s2.last_caught_up_time_ms is None
    assert s3 is not None and s3.last_caught_up_time_ms == 9
