"""IncrementalAlterConfigs (key 44): set, delete, append to or subtract from configs.

Declared from Apache Kafka's IncrementalAlterConfigsRequest/Response (validVersions 0-1; v1 is
flexible). ``config_operation`` is 0 set, 1 delete, 2 append, 3 subtract (KIP-339).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "IncrementalAlterConfigsRequest",
    "0-1",
    "1+",
    array(
        "resources",
        field("resource_type", "int8"),
        field("resource_name", "string"),
        array(
            "configs",
            field("name", "string"),
            field("config_operation", "int8"),
            field("value", "string", "0+", nullable="0+"),
        ),
    ),
    field("validate_only", "bool"),
)

RESPONSE = message(
    "IncrementalAlterConfigsResponse",
    "0-1",
    "1+",
    field("throttle_time_ms", "int32"),
    array(
        "responses",
        field("error_code", "int16"),
        field("error_message", "string", "0+", nullable="0+"),
        field("resource_type", "int8"),
        field("resource_name", "string"),
    ),
)

INCREMENTAL_ALTER_CONFIGS = api(
    44,
    "IncrementalAlterConfigs",
    "0-1",
    REQUEST,
    RESPONSE,
    listeners=frozenset({"broker", "controller"}),
)
