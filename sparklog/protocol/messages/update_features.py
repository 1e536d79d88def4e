"""UpdateFeatures (key 57): finalize, upgrade or downgrade cluster feature levels (KIP-584,
KIP-778), answered by the active controller (a broker forwards it).

Declared from Apache Kafka's UpdateFeaturesRequest/Response (validVersions 0-2, flexible 0+):
v0's per-feature ``AllowDowngrade`` becomes v1's ``UpgradeType`` (1 upgrade, 2 safe downgrade,
3 unsafe downgrade) and v1 adds ``ValidateOnly``; v2 answers only the top-level error (no
per-feature results).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "UpdateFeaturesRequest",
    "0-2",
    "0+",
    field("timeout_ms", "int32", default=60_000),
    array(
        "feature_updates",
        field("feature", "string"),
        field("max_version_level", "int16"),
        field("allow_downgrade", "bool", "0", default=False),
        field("upgrade_type", "int8", "1+", default=1),
    ),
    field("validate_only", "bool", "1+", default=False),
)

RESPONSE = message(
    "UpdateFeaturesResponse",
    "0-2",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None),
    array(
        "results",
        field("feature", "string"),
        field("error_code", "int16"),
        field("error_message", "string", nullable="0+", default=None),
        versions="0-1",
        ignorable=True,
    ),
)

UPDATE_FEATURES = api(
    57, "UpdateFeatures", "0-2", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
