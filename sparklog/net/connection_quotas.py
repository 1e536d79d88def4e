"""Connection limits on the broker listeners (Kafka's ``SocketServer.ConnectionQuotas``).

Contract:
- ``max.connections.per.ip`` (and ``max.connections.per.ip.overrides``, ``host:count,...``):
  a connection beyond its address's limit is closed at once, logged as Kafka's
  ``Too many connections from /ip (maximum = n)``.
- ``max.connections`` (broker-wide) and ``listener.name.<l>.max.connections``: a connection
  beyond the limit is not served until another closes: it is accepted but not read from (Kafka's
  acceptor stops accepting; here the socket waits in the same state a backlog would keep it
  in), then admitted in arrival order. The inter-broker listener is exempt from the
  broker-wide limit, as in Kafka, so replication never starves behind clients.
- ``max.connection.creation.rate`` (broker-wide) and
  ``listener.name.<l>.max.connection.creation.rate``: new connections per second, measured
  as Kafka's sampled rate (``quota.window.num`` windows of ``quota.window.size.seconds``); a
  connection over the rate is held (not read from) for the throttle time Kafka would delay
  its accept by.
- The ``connection_creation_rate`` client quota of an ``ip`` entity (the address's own, else
  the ip default; AlterClientQuotas, KIP-612) caps new connections per second from one address;
  one over it is closed at once.
- Defaults (2147483647) mean no limit, and then nothing is counted but the per-address tally.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sparklog.security.sampled_rate import QuotaConfig, SampledRate

log = logging.getLogger(__name__)

UNLIMITED: Final = 2**31 - 1


def parse_ip_overrides(text: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count,host2:count``."""
    overrides: dict[str, int] = {}
    for item in (part.strip() for part in (text or "").split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ValueError(
                f"Invalid value {text!r} for configuration max.connections.per.ip.overrides: "
                "expected host:count entries separated by commas"
            )
        overrides[host.strip()] = int(count)
    return overrides


@dataclass(slots=True)
class _Listener:
    max_connections: int
    creation_rate: int
    count: int = 0
    rate: SampledRate | None = None


@dataclass(slots=True)
class ConnectionQuotas:
    max_connections: int = UNLIMITED
    max_connections_per_ip: int = UNLIMITED
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    max_creation_rate: int = UNLIMITED
    listener_limits: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    protected_listener: str | None = None
    quota_config: QuotaConfig = field(default_factory=QuotaConfig)
    clock_ms: Callable[[], float] = field(default_factory=lambda: _loop_ms)
    total: int = 0
    per_ip: dict[str, int] = field(default_factory=dict)
    listeners: dict[str, _Listener] = field(default_factory=dict)
    waiting: deque[tuple[Any, str, str, asyncio.Transport]] = field(default_factory=deque)
    admitted: dict[int, tuple[str, str]] = field(default_factory=dict)
    broker_rate: SampledRate | None = None
    rejected_total: int = 0
    # the image's client quotas (a ClientQuotasImage: net does not import metadata), for ip
    # entities' connection_creation_rate
    client_quotas: Callable[[], Any] | None = None
    ip_rates: dict[str, SampledRate] = field(default_factory=dict)

    @staticmethod
    def from_config(config: Any, protected_listener: str | None) -> ConnectionQuotas:
        props: Mapping[str, str] = getattr(config, "props", {})
        listener_limits: dict[str, tuple[int, int]] = {}
        for key, value in props.items():
            if not key.startswith("listener.name."):
                continue
            name, _, suffix = key[len("listener.name.") :].partition(".")
            current = listener_limits.get(name.upper(), (UNLIMITED, UNLIMITED))
            if suffix == "max.connections":
                listener_limits[name.upper()] = (int(value), current[1])
            elif suffix == "max.connection.creation.rate":
                listener_limits[name.upper()] = (current[0], int(value))
        return ConnectionQuotas(
            max_connections=int(config.get("max.connections")),
            max_connections_per_ip=int(config.get("max.connections.per.ip")),
            per_ip_overrides=parse_ip_overrides(
                str(config.get("max.connections.per.ip.overrides"))
            ),
            max_creation_rate=int(config.get("max.connection.creation.rate")),
            listener_limits=listener_limits,
            protected_listener=protected_listener,
            quota_config=QuotaConfig(
                int(config.get("quota.window.num")),
                int(config.get("quota.window.size.seconds")) * 1000,
            ),
        )

    def _listener(self, name: str) -> _Listener:
        state = self.listeners.get(name)
        if state is None:
            limit, rate = self.listener_limits.get(name.upper(), (UNLIMITED, UNLIMITED))
            state = self.listeners[name] = _Listener(limit, rate)
        return state

    def _ip_limit(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.max_connections_per_ip)

    def on_accept(self, conn: Any, listener: str, ip: str, transport: Any) -> str | None:
        """Count a new connection; a reason string means: close it."""
        limit = self._ip_limit(ip)
        if self.per_ip.get(ip, 0) >= limit:
            self.rejected_total += 1
            return f"Too many connections from /{ip} (maximum = {limit})"
        refusal = self._ip_rate_refusal(ip)
        if refusal is not None:
            self.rejected_total += 1
            return refusal
        self.per_ip[ip] = self.per_ip.get(ip, 0) + 1
        state = self._listener(listener)
        delay_ms = self._creation_delay_ms(state)
        if self._full(state, listener):
            transport.pause_reading()
            self.waiting.append((conn, listener, ip, transport))
            log.info("Listener %s is at max.connections: %s waits for a free slot", listener, ip)
            return None
        self._admit(conn, listener, ip, transport, delay_ms, paused=False)
        return None

    def _ip_rate_refusal(self, ip: str) -> str | None:
        if self.client_quotas is None:
            return None
        entities = self.client_quotas().entities
        if not entities:
            return None
        values = entities.get((("ip", ip),)) or entities.get((("ip", None),)) or {}
        bound = values.get("connection_creation_rate")
        if bound is None:
            return None
        rate = self.ip_rates.get(ip)
        if rate is None:
            rate = self.ip_rates[ip] = SampledRate(self.quota_config)
        now = self.clock_ms()
        rate.record(1, now)
        if rate.rate_per_second(now) > bound:
            rate.record(-1, now)  # a refused connection does not count (Kafka unrecords it)
            return f"Connection from /{ip} is over its connection_creation_rate of {bound:g}/s"
        return None

    def _full(self, state: _Listener, listener: str) -> bool:
        if state.count >= state.max_connections:
            return True
        return listener != self.protected_listener and self.total >= self.max_connections

    def _creation_delay_ms(self, state: _Listener) -> float:
        delay = 0.0
        for bound, attr in ((state.creation_rate, "listener"), (self.max_creation_rate, "broker")):
            if bound >= UNLIMITED:
                continue
            now = self.clock_ms()
            if attr == "listener":
                if state.rate is None:
                    state.rate = SampledRate(self.quota_config)
                rate = state.rate
            else:
                if self.broker_rate is None:
                    self.broker_rate = SampledRate(self.quota_config)
                rate = self.broker_rate
            rate.record(1, now)
            observed = rate.rate_per_second(now)
            if observed > bound:
                delay = max(delay, (observed - bound) / bound * rate.window_ms(now))
        return delay

    def _admit(
        self, conn: Any, listener: str, ip: str, transport: Any, delay_ms: float, paused: bool
    ) -> None:
        self.admitted[id(conn)] = (listener, ip)
        self._listener(listener).count += 1
        self.total += 1
        if delay_ms > 0:
            if not paused:
                transport.pause_reading()
            asyncio.get_running_loop().call_later(delay_ms / 1000.0, _resume, transport)
        elif paused:
            _resume(transport)

    def on_close(self, conn: Any) -> None:
        entry = self.admitted.pop(id(conn), None)
        if entry is None:
            for index, waiting in enumerate(self.waiting):
                if waiting[0] is conn:
                    del self.waiting[index]
                    self._forget_ip(waiting[2])
                    return
            return
        listener, ip = entry
        self._listener(listener).count -= 1
        self.total -= 1
        self._forget_ip(ip)
        self._admit_waiting()

    def _forget_ip(self, ip: str) -> None:
        left = self.per_ip.get(ip, 0) - 1
        if left > 0:
            self.per_ip[ip] = left
        else:
            self.per_ip.pop(ip, None)

    def _admit_waiting(self) -> None:
        still: deque[tuple[Any, str, str, asyncio.Transport]] = deque()
        while self.waiting:
            conn, listener, ip, transport = self.waiting.popleft()
            if transport.is_closing():
                self._forget_ip(ip)
                continue
            if self._full(self._listener(listener), listener):
                still.append((conn, listener, ip, transport))
                continue
            self._admit(conn, listener, ip, transport, 0.0, paused=True)
        self.waiting = still


def _resume(transport: Any) -> None:
    if not transport.is_closing():
        transport.resume_reading()


def _loop_ms() -> float:
    return asyncio.get_running_loop().time() * 1000.0
