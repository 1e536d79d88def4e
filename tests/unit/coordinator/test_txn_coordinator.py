"""The transaction coordinator driven over real partition logs: persistence, markers, reload,
timeouts, expiry and the errors a client sees."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sparklog.broker.coordinator_runtime import ReplicaManagerRuntime
from sparklog.coordinator.txn_coordinator import (
    TRANSACTION_STATE_TOPIC,
    InitResult,
    TransactionCoordinator,
    TxnConfig,
)
from sparklog.coordinator.txn_records import TxnState
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from tests.unit.coordinator.txn_support import (
    FakeClock,
    Markers,
    ProducerIds,
    replica_manager,
    set_leader,
)

PARTITIONS = 3
CONFIG = TxnConfig(num_partitions=PARTITIONS, max_timeout_ms=120_000, id_expiration_ms=50_000)


class Setup:
    def __init__(self, root: Path) -> None:
        self.clock = FakeClock()
        self.replicas = replica_manager(root, {TRANSACTION_STATE_TOPIC: PARTITIONS}, self.clock)
        self.markers = Markers()
        self.ids = ProducerIds()
        self.coordinator = self.fresh()

    def fresh(self) -> TransactionCoordinator:
        """A new coordinator over the same logs (a restart)."""
        return TransactionCoordinator(
            CONFIG, ReplicaManagerRuntime(self.replicas), self.ids, self.markers, clock=self.clock
        )


async def settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0.01)


async def init(c: TransactionCoordinator, tid: str = "tx", timeout: int = 60_000) -> InitResult:
    result = await c.init_producer_id(tid, timeout, -1, -1)
    assert result.error == ErrorCode.NONE, result
    return result


def test_commit_writes_markers_then_completes(tmp_path: Path) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        first = await init(c)
        assert (first.producer_id, first.producer_epoch) == (1000, 0)
        parts = [("a", 0), ("a", 1), ("b", 0)]
        assert await c.add_partitions("tx", 1000, 0, parts[:2]) == ErrorCode.NONE
        assert await c.add_partitions("tx", 1000, 0, parts[2:]) == ErrorCode.NONE
        assert await c.end_txn("tx", 1000, 0, True) == ErrorCode.NONE
        await settle()
        [marker] = s.markers.calls
        assert marker.committed and marker.producer_id == 1000 and marker.producer_epoch == 0
        assert sorted(marker.partitions) == parts and marker.coordinator_epoch == 0
        described = c.describe("tx")
        assert not isinstance(described, ErrorCode)
        assert described.state is TxnState.COMPLETE_COMMIT and not described.partitions
        # the log holds every transition: a restart sees the same state
        reloaded = s.fresh().describe("tx")
        assert reloaded == described

    asyncio.run(run())


def test_markers_are_retried_until_written(tmp_path: Path) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        await init(c)
        await c.add_partitions("tx", 1000, 0, [("a", 0)])
        s.markers.fail = [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR]
        assert await c.end_txn("tx", 1000, 0, False) == ErrorCode.NONE
        # while the markers are pending the id is busy
        assert await c.add_partitions("tx", 1000, 0, [("a", 0)]) in (
            ErrorCode.CONCURRENT_TRANSACTIONS,
            ErrorCode.NONE,
        )
        await settle()
        assert len(s.markers.calls) == 3 and not s.markers.calls[-1].committed
        described = c.describe("tx")
        assert not isinstance(described, ErrorCode)
        assert described.state is TxnState.COMPLETE_ABORT

    asyncio.run(run())


@pytest.mark.parametrize(
    ("answer", "state", "calls"),
    [
        # the producer could not have written there: the partition is dropped
        (ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, TxnState.COMPLETE_COMMIT, 1),
        # a newer coordinator or producer epoch: this coordinator stops
        (ErrorCode.TRANSACTION_COORDINATOR_FENCED, TxnState.PREPARE_COMMIT, 1),
        (ErrorCode.INVALID_PRODUCER_EPOCH, TxnState.PREPARE_COMMIT, 1),
        # the marker channel's retriable answers
        (ErrorCode.NETWORK_EXCEPTION, TxnState.COMPLETE_COMMIT, 2),
        (ErrorCode.LEADER_NOT_AVAILABLE, TxnState.COMPLETE_COMMIT, 2),
        (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, TxnState.COMPLETE_COMMIT, 2),
        # fatal in Kafka; retried here (and logged as an error)
        (ErrorCode.CORRUPT_MESSAGE, TxnState.COMPLETE_COMMIT, 2),
    ],
)
def test_what_a_marker_answer_does(
    tmp_path: Path, answer: ErrorCode, state: TxnState, calls: int
) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        await init(c)
        await c.add_partitions("tx", 1000, 0, [("a", 0)])
        s.markers.fail = [answer]
        assert await c.end_txn("tx", 1000, 0, True) == ErrorCode.NONE
        await settle()
        assert len(s.markers.calls) == calls
        described = c.describe("tx")
        assert not isinstance(described, ErrorCode) and described.state is state

    asyncio.run(run())


def test_prepared_transaction_is_finished_after_a_restart(tmp_path: Path) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        await init(c)
        await c.add_partitions("tx", 1000, 0, [("a", 0)])
        s.markers.fail = [ErrorCode.NOT_LEADER_OR_FOLLOWER] * 1000
        assert await c.end_txn("tx", 1000, 0, True) == ErrorCode.NONE
        await settle()
        # the node stops with the transaction in PrepareCommit
        stopping = asyncio.Event()
        stopping.set()
        await c.run(stopping)
        s.markers.fail = []
        calls = len(s.markers.calls)
        restarted = s.fresh()
        described = restarted.describe("tx")  # loading resumes the markers
        assert not isinstance(described, ErrorCode)
        assert described.state is TxnState.PREPARE_COMMIT
        assert await restarted.end_txn("tx", 1000, 0, True) == ErrorCode.CONCURRENT_TRANSACTIONS
        await settle()
        assert len(s.markers.calls) == calls + 1 and s.markers.calls[-1].committed
        after = restarted.describe("tx")
        assert not isinstance(after, ErrorCode) and after.state is TxnState.COMPLETE_COMMIT
        assert await restarted.end_txn("tx", 1000, 0, True) == ErrorCode.NONE

    asyncio.run(run())


def test_new_instance_aborts_the_ongoing_transaction_and_fences_the_old(tmp_path: Path) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        await init(c)
        await c.add_partitions("tx", 1000, 0, [("a", 0)])
        second = await c.init_producer_id("tx", 60_000, -1, -1)
        assert second.error == ErrorCode.CONCURRENT_TRANSACTIONS
        await settle()
        [marker] = s.markers.calls
        assert not marker.committed and marker.producer_epoch == 1
        retry = await init(c)
        assert (retry.producer_id, retry.producer_epoch) == (1000, 2)
        assert await c.add_partitions("tx", 1000, 0, [("a", 0)]) == ErrorCode.PRODUCER_FENCED
        assert await c.end_txn("tx", 1000, 0, True) == ErrorCode.PRODUCER_FENCED

    asyncio.run(run())


def test_timed_out_transaction_is_aborted_with_an_epoch_bump(tmp_path: Path) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        await init(c, timeout=10_000)
        await c.add_partitions("tx", 1000, 0, [("a", 0), ("a", 2)])
        s.clock.now_ms += 10_000
        assert await c.abort_timed_out() == 0
        s.clock.now_ms += 1
        assert await c.abort_timed_out() == 1
        await settle()
        [marker] = s.markers.calls
        assert not marker.committed and marker.producer_epoch == 1
        assert sorted(marker.partitions) == [("a", 0), ("a", 2)]
        described = c.describe("tx")
        assert not isinstance(described, ErrorCode)
        assert described.state is TxnState.COMPLETE_ABORT and described.producer_epoch == 1
        assert await c.end_txn("tx", 1000, 0, True) == ErrorCode.PRODUCER_FENCED

    asyncio.run(run())


def test_timer_loop_aborts_after_restart(tmp_path: Path) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        await init(s.coordinator, timeout=5_000)
        await s.coordinator.add_partitions("tx", 1000, 0, [("a", 0)])
        restarted = s.fresh()  # nobody asks about "tx" again: the timer loads the shard
        s.clock.now_ms += 5_001
        await restarted.tick()
        await settle()
        assert [m.committed for m in s.markers.calls] == [False]

    asyncio.run(run())


def test_idle_transactional_ids_expire(tmp_path: Path) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        await init(c, "idle")
        await init(c, "busy")
        await c.add_partitions("busy", 1001, 0, [("a", 0)])
        s.clock.now_ms += 50_000
        assert await c.expire_ids() == 1  # an Ongoing transaction never expires
        assert c.describe("idle") == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        assert s.fresh().describe("idle") == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        again = await init(c, "idle")
        assert again.producer_id == 1002  # a fresh producer id

    asyncio.run(run())


def test_request_errors(tmp_path: Path) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        assert (await c.init_producer_id("tx", 0, -1, -1)).error == (
            ErrorCode.INVALID_TRANSACTION_TIMEOUT
        )
        assert (await c.init_producer_id("tx", 120_001, -1, -1)).error == (
            ErrorCode.INVALID_TRANSACTION_TIMEOUT
        )
        assert (await c.init_producer_id("", 1000, -1, -1)).error == ErrorCode.INVALID_REQUEST
        assert (await c.init_producer_id("tx", 1000, 5, -1)).error == ErrorCode.INVALID_REQUEST
        assert await c.add_partitions("nope", 1, 0, [("a", 0)]) == (
            ErrorCode.INVALID_PRODUCER_ID_MAPPING
        )
        assert await c.end_txn("nope", 1, 0, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        assert c.describe("nope") == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        await init(c)
        assert await c.end_txn("tx", 1000, 0, True) == ErrorCode.INVALID_TXN_STATE
        set_leader(s.replicas, TRANSACTION_STATE_TOPIC, 2, 1)
        with pytest.raises(KafkaApiError) as moved:
            await c.init_producer_id("tx", 1000, -1, -1)
        assert moved.value.code == ErrorCode.NOT_COORDINATOR
        assert c.describe("tx") == ErrorCode.NOT_COORDINATOR

    asyncio.run(run())


def test_leadership_change_reloads_with_new_coordinator_epoch(tmp_path: Path) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        await init(c)
        set_leader(s.replicas, TRANSACTION_STATE_TOPIC, 1, 4)
        await c.add_partitions("tx", 1000, 0, [("a", 0)])
        await c.end_txn("tx", 1000, 0, True)
        await settle()
        assert s.markers.calls[-1].coordinator_epoch == 4

    asyncio.run(run())


def test_transactions_lists_every_led_shard(tmp_path: Path) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        for i in range(6):
            await init(s.coordinator, f"t{i}")
        assert sorted(m.transactional_id for m in s.fresh().transactions()) == [
            f"t{i}" for i in range(6)
        ]

    asyncio.run(run())
