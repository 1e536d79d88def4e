"""Share-group APIs are advertised and served only while share groups are enabled: a finalized
``share.version`` of 1 or more, or the internal ``group.share.enable`` (Kafka's
``isShareGroupProtocolEnabled``); otherwise every share-group request is answered
UNSUPPORTED_VERSION. The declared versions are Kafka 4.2's."""

from __future__ import annotations

from typing import Any

import pytest

from sparklog.broker.apis import SERVED, feature_fields, served_broker_apis
from sparklog.broker.share_gate import (
    SHARE_GROUP_API_KEYS,
    share_disabled_response,
    share_groups_enabled,
)
from sparklog.config import ServerConfig
from sparklog.metadata.bootstrap import BootstrapMetadata
from sparklog.metadata.image import SHARE_VERSION_FEATURE, FeaturesImage, MetadataImage
from sparklog.protocol.codec import encode_bytes
from sparklog.protocol.headers import Request, RequestHeader

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
    90: (0, 1),  # DescribeShareGroupOffsets (v1 adds KIP-1226's Lag)
    91: (0, 0),  # AlterShareGroupOffsets
    92: (0, 0),  # DeleteShareGroupOffsets
}


def config(**props: str) -> ServerConfig:
    return ServerConfig.from_props({**BASE, **props})


def image(share_version: int | None) -> MetadataImage:
    levels = {} if share_version is None else {SHARE_VERSION_FEATURE: share_version}
    return MetadataImage(features=FeaturesImage(levels))


@pytest.mark.parametrize(
    ("props", "level", "enabled"),
    [
        ({}, None, False),
        ({}, 0, False),
        ({}, 1, True),
        ({"group.share.enable": "true"}, None, True),
        # KIP-1237: share groups no longer follow group.coordinator.rebalance.protocols
        ({"group.coordinator.rebalance.protocols": "classic,consumer,share"}, None, False),
    ],
)
def test_enabled_by_the_finalized_feature_or_the_internal_config(
    props: dict[str, str], level: int | None, enabled: bool
) -> None:
    assert share_groups_enabled(config(**props), image(level)) is enabled


def test_versions_are_kafka_42s() -> None:
    served = served_broker_apis(config())
    assert {k: (served[k].min_version, served[k].max_version) for k in SHARE_GROUP_API_KEYS} == (
        KAFKA_42_VERSIONS
    )


def test_share_version_is_supported_and_finalized_only_by_the_image() -> None:
    fields = feature_fields(image(None))
    assert {"name": "share.version", "min_version": 0, "max_version": 1} in fields[
        "supported_features"
    ]
    assert not [f for f in fields["finalized_features"] if f["name"] == "share.version"]
    finalized = feature_fields(image(1))["finalized_features"]
    assert {"name": "share.version", "max_version_level": 1, "min_version_level": 1} in finalized


def test_storage_format_feature_bootstraps_share_version() -> None:
    bootstrap = BootstrapMetadata.from_release_version("4.1", "test")
    levels = {
        r.data["name"]: r.data["feature_level"]
        for r in bootstrap.with_feature_levels({SHARE_VERSION_FEATURE: 1}).records
        if r.name == "FeatureLevelRecord"
    }
    assert levels[SHARE_VERSION_FEATURE] == 1
    assert SHARE_VERSION_FEATURE not in {r.data.get("name") for r in bootstrap.records}


@pytest.mark.parametrize(
    ("release", "level", "share"),
    [("4.1", 27, None), ("4.2-IV0", 28, 1), ("4.2", 29, 1), ("4.0-IV3", 25, None)],
)
def test_release_4_2_bootstraps_share_version(release: str, level: int, share: int | None) -> None:
    """Kafka 4.2's ShareVersion SV_1 bootstraps from metadata.version 4.2-IV0 (level 28), so
    ``storage format --release-version 4.2`` turns share groups on; 4.1 and older do not."""
    bootstrap = BootstrapMetadata.from_release_version(release, "test")
    levels = {
        r.data["name"]: r.data["feature_level"]
        for r in bootstrap.records
        if r.name == "FeatureLevelRecord"
    }
    assert bootstrap.metadata_version == level
    assert levels.get(SHARE_VERSION_FEATURE) == share
    # --feature share.version=0 still leaves share groups off on a 4.2 cluster
    off = bootstrap.with_feature_levels({SHARE_VERSION_FEATURE: 0}).records
    assert SHARE_VERSION_FEATURE not in {r.data.get("name") for r in off}


REQUESTS: dict[int, dict[str, Any]] = {
    77: {"group_ids": ["g1", "g2"]},
    90: {"groups": [{"group_id": "g", "topics": None}]},
    **{
        key: {
            "group_id": "g",
            "topics": [{"topic_id": b"\x01" * 16, "partitions": [{"partition": 3}]}],
        }
        for key in (83, 84, 85, 86, 87)
    },
}


@pytest.mark.parametrize("key", sorted(SHARE_GROUP_API_KEYS))
def test_disabled_answer_is_unsupported_version_everywhere(key: int) -> None:
    api = SERVED[key]
    header = RequestHeader(key, api.max_version, 1, "c")
    # the answer of whichever API ``key`` is: read by its fields' names
    answer = share_disabled_response(Request(header, api, REQUESTS.get(key, {"group_id": "g"})))
    body: dict[str, Any] = dict(answer)
    encode_bytes(api.response, api.max_version, body)  # a complete answer of the API
    codes = [body.get("error_code")]
    for group in body.get("groups", ()):
        codes.append(group["error_code"])
    for result in body.get("results", ()):
        codes += [p["error_code"] for p in result["partitions"]]
    assert [c for c in codes if c is not None] and all(c in (None, 35) for c in codes), body
    if key == 77:
        assert [g["group_id"] for g in body["groups"]] == ["g1", "g2"]
    if 83 <= key <= 87:
        assert body["results"][0]["partitions"][0]["partition"] == 3
