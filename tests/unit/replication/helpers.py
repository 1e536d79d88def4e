"""Builders shared by the replication core tests: batches, logs and a tiny in-process driver."""

from __future__ import annotations

from sparklog.protocol.record_codec import build_batch
from sparklog.replication.follower import FollowerCore
from sparklog.replication.leader import LeaderCore
from sparklog.replication.messages import (
    FetchResponsePartition,
    FollowerFetch,
    FollowerOutcome,
)
from tests.sim.replication.memory_log import InMemoryLog


def batch(count: int = 1, tag: bytes = b"v") -> bytes:
    return build_batch([(None, tag + bytes([i % 256])) for i in range(count)])


def leader_append(leader: LeaderCore, count: int = 1, now_ms: int = 0) -> tuple[int, int]:
    log = leader.log
    assert isinstance(log, InMemoryLog)
    offsets = log.append_as_leader(batch(count), leader.leader_epoch)
    leader.maybe_increment_hw(now_ms)
    return offsets


def fetch_once(
    leader: LeaderCore,
    follower: FollowerCore,
    now_ms: int = 0,
    max_bytes: int = 1 << 20,
    broker_epoch: int = -1,
) -> FollowerOutcome | None:
    """One follower fetch round trip through both cores; None if the follower is idle."""
    position = follower.fetch_position()
    if position is None:
        return None
    result = leader.on_follower_fetch(
        FollowerFetch(
            replica_id=follower.local_id,
            fetch_offset=position.fetch_offset,
            last_fetched_epoch=position.last_fetched_epoch,
            log_start_offset=position.log_start_offset,
            current_leader_epoch=position.current_leader_epoch,
            broker_epoch=broker_epoch,
        ),
        now_ms,
    )
    records = b""
    if result.should_read:
        leader_log = leader.log
        assert isinstance(leader_log, InMemoryLog)
        records = leader_log.read(position.fetch_offset, max_bytes, leader_log.log_end_offset)
    return follower.on_fetch_response(
        FetchResponsePartition(
            fetch_offset=position.fetch_offset,
            current_leader_epoch=position.current_leader_epoch,
            error_code=result.error,
            high_watermark=result.high_watermark,
            log_start_offset=result.log_start_offset,
            records=records,
            diverging_epoch=result.diverging_epoch,
            generation=position.generation,
        ),
        now_ms,
    )
