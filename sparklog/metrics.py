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
from collections.abc import Callable, Iterable
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

    @property
    def prometheus(self) -> str:
        domain, _, keys = self.mbean.partition(":")
        parts = [domain]
        props = dict(p.split("=", 1) for p in keys.split(",") if "=" in p)
        parts.append(props.get("type", ""))
        if "name" in props:
            parts.append(props["name"])
        if "name" not in props or self.attribute not in ("Value", "Count"):
            parts.append(self.attribute)  # a meter's rates: <name>_OneMinuteRate
        return _NOT_PROMETHEUS.sub("_", "_".join(p for p in parts if p))


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


class MetricsRegistry:
    def __init__(self) -> None:
        self._metrics: dict[MetricName, tuple[Kind, Callable[[], MetricValue]]] = {}

    def gauge(self, name: MetricName, read: Callable[[], MetricValue]) -> None:
        self._metrics[name] = ("gauge", read)

    def counter(self, name: MetricName) -> Counter:
        counter = Counter()
        self._metrics[name] = ("counter", lambda: counter.value)
        return counter

    def meter(self, domain: str, type_: str, name: str, meter: Meter | None = None) -> Meter:
        """Register ``meter`` (a new one by default) as ``domain:type=<type_>,name=<name>``
        with Yammer's meter attributes (``Count`` is a counter, the rates gauges)."""
        meter = meter or Meter()
        mbean = f"{domain}:type={type_},name={name}"
        self._metrics[MetricName(mbean, "Count")] = ("counter", lambda: meter.count)
        for attribute in METER_ATTRIBUTES[1:]:
            self._metrics[MetricName(mbean, attribute)] = ("gauge", _rate_of(meter, attribute))
        return meter

    def counter_of(self, name: MetricName, read: Callable[[], int]) -> None:
        """A counter kept elsewhere (an attribute of a component), read on demand."""
        self._metrics[name] = ("counter", read)

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


def _rate_of(meter: Meter, attribute: str) -> Callable[[], MetricValue]:
    return lambda: meter.rate(attribute)


def samples_to_json(samples: Iterable[Sample]) -> dict[str, dict[str, MetricValue]]:
    out: dict[str, dict[str, MetricValue]] = {}
    for sample in samples:
        out.setdefault(sample.name.mbean, {})[sample.name.attribute] = sample.value
    return out


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def samples_to_prometheus(samples: Iterable[Sample]) -> str:
    lines: list[str] = []
    for sample in samples:
        metric = sample.name.prometheus
        lines.append(f"# HELP {metric} {sample.name.display}")
        lines.append(f"# TYPE {metric} {sample.kind}")
        value = sample.value
        if isinstance(value, str):
            lines.append(f'{metric}{{value="{_escape_label(value)}"}} 1')
        else:
            lines.append(f"{metric} {value}")
    return "\n".join(lines) + "\n"
