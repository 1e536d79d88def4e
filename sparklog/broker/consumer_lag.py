"""Consumer lag as the broker sees it: ``records-lag`` per group and partition, and
``records-lag-max`` per group (the client metrics' names), for the lag SLI of seed 000.

Contract:

- :func:`register_consumer_lag` adds a registry collector that, at every read, joins the
  committed offsets this node's group coordinator holds (groups of the ``__consumer_offsets``
  partitions it leads; no shard is loaded for a scrape) with the high watermark of the
  partition's local replica: lag = max(0, HW - committed offset). Partitions with no replica on
  this node are left out (their lag shows on no node; with RF = number of brokers every
  partition is local everywhere), as are groups with no committed offsets.
- Names: ``sparklog:type=consumer-lag,name=records-lag,group=<g>,topic=<t>,partition=<p>``
  and ``sparklog:type=consumer-lag,name=records-lag-max,group=<g>``, gauges. A stopped consumer
  keeps its committed offset, so its lag grows with the log: the "dead consumer reports no lag"
  blind spot of client-side metrics does not apply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from sparklog.broker.replica_manager import ReplicaManager
from sparklog.metrics import MetricName, MetricsRegistry, Sample

DOMAIN = "sparklog"
TYPE = "consumer-lag"

# (group, (topic, partition), committed offset)
CommittedOffsets = Callable[[], Iterable[tuple[str, tuple[str, int], int]]]
# (topic, partition) -> the local replica's high watermark, or None without a local replica
HighWatermark = Callable[[str, int], int | None]


def lag_samples(committed: CommittedOffsets, high_watermark: HighWatermark) -> Iterator[Sample]:
    worst: dict[str, int] = {}
    for group, (topic, partition), offset in committed():
        hw = high_watermark(topic, partition)
        if hw is None or offset < 0:
            continue
        lag = max(0, hw - offset)
        worst[group] = max(worst.get(group, 0), lag)
        tags = {"group": group, "topic": topic, "partition": str(partition)}
        yield Sample(MetricName.tagged(DOMAIN, TYPE, "records-lag", tags, "Value"), "gauge", lag)
    for group, lag in worst.items():
        name = MetricName.tagged(DOMAIN, TYPE, "records-lag-max", {"group": group}, "Value")
        yield Sample(name, "gauge", lag)


def register_consumer_lag(
    registry: MetricsRegistry, committed: CommittedOffsets, high_watermark: HighWatermark
) -> None:
    registry.collector(TYPE, lambda: list(lag_samples(committed, high_watermark)))


def local_high_watermark(replica_manager: ReplicaManager) -> HighWatermark:
    """The high watermark of this node's replica of a partition (leader or follower)."""

    def read(topic: str, partition: int) -> int | None:
        replica = replica_manager.partitions.get((topic, partition))
        return replica.high_watermark if replica is not None else None

    return read
