"""Transactions in the partition log: markers, the LSO, the transaction index and its rebuild."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

import pytest

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.record_codec import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    build_batch,
    build_control_batch,
    decode_batch,
)
from sparklog.protocol.records import CorruptRecordError
from sparklog.storage.cleaner import LogCleaner
from sparklog.storage.config import LogConfig
from sparklog.storage.errors import StorageError
from sparklog.storage.log import Log
from sparklog.storage.producer_state import InvalidProducerEpochError
from sparklog.storage.txn_index import (
    ENTRY_SIZE,
    AbortedTxn,
    TransactionIndex,
    decode_entries,
    encode_entry,
)
from tests.unit.storage.storage_helpers import FakeClock, batch

OpenLog = Callable[..., Log]


def txn_batch(pid: int, seq: int, n: int = 1, epoch: int = 0, key: bytes = b"k") -> bytes:
    records = [(key, b"v%d" % (seq + i), (), 1_000_000 + i) for i in range(n)]
    return build_batch(
        records,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def append(log: Log, data: bytes) -> int:
    first = log.append_as_leader(data, 0).first_offset
    log.high_watermark = log.log_end_offset
    return first


def marker(log: Log, pid: int, committed: bool, epoch: int = 0, coordinator_epoch: int = 0) -> int:
    offset = log.append_control_marker(pid, epoch, coordinator_epoch, committed, 0)
    log.high_watermark = log.log_end_offset
    return offset


def txn_files(log: Log) -> list[str]:
    return sorted(n for n in os.listdir(log.directory) if n.endswith(".txnindex"))


# --- the last stable offset ---------------------------------------------------------------


def test_without_transactions_the_lso_is_the_high_watermark(open_log: OpenLog) -> None:
    log = open_log()
    append(log, batch(3))
    assert log.first_unstable_offset is None
    assert log.last_stable_offset == log.high_watermark == 3
    log.high_watermark = 1
    assert log.last_stable_offset == 1


def test_an_open_transaction_holds_the_lso_until_its_commit(open_log: OpenLog) -> None:
    log = open_log()
    append(log, batch(2))
    first = append(log, txn_batch(7, 0, n=3))
    append(log, batch(1))
    append(log, txn_batch(7, 3))
    assert log.producer_state.ongoing_transactions == {7: first}
    assert log.last_stable_offset == first == 2
    offset = marker(log, 7, committed=True)
    assert offset == 7
    assert log.last_stable_offset == log.high_watermark == 8
    assert log.collect_aborted_transactions(0, 8) == []
    assert txn_files(log) == []


def test_the_lso_waits_for_the_high_watermark_to_pass_the_marker(open_log: OpenLog) -> None:
    log = open_log()
    append(log, txn_batch(7, 0, n=2))
    log.append_control_marker(7, 0, 0, True, 0)
    log.high_watermark = 2  # the marker (offset 2) is not replicated yet
    assert log.last_stable_offset == 0
    log.high_watermark = 3
    assert log.last_stable_offset == 3


def test_interleaved_transactions_give_the_minimum(open_log: OpenLog) -> None:
    log = open_log()
    a = append(log, txn_batch(1, 0))
    b = append(log, txn_batch(2, 0))
    assert log.last_stable_offset == a
    marker(log, 1, committed=False)
    assert log.last_stable_offset == b
    [entry] = log.collect_aborted_transactions(0, log.log_end_offset)
    # The LSO right after the abort is held by producer 2's open transaction.
    assert entry == AbortedTxn(1, a, 2, b)
    marker(log, 2, committed=True)
    assert log.last_stable_offset == log.log_end_offset == 4


# --- markers --------------------------------------------------------------------------------


def test_abort_marker_writes_a_kafka_format_index_entry(open_log: OpenLog) -> None:
    log = open_log()
    append(log, batch(1))
    append(log, txn_batch(9, 0, n=2))
    offset = marker(log, 9, committed=False, coordinator_epoch=4)
    [name] = txn_files(log)
    with open(os.path.join(log.directory, name), "rb") as f:
        raw = f.read()
    assert len(raw) == ENTRY_SIZE == 34
    assert struct.unpack(">hqqqq", raw) == (0, 9, 1, offset, offset + 1)
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [
        AbortedTxn(9, 1, offset, offset + 1)
    ]
    # The marker is a real control batch with the coordinator epoch in its value.
    data = log.read(offset, 1 << 20).read_bytes()
    header, records = decode_batch(data)
    assert header.is_control and header.is_transactional and header.producer_id == 9
    assert records[0].key == struct.pack(">hh", 0, CONTROL_ABORT)
    assert records[0].value == struct.pack(">hi", 0, 4)
    assert log.producer_state.producers[9].coordinator_epoch == 4


def test_collect_bounds(open_log: OpenLog) -> None:
    log = open_log()
    append(log, txn_batch(1, 0))  # 0
    marker(log, 1, committed=False)  # 1
    append(log, txn_batch(1, 1, n=3))  # 2-4
    marker(log, 1, committed=False)  # 5
    both = log.collect_aborted_transactions(0, 6)
    assert [(t.first_offset, t.last_offset) for t in both] == [(0, 1), (2, 5)]
    assert [t.first_offset for t in log.collect_aborted_transactions(2, 6)] == [2]
    assert [t.first_offset for t in log.collect_aborted_transactions(0, 2)] == [0]
    assert log.collect_aborted_transactions(6, 7) == []


def test_a_stale_producer_epoch_is_fenced(open_log: OpenLog) -> None:
    log = open_log()
    append(log, txn_batch(3, 0, epoch=2))
    leo = log.log_end_offset
    with pytest.raises(InvalidProducerEpochError) as exc:
        log.append_control_marker(3, 1, 0, True, 0)
    assert exc.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == leo
    assert log.producer_state.ongoing_transactions == {3: 0}
    # A higher epoch (the coordinator aborting after a bump) is accepted.
    marker(log, 3, committed=False, epoch=3)
    assert log.producer_state.producers[3].epoch == 3
    assert log.last_stable_offset == log.log_end_offset


def test_a_stale_coordinator_epoch_is_fenced(open_log: OpenLog) -> None:
    log = open_log()
    append(log, txn_batch(3, 0))
    marker(log, 3, committed=True, coordinator_epoch=5)
    append(log, txn_batch(3, 1))
    with pytest.raises(StorageError) as exc:
        log.append_control_marker(3, 0, 4, True, 0)
    assert exc.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED


def test_clients_may_not_write_control_batches(open_log: OpenLog) -> None:
    log = open_log()
    data = build_control_batch(CONTROL_COMMIT, producer_id=1, producer_epoch=0)
    with pytest.raises(CorruptRecordError) as exc:
        log.append_as_leader(data, 0, from_client=True)
    assert exc.value.code == ErrorCode.INVALID_RECORD
    assert log.log_end_offset == 0


def test_follower_appends_build_the_index(open_log: OpenLog) -> None:
    leader = open_log(name="t-0")
    follower = open_log(name="f-0")
    append(leader, txn_batch(4, 0, n=2))
    append(leader, txn_batch(5, 0))
    marker(leader, 4, committed=False)
    marker(leader, 5, committed=True)
    follower.append_as_follower(leader.read(0, 1 << 20).read_bytes())
    follower.high_watermark = follower.log_end_offset
    assert follower.collect_aborted_transactions(0, 10) == leader.collect_aborted_transactions(
        0, 10
    )
    assert follower.last_stable_offset == follower.log_end_offset == 5


# --- files: roll, truncation, recovery, retention, cleaning ----------------------------------


def test_markers_land_in_the_segment_that_holds_them(open_log: OpenLog) -> None:
    log = open_log()
    append(log, txn_batch(1, 0))
    log.roll()
    append(log, batch(1))
    offset = marker(log, 1, committed=False)
    assert txn_files(log) == [f"{log.active_segment.base_offset:020d}.txnindex"]
    assert log.segments[0].txn_index.entries == ()
    assert log.active_segment.txn_index.entries == (AbortedTxn(1, 0, offset, offset + 1),)
    # A reader starting in the first segment must learn of the abort in the second.
    assert [t.first_offset for t in log.collect_aborted_transactions(0, 1)] == [0]


def test_truncation_drops_entries_and_reopens_the_transaction(open_log: OpenLog) -> None:
    log = open_log()
    append(log, txn_batch(1, 0))
    offset = marker(log, 1, committed=False)
    log.truncate_to(offset)
    assert log.collect_aborted_transactions(0, 10) == []
    assert log.producer_state.ongoing_transactions == {1: 0}
    assert os.path.getsize(log.active_segment.txn_index.path) == 0


def test_open_transactions_survive_a_clean_restart(open_log: OpenLog) -> None:
    log = open_log()
    append(log, txn_batch(1, 0))
    log.roll()
    append(log, txn_batch(2, 0))
    log.take_producer_snapshot()
    log.close()
    reopened = open_log(had_clean_shutdown=True, high_watermark=2)
    assert reopened.producer_state.ongoing_transactions == {1: 0, 2: 1}
    assert reopened.last_stable_offset == 0


@pytest.mark.parametrize("keep_snapshots", [True, False])
def test_crash_recovery_rebuilds_the_indexes(open_log: OpenLog, keep_snapshots: bool) -> None:
    config = LogConfig(internal_segment_bytes=300)
    log = open_log(config)
    for i in range(12):
        append(log, txn_batch(1, 2 * i, n=2))
        append(log, txn_batch(2, i))
        marker(log, 1, committed=i % 3 != 0)
        if i % 2:
            marker(log, 2, committed=False)
    append(log, txn_batch(3, 0))
    assert len(log.segments) > 3
    before = log.collect_aborted_transactions(0, log.log_end_offset)
    per_segment = [s.txn_index.entries for s in log.segments]
    ongoing = log.producer_state.ongoing_transactions
    end = log.log_end_offset
    log.close()
    if not keep_snapshots:
        for name in os.listdir(log.directory):
            if name.endswith(".snapshot"):
                os.remove(os.path.join(log.directory, name))
    for name in txn_files(log):
        os.remove(os.path.join(log.directory, name))
    reopened = open_log(config, recovery_point=0, high_watermark=end)
    assert reopened.log_end_offset == end
    assert [s.txn_index.entries for s in reopened.segments] == per_segment
    assert reopened.collect_aborted_transactions(0, end) == before
    assert reopened.producer_state.ongoing_transactions == ongoing
    assert reopened.last_stable_offset == ongoing[3]


def test_recovery_from_the_recovery_point_keeps_flushed_indexes(open_log: OpenLog) -> None:
    config = LogConfig(internal_segment_bytes=300)
    log = open_log(config)
    for i in range(10):
        append(log, txn_batch(1, i))
        marker(log, 1, committed=False)
    per_segment = [s.txn_index.entries for s in log.segments]
    middle = log.segments[len(log.segments) // 2].base_offset
    end = log.log_end_offset
    log.close()
    reopened = open_log(config, recovery_point=middle + 1, high_watermark=end)
    assert [s.txn_index.entries for s in reopened.segments] == per_segment


def test_a_corrupt_index_is_rebuilt_on_open(open_log: OpenLog) -> None:
    log = open_log()
    append(log, txn_batch(1, 0))
    marker(log, 1, committed=False)
    entries = log.active_segment.txn_index.entries
    path = log.active_segment.txn_index.path
    log.take_producer_snapshot()
    log.close()
    with open(path, "ab") as f:
        f.write(b"\x00\x01\x02")
    reopened = open_log(had_clean_shutdown=True, high_watermark=2)
    assert reopened.active_segment.txn_index.entries == entries
    assert os.path.getsize(path) == ENTRY_SIZE


def test_retention_deletes_the_index_with_its_segment(open_log: OpenLog, clock: FakeClock) -> None:
    config = LogConfig(internal_segment_bytes=300, retention_ms=1000, file_delete_delay_ms=0)
    log = open_log(config)
    append(log, txn_batch(1, 0))
    marker(log, 1, committed=False)
    log.roll()
    append(log, batch(1, ts=clock.now_ms + 10_000))
    assert len(txn_files(log)) == 1
    clock.advance(100_000)
    assert log.delete_retention_breached(clock.now_ms) >= 1
    log.delete_expired_files(clock.now_ms)
    assert txn_files(log) == []
    assert log.collect_aborted_transactions(0, log.log_end_offset) == []


def test_cleaning_drops_aborted_values_and_keeps_the_index(
    open_log: OpenLog, clock: FakeClock
) -> None:
    config = LogConfig(
        cleanup_policy=("compact",),
        internal_segment_bytes=1024,
        min_cleanable_dirty_ratio=0.0,
        file_delete_delay_ms=0,
    )
    log = open_log(config)
    append(log, batch(1, key=b"a"))  # 0: committed a
    append(log, txn_batch(1, 0, key=b"a"))  # 1: aborted a
    abort = marker(log, 1, committed=False)  # 2
    append(log, txn_batch(2, 0, key=b"b"))  # 3: committed b
    marker(log, 2, committed=True)  # 4
    log.roll()
    open_txn = append(log, txn_batch(3, 0, key=b"a"))  # 5: open, so the LSO stays at 5
    append(log, batch(1, key=b"z"))
    entries = log.segments[0].txn_index.entries
    LogCleaner().maybe_clean(("t", 0), log, clock.now_ms)
    seen = {}
    for segment in log.segments:
        for pos, header in segment.iter_headers(0):
            _, records = decode_batch(segment.read_batch_bytes(pos, header.size_in_bytes))
            seen.update({r.offset: r.key for r in records})
    # The committed value of "a" survives; its aborted successor does not shadow it.
    assert seen.get(0) == b"a" and 1 not in seen and seen.get(3) == b"b"
    assert abort in seen
    # The open transaction's segment is at the LSO: never cleaned. The cleaned segment keeps
    # its index.
    assert log.last_stable_offset == open_txn
    assert seen.get(open_txn) == b"a"
    assert log.segments[0].txn_index.entries == entries


# --- the index file on its own ----------------------------------------------------------------


def test_index_codec_and_damage(tmp_path: object) -> None:
    entries = [AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 3, 9, 10)]
    data = b"".join(encode_entry(e) for e in entries)
    assert decode_entries(data) == entries
    for bad in (data[:-1], data[34:] + data[:34], b"\x00\x07" + data[2:]):
        with pytest.raises(ValueError):
            decode_entries(bad)
    index = TransactionIndex(os.path.join(str(tmp_path), "0.txnindex"))
    index.append(entries[0])
    with pytest.raises(ValueError):
        index.append(AbortedTxn(3, 0, 5, 6))
    assert TransactionIndex(index.path).entries == (entries[0],)


class Crash(Exception):
    pass


@pytest.mark.parametrize("step", ["cleaned", "swap", "deleted"])
def test_a_crash_while_cleaning_keeps_the_index(
    open_log: OpenLog, clock: FakeClock, step: str
) -> None:
    config = LogConfig(
        cleanup_policy=("compact",),
        internal_segment_bytes=1024,
        min_cleanable_dirty_ratio=0.0,
        file_delete_delay_ms=0,
    )
    log = open_log(config)
    append(log, batch(1, key=b"a"))
    append(log, txn_batch(1, 0, key=b"a"))
    abort = marker(log, 1, committed=False)
    append(log, batch(1, key=b"a"))
    log.roll()
    append(log, batch(1, key=b"z"))
    entries = log.segments[0].txn_index.entries
    assert entries == (AbortedTxn(1, 1, abort, abort + 1),)
    leo = log.log_end_offset

    def hook(at: str) -> None:
        if at == step:
            raise Crash(at)

    with pytest.raises(Crash):
        LogCleaner().maybe_clean(("t", 0), log, clock.now_ms, hook=hook)
    # Everything was flushed: the index must come from the files, not from a rebuild.
    reopened = open_log(config, recovery_point=leo, high_watermark=leo)
    assert not any(s.txn_index_stale for s in reopened.segments)
    assert reopened.segments[0].txn_index.entries == entries
    assert reopened.collect_aborted_transactions(0, leo) == list(entries)
