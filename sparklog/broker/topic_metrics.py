"""Kafka's ``kafka.server:type=BrokerTopicMetrics`` meters, for all topics and per topic.

Contract:

- Every meter exists twice, as Kafka reports it: the all-topics one
  (``BrokerTopicMetrics,name=BytesInPerSec``) and one per topic
  (``BrokerTopicMetrics,name=BytesInPerSec,topic=<t>``), both Yammer meters (``Count`` and the
  one-, five- and fifteen-minute and mean rates). Per-topic meters are created on a topic's first
  event and dropped by :meth:`BrokerTopicMetrics.remove_topic` (a deleted topic).
- :meth:`produced` is called once per partition a Produce appended (``MessagesInPerSec`` counts
  the records in the appended batches' headers, so it costs one header read per batch, never a
  record decode); :meth:`produce_failed` for a partition whose append was refused;
  :meth:`fetched_partitions` once per Fetch response (consumers count as
  ``BytesOutPerSec``, replicas as ``ReplicationBytesOutPerSec``, as Kafka splits them);
  ``TotalProduceRequestsPerSec``/``TotalFetchRequestsPerSec`` count partitions served, as
  Kafka's per-topic request meters do. :meth:`fetched_partitions` takes a whole Fetch
  response's partitions and marks each topic once, so a 1,000-partition fetch costs a few
  meter marks, not thousands.
- Without a registry (unit tests of handlers) the meters still count; nothing is exported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sparklog.metrics import Meter, MetricsRegistry
from sparklog.protocol.records import CorruptRecordError, iter_batches
from sparklog.protocol.types import BytesLike, nbytes
from sparklog.storage.slices import FileSlice

DOMAIN = "kafka.server"
TYPE = "BrokerTopicMetrics"
METERS = (
    "MessagesInPerSec",
    "BytesInPerSec",
    "BytesOutPerSec",
    "ReplicationBytesOutPerSec",
    "TotalProduceRequestsPerSec",
    "TotalFetchRequestsPerSec",
    "FailedProduceRequestsPerSec",
)


def count_records(records: BytesLike) -> int:
    """The records in ``records``' batches, from their headers (0 for bytes that are not
    batches: the append refused them already)."""
    try:
        return sum(header.records_count for _, header in iter_batches(records))
    except CorruptRecordError:
        return 0


def _size(records: object) -> int:
    if records is None:
        return 0
    if isinstance(records, list):
        return sum(nbytes(chunk) for chunk in records)
    if isinstance(records, bytes | bytearray | memoryview | FileSlice):
        return nbytes(records)
    return 0


class BrokerTopicMetrics:
    def __init__(self, registry: MetricsRegistry | None = None) -> None:
        self._registry = registry
        self._all = {name: self._register(name, None) for name in METERS}
        self._topics: dict[str, dict[str, Meter]] = {}

    def _register(self, name: str, topic: str | None) -> Meter:
        if self._registry is None:
            return Meter()
        tags = {"topic": topic} if topic is not None else None
        return self._registry.meter(DOMAIN, TYPE, name, tags=tags)

    def _topic(self, topic: str) -> dict[str, Meter]:
        meters = self._topics.get(topic)
        if meters is None:
            meters = {name: self._register(name, topic) for name in METERS}
            self._topics[topic] = meters
        return meters

    def _mark(self, topic: str, name: str, n: int = 1) -> None:
        self._all[name].mark(n)
        self._topic(topic)[name].mark(n)

    def produced(self, topic: str, records: BytesLike, size: int) -> None:
        self._mark(topic, "TotalProduceRequestsPerSec")
        self._mark(topic, "BytesInPerSec", size)
        self._mark(topic, "MessagesInPerSec", count_records(records))

    def produce_failed(self, topic: str) -> None:
        self._mark(topic, "TotalProduceRequestsPerSec")
        self._mark(topic, "FailedProduceRequestsPerSec")

    def fetched_partitions(
        self, results: Iterable[tuple[Any, Mapping[str, Any]]], *, follower: bool
    ) -> None:
        """``(partition with .topic, partition response)`` pairs of one Fetch response."""
        per_topic: dict[str, list[int]] = {}
        for want, response in results:
            totals = per_topic.setdefault(want.topic, [0, 0])
            totals[0] += 1
            totals[1] += _size(response.get("records"))
        bytes_out = "ReplicationBytesOutPerSec" if follower else "BytesOutPerSec"
        for topic, (partitions, size) in per_topic.items():
            self._mark(topic, "TotalFetchRequestsPerSec", partitions)
            if size:
                self._mark(topic, bytes_out, size)

    def count(self, name: str, topic: str | None = None) -> int:
        """A meter's ``Count`` (all topics, or one topic's; 0 for a topic never seen)."""
        if topic is None:
            return self._all[name].count
        meters = self._topics.get(topic)
        return meters[name].count if meters is not None else 0

    def remove_topic(self, topic: str) -> None:
        if self._topics.pop(topic, None) is None or self._registry is None:
            return
        for name in METERS:
            mbean = f"{DOMAIN}:type={TYPE},name={name},topic={topic}"
            for metric in [m for m in self._registry.names if m.mbean == mbean]:
                self._registry.remove(metric)
