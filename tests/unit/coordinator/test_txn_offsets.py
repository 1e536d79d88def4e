"""Transactional offset commits in the group coordinator: pending until the marker, visible on
COMMIT, dropped on ABORT, and the same after replaying ``__consumer_offsets``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sparklog.broker.coordinator_runtime import ReplicaManagerRuntime
from sparklog.coordinator.coordinator import OFFSETS_TOPIC, GroupCoordinator
from sparklog.coordinator.group_metadata import GroupConfig
from sparklog.coordinator.offsets import CommitPartition, CommittedOffset
from sparklog.protocol.errors import ErrorCode
from tests.unit.coordinator.txn_support import FakeClock, replica_manager

PARTITIONS = 2


def coordinator(root: Path, clock: FakeClock | None = None) -> GroupCoordinator:
    clock = clock or FakeClock()
    replicas = replica_manager(root, {OFFSETS_TOPIC: PARTITIONS}, clock)
    return GroupCoordinator(GroupConfig(), PARTITIONS, ReplicaManagerRuntime(replicas), clock=clock)


def restarted(c: GroupCoordinator) -> GroupCoordinator:
    return GroupCoordinator(GroupConfig(), PARTITIONS, c.runtime, clock=c.clock)


def commit(offset: int, partition: int = 0) -> CommitPartition:
    return CommitPartition("in", partition, offset, -1, "m")


async def offset_of(c: GroupCoordinator, tp: tuple[str, int] = ("in", 0)) -> int:
    return (await c.fetch_offsets("g", [tp]))[tp].offset


async def marker(c: GroupCoordinator, producer_id: int, epoch: int, committed: bool) -> None:
    index = c.partition_for("g")
    assert isinstance(c.runtime, ReplicaManagerRuntime)
    await c.runtime.replica_manager.append_control_marker(
        OFFSETS_TOPIC, index, producer_id, epoch, 0, committed
    )
    c.complete_transaction(index, producer_id, committed)


def test_commit_marker_makes_offsets_visible(tmp_path: Path) -> None:
    async def run() -> None:
        c = coordinator(tmp_path)
        errors = await c.commit_txn_offsets("g", 7, 0, -1, "", None, [commit(10), commit(20, 1)])
        assert errors == [ErrorCode.NONE, ErrorCode.NONE]
        assert await offset_of(c) == -1
        assert c.has_pending_offset("g", ("in", 0))
        # a second commit of the same transaction continues the producer's sequence
        assert await c.commit_txn_offsets("g", 7, 0, -1, "", None, [commit(11)]) == [ErrorCode.NONE]
        await marker(c, 7, 0, committed=True)
        assert await offset_of(c) == 11 and await offset_of(c, ("in", 1)) == 20
        assert not c.has_pending_offset("g", ("in", 0))
        assert await offset_of(restarted(c)) == 11

    asyncio.run(run())


def test_abort_marker_drops_offsets(tmp_path: Path) -> None:
    async def run() -> None:
        c = coordinator(tmp_path)
        await c.commit_offsets("g", -1, "", None, [commit(5)])
        await c.commit_txn_offsets("g", 7, 0, -1, "", None, [commit(10)])
        await marker(c, 7, 0, committed=False)
        assert await offset_of(c) == 5
        assert not c.has_pending_offset("g", ("in", 0))
        assert await offset_of(restarted(c)) == 5

    asyncio.run(run())


def test_undecided_transaction_stays_pending_after_replay(tmp_path: Path) -> None:
    async def run() -> None:
        c = coordinator(tmp_path)
        await c.commit_txn_offsets("g", 7, 0, -1, "", None, [commit(10)])
        await c.commit_txn_offsets("g", 8, 0, -1, "", None, [commit(30, 1)])
        await marker(c, 8, 0, committed=True)
        again = restarted(c)
        assert await offset_of(again) == -1
        assert await offset_of(again, ("in", 1)) == 30
        assert again.has_pending_offset("g", ("in", 0))
        # the marker that arrives after the restart decides it
        await marker(again, 7, 0, committed=True)
        assert await offset_of(again) == 10

    asyncio.run(run())


def test_members_are_checked(tmp_path: Path) -> None:
    async def run() -> None:
        c = coordinator(tmp_path)
        assert await c.commit_txn_offsets("g", 7, 0, 3, "m1", None, [commit(1)]) == (
            ErrorCode.ILLEGAL_GENERATION
        )
        await c.commit_offsets("g", -1, "", None, [commit(5)])  # creates an Empty group
        assert await c.commit_txn_offsets("g", 7, 0, 3, "m1", None, [commit(1)]) == (
            ErrorCode.UNKNOWN_MEMBER_ID
        )
        assert await c.commit_txn_offsets("g", 7, 0, -1, "", None, [commit(1)]) == [ErrorCode.NONE]

    asyncio.run(run())


def test_stale_producer_epoch_is_fenced(tmp_path: Path) -> None:
    async def run() -> None:
        c = coordinator(tmp_path)
        await c.commit_txn_offsets("g", 7, 3, -1, "", None, [commit(1)])
        await marker(c, 7, 3, committed=True)
        assert await c.commit_txn_offsets("g", 7, 2, -1, "", None, [commit(2)]) == (
            ErrorCode.PRODUCER_FENCED
        )
        assert await offset_of(c) == 1

    asyncio.run(run())


def test_fetch_result_shape_is_unchanged(tmp_path: Path) -> None:
    async def run() -> None:
        c = coordinator(tmp_path)
        await c.commit_txn_offsets("g", 7, 0, -1, "", None, [commit(10)])
        await marker(c, 7, 0, committed=True)
        assert await c.fetch_offsets("g", None) == {("in", 0): CommittedOffset(10, -1, "m")}

    asyncio.run(run())
