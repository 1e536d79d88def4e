"""Share-group APIs are served, and ApiVersions advertises them with the share.version feature,
only when share groups are enabled (``group.share.enable`` or "share" in
``group.coordinator.rebalance.protocols``), as Kafka 4.x; their declared versions are Kafka
4.2's."""

from __future__ import annotations

from typing import Any

import pytest

from sparklog.broker.apis import (
    SHARE_GROUP_API_KEYS,
    _advertise_share_version,
    api_versions_body,
    served_broker_apis,
)
from sparklog.config import ServerConfig

BASE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.bootstrap.servers": "localhost:9093",
}

KAFKA_42_VERSIONS = {
    76: (1, 1),  # ShareGroupHeartbeat
    77: (1, 1),  # ShareGroupDescribe
    78: (1, 2),  # ShareFetch
    79: (1, 2),  # ShareAcknowledge
    83: (0, 0),  # InitializeShareGroupState
    84: (0, 0),  # ReadShareGroupState
    85: (0, 1),  # WriteShareGroupState (v1 adds KIP-1226's DeliveryCompleteCount)
    86: (0, 0),  # DeleteShareGroupState
    87: (0, 1),  # ReadShareGroupStateSummary (v1 adds DeliveryCompleteCount)
    90: (0, 0),  # DescribeShareGroupOffsets
    91: (0, 0),  # AlterShareGroupOffsets
    92: (0, 0),  # DeleteShareGroupOffsets
}


def config(**props: str) -> ServerConfig:
    return ServerConfig.from_props({**BASE, **props})


@pytest.mark.parametrize(
    ("props", "enabled"),
    [
        ({}, False),
        ({"group.share.enable": "true"}, True),
        ({"group.coordinator.rebalance.protocols": "classic,consumer,share"}, True),
        ({"group.coordinator.rebalance.protocols": "classic,consumer"}, False),
    ],
)
def test_share_apis_served_only_when_enabled(props: dict[str, str], enabled: bool) -> None:
    served = served_broker_apis(config(**props))
    expected = SHARE_GROUP_API_KEYS if enabled else frozenset()
    assert set(served) & SHARE_GROUP_API_KEYS == expected


def test_versions_are_kafka_42s() -> None:
    served = served_broker_apis(config(**{"group.share.enable": "true"}))
    assert {k: (served[k].min_version, served[k].max_version) for k in SHARE_GROUP_API_KEYS} == (
        KAFKA_42_VERSIONS
    )


def test_share_version_feature_is_advertised() -> None:
    body: dict[str, Any] = api_versions_body(
        served_broker_apis(config(**{"group.share.enable": "true"}))
    )
    body.update(supported_features=[], finalized_features=[])
    _advertise_share_version(body)
    assert {"name": "share.version", "min_version": 0, "max_version": 1} in body[
        "supported_features"
    ]
    assert body["finalized_features"] == [
        {"name": "share.version", "max_version_level": 1, "min_version_level": 1}
    ]
