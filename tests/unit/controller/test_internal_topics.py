"""Internal topics (``__consumer_offsets``, ``__transaction_state``) are created with their
configured replication factor when enough brokers are up, else with as many as there are and
a warning."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

import pytest

from sparklog.config_keys import DEFS
from sparklog.coordinator.find_coordinator_api import _ensure_internal_topic
from sparklog.metadata.image import (
    BrokerRegistration,
    ClusterImage,
    Endpoint,
    MetadataImage,
    frozen,
)


class FakeConfig:
    def __init__(self, **overrides: Any) -> None:
        self.values = {name: d.default for name, d in DEFS.items()}
        self.values.update({k.replace("_", "."): v for k, v in overrides.items()})

    def get(self, key: str) -> Any:
        return self.values[key]


class FakeContext:
    def __init__(self, brokers: list[BrokerRegistration], config: FakeConfig) -> None:
        self.image = MetadataImage(cluster=ClusterImage(frozen({b.broker_id: b for b in brokers})))
        self.config = config
        self.sent: list[dict[str, Any]] = []

    async def controller(self, op: str, body: dict[str, Any], version: int) -> dict[str, Any]:
        assert op == "create_topics"
        self.sent.append(body)
        return {"topics": [{"name": t["name"], "error_code": 0} for t in body["topics"]]}


def broker(broker_id: int, *, fenced: bool = False, shutdown: bool = False) -> BrokerRegistration:
    registration = BrokerRegistration(
        broker_id, 10, bytes([broker_id]) * 16, (Endpoint("PLAINTEXT", "h", 1, 0),)
    )
    return replace(registration, fenced=fenced, in_controlled_shutdown=shutdown)


def created_rf(ctx: FakeContext, name: str, prefix: str) -> int:
    asyncio.run(_ensure_internal_topic(ctx, name, prefix))  # type: ignore[arg-type]
    [topic] = ctx.sent[-1]["topics"]
    assert topic["name"] == name
    rf: int = topic["replication_factor"]
    return rf


def test_default_replication_factor_three_when_enough_brokers() -> None:
    ctx = FakeContext([broker(1), broker(2), broker(3), broker(4)], FakeConfig())
    assert created_rf(ctx, "__consumer_offsets", "offsets.topic") == 3
    assert created_rf(ctx, "__transaction_state", "transaction.state.log") == 3


def test_fewer_live_brokers_use_what_is_there_and_warn(caplog: pytest.LogCaptureFixture) -> None:
    brokers = [broker(1), broker(2, fenced=True), broker(3, shutdown=True)]
    ctx = FakeContext(brokers, FakeConfig())
    with caplog.at_level(logging.WARNING):
        assert created_rf(ctx, "__consumer_offsets", "offsets.topic") == 1
    assert "offsets.topic.replication.factor is 3 but only 1 broker(s) are alive" in caplog.text
    ctx = FakeContext([broker(1), broker(2)], FakeConfig())
    assert created_rf(ctx, "__transaction_state", "transaction.state.log") == 2
    configs = {c["name"]: c["value"] for c in ctx.sent[-1]["topics"][0]["configs"]}
    assert configs["min.insync.replicas"] == "2"


def test_configured_replication_factor_is_honoured() -> None:
    ctx = FakeContext(
        [broker(1), broker(2), broker(3)], FakeConfig(offsets_topic_replication_factor=2)
    )
    assert created_rf(ctx, "__consumer_offsets", "offsets.topic") == 2
