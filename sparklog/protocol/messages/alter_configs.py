"""AlterConfigs (key 33): replace the whole configuration of topics or brokers (legacy).

Declared from Apache Kafka's AlterConfigsRequest/Response (validVersions 0-2; v2 is flexible).
Unlike IncrementalAlterConfigs, keys left out of a resource are reset to their defaults.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "AlterConfigsRequest",
    "0-2",
    "2+",
    array(
        "resources",
        field("resource_type", "int8"),
        field("resource_name", "string"),
        array(
            "configs",
            field("name", "string"),
            field("value", "string", "0+", nullable="0+"),
        ),
    ),
    field("validate_only", "bool"),
)

RESPONSE = message(
    "AlterConfigsResponse",
    "0-2",
    "2+",
    field("throttle_time_ms", "int32"),
    array(
        "responses",
        field("error_code", "int16"),
        field("error_message", "string", "0+", nullable="0+"),
        field("resource_type", "int8"),
        field("resource_name", "string"),
    ),
)

ALTER_CONFIGS = api(
    33, "AlterConfigs", "0-2", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
