"""ApiVersions (key 18): how a client learns which API versions this server speaks.

Declared from Apache Kafka's ApiVersionsRequest/Response definitions (KIP-511 client software
fields in v3+, KIP-584 feature fields as tagged fields in v3+).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "ApiVersionsRequest",
    "0-4",
    "3+",
    field("client_software_name", "string", "3+"),
    field("client_software_version", "string", "3+"),
)

RESPONSE = message(
    "ApiVersionsResponse",
    "0-4",
    "3+",
    field("error_code", "int16"),
    array(
        "api_keys",
        field("api_key", "int16"),
        field("min_version", "int16"),
        field("max_version", "int16"),
    ),
    field("throttle_time_ms", "int32", "1+"),
    array(
        "supported_features",
        field("name", "string"),
        field("min_version", "int16"),
        field("max_version", "int16"),
        versions="3+",
        tag=0,
    ),
    field("finalized_features_epoch", "int64", "3+", tag=1, default=-1),
    array(
        "finalized_features",
        field("name", "string"),
        field("max_version_level", "int16"),
        field("min_version_level", "int16"),
        versions="3+",
        tag=2,
    ),
    field("zk_migration_ready", "bool", "3+", tag=3, default=False),
)

API_VERSIONS = api(
    18, "ApiVersions", "0-4", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
