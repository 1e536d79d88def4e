"""The share-partition state machine: examples of each rule, and a Hypothesis state machine that
drives random acquisitions, acknowledgements, member departures and clock steps by three
members and checks the invariants of :mod:`sparklog.share.share_partition` after every step."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from sparklog.protocol.errors import ErrorCode
from sparklog.share.share_partition import (
    AckBatch,
    AcknowledgeType,
    AcquiredRange,
    FetchedBatch,
    RecordState,
    SharePartition,
    SharePartitionConfig,
)

CONFIG = SharePartitionConfig(lock_duration_ms=1000, delivery_count_limit=3, max_in_flight=12)


def log_batches(end: int, undeliverable: frozenset[int] = frozenset()) -> list[FetchedBatch]:
    """A log of batches of 3 offsets each up to ``end``; batches whose base is listed are
    control or aborted batches."""
    return [
        FetchedBatch(base, min(base + 2, end - 1), base not in undeliverable)
        for base in range(0, end, 3)
    ]


def offsets(ranges: list[AcquiredRange]) -> list[int]:
    return [o for r in ranges for o in range(r.first_offset, r.last_offset + 1)]


def test_acquire_accept_moves_the_start_offset() -> None:
    sp = SharePartition(0, CONFIG)
    got = sp.acquire("a", log_batches(6), 10, now_ms=0)
    assert got == [AcquiredRange(0, 5, 1)]
    assert sp.acknowledge("a", [AckBatch(0, 2, (1,))], now_ms=1) == ErrorCode.NONE
    assert sp.start_offset == 3 and sp.end_offset == 6


def test_an_acquired_record_is_not_given_to_another_member() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", log_batches(3), 10, now_ms=0)
    assert sp.acquire("b", log_batches(3), 10, now_ms=10) == []


def test_only_the_holder_acknowledges() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", log_batches(3), 10, now_ms=0)
    assert sp.acknowledge("b", [AckBatch(0, 0, (1,))], now_ms=1) == ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("a", [AckBatch(0, 1, (1, 9))], now_ms=1) == ErrorCode.INVALID_REQUEST
    record = sp.record(0)
    assert record is not None and record.state == RecordState.ACQUIRED


def test_release_redelivers_then_the_limit_archives() -> None:
    sp = SharePartition(0, CONFIG)
    for attempt in range(1, CONFIG.delivery_count_limit + 1):
        got = sp.acquire("a", log_batches(1), 10, now_ms=attempt)
        assert got == [AcquiredRange(0, 0, attempt)]
        assert sp.acknowledge("a", [AckBatch(0, 0, (2,))], now_ms=attempt) == ErrorCode.NONE
    assert sp.acquire("a", log_batches(1), 10, now_ms=100) == []
    assert sp.start_offset == 1  # archived


def test_lock_expiry_releases_to_another_member() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", log_batches(3), 10, now_ms=0)
    assert sp.acquire("b", log_batches(3), 10, now_ms=999) == []
    assert offsets(sp.acquire("b", log_batches(3), 10, now_ms=1000)) == [0, 1, 2]
    assert sp.acknowledge("a", [AckBatch(0, 0, (1,))], now_ms=1001) == (
        ErrorCode.INVALID_RECORD_STATE
    )


def test_reject_archives_and_renew_extends_the_lock() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", log_batches(3), 10, now_ms=0)
    batches = [AckBatch(0, 0, (3,)), AckBatch(1, 1, (4,))]
    assert sp.acknowledge("a", batches, now_ms=900) == ErrorCode.NONE
    assert sp.start_offset == 1
    assert sp.acquire("b", log_batches(3), 10, now_ms=1500) == [AcquiredRange(2, 2, 2)]
    record = sp.record(1)
    assert record is not None and record.member_id == "a"  # renewed until 1900


def test_undeliverable_batches_are_never_acquired() -> None:
    sp = SharePartition(0, CONFIG)
    got = sp.acquire("a", log_batches(9, frozenset({3})), 10, now_ms=0)
    assert offsets(got) == [0, 1, 2, 6, 7, 8]
    assert sp.acknowledge("a", [AckBatch(0, 2, (1,))], now_ms=1) == ErrorCode.NONE
    assert sp.start_offset == 6


def test_the_in_flight_cap_bounds_the_window() -> None:
    sp = SharePartition(0, CONFIG)
    got = sp.acquire("a", log_batches(30), 100, now_ms=0)
    assert offsets(got) == list(range(CONFIG.max_in_flight))
    assert sp.in_flight_count() == CONFIG.max_in_flight


def test_max_records_whole_batches_unless_strict() -> None:
    sp = SharePartition(0, CONFIG)
    assert offsets(sp.acquire("a", log_batches(9), 4, now_ms=0)) == list(range(6))
    sp = SharePartition(0, CONFIG)
    assert offsets(sp.acquire("a", log_batches(9), 4, now_ms=0, strict=True)) == [0, 1, 2, 3]


def test_gaps_in_the_log_are_archived() -> None:
    sp = SharePartition(0, CONFIG)
    got = sp.acquire("a", [FetchedBatch(0, 1), FetchedBatch(5, 6)], 10, now_ms=0)
    assert offsets(got) == [0, 1, 5, 6]
    sp.acknowledge("a", [AckBatch(0, 1, (1,))], now_ms=1)
    assert sp.start_offset == 5


def test_load_restores_states_without_locks() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", log_batches(6), 10, now_ms=0)
    sp.acknowledge("a", [AckBatch(1, 1, (1,)), AckBatch(2, 2, (2,))], now_ms=1)
    restored = SharePartition(0, CONFIG)
    restored.load(sp.start_offset, sp.state_batches())
    assert restored.start_offset == 0
    assert offsets(restored.acquire("b", log_batches(6), 10, now_ms=5)) == [0, 2, 3, 4, 5]


MEMBERS = ("a", "b", "c")
LOG_END = 40
UNDELIVERABLE = frozenset({9, 21})


class SharePartitionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.sp = SharePartition(0, CONFIG)
        self.now = 0
        self.holder: dict[int, tuple[str, int]] = {}  # offset -> (member, lock deadline)
        self.accepted: set[int] = set()
        self.deliveries: dict[int, int] = {}
        self.last_start = 0

    def _expire_model(self) -> None:
        for offset, (_member, deadline) in list(self.holder.items()):
            if deadline <= self.now:
                del self.holder[offset]

    @rule(member=st.sampled_from(MEMBERS), max_records=st.integers(1, 8), strict=st.booleans())
    def acquire(self, member: str, max_records: int, strict: bool) -> None:
        self._expire_model()
        batches = [
            b for b in log_batches(LOG_END, UNDELIVERABLE) if b.last_offset >= self.sp.start_offset
        ]
        got = offsets(self.sp.acquire(member, batches, max_records, self.now, strict=strict))
        for offset in got:
            assert offset not in self.holder, f"offset {offset} held twice"
            assert offset not in self.accepted, f"accepted offset {offset} redelivered"
            assert offset - offset % 3 not in UNDELIVERABLE
            self.deliveries[offset] = self.deliveries.get(offset, 0) + 1
            self.holder[offset] = (member, self.now + CONFIG.lock_duration_ms)

    @rule(
        member=st.sampled_from(MEMBERS),
        first=st.integers(0, LOG_END - 1),
        length=st.integers(1, 4),
        ack=st.sampled_from(list(AcknowledgeType)),
    )
    def acknowledge(self, member: str, first: int, length: int, ack: AcknowledgeType) -> None:
        self._expire_model()
        last = first + length - 1
        code = self.sp.acknowledge(member, [AckBatch(first, last, (int(ack),))], self.now)
        held = all(self.holder.get(o, ("", 0))[0] == member for o in range(first, last + 1))
        assert (code == ErrorCode.NONE) == held
        if code != ErrorCode.NONE:
            return
        for offset in range(first, last + 1):
            if ack == AcknowledgeType.RENEW:
                self.holder[offset] = (member, self.now + CONFIG.lock_duration_ms)
                continue
            del self.holder[offset]
            if ack == AcknowledgeType.ACCEPT:
                self.accepted.add(offset)

    @rule(member=st.sampled_from(MEMBERS))
    def member_leaves(self, member: str) -> None:
        self._expire_model()
        released = self.sp.release_member(member)
        mine = [o for o, (m, _d) in self.holder.items() if m == member]
        assert released == len(mine)
        for offset in mine:
            del self.holder[offset]

    @rule(step_ms=st.integers(1, 1500))
    def time_passes(self, step_ms: int) -> None:
        self.now += step_ms
        self.sp.expire_locks(self.now)
        self._expire_model()

    @invariant()
    def window_is_consistent(self) -> None:
        sp = self.sp
        assert sp.start_offset >= self.last_start
        self.last_start = sp.start_offset
        assert 0 <= sp.in_flight_count() <= CONFIG.max_in_flight
        for offset in range(sp.start_offset, sp.end_offset):
            record = sp.record(offset)
            assert record is not None
            assert record.delivery_count <= CONFIG.delivery_count_limit
            if record.state == RecordState.ACQUIRED:
                assert self.holder.get(offset, ("", 0))[0] == record.member_id
        first = sp.record(sp.start_offset)
        assert first is None or first.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
        assert all(c <= CONFIG.delivery_count_limit for c in self.deliveries.values())
        for offset in self.accepted:
            record = sp.record(offset)
            assert record is None or record.state == RecordState.ACKNOWLEDGED


SharePartitionMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40)
TestSharePartitionMachine = SharePartitionMachine.TestCase


def test_observers_see_lock_timeouts_and_acquired_runs() -> None:
    """SharePartitionMetrics' AcquisitionLockTimeoutPerSec and InFlightBatchMessageCount: the
    records whose lock timed out, and each run of records one fetch acquired."""
    sp = SharePartition(0, SharePartitionConfig(lock_duration_ms=100))
    timeouts: list[int] = []
    runs: list[int] = []
    sp.on_lock_timeout, sp.on_acquired = timeouts.append, runs.append
    sp.acquire("m", [FetchedBatch(0, 4, True), FetchedBatch(5, 5, False), FetchedBatch(6, 7, True)],
               10, 0)  # fmt: skip
    assert runs == [5, 2]  # offset 5 (an undeliverable batch) is archived, not acquired
    assert sp.expire_locks(50) == 0 and timeouts == []
    assert sp.expire_locks(100) == 7 and timeouts == [7]
