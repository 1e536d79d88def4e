"""Pushed-down filters narrow the batch plan without removing a matching row (issue 15)."""

from __future__ import annotations

import datetime as dt

from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
)

from sparklog.connector.pushdown import Restriction, restriction_of


def test_partition_and_offset_filters_make_one_range() -> None:
    r = restriction_of(
        [
            IsNotNull(("offset",)),
            EqualTo(("partition",), 1),
            GreaterThanOrEqual(("offset",), 100),
            GreaterThan(("offset",), 120),
            LessThan(("offset",), 500),
            LessThanOrEqual(("offset",), 400),
        ]
    )
    assert r == Restriction(frozenset({1}), 121, 401, None)
    assert r.clip(0, 0, 1000) is None
    assert r.clip(1, 0, 1000) == (121, 401)
    assert r.clip(1, 401, 1000) is None


def test_in_and_equal_intersect_and_unknown_filters_restrict_nothing() -> None:
    r = restriction_of([In(("partition",), (0, 2, 3)), EqualTo(("partition",), 2)])
    assert r.partitions == frozenset({2})
    assert restriction_of([StringStartsWith(("topic",), "t")]) == Restriction()
    assert restriction_of([EqualTo(("offset",), 7)]).clip(0, 0, 10) == (7, 8)


def test_timestamp_drops_only_objects_that_end_before_it() -> None:
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    r = restriction_of([GreaterThanOrEqual(("timestamp",), at)])
    ms = int(at.timestamp() * 1000)
    assert r.min_timestamp_ms == ms
    assert not r.keeps_timestamp(ms - 1) and r.keeps_timestamp(ms) and r.keeps_timestamp(None)
    # Timestamps are not monotonic: an upper bound never drops anything.
    assert restriction_of([LessThan(("timestamp",), at)]) == Restriction()
