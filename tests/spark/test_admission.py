"""Admission control of the stream reader as pure functions (no Spark, no node).

``rate_limit`` is Spark's Kafka source rule: ``maxOffsetsPerTrigger`` split across partitions
in proportion to their lag, rounding down except that a share below one rounds up; the ends
stay within ``[start, latest]``. ``should_delay`` is the ``minOffsetsPerTrigger`` /
``maxTriggerDelay`` hold. Also the offsets JSON round trip.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.connector.admission import byte_limit, combine, rate_limit, should_delay

TP = tuple[str, int]


def test_split_in_proportion_to_lag() -> None:
    start = {("t", 0): 0, ("t", 1): 100, ("u", 0): 5}
    latest = {("t", 0): 900, ("t", 1): 200, ("u", 0): 5}
    assert rate_limit(start, latest, 500) == {("t", 0): 450, ("t", 1): 150, ("u", 0): 5}


def test_small_partitions_are_not_starved() -> None:
    start = {("t", 0): 0, ("t", 1): 0}
    latest = {("t", 0): 1_000_000, ("t", 1): 1}
    assert rate_limit(start, latest, 10) == {("t", 0): 9, ("t", 1): 1}


def test_everything_when_under_the_limit_or_no_lag() -> None:
    start = {("t", 0): 10}
    assert rate_limit(start, {("t", 0): 20}, 100) == {("t", 0): 20}
    assert rate_limit(start, {("t", 0): 10}, 1) == {("t", 0): 10}


lags = st.dictionaries(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 7)),
    st.tuples(st.integers(0, 10**12), st.integers(0, 10**6)),
    min_size=1,
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(lags, st.integers(1, 10**7))
def test_rate_limit_properties(parts: dict[TP, tuple[int, int]], limit: int) -> None:
    start = {tp: s for tp, (s, _) in parts.items()}
    latest = {tp: s + lag for tp, (s, lag) in parts.items()}
    ends = rate_limit(start, latest, limit)
    assert set(ends) == set(latest)
    for tp, end in ends.items():
        assert start[tp] <= end <= latest[tp]
        if latest[tp] > start[tp]:
            assert end > start[tp], "a partition with lag got nothing"
    total_lag = sum(latest[tp] - start[tp] for tp in latest)
    taken = sum(ends[tp] - start[tp] for tp in ends)
    lagging = sum(1 for tp in latest if latest[tp] > start[tp])
    if total_lag <= limit:
        assert ends == latest
    else:
        assert taken <= limit + lagging
        assert taken >= min(total_lag, limit) - lagging


def test_hold_until_enough_or_too_late() -> None:
    start = {("t", 0): 0}
    assert should_delay(start, {("t", 0): 5}, 10, 1000, last_trigger_ms=0, now_ms=999)
    assert not should_delay(start, {("t", 0): 5}, 10, 1000, last_trigger_ms=0, now_ms=1000)
    assert not should_delay(start, {("t", 0): 10}, 10, 1000, last_trigger_ms=0, now_ms=1)
    # A new partition (not in start) counts from its latest: it has no known lag yet.
    assert should_delay(start, {("t", 0): 5, ("t", 1): 50}, 10, 1000, 0, 1)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.tuples(st.text(min_size=1, max_size=5), st.integers(0, 99)), st.integers(0, 2**62)
    )
)
def test_offsets_json_round_trip(offsets: dict[TP, int]) -> None:
    import json

    from sparklog.connector.stream import offsets_from_json, offsets_to_json

    doc = json.loads(json.dumps(offsets_to_json(offsets)))
    assert offsets_from_json(doc) == offsets
    assert all(isinstance(p, str) for parts in doc.values() for p in parts)


def test_byte_limit_weighs_lag_by_bytes_per_offset() -> None:
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 7}
    latest = {("t", 0): 1000, ("t", 1): 1000, ("t", 2): 7}
    sizes = {("t", 0): 100.0, ("t", 1): 300.0}
    # 400 KB of lag, 100 KB allowed: each partition gets a quarter of its lag.
    assert byte_limit(start, latest, 100_000, sizes) == {("t", 0): 250, ("t", 1): 250, ("t", 2): 7}
    assert byte_limit(start, latest, 400_000, sizes) == latest
    # A budget below one record still moves every lagging partition by one offset.
    assert byte_limit(start, latest, 1, sizes) == {("t", 0): 1, ("t", 1): 1, ("t", 2): 7}


def test_limits_combine_at_the_first_one_reached() -> None:
    rows = {("t", 0): 50, ("t", 1): 900}
    size = {("t", 0): 400, ("t", 1): 300}
    assert combine(rows, size) == {("t", 0): 50, ("t", 1): 300}
    assert combine(rows) == rows
