"""FollowerCore: fetch positions, appends, HW, truncation on divergence, errors."""

from __future__ import annotations

import pytest

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.record_codec import build_batch
from sparklog.replication.follower import FollowerCore, complete_batches
from sparklog.replication.messages import (
    EpochEndOffset,
    FetchResponsePartition,
    FollowerAction,
    PartitionView,
)
from tests.sim.replication.memory_log import InMemoryLog
from tests.unit.replication.helpers import batch


def leader_log(epochs: list[tuple[int, int]]) -> InMemoryLog:
    """A log with ``count`` single-record batches per ``(epoch, count)``."""
    log = InMemoryLog()
    for epoch, count in epochs:
        for _ in range(count):
            log.append_as_leader(batch(1), epoch)
    return log


def follower_with(epochs: list[tuple[int, int]], leader_epoch: int = 5) -> FollowerCore:
    log = InMemoryLog()
    log.append_as_follower(leader_log(epochs).read(0, 1 << 30))
    follower = FollowerCore(2, log)
    assert follower.become_follower(PartitionView(1, leader_epoch, 1, (1, 2), (1, 2)))
    return follower


def response(follower: FollowerCore, **kw: object) -> FetchResponsePartition:
    position = follower.fetch_position()
    assert position is not None
    return FetchResponsePartition(
        fetch_offset=position.fetch_offset,
        current_leader_epoch=position.current_leader_epoch,
        **kw,  # type: ignore[arg-type]
    )


def test_fetch_position_and_append_keeps_leader_offsets() -> None:
    follower = follower_with([])
    position = follower.fetch_position()
    assert position is not None
    assert (position.fetch_offset, position.last_fetched_epoch, position.current_leader_epoch) == (
        0,
        -1,
        5,
    )
    source = leader_log([(3, 2), (5, 2)])
    outcome = follower.on_fetch_response(
        response(follower, records=source.read(0, 1 << 20), high_watermark=3, log_start_offset=0)
    )
    assert outcome.action is FollowerAction.CONTINUE and outcome.appended_to == 4
    log = follower.log
    assert isinstance(log, InMemoryLog)
    assert log.offsets_and_epochs() == source.offsets_and_epochs()
    assert [b.data for b in log.batches] == [b.data for b in source.batches]
    assert log.high_watermark == 3 and outcome.hw_changed
    assert log.latest_epoch == 5 and log.epoch_cache.start_offset_of(5) == 2
    position = follower.fetch_position()
    assert position is not None and position.last_fetched_epoch == 5


def test_hw_is_capped_by_own_leo() -> None:
    follower = follower_with([(5, 2)])
    follower.on_fetch_response(response(follower, records=b"", high_watermark=10))
    assert follower.log.high_watermark == 2


def test_partial_trailing_batch_is_dropped() -> None:
    data = build_batch([(None, b"a")]) + build_batch([(None, b"b")], base_offset=1)
    assert len(complete_batches(data[:-3])) == len(data) // 2
    assert len(complete_batches(data[:10])) == 0
    follower = follower_with([])
    whole = leader_log([(5, 2)]).read(0, 1 << 20)
    follower.on_fetch_response(response(follower, records=whole[:-5], high_watermark=0))
    assert follower.log.log_end_offset == 1


def test_stale_response_is_ignored() -> None:
    follower = follower_with([(5, 1)])
    stale = FetchResponsePartition(fetch_offset=0, current_leader_epoch=5, records=batch())
    assert follower.on_fetch_response(stale).action is FollowerAction.IGNORED
    old_epoch = FetchResponsePartition(fetch_offset=1, current_leader_epoch=4)
    assert follower.on_fetch_response(old_epoch).action is FollowerAction.IGNORED


@pytest.mark.parametrize(
    ("ours", "diverging", "expected"),
    [
        # Same epoch known to both: the smaller end.
        ([(1, 3), (2, 4)], EpochEndOffset(2, 5), 5),
        # We do not have the leader's epoch 2: truncate to our end of the largest epoch below.
        ([(1, 3), (3, 4)], EpochEndOffset(2, 6), 3),
        # The leader's end is beyond our LEO: nothing to cut.
        ([(1, 3)], EpochEndOffset(1, 9), 3),
        # Leader knows no epoch at or below ours.
        ([(4, 3)], EpochEndOffset(-1, 1), 1),
    ],
)
def test_truncation_on_diverging_epoch(
    ours: list[tuple[int, int]], diverging: EpochEndOffset, expected: int
) -> None:
    follower = follower_with(ours)
    outcome = follower.on_fetch_response(response(follower, diverging_epoch=diverging))
    assert outcome.action is FollowerAction.CONTINUE
    assert outcome.truncated_to == expected
    assert follower.log.log_end_offset == expected


def test_out_of_range_behind_leader_start_restarts_there() -> None:
    follower = follower_with([(5, 2)])
    outcome = follower.on_fetch_response(
        response(
            follower,
            error_code=ErrorCode.OFFSET_OUT_OF_RANGE,
            log_start_offset=50,
            high_watermark=60,
        )
    )
    assert outcome.truncated_to == 50
    assert follower.log.log_start_offset == 50 and follower.log.log_end_offset == 50


def test_out_of_range_ahead_of_leader_truncates() -> None:
    follower = follower_with([(5, 6)])
    outcome = follower.on_fetch_response(
        response(
            follower,
            error_code=ErrorCode.OFFSET_OUT_OF_RANGE,
            log_start_offset=0,
            high_watermark=2,
            leader_log_end_offset=4,
        )
    )
    assert outcome.truncated_to == 4 and follower.log.log_end_offset == 4
    fallback = follower_with([(5, 6)])
    fallback.on_fetch_response(
        response(
            fallback, error_code=ErrorCode.OFFSET_OUT_OF_RANGE, log_start_offset=0, high_watermark=2
        )
    )
    assert fallback.log.log_end_offset == 2


def test_fenced_waits_for_metadata_other_errors_back_off() -> None:
    follower = follower_with([])
    outcome = follower.on_fetch_response(
        response(follower, error_code=ErrorCode.FENCED_LEADER_EPOCH)
    )
    assert outcome.action is FollowerAction.AWAIT_METADATA
    assert follower.fetch_position() is None
    assert not follower.become_follower(PartitionView(1, 4, 0, (1, 2), (1, 2)))  # stale
    assert follower.become_follower(PartitionView(1, 6, 2, (1, 2), (1, 2)))
    assert follower.fetch_position() is not None
    outcome = follower.on_fetch_response(
        response(follower, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    )
    assert outcome.action is FollowerAction.BACKOFF
    assert follower.fetch_position() is not None


def test_log_start_follows_leader() -> None:
    follower = follower_with([(5, 4)])
    follower.on_fetch_response(response(follower, high_watermark=4, log_start_offset=2))
    assert follower.log.log_start_offset == 2


def test_corrupt_records_back_off_without_writing() -> None:
    follower = follower_with([])
    log = follower.log
    assert isinstance(log, InMemoryLog)
    # The in-memory log does not check CRCs; a wrong base offset stands in for corruption.
    misplaced = build_batch([(None, b"x")], base_offset=7)
    outcome = follower.on_fetch_response(response(follower, records=misplaced))
    assert outcome.action is FollowerAction.BACKOFF and outcome.error != 0
    assert log.log_end_offset == 0


def test_offset_moved_to_tiered_storage_hands_the_rebuild_to_the_driver() -> None:
    follower = follower_with([(5, 3)])
    position = follower.fetch_position()
    assert position is not None
    outcome = follower.on_fetch_response(
        response(
            follower,
            error_code=ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE,
            log_start_offset=0,
            high_watermark=90,
            generation=position.generation,
        )
    )
    # The core leaves the log alone: the driver rebuilds it from the store.
    assert outcome.action is FollowerAction.BUILD_TIER_STATE
    assert outcome.error == ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE
    assert outcome.truncated_to is None and follower.log.log_end_offset == 3
    follower.log.truncate_fully_and_start_at(3)  # what a rebuild at the same offset does
    follower.restarted()
    # An answer to the position from before the rebuild is stale, even at the same offset.
    late = FetchResponsePartition(
        fetch_offset=3,
        current_leader_epoch=5,
        records=leader_log([(5, 4)]).read(3, 1 << 20),
        high_watermark=4,
        generation=position.generation,
    )
    assert follower.on_fetch_response(late).action is FollowerAction.IGNORED
    after = follower.fetch_position()
    assert after is not None and after.generation == position.generation + 1
