"""A small metrics registry: gauges read on demand, counters, rendered as JSON or Prometheus text.

Names follow Apache Kafka's JMX names so dashboards and runbooks written for Kafka read the
same numbers here (seed 000): a metric is an MBean plus an attribute.

- Yammer-style metrics (``kafka.controller:type=KafkaController,name=ActiveControllerCount``)
  carry their number in the attribute ``Value`` (gauges) or ``Count`` (counters):
  :meth:`MetricName.yammer`.
- Kafka-metrics-style groups (``kafka.server:type=raft-metrics``) hold many attributes, one per
  metric (``current-leader``, ``high-watermark``): :meth:`MetricName.kafka`.

Contract:

- A gauge is a callable evaluated at every read; it is never cached. A gauge that raises is
  left out of that read (a half-built node must not break the endpoint) and logged at debug.
- Values are ``int``, ``float`` or ``str`` (Kafka's ``current-state`` is a string).
- :meth:`MetricsRegistry.to_json` is ``{mbean: {attribute: value}}``, the shape JMX readers
  (jolokia, jmxterm) show. :meth:`MetricsRegistry.to_prometheus` is the text exposition format:
  one line per metric named ``<mbean domain>_<type>_<name or attribute>`` with every character
  outside ``[a-zA-Z0-9_]`` replaced by ``_``; a string value ``v`` is rendered as
  ``<name>{value="v"} 1``.
- Registering a name twice replaces the first registration (a component that restarts
  re-registers its gauges).
- A :class:`Meter` is Kafka's Yammer meter: ``Count`` plus ``OneMinuteRate``,
  ``FiveMinuteRate``, ``FifteenMinuteRate`` and ``MeanRate`` (events per second), the moving
  averages ticked every 5 s like Yammer's, lazily on mark or read (no background timer).

This module does no I/O; :mod:`sparklog.net.metrics_http` serves a registry over HTTP.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

_log = logging.getLogger(__name__)

MetricValue = int | float | str
Kind = Literal["gauge", "counter"]

_NOT_PROMETHEUS = re.compile(r"[^a-zA-Z0-9_]")


@dataclass(frozen=True, slots=True)
class MetricName:
    mbean: str
    attribute: str

    @classmethod
    def yammer(cls, domain: str, type_: str, name: str, *, attribute: str = "Value") -> MetricName:
        """``domain:type=<type_>,name=<name>`` with the number in ``attribute``."""
        return cls(f"{domain}:type={type_},name={name}", attribute)

    @classmethod
    def kafka(cls, domain: str, group: str, attribute: str) -> MetricName:
        """An attribute of the Kafka-metrics group ``domain:type=<group>``."""
        return cls(f"{domain}:type={group}", attribute)

    @property
    def display(self) -> str:
        """``mbean`` for a Yammer metric's own value, ``mbean attribute`` otherwise."""
        if self.attribute in ("Value", "Count") and ",name=" in self.mbean:
            return self.mbean
        return f"{self.mbean} {self.attribute}"

    @classmethod
    def tagged(
        cls, domain: str, type_: str, name: str, tags: Mapping[str, str], attribute: str
    ) -> MetricName:
        """``domain:type=<type_>,name=<name>,k=v,...``: a Yammer metric of one topic, request
        or error (Kafka's ``BrokerTopicMetrics,name=BytesInPerSec,topic=t``)."""
        extra = "".join(f",{key}={value}" for key, value in tags.items())
        return cls(f"{domain}:type={type_},name={name}{extra}", attribute)

    def _props(self) -> tuple[str, dict[str, str]]:
        domain, _, keys = self.mbean.partition(":")
        return domain, dict(p.split("=", 1) for p in keys.split(",") if "=" in p)

    @property
    def prometheus(self) -> str:
        """The family name: the MBean's domain, type and name (and the attribute unless it is
        the metric's own value); every other MBean key is a label (:attr:`labels`)."""
        domain, props = self._props()
        parts = [domain, props.get("type", "")]
        if "name" in props:
            parts.append(props["name"])
        if "name" not in props or self.attribute not in ("Value", "Count"):
            parts.append(self.attribute)  # a meter's rates: <name>_OneMinuteRate
        return _NOT_PROMETHEUS.sub("_", "_".join(p for p in parts if p))

    @property
    def labels(self) -> tuple[tuple[str, str], ...]:
        """The MBean's keys other than ``type`` and ``name``, in MBean order."""
        _, props = self._props()
        return tuple(
            (_NOT_PROMETHEUS.sub("_", k), v) for k, v in props.items() if k not in ("type", "name")
        )


@dataclass(frozen=True, slots=True)
class Sample:
    name: MetricName
    kind: Kind
    value: MetricValue


class Counter:
    """A monotonically increasing count (Kafka's ``Count`` attribute)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def inc(self, amount: int = 1) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        self.value += amount


_TICK_S = 5.0
_ALPHAS = tuple(1.0 - math.exp(-_TICK_S / (60.0 * minutes)) for minutes in (1, 5, 15))
METER_ATTRIBUTES = ("Count", "OneMinuteRate", "FiveMinuteRate", "FifteenMinuteRate", "MeanRate")


class Meter:
    """Events and their rates per second (Yammer's meter: exponentially weighted moving
    averages over 1, 5 and 15 minutes, updated every 5 s). Thread-safe: worker threads mark
    it, the event loop reads it."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._start = self._last_tick = clock()
        self._count = 0
        self._uncounted = 0
        self._rates = [0.0, 0.0, 0.0]
        self._primed = False

    def _tick(self) -> None:
        now = self._clock()
        ticks = int((now - self._last_tick) // _TICK_S)
        for _ in range(min(ticks, 2000)):  # beyond ~3 h idle every rate is 0 anyway
            instant = self._uncounted / _TICK_S
            self._uncounted = 0
            for i, alpha in enumerate(_ALPHAS):
                if self._primed:
                    self._rates[i] += alpha * (instant - self._rates[i])
                else:
                    self._rates[i] = instant
            self._primed = True
        if ticks > 2000:
            self._rates = [0.0, 0.0, 0.0]
        self._last_tick += ticks * _TICK_S

    def mark(self, n: int = 1) -> None:
        with self._lock:
            self._tick()
            self._count += n
            self._uncounted += n

    @property
    def count(self) -> int:
        return self._count

    def rate(self, attribute: str) -> float:
        """``OneMinuteRate``, ``FiveMinuteRate``, ``FifteenMinuteRate`` or ``MeanRate``."""
        with self._lock:
            self._tick()
            if attribute == "MeanRate":
                elapsed = self._clock() - self._start
                return self._count / elapsed if elapsed > 0 else 0.0
            index = ("OneMinuteRate", "FiveMinuteRate", "FifteenMinuteRate").index(attribute)
            return self._rates[index]


class LatencyWindow:
    """Average and maximum of the last ``size`` latencies (0.0 before the first one).

    Kafka's ``*-avg``/``*-max`` are computed over a time window; a window of recent samples
    answers the same question ("how long do commits take now") without a background timer.
    """

    __slots__ = ("_samples",)

    def __init__(self, size: int = 128) -> None:
        self._samples: deque[float] = deque(maxlen=size)

    def record(self, latency_ms: float) -> None:
        self._samples.append(latency_ms)

    @property
    def average_ms(self) -> float:
        return sum(self._samples) / len(self._samples) if self._samples else 0.0

    @property
    def max_ms(self) -> float:
        return max(self._samples, default=0.0)


HISTOGRAM_PERCENTILES = (
    ("50thPercentile", 0.50),
    ("75thPercentile", 0.75),
    ("95thPercentile", 0.95),
    ("98thPercentile", 0.98),
    ("99thPercentile", 0.99),
    ("999thPercentile", 0.999),
)
HISTOGRAM_ATTRIBUTES = ("Count", "Mean", "Min", "Max", *(a for a, _ in HISTOGRAM_PERCENTILES))


class Histogram:
    """Yammer's histogram as Kafka's request metrics report it (``TotalTimeMs`` and friends):
    ``Count`` of every update, and ``Mean``, ``Min``, ``Max`` and the percentiles of a
    reservoir of the most recent ``size`` updates (Yammer keeps a decaying sample of 1028; a
    window of the latest ones answers "how slow is it now" the same way without a timer).
    Thread-safe; reads sort the reservoir once per change, not once per attribute."""

    def __init__(self, size: int = 1028) -> None:
        self._lock = threading.Lock()
        self._samples: deque[float] = deque(maxlen=size)
        self._count = 0
        self._sorted: list[float] | None = None

    def update(self, value: float) -> None:
        with self._lock:
            self._samples.append(value)
            self._count += 1
            self._sorted = None

    @property
    def count(self) -> int:
        return self._count

    def _snapshot(self) -> list[float]:
        with self._lock:
            if self._sorted is None:
                self._sorted = sorted(self._samples)
            return self._sorted

    def value(self, attribute: str) -> float:
        """``Mean``, ``Min``, ``Max`` or a percentile attribute (0.0 before any update)."""
        values = self._snapshot()
        if not values:
            return 0.0
        if attribute == "Mean":
            return sum(values) / len(values)
        if attribute == "Min":
            return values[0]
        if attribute == "Max":
            return values[-1]
        quantile = dict(HISTOGRAM_PERCENTILES)[attribute]
        # Yammer's Snapshot.getValue: the value at position quantile * (n + 1), interpolated.
        position = quantile * (len(values) + 1)
        if position < 1:
            return values[0]
        if position >= len(values):
            return values[-1]
        lower = values[int(position) - 1]
        upper = values[int(position)]
        return lower + (position - math.floor(position)) * (upper - lower)


class MetricsRegistry:
    def __init__(self) -> None:
        self._metrics: dict[MetricName, tuple[Kind, Callable[[], MetricValue]]] = {}
        self._collectors: dict[str, Callable[[], Iterable[Sample]]] = {}

    def gauge(self, name: MetricName, read: Callable[[], MetricValue]) -> None:
        self._metrics[name] = ("gauge", read)

    def counter(self, name: MetricName) -> Counter:
        counter = Counter()
        self._metrics[name] = ("counter", lambda: counter.value)
        return counter

    def meter(
        self,
        domain: str,
        type_: str,
        name: str,
        meter: Meter | None = None,
        *,
        tags: Mapping[str, str] | None = None,
    ) -> Meter:
        """Register ``meter`` (a new one by default) as ``domain:type=<type_>,name=<name>``
        (plus ``tags`` as further MBean keys) with Yammer's meter attributes (``Count`` is a
        counter, the rates gauges)."""
        meter = meter or Meter()
        mbean = MetricName.tagged(domain, type_, name, tags or {}, "Count").mbean
        self._metrics[MetricName(mbean, "Count")] = ("counter", lambda: meter.count)
        for attribute in METER_ATTRIBUTES[1:]:
            self._metrics[MetricName(mbean, attribute)] = ("gauge", _rate_of(meter, attribute))
        return meter

    def histogram(
        self,
        domain: str,
        type_: str,
        name: str,
        histogram: Histogram | None = None,
        *,
        tags: Mapping[str, str] | None = None,
    ) -> Histogram:
        """Register ``histogram`` (a new one by default) with Yammer's histogram attributes."""
        histogram = histogram or Histogram()
        mbean = MetricName.tagged(domain, type_, name, tags or {}, "Count").mbean
        self._metrics[MetricName(mbean, "Count")] = ("counter", lambda: histogram.count)
        for attribute in HISTOGRAM_ATTRIBUTES[1:]:
            read = _histogram_value(histogram, attribute)
            self._metrics[MetricName(mbean, attribute)] = ("gauge", read)
        return histogram

    def counter_of(self, name: MetricName, read: Callable[[], int]) -> None:
        """A counter kept elsewhere (an attribute of a component), read on demand."""
        self._metrics[name] = ("counter", read)

    def collector(self, key: str, collect: Callable[[], Iterable[Sample]]) -> None:
        """Metrics whose set changes (one per group and partition): ``collect`` is called at
        every read and its samples follow the registered ones. Registering ``key`` again
        replaces it; a collector that raises is left out of that read, as a gauge is."""
        self._collectors[key] = collect

    def remove(self, name: MetricName) -> None:
        self._metrics.pop(name, None)

    @property
    def names(self) -> list[MetricName]:
        return sorted(self._metrics, key=lambda n: (n.mbean, n.attribute))

    def samples(self) -> list[Sample]:
        out: list[Sample] = []
        for name in self.names:
            kind, read = self._metrics[name]
            try:
                value = read()
            except Exception as exc:  # a gauge over a component that is not ready yet
                _log.debug("metric %s unreadable: %r", name.display, exc)
                continue
            out.append(Sample(name, kind, value))
        for key, collect in list(self._collectors.items()):
            try:
                out.extend(collect())
            except Exception as exc:
                _log.debug("metric collector %s failed: %r", key, exc)
        return out

    def value(self, name: MetricName) -> MetricValue | None:
        """One metric's current value (``None`` if unknown or unreadable)."""
        for sample in self.samples():
            if sample.name == name:
                return sample.value
        return None

    def to_json(self) -> dict[str, dict[str, MetricValue]]:
        return samples_to_json(self.samples())

    def to_prometheus(self) -> str:
        return samples_to_prometheus(self.samples())


def instrument_samples(
    domain: str, type_: str, name: str, tags: Mapping[str, str], instrument: Meter | Histogram
) -> list[Sample]:
    """A meter's or histogram's Yammer attributes as samples now (``Count`` a counter, the
    rest gauges), for a collector whose instruments come and go; the same attributes
    :meth:`MetricsRegistry.meter` and :meth:`MetricsRegistry.histogram` register."""

    def named(attribute: str) -> MetricName:
        return MetricName.tagged(domain, type_, name, tags, attribute)

    out = [Sample(named("Count"), "counter", instrument.count)]
    if isinstance(instrument, Meter):
        out += [Sample(named(a), "gauge", instrument.rate(a)) for a in METER_ATTRIBUTES[1:]]
    else:
        out += [Sample(named(a), "gauge", instrument.value(a)) for a in HISTOGRAM_ATTRIBUTES[1:]]
    return out


def _rate_of(meter: Meter, attribute: str) -> Callable[[], MetricValue]:
    return lambda: meter.rate(attribute)


def _histogram_value(histogram: Histogram, attribute: str) -> Callable[[], MetricValue]:
    return lambda: histogram.value(attribute)


def samples_to_json(samples: Iterable[Sample]) -> dict[str, dict[str, MetricValue]]:
    out: dict[str, dict[str, MetricValue]] = {}
    for sample in samples:
        out.setdefault(sample.name.mbean, {})[sample.name.attribute] = sample.value
    return out


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def samples_to_prometheus(samples: Iterable[Sample]) -> str:
    """Text exposition: one ``# HELP``/``# TYPE`` per family, then its samples; MBean keys
    beyond type and name are labels (``{topic="t"}``), a string value is ``{value="v"} 1``."""
    families: dict[str, list[Sample]] = {}
    for sample in samples:
        families.setdefault(sample.name.prometheus, []).append(sample)
    lines: list[str] = []
    for metric, members in families.items():
        first = members[0]
        help_text = first.name.display if not first.name.labels else _untagged(first.name)
        lines.append(f"# HELP {metric} {help_text}")
        lines.append(f"# TYPE {metric} {first.kind}")
        for sample in members:
            labels = list(sample.name.labels)
            value = sample.value
            if isinstance(value, str):
                labels.append(("value", value))
                value = 1
            rendered = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels)
            lines.append(f"{metric}{{{rendered}}} {value}" if rendered else f"{metric} {value}")
    return "\n".join(lines) + "\n"


def _untagged(name: MetricName) -> str:
    """The HELP text of a labelled family: its MBean without the label keys."""
    domain, props = name._props()
    keys = ",".join(f"{k}={v}" for k, v in props.items() if k in ("type", "name"))
    return MetricName(f"{domain}:{keys}", name.attribute).display
