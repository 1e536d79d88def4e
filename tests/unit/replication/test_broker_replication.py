"""The broker side of replication over real logs: acks=all purgatory, follower fetch
accounting, role changes and the AlterPartition sender (with a scripted controller)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from sparklog.broker.alter_partition_sender import AlterPartitionSender
from sparklog.broker.partition import Partition, PartitionState, RoleChange
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.replication.leader import LeaderCore
from sparklog.replication.messages import AlterPartitionProposal, FollowerFetch
from sparklog.storage.config import LogConfig
from sparklog.storage.manager import LogManager
from tests.unit.replication.helpers import batch

TOPIC_ID = b"t" * 16


def make_rm(root: Path, min_isr: int = 2) -> tuple[ReplicaManager, Partition]:
    config = LogConfig().with_overrides({"min.insync.replicas": str(min_isr)})
    rm = ReplicaManager(1, LogManager([str(root)], config, lambda: int(time.time() * 1000)), config)
    log = rm.log_manager.create_log("t", 0, TOPIC_ID, config)
    partition = Partition("t", 0, TOPIC_ID, log, 1)
    rm.partitions[("t", 0)] = partition
    assert partition.apply_state(PartitionState(1, 0, 0, (1, 2, 3), (1, 2, 3))) is RoleChange.LEADER
    return rm, partition


def test_acks_all_waits_for_the_isr(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, partition = make_rm(tmp_path)
        produce = asyncio.ensure_future(rm.append("t", 0, bytearray(batch(2)), -1, 5_000))
        await asyncio.sleep(0.05)
        assert not produce.done() and partition.high_watermark == 0
        rm.follower_fetch(partition, FollowerFetch(2, 2))
        rm.follower_fetch(partition, FollowerFetch(3, 1))
        await asyncio.sleep(0.05)
        assert not produce.done() and partition.high_watermark == 1
        result = rm.follower_fetch(partition, FollowerFetch(3, 2))
        assert result.hw_changed and result.high_watermark == 2
        outcome = await asyncio.wait_for(produce, 1)
        assert outcome.base_offset == 0
        # acks=1 does not wait.
        quick = await asyncio.wait_for(rm.append("t", 0, bytearray(batch()), 1), 1)
        assert quick.base_offset == 2 and partition.high_watermark == 2

    asyncio.run(scenario())


def test_acks_all_times_out(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, _ = make_rm(tmp_path)
        with pytest.raises(KafkaApiError) as raised:
            await rm.append("t", 0, bytearray(batch()), -1, 100)
        assert raised.value.code == ErrorCode.REQUEST_TIMED_OUT

    asyncio.run(scenario())


def test_under_min_isr_is_refused_before_append(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, partition = make_rm(tmp_path)
        partition.apply_state(PartitionState(1, 0, 1, (1, 2, 3), (1,)))
        with pytest.raises(KafkaApiError) as raised:
            await rm.append("t", 0, bytearray(batch()), -1, 100)
        assert raised.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
        assert partition.log_end_offset == 0
        # acks=1 is still accepted, but the HW holds while under min ISR (KIP-966).
        await rm.append("t", 0, bytearray(batch()), 1)
        assert partition.log_end_offset == 1 and partition.high_watermark == 0
        assert rm.under_min_isr_count == 1 and rm.under_replicated_count == 1

    asyncio.run(scenario())


def test_parked_produce_fails_when_leadership_moves(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, partition = make_rm(tmp_path)
        produce = asyncio.ensure_future(rm.append("t", 0, bytearray(batch()), -1, 5_000))
        await asyncio.sleep(0.05)
        change = partition.apply_state(PartitionState(2, 1, 1, (1, 2, 3), (2, 3)))
        assert change is RoleChange.FOLLOWER and not partition.is_leader
        rm.produce_waiters.notify(("t", 0))
        with pytest.raises(KafkaApiError) as raised:
            await asyncio.wait_for(produce, 1)
        assert raised.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER

    asyncio.run(scenario())


def test_role_changes_and_stale_metadata(tmp_path: Path) -> None:
    _, partition = make_rm(tmp_path)
    assert partition.apply_state(PartitionState(1, 0, 0, (1, 2, 3), (1,))) is RoleChange.NONE
    assert partition.isr == (1, 2, 3)
    updated = partition.apply_state(PartitionState(1, 0, 1, (1, 2, 3), (1, 3)))
    assert updated is RoleChange.LEADER_UPDATED
    isr_now: tuple[int, ...] = partition.isr  # a fresh read: mypy narrowed the one above
    assert isr_now == (1, 3)
    assert partition.apply_state(PartitionState(3, 1, 2, (1, 2, 3), (1, 3))) is RoleChange.FOLLOWER
    assert partition.follower_core is not None and partition.follower_core.leader_id == 3
    assert partition.apply_state(PartitionState(1, 2, 3, (1, 2, 3), (1, 3))) is RoleChange.LEADER
    assert partition.log.epoch_cache.start_offset_of(2) == 0


def test_follower_fetch_proposes_expansion(tmp_path: Path) -> None:
    rm, partition = make_rm(tmp_path, min_isr=1)
    partition.apply_state(PartitionState(1, 0, 1, (1, 2, 3), (1, 2)))
    sent: list[AlterPartitionProposal] = []
    rm.isr_sender = lambda p, proposal: sent.append(proposal)
    rm.follower_fetch(partition, FollowerFetch(3, 0, broker_epoch=9))
    assert [p.isr_ids for p in sent] == [(1, 2, 3)]
    with pytest.raises(KafkaApiError):
        other = Partition("u", 0, TOPIC_ID, partition.log, 1)
        rm.follower_fetch(other, FollowerFetch(2, 0))


class ScriptedController:
    def __init__(self, responses: list[dict[str, Any]]) -> None:
        self.responses = responses
        self.requests: list[Mapping[str, Any]] = []

    async def __call__(self, key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        assert (key, version) == (56, 3)
        self.requests.append(body)
        return self.responses.pop(0)


# The controller's answer applying the ISR expansion of _expansion_proposed.
_EXPANSION_APPLIED: dict[str, Any] = {
    "error_code": 0,
    "topics": [
        {
            "topic_id": TOPIC_ID,
            "partitions": [
                {
                    "partition_index": 0,
                    "error_code": 0,
                    "leader_id": 1,
                    "leader_epoch": 0,
                    "isr": [1, 2, 3],
                    "partition_epoch": 2,
                }
            ],
        }
    ],
}


def _expansion_proposed(
    tmp_path: Path,
) -> tuple[ReplicaManager, Partition, LeaderCore, AlterPartitionProposal]:
    """A leader of ISR {1, 2} whose replica 3 caught up: the ISR expansion it proposes."""
    rm, partition = make_rm(tmp_path, min_isr=1)
    partition.apply_state(PartitionState(1, 0, 1, (1, 2, 3), (1, 2)))
    core = partition.leader_core
    assert core is not None
    proposal = rm.follower_fetch(partition, FollowerFetch(3, 0, broker_epoch=9)).proposal
    assert proposal is not None
    return rm, partition, core, proposal


async def _run_until_expanded(sender: AlterPartitionSender, core: LeaderCore) -> None:
    """Run ``sender`` until the ISR is {1, 2, 3} (at most two seconds), then stop it."""
    stopping = asyncio.Event()
    task = asyncio.ensure_future(sender.run(stopping))
    for _ in range(200):
        if core.isr == {1, 2, 3}:
            break
        await asyncio.sleep(0.01)
    stopping.set()
    await asyncio.wait_for(task, 1)


def test_alter_partition_sender_applies_and_retries(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, partition, core, proposal = _expansion_proposed(tmp_path)
        answer = _EXPANSION_APPLIED
        controller = ScriptedController(
            [{"error_code": int(ErrorCode.NOT_CONTROLLER), "topics": []}, answer]
        )
        sender = AlterPartitionSender(rm, controller, lambda: 77, retry_backoff_ms=10)
        sender.submit(partition, proposal)
        await _run_until_expanded(sender, core)
        assert core.isr == {1, 2, 3} and core.partition_epoch == 2
        assert rm.isr_expands == 1 and rm.failed_isr_updates == 1
        first = controller.requests[0]
        assert first["broker_id"] == 1 and first["broker_epoch"] == 77
        sent = first["topics"][0]["partitions"][0]
        assert sent["new_isr_with_epochs"] == [
            {"broker_id": 1, "broker_epoch": -1},
            {"broker_id": 2, "broker_epoch": -1},
            {"broker_id": 3, "broker_epoch": 9},
        ]
        assert (sent["leader_epoch"], sent["partition_epoch"]) == (0, 1)
        assert len(controller.requests) == 2

    asyncio.run(scenario())


def test_a_stale_broker_epoch_is_retried_with_the_new_registration(tmp_path: Path) -> None:
    """The leader re-registered (a new controller did not know it) while an ISR expansion was
    queued: the controller answers STALE_BROKER_EPOCH for the old epoch; the expansion is sent
    again with the new one and applied (chaos seed 42 left eight ISRs shrunk for good)."""

    async def scenario() -> None:
        rm, partition, core, proposal = _expansion_proposed(tmp_path)
        applied = _EXPANSION_APPLIED
        stale = {"error_code": int(ErrorCode.STALE_BROKER_EPOCH), "topics": []}
        controller = ScriptedController([stale, applied])
        epochs = iter([70, 88])
        sender = AlterPartitionSender(rm, controller, lambda: next(epochs), retry_backoff_ms=10)
        sender.submit(partition, proposal)
        await _run_until_expanded(sender, core)
        assert core.isr == {1, 2, 3} and core.pending_proposal is None
        assert [r["broker_epoch"] for r in controller.requests] == [70, 88]

    asyncio.run(scenario())
