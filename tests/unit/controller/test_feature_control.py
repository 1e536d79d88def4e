"""UpdateFeatures on the controller (Kafka's FeatureControlManager rules): what is accepted,
what is refused and why, atomicity, ValidateOnly and the v2 answer."""

from __future__ import annotations

from typing import Any

from sparklog.controller.feature_control import update_features
from sparklog.metadata.image import (
    BrokerRegistration,
    ClusterImage,
    FeaturesImage,
    MetadataImage,
)
from sparklog.protocol.message_types import UpdateFeaturesRequest, UpdateFeaturesResponse

SUPPORTED = {"share.version": (0, 1), "transaction.version": (0, 2)}


def image(levels: dict[str, int], *broker_features: dict[str, tuple[int, int]]) -> MetadataImage:
    brokers = {
        i: BrokerRegistration(i, 10, b"\x00" * 16, (), supported_features=features)
        for i, features in enumerate(broker_features, start=1)
    }
    return MetadataImage(
        features=FeaturesImage({"metadata.version": 27, **levels}), cluster=ClusterImage(brokers)
    )


def request(*updates: tuple[str, int, int], validate_only: bool = False) -> UpdateFeaturesRequest:
    """An UpdateFeatures v1+ request as the controller decodes it (upgrade types given)."""
    return {
        "timeout_ms": 60_000,
        "feature_updates": [
            {
                "feature": n,
                "max_version_level": lvl,
                "allow_downgrade": False,
                "upgrade_type": t,
            }
            for n, lvl, t in updates
        ],
        "validate_only": validate_only,
    }


def levels(records: list[Any]) -> dict[str, int]:
    return {r.data["name"]: r.data["feature_level"] for r in records}


def errors(response: UpdateFeaturesResponse) -> dict[str, int]:
    return {r["feature"]: r["error_code"] for r in response["results"]}


def test_upgrade_when_every_broker_supports_it() -> None:
    both = image({}, SUPPORTED, SUPPORTED)
    records, response = update_features(both, request(("share.version", 1, 1)), 1, SUPPORTED)
    assert levels(records) == {"share.version": 1}
    assert errors(response) == {"share.version": 0}


def test_refused_when_a_broker_does_not_support_the_level() -> None:
    old_broker = image({}, SUPPORTED, {"metadata.version": (7, 27)})
    records, response = update_features(old_broker, request(("share.version", 1, 1)), 1, SUPPORTED)
    assert records == []
    assert errors(response) == {"share.version": 95}  # INVALID_UPDATE_VERSION
    assert "Broker 2 does not support" in str(response["results"][0]["error_message"])


def test_unknown_feature_level_and_metadata_version_are_refused() -> None:
    current = image({}, SUPPORTED)
    for name, level in (("no.such.version", 1), ("share.version", 2), ("metadata.version", 28)):
        records, response = update_features(current, request((name, level, 1)), 1, SUPPORTED)
        assert records == [] and errors(response) == {name: 95}, (name, response)


def test_downgrades_need_a_downgrade_type_and_level_zero_removes() -> None:
    on = image({"share.version": 1}, SUPPORTED)
    refused, response = update_features(on, request(("share.version", 0, 1)), 1, SUPPORTED)
    assert refused == [] and "downgrade" in str(response["results"][0]["error_message"])
    removed, _ = update_features(on, request(("share.version", 0, 2)), 1, SUPPORTED)
    assert levels(removed) == {"share.version": 0}
    # v0's AllowDowngrade is the safe downgrade
    v0: UpdateFeaturesRequest = {
        "timeout_ms": 60_000,
        "feature_updates": [
            {
                "feature": "share.version",
                "max_version_level": 0,
                "allow_downgrade": True,
                "upgrade_type": 1,
            }
        ],
        "validate_only": False,
    }
    assert levels(update_features(on, v0, 0, SUPPORTED)[0]) == {"share.version": 0}
    # a downgrade may not raise a level; the same level writes nothing
    off = image({}, SUPPORTED)
    assert update_features(off, request(("share.version", 1, 3)), 1, SUPPORTED)[0] == []
    same, response = update_features(on, request(("share.version", 1, 1)), 1, SUPPORTED)
    assert same == [] and errors(response) == {"share.version": 0}


def test_atomic_validate_only_and_the_v2_answer() -> None:
    current = image({}, SUPPORTED)
    mixed = request(("transaction.version", 2, 1), ("share.version", 5, 1))
    records, response = update_features(current, mixed, 1, SUPPORTED)
    assert records == [] and errors(response) == {"transaction.version": 0, "share.version": 95}
    records, response = update_features(current, mixed, 2, SUPPORTED)
    assert records == [] and response["error_code"] == 95 and "results" not in response
    assert response["error_message"]
    checked = request(("share.version", 1, 1), validate_only=True)
    records, response = update_features(current, checked, 1, SUPPORTED)
    assert records == [] and errors(response) == {"share.version": 0}
