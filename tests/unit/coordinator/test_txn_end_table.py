"""EndTxn's state/epoch/error table (Kafka's ``TransactionCoordinator.handleEndTransaction``,
transactions version 1) and what the coordinator answers while a transition is not yet
replicated, or its CompleteCommit/CompleteAbort cannot be written for a while."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sparklog.coordinator.txn_coordinator import TRANSACTION_STATE_TOPIC
from sparklog.coordinator.txn_records import TxnState
from sparklog.coordinator.txn_state import TxnError, TxnMetadata, new_metadata
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from tests.unit.coordinator.test_txn_coordinator import Setup, init, settle
from tests.unit.coordinator.txn_support import set_leader

PID, EPOCH = 1000, 3
TP = ("t", 0)
OK = ErrorCode.NONE  # nothing to write: a retry of an EndTxn that already ended that way
WRITE = "write"  # Ongoing -> PrepareCommit / PrepareAbort
CONCURRENT = ErrorCode.CONCURRENT_TRANSACTIONS
INVALID = ErrorCode.INVALID_TXN_STATE


def in_state(state: TxnState) -> TxnMetadata:
    meta = new_metadata("tx", PID, 60_000, 0)
    meta.producer_epoch = EPOCH
    meta.state = state
    if state in (TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
        meta.partitions = {TP}
        meta.start_ms = 1
    return meta


def outcome(meta: TxnMetadata, pid: int, epoch: int, commit: bool) -> Any:
    pending = meta.pending
    try:
        target = meta.begin_end(pid, epoch, commit, 10)
    except TxnError as exc:
        assert meta.pending == pending, "a refused EndTxn changes nothing"
        return exc.code
    if target is None:
        return OK
    return WRITE


@pytest.mark.parametrize(
    ("state", "commit", "expected"),
    [
        (TxnState.ONGOING, True, WRITE),
        (TxnState.ONGOING, False, WRITE),
        (TxnState.EMPTY, True, INVALID),
        (TxnState.EMPTY, False, INVALID),
        (TxnState.COMPLETE_COMMIT, True, OK),
        (TxnState.COMPLETE_COMMIT, False, INVALID),
        (TxnState.COMPLETE_ABORT, False, OK),
        (TxnState.COMPLETE_ABORT, True, INVALID),
        # markers under way: Kafka's pending CompleteCommit/CompleteAbort comes first
        (TxnState.PREPARE_COMMIT, True, CONCURRENT),
        (TxnState.PREPARE_COMMIT, False, CONCURRENT),
        (TxnState.PREPARE_ABORT, False, CONCURRENT),
        (TxnState.PREPARE_ABORT, True, CONCURRENT),
    ],
)
def test_end_txn_table(state: TxnState, commit: bool, expected: Any) -> None:
    assert outcome(in_state(state), PID, EPOCH, commit) == expected


@pytest.mark.parametrize("state", [s for s in TxnState if s is not TxnState.DEAD])
@pytest.mark.parametrize("commit", [True, False])
def test_producer_checks_come_first(state: TxnState, commit: bool) -> None:
    """Another producer id, then a stale or future epoch (v1: strict equality), then a pending
    transition: before the state is looked at."""
    assert outcome(in_state(state), PID + 1, EPOCH, commit) == (
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    )
    for epoch in (EPOCH - 1, EPOCH + 1):
        assert outcome(in_state(state), PID, epoch, commit) == ErrorCode.PRODUCER_FENCED
    busy = in_state(state)
    busy.pending = busy.snapshot()
    assert outcome(busy, PID, EPOCH, commit) == CONCURRENT


def test_fenced_by_timeout_then_old_epoch_is_fenced_not_invalid() -> None:
    """abortTimedOutTransactions bumps the epoch: the old producer's EndTxn(abort) is
    PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2), never INVALID_TXN_STATE."""
    meta = in_state(TxnState.ONGOING)
    prepared = meta.begin_fence(20)
    meta.complete(prepared)
    assert meta.producer_epoch == EPOCH + 1
    assert outcome(meta, PID, EPOCH, False) == ErrorCode.PRODUCER_FENCED
    meta.complete(meta.begin_complete(30))
    assert outcome(meta, PID, EPOCH, False) == ErrorCode.PRODUCER_FENCED


# -- the coordinator over a log whose appends fail -------------------------------------------
def failing_appends(s: Setup, codes: list[ErrorCode], *, appended: bool, after: int = 0) -> None:
    """After ``after`` more good appends, the next ones raise ``codes`` in turn; ``appended``:
    after reaching the log (as a replication timeout does), else before (as
    NOT_ENOUGH_REPLICAS does)."""
    real: Callable[..., Any] = s.replicas.append
    passed = [0]

    async def append(*args: Any, **kwargs: Any) -> Any:
        if passed[0] < after or not codes:
            passed[0] += 1
            return await real(*args, **kwargs)
        code = codes.pop(0)
        if appended:
            await real(*args, **kwargs)
        raise KafkaApiError(code, f"injected {code.name}")

    s.replicas.append = append  # type: ignore[method-assign]


def state_of(s: Setup) -> TxnState:
    described = s.coordinator.describe("tx")
    assert not isinstance(described, ErrorCode)
    return described.state


def test_unreplicated_add_partitions_is_applied_once_replicated(tmp_path: Path) -> None:
    """An AddPartitionsToTxn whose record reached the log but timed out waiting for the ISR:
    the client hears COORDINATOR_NOT_AVAILABLE, the id is busy meanwhile, and once the record
    is committed the transaction is Ongoing, so the client's EndTxn(abort) succeeds (it was
    INVALID_TXN_STATE: the state had fallen behind the log)."""

    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        await init(c)
        await c.add_partitions("tx", PID, 0, [TP])
        await c.end_txn("tx", PID, 0, True)
        await settle()
        assert state_of(s) is TxnState.COMPLETE_COMMIT
        failing_appends(s, [ErrorCode.REQUEST_TIMED_OUT], appended=True)
        answer = await c.add_partitions("tx", PID, 0, [("t", 1)])
        assert answer == ErrorCode.COORDINATOR_NOT_AVAILABLE
        await settle()
        assert state_of(s) is TxnState.ONGOING
        assert s.fresh().describe("tx") == c.describe("tx"), "memory and log agree"
        assert await c.end_txn("tx", PID, 0, False) == ErrorCode.NONE
        await settle()
        assert state_of(s) is TxnState.COMPLETE_ABORT
        assert [m.committed for m in s.markers.calls] == [True, False]
        assert s.markers.calls[-1].partitions == (("t", 1),)

    asyncio.run(run())


def test_refused_append_leaves_the_state(tmp_path: Path) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        await init(c)
        failing_appends(s, [ErrorCode.NOT_ENOUGH_REPLICAS], appended=False)
        answer = await c.add_partitions("tx", PID, 0, [TP])
        assert answer == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert state_of(s) is TxnState.EMPTY
        assert await c.add_partitions("tx", PID, 0, [TP]) == ErrorCode.NONE
        assert state_of(s) is TxnState.ONGOING

    asyncio.run(run())


@pytest.mark.parametrize("appended", [False, True])
def test_complete_is_retried_until_written(tmp_path: Path, appended: bool) -> None:
    """CompleteCommit that cannot be written for a while (min ISR, replication timeouts) is
    retried, as Kafka's txnLogAppendRetryQueue does; it was left in PrepareCommit for good."""

    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        await init(c)
        await c.add_partitions("tx", PID, 0, [TP])
        code = ErrorCode.REQUEST_TIMED_OUT if appended else ErrorCode.NOT_ENOUGH_REPLICAS
        failing_appends(s, [code] * 3, appended=appended, after=1)  # PrepareCommit goes in
        assert await c.end_txn("tx", PID, 0, True) == ErrorCode.NONE
        for _ in range(20):
            await settle()
            if state_of(s) is TxnState.COMPLETE_COMMIT:
                break
        assert state_of(s) is TxnState.COMPLETE_COMMIT
        assert s.fresh().describe("tx") == c.describe("tx")

    asyncio.run(run())


def test_request_waiting_while_leadership_moves_is_not_coordinator(tmp_path: Path) -> None:
    """A request queued behind another on the shard's lock while this broker stops leading
    the partition (a resumed SIGSTOPped coordinator) must not answer from the stale state:
    NOT_COORDINATOR, as Kafka once the partition is unloaded (it was INVALID_TXN_STATE)."""

    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        await init(c)
        shard = c.shards.of("tx")
        async with shard.lock:
            waiting = asyncio.get_running_loop().create_task(c.end_txn("tx", PID, 0, False))
            await asyncio.sleep(0.05)
            set_leader(s.replicas, TRANSACTION_STATE_TOPIC, 2, 1)
        assert await waiting == ErrorCode.NOT_COORDINATOR

    asyncio.run(run())
