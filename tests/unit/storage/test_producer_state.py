"""Idempotent-producer state in the partition log: validation, duplicates, snapshots, replay."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.record_codec import build_batch
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from sparklog.storage.producer_state import (
    NUM_BATCHES_TO_RETAIN,
    BatchMetadata,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    ProducerStateEntry,
    decode_snapshot,
    encode_snapshot,
    snapshot_file_name,
)
from tests.unit.storage.storage_helpers import FakeClock, batch

OpenLog = Callable[..., Log]
INT32_MAX = (1 << 31) - 1


def pbatch(pid: int, epoch: int, seq: int, n: int = 1, ts: int = 1_000_000, **kw: object) -> bytes:
    kw.update(producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    records = [(b"k", bytes([65 + i % 26]) * 10, (), ts + i) for i in range(n)]
    return build_batch(records, **kw)  # type: ignore[arg-type]


def snapshots(log: Log) -> list[str]:
    return sorted(n for n in os.listdir(log.directory) if n.endswith(".snapshot"))


# --- leader validation --------------------------------------------------------------------


def test_in_sequence_batches_are_appended_and_tracked(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(pbatch(7, 0, 0, n=3), 0)
    r = log.append_as_leader(pbatch(7, 0, 3, n=2), 0)
    assert (r.first_offset, r.last_offset, r.duplicate) == (3, 4, False)
    entry = log.producer_state.entry(7)
    assert entry is not None and entry.epoch == 0 and entry.last_seq == 4
    assert [(b.first_seq, b.last_seq, b.first_offset, b.last_offset) for b in entry.batches] == [
        (0, 2, 0, 2),
        (3, 4, 3, 4),
    ]


def test_duplicate_is_not_written_and_answers_the_original_offsets(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(batch(2), 0)  # a non-idempotent batch first, so offsets differ
    first = log.append_as_leader(pbatch(7, 0, 0, n=3), 0)
    log.append_as_leader(pbatch(7, 0, 3), 0)
    leo, size = log.log_end_offset, log.size_in_bytes
    retry = log.append_as_leader(pbatch(7, 0, 0, n=3), 0)
    assert retry.duplicate
    assert (retry.first_offset, retry.last_offset) == (first.first_offset, first.last_offset)
    assert (retry.first_offset, retry.last_offset) == (2, 4)
    assert (log.log_end_offset, log.size_in_bytes) == (leo, size)


def test_only_the_last_five_batches_are_recognised_as_duplicates(open_log: OpenLog) -> None:
    log = open_log()
    for seq in range(NUM_BATCHES_TO_RETAIN + 1):
        log.append_as_leader(pbatch(7, 0, seq), 0)
    assert log.append_as_leader(pbatch(7, 0, 1), 0).first_offset == 1  # still retained
    with pytest.raises(OutOfOrderSequenceError) as err:
        log.append_as_leader(pbatch(7, 0, 0), 0)  # fell out of the window
    assert err.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_duplicate_needs_the_same_sequence_range(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(pbatch(7, 0, 0, n=3), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(pbatch(7, 0, 0, n=2), 0)


def test_sequence_gap_is_out_of_order_and_changes_nothing(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(pbatch(7, 0, 0, n=2), 0)
    before = log.producer_state.entry(7)
    with pytest.raises(OutOfOrderSequenceError) as err:
        log.append_as_leader(pbatch(7, 0, 3), 0)
    assert err.value.error_code == 45
    assert "Out of order sequence number for producer 7" in str(err.value)
    assert log.log_end_offset == 2 and log.producer_state.entry(7) == before


def test_lower_epoch_is_fenced(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(pbatch(7, 3, 0), 0)
    with pytest.raises(InvalidProducerEpochError) as err:
        log.append_as_leader(pbatch(7, 2, 1), 0)
    assert err.value.error_code == 47
    assert log.log_end_offset == 1


def test_new_epoch_must_start_at_sequence_zero(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(pbatch(7, 0, 0, n=5), 0)
    with pytest.raises(OutOfOrderSequenceError) as err:
        log.append_as_leader(pbatch(7, 1, 5), 0)
    assert "new epoch" in str(err.value)
    log.append_as_leader(pbatch(7, 1, 0), 0)
    entry = log.producer_state.entry(7)
    assert entry is not None and entry.epoch == 1 and len(entry.batches) == 1
    # A batch of the old epoch is no longer a duplicate but a fenced zombie.
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(pbatch(7, 0, 0, n=5), 0)


def test_unknown_producer_may_start_at_any_sequence(open_log: OpenLog) -> None:
    # Kafka 4.x accepts it (KIP-360): the state may have expired or been deleted with the log.
    log = open_log()
    r = log.append_as_leader(pbatch(9, 4, 1234, n=2), 0)
    assert r.first_offset == 0 and not r.duplicate
    log.append_as_leader(pbatch(9, 4, 1236), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(pbatch(9, 4, 1300), 0)


def test_sequence_wraps_after_int32_max(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(pbatch(7, 0, INT32_MAX - 1, n=2), 0)
    log.append_as_leader(pbatch(7, 0, 0), 0)
    entry = log.producer_state.entry(7)
    assert entry is not None and entry.last_seq == 0


def test_non_idempotent_batches_are_not_tracked(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(batch(3), 0)
    log.append_as_leader(batch(3), 0)
    assert log.producer_state.producers == {} and log.log_end_offset == 6


def test_producers_are_independent(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(pbatch(1, 0, 0), 0)
    log.append_as_leader(pbatch(2, 0, 0), 0)
    assert log.append_as_leader(pbatch(1, 0, 0), 0).duplicate
    assert log.append_as_leader(pbatch(2, 0, 1), 0).first_offset == 2


def test_follower_appends_update_the_state_without_checks(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_follower(pbatch(7, 2, 10, base_offset=0))
    # A gap and an old epoch are the leader's business; the follower applies what it gets.
    log.append_as_follower(pbatch(7, 2, 50, base_offset=1))
    entry = log.producer_state.entry(7)
    assert entry is not None and entry.last_seq == 50 and entry.epoch == 2
    assert log.producer_state.map_end_offset == 2


def test_transactional_batches_open_a_transaction(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(batch(1), 0)
    log.append_as_leader(pbatch(7, 0, 0, is_transactional=True), 0)
    log.append_as_leader(pbatch(7, 0, 1, is_transactional=True), 0)
    entry = log.producer_state.entry(7)
    assert entry is not None and entry.current_txn_first_offset == 1


# --- expiry -------------------------------------------------------------------------------


def test_idle_producers_expire(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log()
    log.append_as_leader(pbatch(7, 0, 0, ts=clock.now_ms), 0)
    log.producer_state.expiration_ms = 1000
    assert log.remove_expired_producers(clock.now_ms + 999) == 0
    assert log.remove_expired_producers(clock.now_ms + 1000) == 1
    assert log.producer_state.entry(7) is None
    # Forgotten: its next batch is accepted at any sequence.
    log.append_as_leader(pbatch(7, 0, 40, ts=clock.now_ms), 0)


def test_open_transactions_keep_a_producer_alive(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log()
    log.append_as_leader(pbatch(7, 0, 0, ts=clock.now_ms, is_transactional=True), 0)
    log.producer_state.expiration_ms = 1
    assert log.remove_expired_producers(clock.now_ms + 10_000) == 0


# --- snapshots, recovery, truncation -------------------------------------------------------


def test_snapshot_is_written_at_roll_and_deleted_with_its_segment(
    open_log: OpenLog, clock: FakeClock
) -> None:
    log = open_log(LogConfig(retention_ms=1000, file_delete_delay_ms=0))
    log.append_as_leader(pbatch(7, 0, 0, ts=clock.now_ms), 0)
    log.roll()
    log.append_as_leader(pbatch(7, 0, 1, ts=clock.now_ms), 0)
    log.roll()
    assert snapshots(log) == [snapshot_file_name(1), snapshot_file_name(2)]
    log.high_watermark = log.log_end_offset
    log.append_as_leader(pbatch(7, 0, 2, ts=clock.now_ms + 5000), 0)
    clock.advance(2000)
    assert log.delete_retention_breached(clock.now_ms) == 2
    log.delete_expired_files(clock.now_ms)
    assert snapshots(log) == [snapshot_file_name(2)]
    assert not [n for n in os.listdir(log.directory) if n.endswith(".deleted")]


def test_clean_shutdown_snapshot_means_no_replay(open_log: OpenLog) -> None:
    log = open_log()
    for seq in range(3):
        log.append_as_leader(pbatch(7, 0, seq), 0)
    state = dict(log.producer_state.producers)
    log.take_producer_snapshot()
    log.close()
    assert snapshots(log) == [snapshot_file_name(3)]
    reopened = open_log(had_clean_shutdown=True)
    assert reopened.producer_state.producers == state
    assert reopened.append_as_leader(pbatch(7, 0, 1), 0).duplicate


def test_crash_recovery_replays_after_the_latest_snapshot(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(pbatch(7, 0, 0), 0)
    log.roll()
    log.append_as_leader(pbatch(7, 0, 1), 0)
    log.append_as_leader(pbatch(8, 0, 0), 0)
    state = dict(log.producer_state.producers)
    log.close()  # no snapshot at the end: a crash
    reopened = open_log()
    assert reopened.producer_state.producers == state
    assert reopened.append_as_leader(pbatch(7, 0, 1), 0).first_offset == 1


def test_recovery_without_any_snapshot_rebuilds_from_the_log(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(pbatch(7, 0, 0), 0)
    log.roll()
    log.append_as_leader(pbatch(7, 0, 1), 0)
    state = dict(log.producer_state.producers)
    log.close()
    for name in snapshots(log):
        os.remove(os.path.join(log.directory, name))
    assert open_log().producer_state.producers == state


def test_corrupt_snapshot_is_ignored(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(pbatch(7, 0, 0), 0)
    log.roll()
    log.append_as_leader(pbatch(7, 0, 1), 0)
    state = dict(log.producer_state.producers)
    log.take_producer_snapshot()
    log.close()
    path = os.path.join(log.directory, snapshot_file_name(2))
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[-1] ^= 0xFF
    with open(path, "wb") as f:
        f.write(data)
    reopened = open_log(had_clean_shutdown=True)
    assert reopened.producer_state.producers == state
    assert snapshot_file_name(2) not in snapshots(reopened)


def test_snapshot_beyond_a_recovered_tail_is_dropped(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(pbatch(7, 0, 0), 0)
    log.append_as_leader(pbatch(7, 0, 1), 0)
    log.take_producer_snapshot()
    log.close()
    segment = log.segments[0].path
    os.truncate(segment, os.path.getsize(segment) - 5)  # a torn last batch
    reopened = open_log()
    assert reopened.log_end_offset == 1
    entry = reopened.producer_state.entry(7)
    assert entry is not None and entry.last_seq == 0
    assert snapshots(reopened) == []
    assert reopened.append_as_leader(pbatch(7, 0, 1), 0).first_offset == 1


def test_truncation_reloads_the_state(open_log: OpenLog) -> None:
    log = open_log()
    for seq in range(4):
        log.append_as_leader(pbatch(7, 0, seq), 0)
        log.roll()
    log.truncate_to(2)
    entry = log.producer_state.entry(7)
    assert entry is not None and entry.last_seq == 1 and log.producer_state.map_end_offset == 2
    assert all(int(n[:20]) <= 2 for n in snapshots(log))
    log.append_as_leader(pbatch(7, 0, 2), 0)
    log.truncate_fully_and_start_at(10)
    assert log.producer_state.producers == {} and snapshots(log) == []


def test_snapshot_codec_roundtrip_and_damage() -> None:
    entries = [
        ProducerStateEntry(1, 0, (BatchMetadata(0, 4, 10, 14, 99),), 99),
        ProducerStateEntry(2, 5, (), -1, 3, 77),
    ]
    data = encode_snapshot(entries)
    assert decode_snapshot(data) == entries
    for bad in (data[:-1], data + b"\x00", data[:3], b"\x00\x09" + data[2:]):
        with pytest.raises(ValueError):
            decode_snapshot(bad)


_op = st.one_of(
    st.tuples(st.just("append"), st.integers(0, 3), st.integers(1, 4)),
    st.tuples(st.just("bump"), st.integers(0, 3), st.just(0)),
    st.tuples(st.just("retry"), st.integers(0, 3), st.integers(0, 6)),
    st.tuples(st.just("roll"), st.just(0), st.just(0)),
    st.tuples(st.just("plain"), st.just(0), st.integers(1, 3)),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(_op, max_size=40), clean=st.booleans())
def test_reopen_restores_the_pre_crash_state(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, int]], clean: bool
) -> None:
    directory = os.path.join(str(tmp_path_factory.mktemp("ps")), "t-0")
    clock = FakeClock()
    config = LogConfig(internal_segment_bytes=600)
    log = Log.open(directory, config, clock)
    epochs = [0] * 4
    next_seq = [0] * 4
    sent: list[list[tuple[int, int, int]]] = [[] for _ in range(4)]  # (epoch, seq, n)
    for op, pid, arg in ops:
        if op == "append":
            r = log.append_as_leader(pbatch(pid, epochs[pid], next_seq[pid], n=arg), 0)
            assert not r.duplicate
            sent[pid].append((epochs[pid], next_seq[pid], arg))
            next_seq[pid] += arg
        elif op == "bump":
            epochs[pid] += 1
            next_seq[pid] = 0
        elif op == "retry" and sent[pid]:
            epoch, seq, n = sent[pid][-1 - min(arg, len(sent[pid]) - 1)]
            leo = log.log_end_offset
            try:
                r = log.append_as_leader(pbatch(pid, epoch, seq, n=n), 0)
            except (OutOfOrderSequenceError, InvalidProducerEpochError):
                continue
            assert r.duplicate and log.log_end_offset == leo
        elif op == "roll":
            log.roll()
        elif op == "plain":
            log.append_as_leader(batch(arg), 0)
    state = dict(log.producer_state.producers)
    if clean:
        log.take_producer_snapshot()
    log.close()
    reopened = Log.open(directory, config, clock, had_clean_shutdown=clean)
    assert reopened.producer_state.producers == state
    assert reopened.producer_state.map_end_offset == reopened.log_end_offset
    reopened.close()
