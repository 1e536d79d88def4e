"""The transaction state machine of one transactional id (sans-IO)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.coordinator.txn_records import TxnState
from sparklog.coordinator.txn_state import TxnError, TxnMetadata, new_metadata
from sparklog.protocol.errors import ErrorCode

TP = ("t", 0)


def initialised(epoch_bumps: int = 1) -> TxnMetadata:
    meta = new_metadata("tx", 1000, 60_000, 0)
    for _ in range(epoch_bumps):
        target, fencing = meta.begin_init(60_000, None, 1, None)
        assert not fencing
        meta.complete(target)
    return meta


def run(meta: TxnMetadata, target: object) -> None:
    assert target is not None
    meta.complete(target)  # type: ignore[arg-type]


def ongoing() -> TxnMetadata:
    meta = initialised()
    run(meta, meta.begin_add_partitions(1000, 0, {TP}, 5))
    return meta


def test_first_init_gives_epoch_zero_and_reinit_bumps() -> None:
    meta = initialised()
    assert (meta.producer_id, meta.producer_epoch, meta.state) == (1000, 0, TxnState.EMPTY)
    target, _ = meta.begin_init(30_000, None, 2, None)
    meta.complete(target)
    assert meta.producer_epoch == 1 and meta.timeout_ms == 30_000


def test_commit_cycle() -> None:
    meta = ongoing()
    assert meta.state is TxnState.ONGOING and meta.start_ms == 5 and meta.partitions == {TP}
    assert meta.begin_add_partitions(1000, 0, {TP}, 6) is None  # already in
    run(meta, meta.begin_add_partitions(1000, 0, {("t", 1)}, 7))
    assert meta.start_ms == 5 and meta.partitions == {TP, ("t", 1)}
    prepared = meta.begin_end(1000, 0, True, 8)
    assert prepared is not None and prepared.state is TxnState.PREPARE_COMMIT
    assert prepared.partitions == frozenset({TP, ("t", 1)})
    meta.complete(prepared)
    with pytest.raises(TxnError) as busy:
        meta.begin_end(1000, 0, True, 9)
    assert busy.value.code == ErrorCode.CONCURRENT_TRANSACTIONS
    with pytest.raises(TxnError) as wrong:
        meta.begin_end(1000, 0, False, 9)
    assert wrong.value.code == ErrorCode.CONCURRENT_TRANSACTIONS  # markers under way
    run(meta, meta.begin_complete(10))
    assert meta.snapshot().state is TxnState.COMPLETE_COMMIT and not meta.partitions
    assert meta.begin_end(1000, 0, True, 11) is None  # a retried commit succeeds
    with pytest.raises(TxnError) as after:
        meta.begin_end(1000, 0, False, 11)
    assert after.value.code == ErrorCode.INVALID_TXN_STATE
    run(meta, meta.begin_add_partitions(1000, 0, {TP}, 12))
    assert meta.start_ms == 12  # a new transaction starts its clock


def test_producer_checks() -> None:
    meta = ongoing()
    for producer_id, epoch, code in (
        (1001, 0, ErrorCode.INVALID_PRODUCER_ID_MAPPING),
        (1000, 1, ErrorCode.PRODUCER_FENCED),
    ):
        with pytest.raises(TxnError) as added:
            meta.begin_add_partitions(producer_id, epoch, {TP}, 1)
        assert added.value.code == code
        with pytest.raises(TxnError) as ended:
            meta.begin_end(producer_id, epoch, True, 1)
        assert ended.value.code == code


def test_end_without_transaction_is_invalid_txn_state() -> None:
    meta = initialised()
    with pytest.raises(TxnError) as error:
        meta.begin_end(1000, 0, True, 1)
    assert error.value.code == ErrorCode.INVALID_TXN_STATE


def test_pending_transition_is_concurrent() -> None:
    meta = initialised()
    meta.begin_add_partitions(1000, 0, {TP}, 1)
    with pytest.raises(TxnError) as busy:
        meta.begin_add_partitions(1000, 0, {TP}, 1)
    assert busy.value.code == ErrorCode.CONCURRENT_TRANSACTIONS
    with pytest.raises(TxnError):
        meta.begin_init(1000, None, 1, None)
    meta.abandon()
    assert meta.state is TxnState.EMPTY and meta.pending is None
    run(meta, meta.begin_add_partitions(1000, 0, {TP}, 1))


def test_init_during_ongoing_fences_with_an_abort() -> None:
    meta = ongoing()
    target, fencing = meta.begin_init(60_000, None, 20, None)
    assert fencing
    assert target.state is TxnState.PREPARE_ABORT and target.producer_epoch == 1
    assert target.partitions == frozenset({TP})
    meta.complete(target)
    with pytest.raises(TxnError) as busy:
        meta.begin_init(60_000, None, 21, None)
    assert busy.value.code == ErrorCode.CONCURRENT_TRANSACTIONS
    run(meta, meta.begin_complete(22))
    target, fencing = meta.begin_init(60_000, None, 23, None)
    meta.complete(target)
    assert not fencing and meta.producer_epoch == 2 and meta.state is TxnState.EMPTY
    # the old instance (epoch 0) is fenced
    with pytest.raises(TxnError) as fenced:
        meta.begin_add_partitions(1000, 0, {TP}, 24)
    assert fenced.value.code == ErrorCode.PRODUCER_FENCED


def test_expected_epoch_rules() -> None:
    meta = initialised(2)  # epoch 1, last epoch -1
    target, _ = meta.begin_init(60_000, (1000, 1), 1, None)  # a producer recovering
    meta.complete(target)
    assert (meta.producer_epoch, meta.last_producer_epoch) == (2, 1)
    target, _ = meta.begin_init(60_000, (1000, 1), 2, None)  # the same call retried
    meta.complete(target)
    assert meta.producer_epoch == 2
    with pytest.raises(TxnError) as fenced:
        meta.begin_init(60_000, (1000, 0), 3, None)
    assert fenced.value.code == ErrorCode.PRODUCER_FENCED
    with pytest.raises(TxnError) as other:
        meta.begin_init(60_000, (999, 2), 3, None)
    assert other.value.code == ErrorCode.PRODUCER_FENCED


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    meta = initialised()
    meta.producer_epoch = 32766
    assert meta.needs_new_producer_id(None)
    target, _ = meta.begin_init(60_000, None, 1, 2000)
    meta.complete(target)
    assert (meta.producer_id, meta.producer_epoch, meta.previous_producer_id) == (2000, 0, 1000)
    # a retry naming the old id with its exhausted epoch is still accepted
    assert meta._valid_expected(1000, 32766)


def test_timeout_and_expiry() -> None:
    meta = ongoing()  # started at 5 with a 60 s timeout
    assert not meta.timed_out(60_005)
    assert meta.timed_out(60_006)
    prepared = meta.begin_fence(60_006)
    assert prepared.producer_epoch == 1 and prepared.state is TxnState.PREPARE_ABORT
    meta.complete(prepared)
    assert not meta.timed_out(10**9)
    run(meta, meta.begin_complete(60_010))
    assert not meta.expired(60_010 + 999, 1000)
    assert meta.expired(60_010 + 1000, 1000)
    dead = meta.begin_expire()
    assert dead.state is TxnState.DEAD


def test_verify_partitions() -> None:
    meta = ongoing()
    assert meta.verify_partitions(1000, 0, {TP, ("t", 9)}) == {
        TP: ErrorCode.NONE,
        ("t", 9): ErrorCode.TRANSACTION_ABORTABLE,
    }
    with pytest.raises(TxnError):
        meta.verify_partitions(1000, 3, {TP})


# -- random sequences against the invariants ----------------------------------------------------
_ops = st.lists(
    st.tuples(
        st.sampled_from(["init", "add", "commit", "abort", "complete", "timeout", "fail"]),
        st.integers(0, 2),  # which epoch offset the request uses (0: current)
        st.integers(0, 3),  # partition
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_ops)
def test_random_operations_keep_invariants(ops: list[tuple[str, int, int]]) -> None:
    meta = initialised()
    now = 10
    next_pid = 5000
    epochs_seen: dict[int, int] = {meta.producer_id: meta.producer_epoch}
    for op, stale, partition in ops:
        now += 1000
        epoch = meta.producer_epoch - stale
        before = meta.state
        try:
            if op == "init":
                fresh = None
                if meta.needs_new_producer_id(None):
                    fresh, next_pid = next_pid, next_pid + 1
                target, _ = meta.begin_init(60_000, None, now, fresh)
            elif op == "add":
                target_or_none = meta.begin_add_partitions(
                    meta.producer_id, epoch, {("t", partition)}, now
                )
                if target_or_none is None:
                    assert stale == 0 and ("t", partition) in meta.partitions
                    continue
                target = target_or_none
            elif op in ("commit", "abort"):
                target_or_none = meta.begin_end(meta.producer_id, epoch, op == "commit", now)
                if target_or_none is None:
                    continue
                target = target_or_none
            elif op == "complete":
                target = meta.begin_complete(now)
            elif op == "timeout":
                if not meta.timed_out(now + 10**6):
                    continue
                target = meta.begin_fence(now)
            else:
                if meta.state is TxnState.ONGOING:
                    meta.begin_add_partitions(
                        meta.producer_id, meta.producer_epoch, {("x", 0)}, now
                    )
                    meta.abandon()
                continue
        except TxnError as exc:
            assert stale == 0 or exc.code in (
                ErrorCode.PRODUCER_FENCED,
                ErrorCode.CONCURRENT_TRANSACTIONS,
                ErrorCode.INVALID_TXN_STATE,
            )
            assert meta.pending is None and meta.state is before
            continue
        if stale:
            assert op in ("init", "complete", "timeout"), "a stale epoch was accepted"
        meta.complete(target)
        # epochs of one producer id never go back
        assert meta.producer_epoch >= epochs_seen.get(meta.producer_id, -1)
        epochs_seen[meta.producer_id] = meta.producer_epoch
        assert 0 <= meta.producer_epoch <= 32767
        if meta.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            assert not meta.partitions
        if meta.state in (TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            assert meta.partitions and meta.start_ms >= 0
        assert meta.pending is None
