"""Log compaction: what survives a cleaning pass, when a pass runs, and crashes mid-pass."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklog.protocol import compression as codecs
from sparklog.protocol.record_codec import (
    CONTROL_COMMIT,
    Record,
    build_batch,
    build_control_batch,
    decode_batch,
)
from sparklog.storage.cleaner import LogCleaner, plan_cleaning
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from sparklog.storage.manager import CLEANER_OFFSET_CHECKPOINT, LogManager
from tests.unit.storage.storage_helpers import FakeClock

OpenLog = Callable[..., Log]
KEY = ("t", 0)
DAY_MS = 86_400_000


def compact_config(**kw: object) -> LogConfig:
    base: dict[str, object] = {
        "cleanup_policy": ("compact",),
        "internal_segment_bytes": 1024,
        "min_cleanable_dirty_ratio": 0.0,
        "file_delete_delay_ms": 0,
    }
    base.update(kw)
    return LogConfig(**base)  # type: ignore[arg-type]


def kv_batch(
    items: Sequence[tuple[bytes | None, bytes | None]], ts: int = 1_000_000, **kw: object
) -> bytes:
    records = [(k, v, (), ts + i) for i, (k, v) in enumerate(items)]
    return build_batch(records, **kw)  # type: ignore[arg-type]


def all_records(log: Log) -> dict[int, Record]:
    found: dict[int, Record] = {}
    for segment in log.segments:
        for pos, header in segment.iter_headers(0):
            _, records = decode_batch(segment.read_batch_bytes(pos, header.size_in_bytes))
            for record in records:
                found[record.offset] = record
    return found


def all_headers(log: Log) -> list[tuple[int, int, int]]:
    return [
        (h.base_offset, h.last_offset, h.records_count)
        for s in log.segments
        for _, h in s.iter_headers(0)
    ]


def fill(log: Log, items: Sequence[tuple[bytes | None, bytes | None]], per_batch: int = 3) -> None:
    for i in range(0, len(items), per_batch):
        log.append_as_leader(kv_batch(items[i : i + per_batch]), 0)
    log.high_watermark = log.log_end_offset


def clean(log: Log, now_ms: int, cleaner: LogCleaner | None = None, **kw: object) -> LogCleaner:
    cleaner = cleaner or LogCleaner()
    cleaner.maybe_clean(KEY, log, now_ms, **kw)  # type: ignore[arg-type]
    return cleaner


def leftovers(log: Log) -> list[str]:
    return [n for n in os.listdir(log.directory) if n.endswith((".cleaned", ".swap"))]


def check_compacted(
    before: dict[int, Record], after: dict[int, Record], end_offset: int, tombstones_kept: bool
) -> None:
    """The compaction property for a first pass over ``[0, end_offset)``."""
    latest: dict[bytes, int] = {}
    for offset in sorted(before):
        key = before[offset].key
        if key is not None and offset < end_offset:
            latest[key] = offset
    for offset, record in after.items():
        assert before[offset] == record, f"record at {offset} changed"
    for offset, record in before.items():
        if offset >= end_offset:
            assert after.get(offset) == record, f"uncleanable record {offset} touched"
            continue
        survives = record.key is not None and latest[record.key] == offset
        if record.value is None and not tombstones_kept:
            survives = False
        assert (offset in after) == survives, f"offset {offset}: survives={offset in after}"


# --- the property -------------------------------------------------------------------------

_items = st.lists(
    st.tuples(
        st.sampled_from([b"a", b"b", b"c", b"d", b"e", None]),
        st.one_of(st.none(), st.binary(min_size=1, max_size=40)),
    ),
    min_size=1,
    max_size=120,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    items=_items,
    per_batch=st.integers(1, 6),
    codec=st.sampled_from([codecs.NONE, codecs.GZIP, codecs.ZSTD]),
    hw_cut=st.integers(0, 30),
)
def test_compaction_keeps_the_latest_value_of_every_key(
    tmp_path_factory: pytest.TempPathFactory,
    items: list[tuple[bytes | None, bytes | None]],
    per_batch: int,
    codec: int,
    hw_cut: int,
) -> None:
    clock = FakeClock()
    directory = os.path.join(str(tmp_path_factory.mktemp("c")), "t-0")
    config = compact_config(internal_segment_bytes=400, delete_retention_ms=1000)
    log = Log.open(directory, config, clock)
    for i in range(0, len(items), per_batch):
        log.append_as_leader(kv_batch(items[i : i + per_batch], compression=codec), 0)
    log.high_watermark = max(log.log_end_offset - hw_cut, 0)
    before = all_records(log)
    epochs_before = all_headers(log)
    plan = plan_cleaning(log, 0, clock.now_ms)
    cleaner = clean(log, clock.now_ms)
    after = all_records(log)
    end = plan.end_offset if plan is not None else 0
    assert end <= log.high_watermark and end <= log.active_segment.base_offset
    check_compacted(before, after, end, tombstones_kept=True)
    # Batches keep their offset ranges; only records disappear (or whole batches).
    ranges = {(b, last) for b, last, _ in epochs_before}
    assert {(b, last) for b, last, _ in all_headers(log)} <= ranges
    assert leftovers(log) == []
    # The files are a valid log: a crash recovery re-checks every CRC and finds the same.
    high_watermark = log.high_watermark
    log.close()
    reopened = Log.open(directory, config, clock, high_watermark=high_watermark)
    assert all_records(reopened) == after
    # Past the delete horizon a later pass drops the tombstones too.
    clock.advance(1001)
    clean(reopened, clock.now_ms, cleaner)
    check_compacted(before, all_records(reopened), end, tombstones_kept=False)
    reopened.close()


# --- planning ------------------------------------------------------------------------------


def test_active_segment_and_records_above_the_high_watermark_are_never_cleaned(
    open_log: OpenLog, clock: FakeClock
) -> None:
    log = open_log(compact_config())
    fill(log, [(b"k", b"%d" % i) for i in range(3)])
    assert plan_cleaning(log, 0, clock.now_ms) is None  # one (active) segment only
    log.roll()
    fill(log, [(b"k", b"%d" % i) for i in range(3, 6)])
    log.roll()
    log.high_watermark = 3
    plan = plan_cleaning(log, 0, clock.now_ms)
    assert plan is not None and plan.end_offset == 3 and plan.segment_count == 1
    clean(log, clock.now_ms)
    assert sorted(all_records(log)) == [2, 3, 4, 5]


def test_dirty_ratio_threshold(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(compact_config(min_cleanable_dirty_ratio=0.6))
    fill(log, [(b"k", b"v")] * 3)
    log.roll()
    fill(log, [(b"k", b"v")] * 3)
    log.roll()
    plan = plan_cleaning(log, 3, clock.now_ms)
    assert plan is None  # half dirty < 0.6
    forced = plan_cleaning(log, 3, clock.now_ms, horizon_due=True)
    assert forced is not None and forced.dirty_ratio == pytest.approx(0.5)
    assert plan_cleaning(log, 0, clock.now_ms) is not None  # all dirty


def test_min_compaction_lag_holds_young_segments_back(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(compact_config(min_compaction_lag_ms=10_000))
    log.append_as_leader(kv_batch([(b"k", b"1")], ts=clock.now_ms - 20_000), 0)
    log.roll()
    log.append_as_leader(kv_batch([(b"k", b"2")], ts=clock.now_ms), 0)
    log.roll()
    log.high_watermark = log.log_end_offset
    plan = plan_cleaning(log, 0, clock.now_ms)
    assert plan is not None and plan.end_offset == 1


def test_max_compaction_lag_forces_a_pass(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(compact_config(min_cleanable_dirty_ratio=0.99, max_compaction_lag_ms=5_000))
    log.append_as_leader(kv_batch([(b"k", b"1")], ts=clock.now_ms), 0)
    log.roll()
    log.append_as_leader(kv_batch([(b"k", b"2")], ts=clock.now_ms), 0)
    log.roll()
    log.high_watermark = log.log_end_offset
    assert plan_cleaning(log, 1, clock.now_ms) is None
    assert plan_cleaning(log, 1, clock.now_ms + 5_001) is not None


def test_delete_policy_logs_are_not_compacted(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(compact_config(cleanup_policy=("delete",)))
    fill(log, [(b"k", b"v")] * 3)
    log.roll()
    assert LogCleaner().maybe_clean(KEY, log, clock.now_ms) is None


# --- what is kept --------------------------------------------------------------------------


def test_keyless_records_are_dropped_and_control_batches_kept(
    open_log: OpenLog, clock: FakeClock
) -> None:
    log = open_log(compact_config())
    log.append_as_leader(kv_batch([(None, b"x"), (b"k", b"1")]), 0)
    marker = build_control_batch(
        CONTROL_COMMIT, producer_id=5, producer_epoch=0, timestamp=1_000_000
    )
    log.append_as_leader(marker, 0)
    log.append_as_leader(kv_batch([(b"k", b"2")]), 0)
    log.roll()
    log.high_watermark = log.log_end_offset
    clean(log, clock.now_ms)
    headers = [h for s in log.segments for _, h in s.iter_headers(0)]
    assert [h.base_offset for h in headers] == [2, 3]
    assert headers[0].is_control
    assert sorted(all_records(log)) == [2, 3]


def test_last_batch_of_a_producer_is_kept_empty(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(compact_config())
    log.append_as_leader(
        kv_batch([(b"k", b"1"), (b"j", b"1")], producer_id=7, producer_epoch=0, base_sequence=0),
        0,
    )
    log.append_as_leader(kv_batch([(b"k", b"2"), (b"j", b"2")]), 0)
    log.roll()
    log.high_watermark = log.log_end_offset
    state = dict(log.producer_state.producers)
    clean(log, clock.now_ms)
    first = next(log.segments[0].iter_headers(0))[1]
    assert (first.base_offset, first.last_offset, first.records_count) == (0, 1, 0)
    assert (first.producer_id, first.base_sequence, first.last_sequence) == (7, 0, 1)
    log.close()
    for name in os.listdir(log.directory):
        if name.endswith(".snapshot"):
            os.remove(os.path.join(log.directory, name))
    reopened = open_log(compact_config())
    assert reopened.producer_state.producers == state
    assert reopened.append_as_leader(
        kv_batch([(b"k", b"1"), (b"j", b"1")], producer_id=7, producer_epoch=0, base_sequence=0),
        0,
    ).duplicate


def test_tombstones_get_a_delete_horizon_then_go(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(compact_config(delete_retention_ms=DAY_MS))
    fill(log, [(b"k", b"1"), (b"k", None), (b"j", b"1")])
    log.roll()
    cleaner = clean(log, clock.now_ms)
    header = next(log.segments[0].iter_headers(0))[1]
    assert header.has_delete_horizon and header.base_timestamp == clock.now_ms + DAY_MS
    assert {o: r.value for o, r in all_records(log).items()} == {1: None, 2: b"1"}
    # The record timestamps survive the new base timestamp.
    assert all_records(log)[2].timestamp == 1_000_002
    clock.advance(DAY_MS - 1)
    clean(log, clock.now_ms, cleaner)
    assert 1 in all_records(log)
    clock.advance(1)
    clean(log, clock.now_ms, cleaner)  # no new dirty data: the due horizon triggers the pass
    assert {o: r.value for o, r in all_records(log).items()} == {2: b"1"}


def test_untouched_batches_are_copied_byte_for_byte(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(compact_config())
    fill(log, [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")], per_batch=1)
    fill(log, [(b"a", b"2")])
    log.roll()
    segment = log.segments[0]
    original = [segment.read_batch_bytes(p, h.size_in_bytes) for p, h in segment.iter_headers(0)]
    clean(log, clock.now_ms)
    segment = log.segments[0]
    kept = [segment.read_batch_bytes(p, h.size_in_bytes) for p, h in segment.iter_headers(0)]
    assert kept == original[1:]


# --- crash safety -------------------------------------------------------------------------


class Crash(Exception):
    pass


@pytest.mark.parametrize("step", ["cleaned", "swap", "deleted"])
def test_crash_during_a_pass_leaves_a_valid_log(
    open_log: OpenLog, clock: FakeClock, step: str
) -> None:
    config = compact_config()
    log = open_log(config)
    items = [(b"k%d" % (i % 4), b"v%d" % i) for i in range(24)]
    for i in range(0, 24, 6):
        fill(log, items[i : i + 6])
        log.roll()
    before = all_records(log)
    leo = log.log_end_offset

    def hook(at: str) -> None:
        if at == step:
            raise Crash(at)

    with pytest.raises(Crash):
        clean(log, clock.now_ms, hook=hook)
    # SIGKILL: nothing is closed or flushed further; the next open recovers from the files.
    reopened = open_log(config, high_watermark=leo)
    assert reopened.log_end_offset == leo
    assert leftovers(reopened) == []
    after = all_records(reopened)
    for offset, record in after.items():
        assert before[offset] == record
    # The first segment is the old one (crash before the swap was complete) or the cleaned one.
    first_segment = {o for o in after if o < 6}
    if step == "cleaned":
        assert first_segment == {o for o in before if o < 6}
    else:
        assert first_segment == set()  # every key there is overwritten later
    for key in {r.key for r in before.values()}:
        latest = max(o for o, r in before.items() if r.key == key)
        assert latest in after
    # A full pass afterwards completes the job.
    clean(reopened, clock.now_ms)
    check_compacted(before, all_records(reopened), 24, tombstones_kept=True)


def test_manager_cleans_in_its_retention_pass_and_checkpoints(
    tmp_path: object, clock: FakeClock
) -> None:
    root = os.path.join(str(tmp_path), "d0")
    manager = LogManager([root], LogConfig(), clock)
    manager.load()
    log = manager.create_log("t", 0, None, compact_config())
    fill(log, [(b"k", b"%d" % i) for i in range(6)])
    log.roll()
    manager.retention_pass(clock.now_ms)
    assert sorted(all_records(log)) == [5]
    assert manager.cleaner.first_dirty_offsets[KEY] == 6
    manager.shutdown()
    with open(os.path.join(root, CLEANER_OFFSET_CHECKPOINT)) as f:
        assert f.read().splitlines()[2:] == ["t 0 6"]
    again = LogManager([root], LogConfig(), clock)
    again.load(lambda topic: compact_config())
    assert again.cleaner.first_dirty_offsets[KEY] == 6
    again.shutdown()


def test_a_pass_written_on_another_thread_installs_on_the_log_thread(
    open_log: OpenLog, clock: FakeClock
) -> None:
    log = open_log(compact_config())
    fill(log, [(b"k", b"%d" % i) for i in range(6)])
    log.roll()
    cleaner = LogCleaner()
    cleaning = cleaner.plan(KEY, log, clock.now_ms)
    assert cleaning is not None
    worker = threading.Thread(target=cleaning.write)
    worker.start()
    worker.join()
    # Written, not installed: the log still reads the old segment.
    assert sorted(all_records(log)) == list(range(6))
    fill(log, [(b"k", b"6")])  # appends meanwhile go to the active segment
    result = cleaning.install()
    assert result is not None and result.segments == 1
    assert sorted(all_records(log)) == [5, 6]
    assert cleaner.first_dirty_offsets[KEY] == 6
    assert leftovers(log) == []


def test_a_truncation_between_write_and_install_abandons_the_pass(
    open_log: OpenLog, clock: FakeClock
) -> None:
    log = open_log(compact_config())
    fill(log, [(b"k", b"%d" % i) for i in range(6)])
    log.roll()
    fill(log, [(b"k", b"%d" % i) for i in range(6, 9)])
    log.roll()
    cleaner = LogCleaner()
    cleaning = cleaner.plan(KEY, log, clock.now_ms)
    assert cleaning is not None
    cleaning.write()
    # A follower truncating below the pass's end: the key map saw records that are gone.
    log.truncate_to(6)
    assert cleaning.install() is None
    assert sorted(all_records(log)) == list(range(6))
    assert KEY not in cleaner.first_dirty_offsets
    assert leftovers(log) == []


def test_a_segment_retention_deleted_meanwhile_is_not_installed(
    open_log: OpenLog, clock: FakeClock
) -> None:
    log = open_log(compact_config(cleanup_policy=("compact", "delete")))
    fill(log, [(b"a", b"%d" % i) for i in range(3)])
    log.roll()
    fill(log, [(b"b", b"%d" % i) for i in range(3, 6)])
    log.roll()
    cleaning = LogCleaner().plan(KEY, log, clock.now_ms)
    assert cleaning is not None
    cleaning.write()
    log.delete_records(3)
    log.delete_retention_breached(clock.now_ms)
    result = cleaning.install()
    assert result is not None and result.segments == 1  # only the second segment
    assert sorted(all_records(log)) == [5]
    assert leftovers(log) == []
