"""Client quotas, Kafka's way: sampled rates per quota entity and the throttle time they give.

Contract (Kafka 4.x ``ClientQuotaManager`` / ``ClientRequestQuotaManager``, ``Rate``,
``QuotaUtils``):

- Three quota types: ``producer_byte_rate`` (bytes of Produce requests per second),
  ``consumer_byte_rate`` (bytes of Fetch responses per second, replicas exempt) and
  ``request_percentage`` (time spent handling a client's requests, as a percentage of one
  thread, per second).
- The quota that applies to a (user, client id) is the first set in Kafka's precedence:
  ``users/<user>/clients/<client-id>``, ``users/<user>/clients/<default>``, ``users/<user>``,
  ``users/<default>/clients/<client-id>``, ``users/<default>/clients/<default>``,
  ``users/<default>``, ``clients/<client-id>``, ``clients/<default>``. The level it is found at
  decides who shares it (Kafka's metric tags): a user-level quota is shared by all that user's
  clients, a client-level one by every user of that client id.
- A rate is measured over ``quota.window.num`` samples of ``quota.window.size.seconds``
  (Kafka's ``SampledStat``): value recorded first, then compared with the bound; the elapsed
  time counts at least ``num - 1`` whole windows. Over the bound, the throttle time is
  ``(rate - bound) / bound * window`` ms (``QuotaUtils.throttleTime``).
- No quota configured anywhere: :attr:`QuotaManagers.active` is False and nothing is recorded,
  so the request path costs one attribute read.

Pure bookkeeping with an injected clock (milliseconds); the broker's request loop
(:mod:`sparklog.broker.quota_enforcement`) mutes connections for the throttle time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from sparklog.metadata.security_image import ClientQuotasImage, QuotaEntity
from sparklog.metrics import MetricName, MetricsRegistry
from sparklog.security.sampled_rate import QuotaConfig, SampledRate

PRODUCE: Final = "producer_byte_rate"
FETCH: Final = "consumer_byte_rate"
REQUEST: Final = "request_percentage"
USER: Final = "user"
CLIENT_ID: Final = "client-id"

# (user tag, client-id tag): who shares a sensor
SensorKey = tuple[str, str]


def quota_for(
    quotas: ClientQuotasImage, key: str, user: str, client_id: str
) -> tuple[float, SensorKey] | None:
    """The bound for (user, client_id) and who shares it, by Kafka's precedence, or None."""
    entities = quotas.entities
    candidates: tuple[tuple[QuotaEntity, SensorKey], ...] = (
        (((CLIENT_ID, client_id), (USER, user)), (user, client_id)),
        (((CLIENT_ID, None), (USER, user)), (user, client_id)),
        (((USER, user),), (user, "")),
        (((CLIENT_ID, client_id), (USER, None)), (user, client_id)),
        (((CLIENT_ID, None), (USER, None)), (user, client_id)),
        (((USER, None),), (user, "")),
        (((CLIENT_ID, client_id),), ("", client_id)),
        (((CLIENT_ID, None),), ("", client_id)),
    )
    for entity, sensor in candidates:
        values = entities.get(entity)
        if values is not None and key in values:
            return float(values[key]), sensor
    return None


class ClientQuotaManager:
    """One quota type's sensors and throttle decisions."""

    def __init__(
        self,
        key: str,
        config: QuotaConfig,
        quotas: Callable[[], ClientQuotasImage],
    ) -> None:
        self.key = key
        self.config = config
        self._quotas = quotas
        self._sensors: dict[SensorKey, SampledRate] = {}
        self.throttled_ms_total = 0
        self.throttled_requests = 0

    def record(self, user: str, client_id: str, value: float, now_ms: float) -> int:
        """Record ``value`` for the entity and return the throttle time in ms (0: within)."""
        found = quota_for(self._quotas(), self.key, user, client_id)
        if found is None:
            return 0
        bound, sensor_key = found
        sensor = self._sensors.get(sensor_key)
        if sensor is None:
            sensor = self._sensors[sensor_key] = SampledRate(self.config)
        sensor.record(value, now_ms)
        rate = sensor.rate_per_second(now_ms)
        if rate <= bound:
            return 0
        throttle = round((rate - bound) / bound * sensor.window_ms(now_ms))
        self.throttled_ms_total += throttle
        self.throttled_requests += 1
        return int(throttle)


class QuotaManagers:
    """The three client quota managers of a broker, reading quotas from its image."""

    def __init__(self, config: QuotaConfig, quotas: Callable[[], ClientQuotasImage]) -> None:
        self._quotas = quotas
        self.produce = ClientQuotaManager(PRODUCE, config, quotas)
        self.fetch = ClientQuotaManager(FETCH, config, quotas)
        self.request = ClientQuotaManager(REQUEST, config, quotas)

    @property
    def active(self) -> bool:
        return bool(self._quotas().entities)

    @staticmethod
    def from_config(config: object, quotas: Callable[[], ClientQuotasImage]) -> QuotaManagers:
        get = config.get  # type: ignore[attr-defined]
        return QuotaManagers(
            QuotaConfig(int(get("quota.window.num")), int(get("quota.window.size.seconds")) * 1000),
            quotas,
        )


def register_quota_metrics(
    registry: MetricsRegistry, quotas: QuotaManagers, connections: object | None = None
) -> None:
    """``sparklog:type=client-quotas``: per quota type (``produce``, ``fetch``, ``request``) the
    requests throttled and the throttle time given since start; with ``connections`` (the
    listeners' ConnectionQuotas) the connections refused and open."""

    def counts(manager: ClientQuotaManager) -> tuple[Callable[[], int], Callable[[], int]]:
        return (lambda: manager.throttled_requests), (lambda: manager.throttled_ms_total)

    for label, manager in (
        ("produce", quotas.produce),
        ("fetch", quotas.fetch),
        ("request", quotas.request),
    ):
        requests, throttle_ms = counts(manager)
        registry.gauge(
            MetricName.kafka("sparklog", "client-quotas", f"{label}-throttled-requests"), requests
        )
        registry.gauge(
            MetricName.kafka("sparklog", "client-quotas", f"{label}-throttle-time-ms-total"),
            throttle_ms,
        )
    if connections is not None:
        registry.gauge(
            MetricName.kafka("sparklog", "connection-quotas", "connections-refused"),
            lambda: getattr(connections, "rejected_total", 0),
        )
        registry.gauge(
            MetricName.kafka("sparklog", "connection-quotas", "connections-counted"),
            lambda: getattr(connections, "total", 0),
        )
