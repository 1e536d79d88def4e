"""UpdateFeatures (57) on the active controller, as Kafka's FeatureControlManager: the records
that change finalized feature levels, and the answer.

Rules (KIP-584/KIP-778, Kafka 4.x):

- A feature the controller does not implement, or a level outside the range it supports, is
  INVALID_UPDATE_VERSION; so is a level some registered broker does not support (a broker that
  did not list the feature supports only level 0).
- Upgrade type 1 (v0: ``AllowDowngrade`` false) may only raise a level; 2 (safe) and 3
  (unsafe) downgrades may only lower it. Level 0 removes the feature (a FeatureLevelRecord of
  level 0). A level equal to the finalized one is accepted and writes nothing.
- ``metadata.version`` is not changed here: it has its own upgrade rules (each metadata
  version's record changes), which this controller does not implement; INVALID_UPDATE_VERSION.
- The request is atomic: if any update fails, no record is written. ``ValidateOnly`` checks
  and writes nothing. v0-1 answer every feature's result; v2 only the top-level error (the
  first failure's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from sparklog.metadata.image import METADATA_VERSION_FEATURE, MetadataImage
from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
    UpdateFeaturesResponseResults,
)

UPGRADE: Final = 1
SAFE_DOWNGRADE: Final = 2
UNSAFE_DOWNGRADE: Final = 3


def _check(
    image: MetadataImage,
    name: str,
    level: int,
    upgrade_type: int,
    supported: Mapping[str, tuple[int, int]],
) -> str | None:
    """Why ``name`` may not go to ``level`` (None when it may)."""
    if name == METADATA_VERSION_FEATURE:
        return "metadata.version is changed with its own upgrade path, not supported here."
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return f"Unknown upgrade type {upgrade_type}."
    if level < 0:
        return f"Invalid feature level {level}: it must be at least 0."
    if name not in supported:
        return "The controller does not support the given feature."
    low, high = supported[name]
    if level > 0 and not low <= level <= high:
        return f"The controller does not support the given feature level {level} ({low}-{high})."
    current = image.features.levels.get(name, 0)
    if upgrade_type == UPGRADE and level < current:
        return (
            "Can't downgrade the version of this feature without setting the upgrade type to "
            "either safe or unsafe downgrade."
        )
    if upgrade_type != UPGRADE and level > current:
        return "Can't downgrade to a newer version."
    if level > 0:
        for broker in image.cluster.brokers.values():
            b_low, b_high = broker.supported_features.get(name, (0, 0))
            if not b_low <= level <= b_high:
                return (
                    f"Broker {broker.broker_id} does not support the given version. It "
                    f"supports {b_low} to {b_high}."
                )
    return None


def update_features(
    image: MetadataImage,
    request: UpdateFeaturesRequest,
    version: int,
    supported: Mapping[str, tuple[int, int]],
) -> tuple[list[MetadataRecord], UpdateFeaturesResponse]:
    """The FeatureLevelRecords of an UpdateFeatures request and its response."""
    records: list[MetadataRecord] = []
    results: list[UpdateFeaturesResponseResults] = []
    first_error: tuple[ErrorCode, str] | None = None
    for update in request["feature_updates"]:
        name, level = update["feature"], update["max_version_level"]
        if version == 0:
            upgrade_type = SAFE_DOWNGRADE if update["allow_downgrade"] else UPGRADE
        else:
            upgrade_type = update["upgrade_type"]
        reason = _check(image, name, level, upgrade_type, supported)
        if reason is not None:
            first_error = first_error or (ErrorCode.INVALID_UPDATE_VERSION, reason)
            results.append(
                {
                    "feature": name,
                    "error_code": int(ErrorCode.INVALID_UPDATE_VERSION),
                    "error_message": reason,
                }
            )
            continue
        results.append({"feature": name, "error_code": 0, "error_message": None})
        if level != image.features.levels.get(name, 0):
            records.append(
                make_record("FeatureLevelRecord", {"name": name, "feature_level": level})
            )
    response: UpdateFeaturesResponse = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
    }
    if version >= 2:
        if first_error is not None:
            response["error_code"] = int(first_error[0])
            response["error_message"] = first_error[1]
    else:
        response["results"] = results
    if first_error is not None or request["validate_only"]:
        records = []
    return records, response
