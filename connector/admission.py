"""Admission control for the stream reader: pure functions from offsets and lags to the end of
the next micro-batch, with the semantics of Spark's Kafka source (``KafkaMicroBatchStream``).

Offsets here are ``{(topic, partition): offset}`` maps. Contract:

- :func:`rate_limit` (``maxOffsetsPerTrigger``): a partition with lag ``size`` gets
  ``limit * size / total`` offsets, rounded down, except that a share below one is rounded up
  so no partition with data starves. So the sum may exceed ``limit`` by at most one offset per
  lagging partition, as in Spark. Every end lies within ``[start, latest]``; partitions without
  lag end at ``latest``; with ``total <= limit`` every partition ends at ``latest``.
- :func:`byte_limit` (``maxBytesPerTrigger``): the same split in bytes, each partition's lag
  weighed by its estimated bytes per offset; a partition with lag advances at least one offset.
  :func:`combine` puts several limits together as Spark's composite read limit does: a batch
  ends where the first limit is reached, i.e. at the lowest end per partition.
- :func:`should_delay` (``minOffsetsPerTrigger`` + ``maxTriggerDelay``): hold the trigger while
  fewer than ``min_rows`` new offsets exist and less than ``max_delay_ms`` passed since the last
  batch that ran.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["Offsets", "TopicPartition", "byte_limit", "combine", "rate_limit", "should_delay"]

TopicPartition = tuple[str, int]
Offsets = Mapping[TopicPartition, int]


def rate_limit(start: Offsets, latest: Offsets, limit: int) -> dict[TopicPartition, int]:
    """End offsets of the next batch when at most ``limit`` offsets should be read."""
    sizes = {tp: end - start[tp] for tp, end in latest.items() if tp in start and end > start[tp]}
    total = sum(sizes.values())
    if total < 1 or total <= limit:
        return dict(latest)
    result = {}
    for tp, end in latest.items():
        size = sizes.get(tp)
        if size is None:
            result[tp] = end
            continue
        share = limit * (size / total)
        advance = math.ceil(share) if share < 1 else math.floor(share)
        result[tp] = min(end, start[tp] + advance)
    return result


def byte_limit(
    start: Offsets,
    latest: Offsets,
    max_bytes: int,
    bytes_per_offset: Mapping[TopicPartition, float],
) -> dict[TopicPartition, int]:
    """End offsets of the next batch when at most ``max_bytes`` (estimated) should be read."""
    lag = {tp: end - start[tp] for tp, end in latest.items() if tp in start and end > start[tp]}
    weight = {tp: max(bytes_per_offset.get(tp, 1.0), 1e-9) for tp in lag}
    total = sum(lag[tp] * weight[tp] for tp in lag)
    if total <= max_bytes:
        return dict(latest)
    result = {}
    for tp, end in latest.items():
        if tp not in lag:
            result[tp] = end
            continue
        share = max_bytes * (lag[tp] * weight[tp] / total) / weight[tp]
        advance = max(1, math.floor(share))
        result[tp] = min(end, start[tp] + advance)
    return result


def combine(*limits: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Per partition, the lowest end any limit allows."""
    first, *rest = limits
    return {
        tp: min([end] + [other[tp] for other in rest if tp in other]) for tp, end in first.items()
    }


def should_delay(
    start: Offsets,
    latest: Offsets,
    min_rows: int,
    max_delay_ms: int,
    last_trigger_ms: int,
    now_ms: int,
) -> bool:
    """True to skip this trigger: too few new offsets, and the longest delay not reached."""
    available = sum(max(0, end - start.get(tp, end)) for tp, end in latest.items())
    return available < min_rows and now_ms - last_trigger_ms < max_delay_ms
