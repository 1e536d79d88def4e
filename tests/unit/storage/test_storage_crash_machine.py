"""Crash-recovery state machine: whatever happens to unflushed bytes, reopening yields a prefix.

Rules append random batches, flush, roll, and crash in one of several ways (power loss of
unflushed bytes, a torn tail, garbage appended, index files deleted, or a clean close), then
reopen. The model tracks every appended batch's stored bytes by offset and the file sizes at
the last fsync.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sparklog.protocol.record_codec import build_batch
from sparklog.protocol.records import iter_batches
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from tests.unit.storage.storage_helpers import FakeClock

CONFIG = LogConfig(internal_segment_bytes=900, index_interval_bytes=150, segment_index_bytes=48)
CRASH_MODES = ["lose_unflushed", "torn_tail", "garbage_tail", "delete_indexes", "clean"]


def expected_indexes(
    data: bytes, interval: int
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The index entries Kafka's rule gives for a segment's bytes (written independently)."""
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    since, max_ts, max_ts_offset = 0, -1, -1
    for pos, header in iter_batches(data):
        if header.max_timestamp > max_ts:
            max_ts, max_ts_offset = header.max_timestamp, header.last_offset
        if since > interval:
            offsets.append((header.last_offset, pos))
            if not times or max_ts > times[-1][0]:
                times.append((max_ts, max_ts_offset))
            since = 0
        since += header.size_in_bytes
    return offsets, times


class CrashMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="sparklog-sm-")
        self.directory = os.path.join(self.tmp, "sm-0")
        self.clock = FakeClock()
        self.log = Log.open(self.directory, CONFIG, self.clock)
        self.batches: dict[int, bytes] = {}  # base offset -> bytes as stored
        self.epoch = 0
        self.durable_sizes: dict[str, int] = {}
        self.recovery_point = 0

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _file_sizes(self) -> dict[str, int]:
        return {
            name: os.path.getsize(os.path.join(self.directory, name))
            for name in os.listdir(self.directory)
            if name.endswith((".log", ".index", ".timeindex"))
        }

    @rule(
        count=st.integers(1, 4),
        value_size=st.integers(0, 120),
        ts_jitter=st.integers(-5000, 500),
        new_epoch=st.booleans(),
    )
    def append(self, count: int, value_size: int, ts_jitter: int, new_epoch: bool) -> None:
        if new_epoch:
            self.epoch += 1
        ts = self.clock.now_ms + ts_jitter
        raw = bytearray(
            build_batch([(b"key", b"v" * value_size, (), ts + i % 3) for i in range(count)])
        )
        result = self.log.append_as_leader(bytes(raw), self.epoch)
        struct.pack_into(">q", raw, 0, result.first_offset)
        struct.pack_into(">i", raw, 12, self.epoch)
        self.batches[result.first_offset] = bytes(raw)
        self.clock.advance(7)

    @rule()
    def flush(self) -> None:
        self.log.flush()
        self.recovery_point = self.log.recovery_point
        self.durable_sizes = self._file_sizes()

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @precondition(lambda self: True)
    @rule(mode=st.sampled_from(CRASH_MODES), data=st.data())
    def crash_and_reopen(self, mode: str, data: st.DataObject) -> None:
        clean = mode == "clean"
        if clean:
            self.log.flush()
            self.recovery_point = self.log.recovery_point
            self.durable_sizes = self._file_sizes()
        self.log.close()
        active = self.log.active_segment.path
        if mode == "lose_unflushed":
            for name, size in self._file_sizes().items():
                path = os.path.join(self.directory, name)
                if name not in self.durable_sizes:
                    os.remove(path)
                elif size > self.durable_sizes[name]:
                    os.truncate(path, self.durable_sizes[name])
        elif mode == "torn_tail":
            floor = self.durable_sizes.get(os.path.basename(active), 0)
            size = os.path.getsize(active)
            if size > floor:
                os.truncate(active, data.draw(st.integers(floor, size - 1), label="cut"))
        elif mode == "garbage_tail":
            with open(active, "ab") as f:
                f.write(data.draw(st.binary(min_size=1, max_size=80), label="garbage"))
        elif mode == "delete_indexes":
            for name in sorted(self._file_sizes()):
                if name.endswith((".index", ".timeindex")) and data.draw(st.booleans()):
                    os.remove(os.path.join(self.directory, name))
        self.log = Log.open(
            self.directory,
            CONFIG,
            self.clock,
            recovery_point=self.recovery_point,
            had_clean_shutdown=clean or (mode == "delete_indexes" and data.draw(st.booleans())),
        )
        self._check_recovered()

    def _stored(self) -> list[tuple[int, bytes]]:
        out = []
        for segment in self.log.segments:
            content = segment.read_batch_bytes(0, segment.size)
            assert len(content) == segment.size
            out += [
                (h.base_offset, content[p : p + h.size_in_bytes]) for p, h in iter_batches(content)
            ]
        return out

    def _check_recovered(self) -> None:
        stored = self._stored()
        ordered = sorted(self.batches)
        # A prefix of what was appended, byte for byte.
        assert [o for o, _ in stored] == ordered[: len(stored)]
        for offset, content in stored:
            assert content == self.batches[offset], f"batch at {offset} differs"
        # Everything below the recovery point survived.
        survivors = {o for o, _ in stored}
        for offset, content in self.batches.items():
            next_offset = offset + struct.unpack_from(">i", content, 23)[0] + 1
            if next_offset <= self.recovery_point:
                assert offset in survivors, f"durable batch {offset} lost"
        self.batches = {o: c for o, c in stored}
        self.recovery_point = min(self.recovery_point, self.log.log_end_offset)
        assert self.log.recovery_point <= self.log.log_end_offset
        # Epoch cache matches the batches' epochs.
        expected_epochs: list[tuple[int, int]] = []
        for offset, content in stored:
            epoch = struct.unpack_from(">i", content, 12)[0]
            if not expected_epochs or epoch > expected_epochs[-1][0]:
                expected_epochs.append((epoch, offset))
        assert self.log.epoch_cache.entries == expected_epochs

    @invariant()
    def log_matches_model(self) -> None:
        stored = self._stored()
        last_next = 0
        if stored:
            offset, content = stored[-1]
            last_next = offset + struct.unpack_from(">i", content, 23)[0] + 1
        assert self.log.log_end_offset == last_next
        assert [o for o, _ in stored] == sorted(self.batches)

    @invariant()
    def indexes_equal_fresh_ones(self) -> None:
        for segment in self.log.segments:
            content = segment.read_batch_bytes(0, segment.size)
            offsets, times = expected_indexes(content, CONFIG.index_interval_bytes)
            index = segment.offset_index
            assert list(zip(index.keys, index.values, strict=True)) == offsets
            time_index = segment.time_index
            assert list(zip(time_index.keys, time_index.values, strict=True)) == times
            with open(index.path, "rb") as f:
                assert f.read() == index.to_bytes()
            with open(time_index.path, "rb") as f:
                assert f.read() == time_index.to_bytes()


CrashMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestCrashMachine = CrashMachine.TestCase
