"""Connection limits (sparklog.net.connection_quotas) with scripted transports: per-address
limits and overrides refuse, max.connections holds connections until a slot frees (the
inter-broker listener exempt from the broker-wide limit), the creation rate holds a burst."""

from __future__ import annotations

import asyncio

import pytest

from sparklog.net.connection_quotas import ConnectionQuotas, parse_ip_overrides
from sparklog.security.sampled_rate import QuotaConfig


class Transport:
    def __init__(self) -> None:
        self.paused = False
        self.closing = False

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def is_closing(self) -> bool:
        return self.closing


def test_per_ip_limit_and_overrides() -> None:
    quotas = ConnectionQuotas(
        max_connections_per_ip=2, per_ip_overrides=parse_ip_overrides("10.0.0.9:0, ::1:5")
    )
    conns = [object() for _ in range(3)]
    assert quotas.on_accept(conns[0], "PLAINTEXT", "10.0.0.1", Transport()) is None
    assert quotas.on_accept(conns[1], "PLAINTEXT", "10.0.0.1", Transport()) is None
    refusal = quotas.on_accept(conns[2], "PLAINTEXT", "10.0.0.1", Transport())
    assert refusal == "Too many connections from /10.0.0.1 (maximum = 2)"
    assert quotas.on_accept(object(), "PLAINTEXT", "10.0.0.9", Transport()) is not None
    quotas.on_close(conns[0])
    assert quotas.on_accept(conns[2], "PLAINTEXT", "10.0.0.1", Transport()) is None
    assert quotas.per_ip == {"10.0.0.1": 2}
    with pytest.raises(ValueError, match="overrides"):
        parse_ip_overrides("nohost")


def test_max_connections_waits_for_a_slot_and_spares_inter_broker() -> None:
    quotas = ConnectionQuotas(
        max_connections=2,
        listener_limits={"EXTERNAL": (1, 2**31 - 1)},
        protected_listener="INTERNAL",
    )
    first, second, third = object(), object(), object()
    waiting = Transport()
    assert quotas.on_accept(first, "PLAINTEXT", "a", Transport()) is None
    assert quotas.on_accept(second, "PLAINTEXT", "b", Transport()) is None
    assert quotas.on_accept(third, "PLAINTEXT", "c", waiting) is None
    assert waiting.paused and quotas.total == 2
    # the inter-broker listener is not held by the broker-wide limit
    replica = Transport()
    assert quotas.on_accept(object(), "INTERNAL", "d", replica) is None
    assert not replica.paused
    # ... but it counts (as in Kafka): one close is not enough while it is open
    quotas.on_close(first)
    assert waiting.paused
    quotas.on_close(second)
    assert not waiting.paused and quotas.total == 2
    # a listener's own limit holds even below the broker-wide one
    external = [Transport(), Transport()]
    quotas = ConnectionQuotas(listener_limits={"EXTERNAL": (1, 2**31 - 1)})
    quotas.on_accept(object(), "external", "e", external[0])
    quotas.on_accept(object(), "external", "f", external[1])
    assert not external[0].paused and external[1].paused


def test_creation_rate_holds_a_burst() -> None:
    async def run() -> list[bool]:
        now = [0.0]
        quotas = ConnectionQuotas(
            max_creation_rate=2, quota_config=QuotaConfig(2, 1000), clock_ms=lambda: now[0]
        )
        transports = [Transport() for _ in range(5)]
        for transport in transports:
            quotas.on_accept(object(), "PLAINTEXT", "a", transport)
        return [t.paused for t in transports]

    # 2 per second over at least one window: the first two pass, the rest are held
    assert asyncio.run(run()) == [False, False, True, True, True]


def test_ip_connection_creation_rate_quota() -> None:
    from types import MappingProxyType

    from sparklog.metadata.security_image import ClientQuotasImage

    image = ClientQuotasImage(
        MappingProxyType({(("ip", None),): MappingProxyType({"connection_creation_rate": 1.0})})
    )
    quotas = ConnectionQuotas(quota_config=QuotaConfig(2, 1000), clock_ms=lambda: 0.0)
    quotas.client_quotas = lambda: image
    assert quotas.on_accept(object(), "PLAINTEXT", "10.0.0.1", Transport()) is None
    refusal = quotas.on_accept(object(), "PLAINTEXT", "10.0.0.1", Transport())
    assert refusal is not None and "connection_creation_rate" in refusal
    # another address has its own rate
    assert quotas.on_accept(object(), "PLAINTEXT", "10.0.0.2", Transport()) is None
