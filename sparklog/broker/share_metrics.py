"""Kafka's share-group broker metrics (KIP-932, KIP-1103), with their MBean names:

- ``kafka.server:type=BrokerTopicMetrics,name=TotalShareFetchRequestsPerSec`` /
  ``FailedShareFetchRequestsPerSec`` / ``TotalShareAcknowledgementRequestsPerSec`` /
  ``FailedShareAcknowledgementRequestsPerSec``: meters for all topics and per topic (``topic=``),
  marked once per partition a ShareFetch or ShareAcknowledge names.
- ``kafka.server:type=ShareGroupMetrics,name=RecordAcknowledgementsPerSec,ackType=<Accept|
  Release|Reject|Renew>``: records acknowledged, per type; ``name=PartitionLoadTimeMs``: a
  histogram of the time a share-partition's state took to load from the share coordinator.
- ``kafka.server:type=SharePartitionMetrics,name=InFlightMessageCount`` / ``InFlightBatchCount``
  with ``group``, ``topic``, ``partition`` keys: the in-flight window of each share-partition
  this broker leads (records, and runs of one state and delivery count);
  ``...,name=AcquisitionLockTimeoutPerSec``: a meter of the records whose acquisition lock
  timed out; ``...,name=InFlightBatchMessageCount``: a histogram of the records of each run a
  fetch acquired. Kafka's ``FetchLockTimeMs`` and ``FetchLockRatio`` time SharePartition's
  fetch lock, which has no counterpart here (a fetch acquires in one step of the event loop).
- ``kafka.server:type=group-coordinator-metrics,protocol=share,name=group-count`` and
  ``...,name=share-group-count,state=<Empty|Stable>``: share groups this coordinator holds.

Without a registry (handler unit tests) the meters still count; nothing is exported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sparklog.metrics import (
    Histogram,
    Meter,
    MetricName,
    MetricsRegistry,
    Sample,
    instrument_samples,
)
from sparklog.share.share_partition import AcknowledgeType

DOMAIN = "kafka.server"
TOPIC_METERS = (
    "TotalShareFetchRequestsPerSec",
    "FailedShareFetchRequestsPerSec",
    "TotalShareAcknowledgementRequestsPerSec",
    "FailedShareAcknowledgementRequestsPerSec",
)
ACK_TYPES = {
    AcknowledgeType.ACCEPT: "Accept",
    AcknowledgeType.RELEASE: "Release",
    AcknowledgeType.REJECT: "Reject",
    AcknowledgeType.RENEW: "Renew",
}


@dataclass(slots=True)
class SharePartitionMetrics:
    """The meters of one share-partition (exported while this broker leads it)."""

    acquisition_lock_timeouts: Meter = field(default_factory=Meter)
    in_flight_batch_messages: Histogram = field(default_factory=Histogram)


# (group, topic, partition, in-flight records, in-flight batches, meters)
InFlight = tuple[str, str, int, int, int, SharePartitionMetrics]


def _partition_samples(tags: dict[str, str], metrics: SharePartitionMetrics) -> list[Sample]:
    return instrument_samples(
        DOMAIN,
        "SharePartitionMetrics",
        "AcquisitionLockTimeoutPerSec",
        tags,
        metrics.acquisition_lock_timeouts,
    ) + instrument_samples(
        DOMAIN,
        "SharePartitionMetrics",
        "InFlightBatchMessageCount",
        tags,
        metrics.in_flight_batch_messages,
    )


class ShareMetrics:
    def __init__(self, registry: MetricsRegistry | None = None) -> None:
        self._registry = registry
        self._all = {name: self._meter("BrokerTopicMetrics", name, {}) for name in TOPIC_METERS}
        self._topics: dict[str, dict[str, Meter]] = {}
        self.acknowledgements = {
            ack: self._meter("ShareGroupMetrics", "RecordAcknowledgementsPerSec", {"ackType": tag})
            for ack, tag in ACK_TYPES.items()
        }
        self.partition_load_time_ms = (
            registry.histogram(DOMAIN, "ShareGroupMetrics", "PartitionLoadTimeMs")
            if registry is not None
            else Histogram()
        )

    def _meter(self, type_: str, name: str, tags: dict[str, str]) -> Meter:
        if self._registry is None:
            return Meter()
        return self._registry.meter(DOMAIN, type_, name, tags=tags)

    def mark(self, name: str, topic: str) -> None:
        """Mark one of :data:`TOPIC_METERS` for all topics and for ``topic``."""
        self._all[name].mark()
        meters = self._topics.get(topic)
        if meters is None:
            meters = {
                n: self._meter("BrokerTopicMetrics", n, {"topic": topic}) for n in TOPIC_METERS
            }
            self._topics[topic] = meters
        meters[name].mark()

    def acknowledged(self, ack_type: int, records: int) -> None:
        meter = self.acknowledgements.get(AcknowledgeType(ack_type)) if ack_type else None
        if meter is not None:
            meter.mark(records)

    def watch_partitions(self, in_flight: Callable[[], list[InFlight]]) -> None:
        """Export the ``SharePartitionMetrics`` (KIP-1103) of every share-partition this broker
        leads; ``in_flight`` lists ``(group, topic, partition, messages, batches, meters)``."""
        if self._registry is None:
            return

        def samples() -> list[Sample]:
            out = []
            for group, topic, partition, messages, batches, metrics in in_flight():
                tags = {"group": group, "topic": topic, "partition": str(partition)}
                for name, value in (
                    ("InFlightMessageCount", messages),
                    ("InFlightBatchCount", batches),
                ):
                    metric = MetricName.tagged(DOMAIN, "SharePartitionMetrics", name, tags, "Value")
                    out.append(Sample(metric, "gauge", value))
                out += _partition_samples(tags, metrics)
            return out

        self._registry.collector("SharePartitionMetrics", samples)

    def watch_groups(self, states: Callable[[], list[str]]) -> None:
        """Export the share-group gauges; ``states`` lists the state of every share group
        this coordinator holds."""
        if self._registry is None:
            return
        self._registry.gauge(
            MetricName(
                f"{DOMAIN}:type=group-coordinator-metrics,protocol=share,name=group-count", "Value"
            ),
            lambda: len(states()),
        )
        for state in ("Empty", "Stable"):
            self._registry.gauge(
                MetricName(
                    f"{DOMAIN}:type=group-coordinator-metrics,name=share-group-count,state={state}",
                    "Value",
                ),
                lambda state=state: sum(1 for s in states() if s == state),  # type: ignore[misc]
            )
