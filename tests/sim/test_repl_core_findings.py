"""Findings about the replication cores that the simulator surfaced (tests/sim/replication).

Found with ``repl_pauses`` seed 100462 (a duplicated fetch answer arriving after the follower
truncated and refetched back to the same offset) and ``repl_chaos`` seed 101338 (an
AlterPartition error for an earlier leadership's proposal taken for the current one). The
follower now checks the position generation its answers echo, and proposal ids are unique
across leaderships.
"""

from __future__ import annotations

from sparklog.replication.follower import FollowerCore
from sparklog.replication.leader import LeaderCore
from sparklog.replication.messages import (
    AlterPartitionOutcome,
    FetchResponsePartition,
    FollowerAction,
    FollowerFetch,
    PartitionView,
)
from tests.sim.replication.memory_log import InMemoryLog
from tests.unit.replication.helpers import batch, fetch_once


def answer(leader: LeaderCore, follower: FollowerCore) -> FetchResponsePartition:
    """The leader's answer to the follower's current position, as the network carries it."""
    position = follower.fetch_position()
    assert position is not None
    result = leader.on_follower_fetch(
        FollowerFetch(
            1,
            position.fetch_offset,
            position.last_fetched_epoch,
            position.log_start_offset,
            position.current_leader_epoch,
        ),
        0,
    )
    log = leader.log
    assert isinstance(log, InMemoryLog)
    records = log.read(position.fetch_offset, 1 << 20) if result.should_read else b""
    return FetchResponsePartition(
        position.fetch_offset,
        position.current_leader_epoch,
        error_code=result.error,
        high_watermark=result.high_watermark,
        log_start_offset=result.log_start_offset,
        records=records,
        diverging_epoch=result.diverging_epoch,
        generation=position.generation,
    )


def test_duplicated_diverging_answer_after_refetch_is_ignored() -> None:
    # Broker 0 led epoch 1 and leads epoch 2 from offset 3; broker 1 (an epoch-1 zombie
    # leader) wrote its own record at offset 3 in epoch 1.
    leader_log = InMemoryLog()
    follower_log = InMemoryLog()
    for _ in range(3):
        first, _ = leader_log.append_as_leader(batch(1, b"a"), 1)
        follower_log.append_as_follower(leader_log.read(first, 1 << 20))
    follower_log.append_as_leader(batch(1, b"zombie"), 1)
    view = PartitionView(0, 2, 2, (0, 1), (0, 1))
    leader = LeaderCore(0, leader_log, min_insync_replicas=2)
    assert leader.become_leader(view, 0)
    follower = FollowerCore(1, follower_log)
    assert follower.become_follower(view)

    diverging = answer(leader, follower)
    assert diverging.diverging_epoch is not None
    assert follower.on_fetch_response(diverging).truncated_to == 3
    leader_log.append_as_leader(batch(1, b"acked"), 2)
    assert fetch_once(leader, follower) is not None  # appends the leader's record at 3
    assert fetch_once(leader, follower) is not None  # reports LEO 4: the HW reaches 4
    assert leader.check_enough_replicas(4) == (True, 0)  # offset 3 is acknowledged

    duplicate = follower.on_fetch_response(diverging)  # the network delivers it again
    assert duplicate.action is FollowerAction.IGNORED
    assert follower_log.log_end_offset == 4


def test_error_answer_for_a_previous_leaderships_proposal_is_stale() -> None:
    log = InMemoryLog()
    for _ in range(2):
        log.append_as_leader(batch(1), 1)
    first = LeaderCore(0, log, min_insync_replicas=2)
    assert first.become_leader(PartitionView(0, 1, 1, (0, 1, 2), (0, 1, 2)), 0)
    old = first.maybe_shrink_isr(10**6)  # both followers silent: shrink to the leader
    assert old is not None
    # Leadership lost, then won again in epoch 3 with a new core, which proposes an expansion.
    second = LeaderCore(0, log, min_insync_replicas=2)
    assert second.become_leader(PartitionView(0, 3, 5, (0, 1, 2), (0,)), 0)
    follower = FollowerCore(1, InMemoryLog())
    assert follower.become_follower(PartitionView(0, 3, 5, (0, 1, 2), (0,)))
    while (fetched := fetch_once(second, follower)) is not None and fetched.appended_to >= 0:
        pass
    fetch_once(second, follower)
    new = second.pending_proposal
    assert new is not None and new.expand
    assert old.proposal_id != new.proposal_id  # ids are unique across leaderships
    answer = second.on_alter_partition_response(old.proposal_id, 74, 0)  # FENCED_LEADER_EPOCH
    assert answer is AlterPartitionOutcome.STALE
