"""Kafka's remote-storage metrics (``RemoteStorageMetrics``), broker-wide.

``kafka.server:type=BrokerTopicMetrics,name=<name>``, Kafka 4.x names:

- meters (``Count`` plus ``OneMinuteRate``, ``FiveMinuteRate``, ``FifteenMinuteRate``,
  ``MeanRate``, per second; see :class:`sparklog.metrics.Meter`): ``RemoteCopyBytesPerSec``
  (segment bytes copied), ``RemoteCopyRequestsPerSec``, ``RemoteCopyErrorsPerSec``,
  ``RemoteFetchBytesPerSec`` (Kafka batch bytes served from the store),
  ``RemoteFetchRequestsPerSec``, ``RemoteFetchErrorsPerSec``, ``RemoteDeleteRequestsPerSec``,
  ``RemoteDeleteErrorsPerSec``, ``BuildRemoteLogAuxStateRequestsPerSec``,
  ``BuildRemoteLogAuxStateErrorsPerSec`` (followers rebuilt from the store);
- gauges (``Value``), over the tiered partitions this broker leads: ``RemoteCopyLagBytes`` and
  ``RemoteCopyLagSegments`` (closed local segments not yet copied), ``RemoteLogSizeBytes``
  (segment bytes in the store) and ``RemoteLogMetadataCount`` (remote segments).

Kafka also reports them per topic (``topic=`` tag); here they are broker totals. Meters are
marked from worker threads and read on the event loop (they are thread-safe).
"""

from __future__ import annotations

from collections.abc import Callable

from sparklog.metrics import Meter, MetricName, MetricsRegistry

DOMAIN = "kafka.server"
TYPE = "BrokerTopicMetrics"


class RemoteStorageMetrics:
    """The meters a :class:`~sparklog.broker.remote_log_manager.RemoteLogManager` marks."""

    def __init__(self) -> None:
        self.copy_bytes = Meter()
        self.copy_requests = Meter()
        self.copy_errors = Meter()
        self.fetch_bytes = Meter()
        self.fetch_requests = Meter()
        self.fetch_errors = Meter()
        self.delete_requests = Meter()
        self.delete_errors = Meter()
        self.aux_state_requests = Meter()
        self.aux_state_errors = Meter()

    def meters(self) -> dict[str, Meter]:
        return {
            "RemoteCopyBytesPerSec": self.copy_bytes,
            "RemoteCopyRequestsPerSec": self.copy_requests,
            "RemoteCopyErrorsPerSec": self.copy_errors,
            "RemoteFetchBytesPerSec": self.fetch_bytes,
            "RemoteFetchRequestsPerSec": self.fetch_requests,
            "RemoteFetchErrorsPerSec": self.fetch_errors,
            "RemoteDeleteRequestsPerSec": self.delete_requests,
            "RemoteDeleteErrorsPerSec": self.delete_errors,
            "BuildRemoteLogAuxStateRequestsPerSec": self.aux_state_requests,
            "BuildRemoteLogAuxStateErrorsPerSec": self.aux_state_errors,
        }


def register_remote_storage_metrics(
    registry: MetricsRegistry,
    metrics: RemoteStorageMetrics,
    copy_lag: Callable[[], tuple[int, int]],
    remote_size: Callable[[], tuple[int, int]],
) -> None:
    """Register the meters, and the gauges over ``copy_lag() -> (segments, bytes)`` and
    ``remote_size() -> (segments, bytes)``."""
    for name, meter in metrics.meters().items():
        registry.meter(DOMAIN, TYPE, name, meter)
    gauges: dict[str, Callable[[], int]] = {
        "RemoteCopyLagSegments": lambda: copy_lag()[0],
        "RemoteCopyLagBytes": lambda: copy_lag()[1],
        "RemoteLogMetadataCount": lambda: remote_size()[0],
        "RemoteLogSizeBytes": lambda: remote_size()[1],
    }
    for name, read in gauges.items():
        registry.gauge(MetricName.yammer(DOMAIN, TYPE, name), read)
