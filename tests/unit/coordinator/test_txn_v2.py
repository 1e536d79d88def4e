"""Transactions version 2 (KIP-890 part 2) in the coordinator: the epoch bump on every EndTxn,
the rotation to a fresh producer id when the epoch is exhausted, retries of EndTxn answered
as Kafka's ``handleEndTransaction`` does, the version recorded in ``__transaction_state``,
and the gate on the finalized ``transaction.version`` at the API layer."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sparklog.broker.txn_verification import produce_error
from sparklog.coordinator.txn_coordinator import TransactionCoordinator
from sparklog.coordinator.txn_records import TxnState, decode_txn_record, txn_key, txn_value
from sparklog.coordinator.txn_state import TV_0, TV_2, TxnError, TxnMetadata, new_metadata
from sparklog.metadata.image import FeaturesImage, MetadataImage
from sparklog.protocol.errors import ErrorCode
from tests.unit.coordinator.test_txn_apis import call, context
from tests.unit.coordinator.test_txn_apis import init as init_api
from tests.unit.coordinator.test_txn_coordinator import Setup, init, settle

PID, EPOCH = 1000, 3
TP = ("t", 0)
EXHAUSTED = 32766


def ongoing(epoch: int = EPOCH, version: int = TV_2) -> TxnMetadata:
    meta = new_metadata("tx", PID, 60_000, 0)
    meta.producer_epoch = epoch
    meta.complete(meta.begin_add_partitions(PID, epoch, {TP}, 1, version) or meta.snapshot())
    return meta


def end(meta: TxnMetadata, epoch: int, commit: bool, pid: int = PID, fresh: int = 7) -> Any:
    try:
        return meta.begin_end(pid, epoch, commit, 10, TV_2, fresh)
    except TxnError as exc:
        return exc.code


def test_each_end_txn_bumps_the_epoch_and_retries_are_idempotent() -> None:
    meta = ongoing()
    prepared = end(meta, EPOCH, True)
    assert prepared.state is TxnState.PREPARE_COMMIT
    assert prepared.producer_epoch == EPOCH + 1 and prepared.client_transaction_version == TV_2
    meta.complete(prepared)
    assert meta.last_producer_epoch == EPOCH
    # markers under way: the retry with the epoch before the bump waits, the other result too
    assert end(meta, EPOCH, True) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert end(meta, EPOCH, False) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert end(meta, EPOCH + 1, True) == ErrorCode.PRODUCER_FENCED
    meta.complete(meta.begin_complete(20))
    assert (meta.state, meta.producer_epoch) == (TxnState.COMPLETE_COMMIT, EPOCH + 1)
    # a retry after completion is answered with the next transaction's id and epoch
    assert end(meta, EPOCH, True) is None
    assert meta.ended_producer() == (PID, EPOCH + 1)
    assert end(meta, EPOCH, False) == ErrorCode.INVALID_TXN_STATE
    assert end(meta, EPOCH - 1, True) == ErrorCode.PRODUCER_FENCED
    assert end(meta, EPOCH + 1, True) == ErrorCode.PRODUCER_FENCED  # v2: not a valid retry
    # the next transaction runs at the bumped epoch; the old one is fenced
    with pytest.raises(TxnError) as fenced:
        meta.begin_add_partitions(PID, EPOCH, {TP}, 30, TV_2)
    assert fenced.value.code == ErrorCode.PRODUCER_FENCED
    meta.complete(meta.begin_add_partitions(PID, EPOCH + 1, {TP}, 30, TV_2) or meta.snapshot())
    aborted = end(meta, EPOCH + 1, False)
    assert (aborted.state, aborted.producer_epoch) == (TxnState.PREPARE_ABORT, EPOCH + 2)


def test_exhausted_epoch_rotates_to_a_fresh_producer_id() -> None:
    meta = ongoing(EXHAUSTED)
    assert meta.end_needs_new_producer_id(TV_2) and not meta.end_needs_new_producer_id(TV_0)
    prepared = end(meta, EXHAUSTED, True, fresh=4242)
    # the markers go out at Short.MAX_VALUE under the old id; the fresh id waits in the record
    assert (prepared.producer_id, prepared.producer_epoch) == (PID, EXHAUSTED + 1)
    assert prepared.next_producer_id == 4242
    meta.complete(prepared)
    assert meta.ended_producer() == (4242, 0)
    completed = meta.begin_complete(20)
    assert (completed.producer_id, completed.producer_epoch) == (4242, 0)
    assert (completed.previous_producer_id, completed.next_producer_id) == (PID, -1)
    meta.complete(completed)
    # the client retries with the old id and exhausted epoch: answered, not INVALID_MAPPING
    assert end(meta, EXHAUSTED, True) is None
    assert meta.ended_producer() == (4242, 0)
    assert end(meta, EXHAUSTED, False) == ErrorCode.INVALID_TXN_STATE
    assert end(meta, EXHAUSTED - 1, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_timeout_abort_is_answered_to_the_version_2_producer() -> None:
    """A TV2 transaction aborted by its timeout (the epoch bumped by the fence): the
    producer's EndTxn(abort) at its epoch is a retry of that abort, answered with the new
    epoch; a commit is INVALID_TXN_STATE."""
    meta = ongoing()
    meta.complete(meta.begin_fence(20))
    assert end(meta, EPOCH, False) == ErrorCode.CONCURRENT_TRANSACTIONS
    meta.complete(meta.begin_complete(30))
    assert end(meta, EPOCH, False) is None
    assert meta.ended_producer() == (PID, EPOCH + 1)
    assert end(meta, EPOCH, True) == ErrorCode.INVALID_TXN_STATE


def test_version_1_end_txn_keeps_the_epoch() -> None:
    meta = ongoing(version=TV_0)
    prepared = meta.begin_end(PID, EPOCH, True, 10, TV_0)
    assert prepared is not None
    assert (prepared.producer_epoch, prepared.client_transaction_version) == (EPOCH, TV_0)
    meta.complete(prepared)
    assert end(meta, EPOCH + 1, True) == ErrorCode.PRODUCER_FENCED
    with pytest.raises(TxnError):
        meta.begin_end(PID, EPOCH, True, 10, TV_0)  # markers under way


def test_log_keeps_version_and_next_producer_id() -> None:
    meta = ongoing(EXHAUSTED)
    prepared = end(meta, EXHAUSTED, False, fresh=99)
    tid, value = decode_txn_record(txn_key("tx"), txn_value(prepared))
    assert (tid, value) == ("tx", prepared)
    restored = TxnMetadata.from_log("tx", replace(prepared))
    assert (restored.next_producer_id, restored.client_transaction_version) == (99, TV_2)


def test_coordinator_bumps_answers_and_reloads(tmp_path: Path) -> None:
    async def run() -> None:
        s = Setup(tmp_path)
        c = s.coordinator
        first = await init(c)
        pid, epoch = first.producer_id, first.producer_epoch
        assert await c.add_partitions("tx", pid, epoch, [TP], TV_2) == ErrorCode.NONE
        assert await c.end_transaction("tx", pid, epoch, True, TV_2) == (
            ErrorCode.NONE,
            pid,
            epoch + 1,
        )
        await settle()
        [marker] = s.markers.calls
        assert (marker.producer_epoch, marker.committed) == (epoch + 1, True)
        # a lost answer: the retry gets the same next producer id and epoch
        assert await c.end_transaction("tx", pid, epoch, True, TV_2) == (
            ErrorCode.NONE,
            pid,
            epoch + 1,
        )
        # the epoch is exhausted on the next one: a fresh producer id from the id source
        meta = c.shards.of("tx").txns["tx"]
        meta.producer_epoch = EXHAUSTED
        assert await c.add_partitions("tx", pid, EXHAUSTED, [TP], TV_2) == ErrorCode.NONE
        code, new_pid, new_epoch = await c.end_transaction("tx", pid, EXHAUSTED, False, TV_2)
        assert (code, new_epoch) == (ErrorCode.NONE, 0) and new_pid != pid
        await settle()
        assert s.markers.calls[-1].producer_epoch == EXHAUSTED + 1
        reloaded = s.fresh().shards.of("tx").txns["tx"]
        assert (reloaded.producer_id, reloaded.producer_epoch) == (new_pid, 0)
        assert (reloaded.state, reloaded.client_transaction_version) == (
            TxnState.COMPLETE_ABORT,
            TV_2,
        )

    asyncio.run(run())


class LocalAdder:
    """The broker's AddPartitionsToTxnManager when this node is the transaction coordinator."""

    verification_enabled = True

    def __init__(self, coordinator: TransactionCoordinator | None) -> None:
        assert coordinator is not None
        self.coordinator = coordinator

    async def add_or_verify(
        self, tid: str, pid: int, epoch: int, partitions: list[tuple[str, int]], verify: bool
    ) -> dict[tuple[str, int], ErrorCode]:
        if verify:
            return self.coordinator.verify_partitions(tid, pid, epoch, partitions)
        code = await self.coordinator.add_partitions(tid, pid, epoch, partitions, TV_2)
        return dict.fromkeys(partitions, code)


@pytest.mark.parametrize(("finalized", "bumped"), [(2, True), (1, False), (0, False)])
def test_end_txn_v5_is_version_2_only_when_finalized(
    tmp_path: Path, finalized: int, bumped: bool
) -> None:
    """EndTxn v5 and TxnOffsetCommit v5 imply transactions version 2 only on a cluster that
    finalized transaction.version >= 2; below it they keep version 1 semantics (the offsets
    partition is verified, not added)."""

    async def run() -> None:
        ctx = context(tmp_path)
        image = ctx.image_supplier()
        levels = {"transaction.version": finalized} if finalized else {}
        ctx.image_supplier = lambda: MetadataImage(
            topics=image.topics, features=FeaturesImage(levels)
        )
        ctx.txn_verification = LocalAdder(ctx.transactions)  # type: ignore[assignment]
        pid, epoch = await init_api(ctx)
        # TxnOffsetCommit v5 without AddOffsetsToTxn: the offsets partition is added for TV2
        commit = await call(
            ctx,
            "TxnOffsetCommit",
            5,
            {
                "transactional_id": "tx",
                "group_id": "g",
                "producer_id": pid,
                "producer_epoch": epoch,
                "topics": [
                    {
                        "name": "a",
                        "partitions": [
                            {"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}
                        ],
                    }
                ],
            },
        )
        code = commit["topics"][0]["partitions"][0]["error_code"]
        assert ctx.transactions is not None
        described = ctx.transactions.describe("tx")
        assert not isinstance(described, ErrorCode)
        if bumped:
            assert code == 0 and described.state is TxnState.ONGOING
        else:
            # TV1: verified, and the client never sent AddOffsetsToTxn
            assert code == ErrorCode.TRANSACTION_ABORTABLE
            assert described.state is TxnState.EMPTY
            await ctx.transactions.add_partitions("tx", pid, epoch, [("a", 0)])
        body = {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch}
        answer = await call(ctx, "EndTxn", 5, {**body, "committed": True})
        expected = (pid, epoch + 1) if bumped else (pid, epoch)
        assert (answer["error_code"], answer["producer_id"], answer["producer_epoch"]) == (
            0,
            *expected,
        )

    asyncio.run(run())


@pytest.mark.parametrize(
    ("code", "version", "answer"),
    [
        (ErrorCode.NONE, 12, ErrorCode.NONE),
        (ErrorCode.CONCURRENT_TRANSACTIONS, 12, ErrorCode.NOT_ENOUGH_REPLICAS),
        (ErrorCode.NOT_COORDINATOR, 9, ErrorCode.NOT_ENOUGH_REPLICAS),
        (ErrorCode.TRANSACTION_ABORTABLE, 11, ErrorCode.TRANSACTION_ABORTABLE),
        (ErrorCode.TRANSACTION_ABORTABLE, 10, ErrorCode.INVALID_TXN_STATE),
        (ErrorCode.INVALID_PRODUCER_ID_MAPPING, 12, ErrorCode.TRANSACTION_ABORTABLE),
        (ErrorCode.PRODUCER_FENCED, 12, ErrorCode.INVALID_PRODUCER_EPOCH),
    ],
)
def test_produce_answers_for_coordinator_errors(
    code: ErrorCode, version: int, answer: ErrorCode
) -> None:
    assert produce_error(code, version) == answer
