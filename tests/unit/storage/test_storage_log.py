"""Log: appends, rolls, reads as file slices, timestamps, retention, truncation, flush."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable

import pytest

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.record_codec import build_batch, decode_batch
from sparklog.protocol.records import CorruptRecordError, iter_batches, parse_batch_header
from sparklog.storage.config import LogConfig
from sparklog.storage.errors import (
    InvalidTimestampError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from sparklog.storage.log import Log
from tests.unit.storage.storage_helpers import FakeClock, batch

OpenLog = Callable[..., Log]


def fill(log: Log, batches: int, records: int = 3, ts: int = 1_000_000, epoch: int = 0) -> None:
    for i in range(batches):
        log.append_as_leader(batch(records, ts=ts + i * records), leader_epoch=epoch)


def test_append_assigns_offsets_and_writes_bytes_as_received(open_log: OpenLog) -> None:
    log = open_log()
    raw = batch(3)
    result = log.append_as_leader(raw, leader_epoch=7)
    assert (result.first_offset, result.last_offset, result.records_count) == (0, 2, 3)
    second = log.append_as_leader(bytearray(batch(2)), leader_epoch=7)
    assert (second.first_offset, second.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    data = log.read(0, 1 << 20).read_bytes()
    first_size = parse_batch_header(raw).size_in_bytes
    # Only base offset (0-7) and leader epoch (12-15) may differ from the request bytes.
    stored = data[:first_size]
    assert stored[16:] == raw[16:] and stored[8:12] == raw[8:12]
    headers = [h for _, h in iter_batches(data)]
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 7), (3, 7)]
    for pos, _ in iter_batches(data):
        decode_batch(data, pos)  # CRC still valid
    assert log.epoch_cache.entries == [(7, 0)]


def test_empty_append_is_a_no_op(open_log: OpenLog) -> None:
    log = open_log()
    assert log.append_as_leader(b"", 0).first_offset == -1
    assert log.log_end_offset == 0


def test_corrupt_batch_rejected_and_nothing_written(open_log: OpenLog) -> None:
    log = open_log()
    good = batch(2)
    bad = bytearray(batch(2))
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError) as info:
        log.append_as_leader(good + bytes(bad), 0)
    assert info.value.error_code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(good + good[:30], 0)  # trailing partial batch
    assert log.log_end_offset == 0 and log.active_segment.size == 0


def test_too_large_batch(open_log: OpenLog) -> None:
    log = open_log(LogConfig(max_message_bytes=200))
    with pytest.raises(RecordTooLargeError) as info:
        log.append_as_leader(batch(1, value_size=300), 0)
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE
    assert int(info.value.code) == 10
    assert "exceeds the maximum configured value of 200" in str(info.value)


def test_invalid_timestamp(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(LogConfig(message_timestamp_after_max_ms=1000))
    with pytest.raises(InvalidTimestampError) as info:
        log.append_as_leader(batch(1, ts=clock.now_ms + 5000), 0)
    assert info.value.code == ErrorCode.INVALID_TIMESTAMP
    log.append_as_leader(batch(1, ts=clock.now_ms + 500), 0)


def test_log_append_time(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    result = log.append_as_leader(batch(2, ts=5), 0)
    assert result.log_append_time == clock.now_ms
    data = log.read(0, 1 << 20).read_bytes()
    header, records = decode_batch(data)
    assert header.timestamp_type == 1 and header.max_timestamp == clock.now_ms
    assert [r.timestamp for r in records] == [clock.now_ms] * 2


def test_follower_append_must_be_contiguous(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_follower(batch(3, base_offset=0, partition_leader_epoch=2))
    log.append_as_follower(batch(1, base_offset=3, partition_leader_epoch=4))
    assert log.log_end_offset == 4
    assert log.epoch_cache.entries == [(2, 0), (4, 3)]
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(batch(1, base_offset=10))
    assert log.log_end_offset == 4


def test_roll_on_segment_bytes_and_index_contents(open_log: OpenLog) -> None:
    config = LogConfig(internal_segment_bytes=600, index_interval_bytes=150)
    log = open_log(config)
    fill(log, 20)
    segments = log.segments
    assert len(segments) > 2
    for seg, nxt in itertools.pairwise(segments):
        assert seg.size <= 600
        assert nxt.base_offset == seg.next_offset
        assert os.path.basename(seg.path) == f"{seg.base_offset:020d}.log"
        # Every offset index entry points at the batch whose last offset is the key.
        for key, position in zip(seg.offset_index.keys, seg.offset_index.values, strict=True):
            assert seg.read_header_at(position).last_offset == key
    assert log.log_end_offset == 60


def test_roll_on_segment_ms(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(LogConfig(segment_ms=1000))
    log.append_as_leader(batch(1, ts=clock.now_ms), 0)
    log.append_as_leader(batch(1, ts=clock.now_ms + 500), 0)
    assert len(log.segments) == 1
    log.append_as_leader(batch(1, ts=clock.now_ms + 1500), 0)
    assert len(log.segments) == 2 and log.active_segment.base_offset == 2


def test_roll_on_full_index(open_log: OpenLog) -> None:
    log = open_log(LogConfig(index_interval_bytes=0, segment_index_bytes=16))
    fill(log, 6, records=1)
    assert len(log.segments) >= 2
    assert all(len(s.offset_index) <= 2 for s in log.segments)


def test_read_slices(open_log: OpenLog) -> None:
    log = open_log(LogConfig(internal_segment_bytes=2000))
    fill(log, 10)  # batches of offsets [0-2], [3-5], ...
    size = log.segments[0].read_header_at(0).size_in_bytes
    # Starts at the batch holding the offset, which may begin before it.
    result = log.read(4, 1 << 20)
    assert result.first_batch_offset == 3
    assert next(h.base_offset for _, h in iter_batches(result.read_bytes())) == 3
    # Bounded by max_bytes, batch aligned.
    result = log.read(0, 2 * size + 5)
    assert result.size == 2 * size
    # Bounded by max_offset (the high watermark): stops before a batch reaching it.
    result = log.read(0, 1 << 20, max_offset=7)
    assert [h.last_offset for _, h in iter_batches(result.read_bytes())] == [2, 5]
    assert log.read(6, 1 << 20, max_offset=7).size == 0
    # min_one_batch returns a batch larger than max_bytes.
    assert log.read(0, 10, min_one_batch=True).size == size
    assert log.read(0, 10, min_one_batch=False).size == 0
    # The log end offset itself is readable and empty.
    assert log.read(log.log_end_offset, 100).slices == ()


def test_read_crosses_into_the_right_segment(open_log: OpenLog) -> None:
    log = open_log(LogConfig(internal_segment_bytes=400, index_interval_bytes=50))
    fill(log, 30)
    for offset in range(0, log.log_end_offset):
        result = log.read(offset, 1 << 20)
        headers = [h for _, h in iter_batches(result.read_bytes())]
        assert headers and headers[0].base_offset <= offset <= headers[0].last_offset
        assert len(result.slices) == 1
        seg_paths = {s.path for s in log.segments}
        assert result.slices[0].path in seg_paths


def test_read_out_of_range(open_log: OpenLog) -> None:
    log = open_log()
    fill(log, 2)
    with pytest.raises(OffsetOutOfRangeError) as info:
        log.read(7, 100)
    assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert int(info.value.code) == 1
    log.high_watermark = 6
    log.delete_records(3)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 100)
    assert log.read(3, 1 << 20).first_batch_offset == 3


def test_offset_for_timestamp(open_log: OpenLog) -> None:
    log = open_log(LogConfig(internal_segment_bytes=500, index_interval_bytes=60))
    # Out-of-order timestamps inside batches: [t+10, t+5, t+20] etc.
    base = 1_000_000
    for i in range(20):
        records = [(b"k", b"v", (), base + i * 100 + d) for d in (10, 5, 20)]
        log.append_as_leader(build_batch(records), 0)
    assert len(log.segments) > 1
    everything = []
    for seg in log.segments:
        data = seg.read_batch_bytes(0, seg.size)
        for pos, _ in iter_batches(data):
            everything.extend(decode_batch(data, pos)[1])
    for target in [0, base, base + 7, base + 15, base + 505, base + 1920, base + 1921, 10**13]:
        expected = next((r for r in everything if r.timestamp >= target), None)
        found = log.offset_for_timestamp(target)
        if expected is None:
            assert found is None
        else:
            assert found is not None and (found.offset, found.timestamp) == (
                expected.offset,
                expected.timestamp,
            )
    top = log.max_timestamp_offset()
    assert top is not None and top.timestamp == base + 1920 and top.offset == 59


def test_delete_records(open_log: OpenLog) -> None:
    log = open_log(LogConfig(internal_segment_bytes=400))
    fill(log, 20)
    log.high_watermark = 30
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records(31)
    before = len(log.segments)
    assert log.delete_records(25) == 25
    assert log.log_start_offset == 25
    assert len(log.segments) < before
    assert log.segments[0].base_offset <= 25 < log.segments[0].next_offset
    assert log.delete_records(-1) == 30  # -1 means the high watermark


def test_retention_by_time_and_size(open_log: OpenLog, clock: FakeClock) -> None:
    config = LogConfig(internal_segment_bytes=400, retention_ms=10_000, file_delete_delay_ms=0)
    log = open_log(config)
    now = clock.now_ms
    for i in range(12):
        log.append_as_leader(batch(3, ts=now - 20_000 + i * 1000), 0)
    fill(log, 6, ts=now)
    log.high_watermark = log.log_end_offset
    count = len(log.segments)
    deleted = log.delete_retention_breached(now)
    assert deleted > 0 and len(log.segments) == count - deleted
    for seg in log.segments[:-1]:
        assert now - seg.max_timestamp <= 10_000
    assert log.log_start_offset == log.segments[0].base_offset
    log.delete_expired_files(now)
    assert not [n for n in os.listdir(log.directory) if n.endswith(".deleted")]

    sized = open_log(LogConfig(internal_segment_bytes=400, retention_bytes=800), name="s-0")
    fill(sized, 20, ts=now)
    sized.high_watermark = sized.log_end_offset
    sized.delete_retention_breached(now)
    assert sized.size_in_bytes <= 800 + 400
    assert sized.size_in_bytes > 800 - 400


def test_retention_respects_high_watermark_and_keeps_a_segment(
    open_log: OpenLog, clock: FakeClock
) -> None:
    log = open_log(LogConfig(internal_segment_bytes=400, retention_ms=1))
    fill(log, 10, ts=1)
    assert log.delete_retention_breached(clock.now_ms) == 0  # high watermark is 0
    log.high_watermark = log.log_end_offset
    assert log.delete_retention_breached(clock.now_ms) > 0
    # Everything expired: the active segment went too and an empty one took its place.
    assert len(log.segments) == 1 and log.active_segment.size == 0
    assert log.log_start_offset == log.log_end_offset == 30
    log.append_as_leader(batch(1, ts=clock.now_ms), 0)
    assert log.log_end_offset == 31


def test_slice_survives_deletion_for_the_delay(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(LogConfig(internal_segment_bytes=400, retention_ms=1))
    fill(log, 10, ts=1)
    result = log.read(0, 1 << 20)
    expected = result.read_bytes()
    log.high_watermark = log.log_end_offset
    log.delete_retention_breached(clock.now_ms)
    assert result.read_bytes() == expected
    log.delete_expired_files(clock.now_ms + 60_000)
    with pytest.raises(FileNotFoundError):
        result.read_bytes()


def test_truncate_to(open_log: OpenLog) -> None:
    log = open_log(LogConfig(internal_segment_bytes=400))
    for epoch in range(1, 6):
        fill(log, 4, epoch=epoch)
    log.high_watermark = 50
    assert log.truncate_to(36)
    assert log.log_end_offset == 36
    assert log.high_watermark == 36
    assert log.epoch_cache.entries == [(1, 0), (2, 12), (3, 24)]
    assert log.truncate_to(34)  # inside batch [33-35]: the whole batch goes
    assert log.log_end_offset == 33
    assert not log.truncate_to(100)
    result = log.append_as_leader(batch(1), leader_epoch=9)
    assert result.first_offset == 33
    log.truncate_fully_and_start_at(1000)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (1000, 1000, 1000)
    assert log.epoch_cache.entries == []
    assert log.append_as_leader(batch(1), 10).first_offset == 1000
    assert log.segments[0].base_offset == 1000


def test_truncating_at_the_end_drops_an_epoch_started_there(open_log: OpenLog) -> None:
    # A leader assigns its epoch's start offset on election; deposed before appending, it
    # becomes a follower and must not keep that entry (it would diverge from the new leader).
    log = open_log()
    fill(log, 2, epoch=1)
    end = log.log_end_offset
    log.epoch_cache.assign(7, end)
    assert not log.truncate_to(end)
    assert log.epoch_cache.entries == [(1, 0)]
    assert log.latest_epoch == 1


def test_end_offset_for_epoch(open_log: OpenLog) -> None:
    log = open_log()
    fill(log, 2, epoch=1)
    fill(log, 2, epoch=3)
    assert log.end_offset_for_epoch(1) == (1, 6)
    assert log.end_offset_for_epoch(2) == (1, 6)
    assert log.end_offset_for_epoch(3) == (3, 12)


def test_flush_messages_and_flush_ms(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(LogConfig(flush_messages=1))
    fill(log, 2)
    assert log.recovery_point == log.log_end_offset == 6
    lazy = open_log(LogConfig(flush_ms=1000), name="lazy-0")
    fill(lazy, 1)
    assert lazy.recovery_point == 0
    assert not lazy.flush_if_due(clock.now_ms + 10)
    assert lazy.flush_if_due(clock.now_ms + 1000)
    assert lazy.recovery_point == 3
    fill(lazy, 1)
    lazy.flush(up_to_offset=4)
    assert lazy.recovery_point == 4


def test_reopen_after_clean_close(open_log: OpenLog) -> None:
    config = LogConfig(internal_segment_bytes=500, index_interval_bytes=100)
    log = open_log(config, topic_id=b"\x01" * 16)
    fill(log, 15, epoch=2)
    log.flush()
    log.close()
    again = open_log(config, had_clean_shutdown=True, recovery_point=0)
    assert again.log_end_offset == 45 and again.recovery_point == 45
    assert again.topic_id == b"\x01" * 16
    assert again.epoch_cache.entries == [(2, 0)]
    for old, new in zip(log.segments, again.segments, strict=True):
        assert old.offset_index.keys == new.offset_index.keys
        assert old.time_index.keys == new.time_index.keys
        assert old.bytes_since_last_index_entry == new.bytes_since_last_index_entry
        assert (old.max_timestamp, old.offset_of_max_timestamp) == (
            new.max_timestamp,
            new.offset_of_max_timestamp,
        )
    assert again.append_as_leader(batch(1), 2).first_offset == 45


def test_split_flush_advances_recovery_point_monotonically(open_log: OpenLog) -> None:
    log = open_log(LogConfig(flush_messages=1))
    log.auto_flush = False
    fill(log, 2)
    assert log.needs_flush and log.recovery_point == 0
    first = log.begin_flush()
    assert first is not None and first.target == 6
    fill(log, 1)  # appends keep going while the first plan's fsyncs run elsewhere
    second = log.begin_flush()
    assert second is not None and second.target == 9
    second.run()
    log.complete_flush(second)
    first.run()
    log.complete_flush(first)  # finishing late must not move the recovery point back
    assert log.recovery_point == 9
    assert not log.needs_flush
    assert log.begin_flush() is None
