"""Property tests: random transactional histories against a model of what each reader sees.

The model knows, for every record, whether its transaction committed, aborted or is still
open. The log must answer the same LSO, and a read_committed reader that applies Kafka's
client algorithm to ``collect_aborted_transactions`` (the fetch response's list) must see
exactly the committed records below the LSO, before and after a crash that loses the
transaction indexes (and perhaps the producer snapshots).
"""

from __future__ import annotations

import heapq
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklog.protocol.record_codec import (
    CONTROL_ABORT,
    build_batch,
    decode_batch,
    decode_control_record,
)
from sparklog.protocol.records import BatchHeader, parse_batch_header
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from tests.unit.storage.storage_helpers import FakeClock

PIDS = (1, 2, 3)

_op = st.one_of(
    st.tuples(st.just("txn"), st.sampled_from(PIDS), st.integers(1, 3)),
    st.tuples(st.just("plain"), st.just(0), st.integers(1, 3)),
    st.tuples(st.just("commit"), st.sampled_from(PIDS), st.just(0)),
    st.tuples(st.just("abort"), st.sampled_from(PIDS), st.just(0)),
    st.tuples(st.just("roll"), st.just(0), st.just(0)),
)


def _records(n: int, tag: int) -> list[tuple[bytes, bytes, tuple[()], int]]:
    return [(b"k", b"%d" % tag, (), 1_000_000 + i) for i in range(n)]


def _headers(data: bytes) -> list[tuple[BatchHeader, int]]:
    found = []
    pos = 0
    while pos < len(data):
        header = parse_batch_header(data, pos)
        found.append((header, pos))
        pos += header.size_in_bytes
    return found


def read_committed(log: Log, upper: int) -> list[int]:
    """Offsets a Kafka read_committed consumer delivers from 0 up to ``upper``."""
    data = b""
    offset = 0
    while offset < upper:  # a read returns one segment's batches at most
        chunk = log.read(offset, 1 << 30, max_offset=upper).read_bytes()
        if not chunk:
            break
        data += chunk
        offset = _headers(chunk)[-1][0].next_offset
    pending = [(t.first_offset, t.producer_id) for t in log.collect_aborted_transactions(0, upper)]
    heapq.heapify(pending)
    aborted_pids: set[int] = set()
    seen: list[int] = []
    pos = 0
    while pos < len(data):
        header, records = decode_batch(data, pos)
        pos += header.size_in_bytes
        while pending and pending[0][0] <= header.last_offset:
            aborted_pids.add(heapq.heappop(pending)[1])
        if header.is_control:
            control = decode_control_record(records[0])
            if control.control_type == CONTROL_ABORT:
                aborted_pids.discard(header.producer_id)
            continue
        if header.is_transactional and header.producer_id in aborted_pids:
            continue
        seen.extend(r.offset for r in records)
    return seen


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ops=st.lists(_op, max_size=40),
    crash_from=st.integers(0, 100),
    drop_snapshots=st.booleans(),
)
def test_readers_see_exactly_the_committed_records(
    tmp_path_factory: pytest.TempPathFactory,
    ops: list[tuple[str, int, int]],
    crash_from: int,
    drop_snapshots: bool,
) -> None:
    directory = os.path.join(str(tmp_path_factory.mktemp("txn")), "t-0")
    clock = FakeClock()
    config = LogConfig(internal_segment_bytes=400)
    log = Log.open(directory, config, clock)
    seq = dict.fromkeys(PIDS, 0)
    open_first: dict[int, int] = {}
    pending: dict[int, list[int]] = {pid: [] for pid in PIDS}
    committed: list[int] = []
    for op, pid, n in ops:
        leo = log.log_end_offset
        if op == "txn":
            data = build_batch(
                _records(n, leo),
                producer_id=pid,
                producer_epoch=0,
                base_sequence=seq[pid],
                is_transactional=True,
            )
            log.append_as_leader(data, 0)
            seq[pid] += n
            open_first.setdefault(pid, leo)
            pending[pid].extend(range(leo, leo + n))
        elif op == "plain":
            log.append_as_leader(build_batch(_records(n, leo)), 0)
            committed.extend(range(leo, leo + n))
        elif op in ("commit", "abort"):
            log.append_control_marker(pid, 0, 0, op == "commit", 0)
            if op == "commit":
                committed.extend(pending[pid])
            pending[pid] = []
            open_first.pop(pid, None)
        else:
            log.roll()
        log.high_watermark = log.log_end_offset
    end = log.log_end_offset
    lso = min(open_first.values(), default=end)
    expected = sorted(o for o in committed if o < lso)

    assert log.last_stable_offset == lso
    assert read_committed(log, lso) == expected
    aborted = log.collect_aborted_transactions(0, end)
    assert [t.last_offset for t in aborted] == sorted(t.last_offset for t in aborted)

    # Crash: lose every transaction index (and maybe the snapshots), recover from a point.
    log.close()
    bases = [s.base_offset for s in log.segments]
    recovery_point = bases[crash_from % len(bases)]
    for name in os.listdir(directory):
        if name.endswith(".txnindex") or (drop_snapshots and name.endswith(".snapshot")):
            # Segments below the recovery point keep their (flushed) index.
            base = int(name.split(".")[0])
            if name.endswith(".snapshot") or base >= recovery_point:
                os.remove(os.path.join(directory, name))
    reopened = Log.open(directory, config, clock, recovery_point=recovery_point, high_watermark=end)
    assert reopened.log_end_offset == end
    assert reopened.collect_aborted_transactions(0, end) == aborted
    assert reopened.producer_state.ongoing_transactions == open_first
    assert reopened.last_stable_offset == lso
    assert read_committed(reopened, lso) == expected
    reopened.close()
