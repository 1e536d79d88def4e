"""Filter pushdown of the ``sparklog`` batch reader: which ranges a filtered scan must plan.

Spark (4.1+, with ``spark.sql.python.filterPushdown.enabled=true``) hands the batch reader the
conjunction of a query's filters. :func:`restriction_of` keeps those on ``partition``
(``=``, ``IN``, comparisons), ``offset`` (``=`` and comparisons) and ``timestamp`` (``>``,
``>=``, ``=``) as a :class:`Restriction`; the planner reads only the partitions and offsets
that can match (:meth:`Restriction.clip`) and leaves out tiered objects whose manifest
``max_timestamp`` is below the lowest timestamp wanted (:meth:`Restriction.keeps_timestamp`).

Contract: a restriction never removes a row that matches the filters. The reader still returns
every filter to Spark as not handled, so Spark evaluates them on the rows as before and the
pushdown only shrinks the plan (timestamps are not monotonic in a Kafka log, so a timestamp
filter can only drop whole objects).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

__all__ = ["Restriction", "restriction_of"]


@dataclass(frozen=True, slots=True)
class Restriction:
    """Partitions (None: all), offsets ``[offset_low, offset_high)`` (None: unbounded) and the
    lowest record timestamp in ms (None: any) a scan may return."""

    partitions: frozenset[int] | None = None
    offset_low: int | None = None
    offset_high: int | None = None
    min_timestamp_ms: int | None = None

    def clip(self, partition: int, start: int, end: int) -> tuple[int, int] | None:
        """``[start, end)`` of ``partition`` narrowed to the restriction; None when empty."""
        if self.partitions is not None and partition not in self.partitions:
            return None
        low = start if self.offset_low is None else max(start, self.offset_low)
        high = end if self.offset_high is None else min(end, self.offset_high)
        return (low, high) if low < high else None

    def keeps_timestamp(self, max_timestamp_ms: int | None) -> bool:
        """False when an object whose records are at most ``max_timestamp_ms`` cannot match."""
        if self.min_timestamp_ms is None or max_timestamp_ms is None:
            return True
        return max_timestamp_ms >= self.min_timestamp_ms


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _ms(value: Any) -> int | None:
    if isinstance(value, dt.datetime):
        # pyspark gives TimestampType values as local naive datetimes (or aware ones):
        # .timestamp() reads both as the instant they are.
        return int(value.timestamp() * 1000)
    return None


def _narrow(a: frozenset[int] | None, b: frozenset[int]) -> frozenset[int]:
    return b if a is None else a & b


def restriction_of(filters: Iterable[Filter]) -> Restriction:
    """The restriction a conjunction of Spark filters implies (unknown filters imply none)."""
    parts: frozenset[int] | None = None
    low: int | None = None
    high: int | None = None
    min_ts: int | None = None

    def raise_low(value: int) -> None:
        nonlocal low
        low = value if low is None else max(low, value)

    def lower_high(value: int) -> None:
        nonlocal high
        high = value if high is None else min(high, value)

    for f in filters:
        column = getattr(f, "attribute", ())
        if column == ("partition",):
            if isinstance(f, EqualTo) and (p := _int(f.value)) is not None:
                parts = _narrow(parts, frozenset({p}))
            elif isinstance(f, In):
                values = [_int(v) for v in f.value]
                parts = _narrow(parts, frozenset(v for v in values if v is not None))
        elif column == ("offset",) and (v := _int(getattr(f, "value", None))) is not None:
            if isinstance(f, EqualTo):
                raise_low(v)
                lower_high(v + 1)
            elif isinstance(f, GreaterThan):
                raise_low(v + 1)
            elif isinstance(f, GreaterThanOrEqual):
                raise_low(v)
            elif isinstance(f, LessThan):
                lower_high(v)
            elif isinstance(f, LessThanOrEqual):
                lower_high(v + 1)
        elif (
            column == ("timestamp",)
            and isinstance(f, GreaterThan | GreaterThanOrEqual | EqualTo)
            and (ms := _ms(f.value)) is not None
        ):
            min_ts = ms if min_ts is None else max(min_ts, ms)
    return Restriction(parts, low, high, min_ts)
