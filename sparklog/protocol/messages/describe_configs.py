"""DescribeConfigs (key 32): an admin client reads topic and broker configurations.

Declared from Apache Kafka's DescribeConfigsRequest/Response (validVersions 1-4; v0 was removed
in 4.0). A null ``configuration_keys`` asks for every key; v3+ adds config types and docs.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DescribeConfigsRequest",
    "1-4",
    "4+",
    array(
        "resources",
        field("resource_type", "int8"),
        field("resource_name", "string"),
        field("configuration_keys", "[]string", "0+", nullable="0+"),
    ),
    field("include_synonyms", "bool", "1+"),
    field("include_documentation", "bool", "3+"),
)

RESPONSE = message(
    "DescribeConfigsResponse",
    "1-4",
    "4+",
    field("throttle_time_ms", "int32"),
    array(
        "results",
        field("error_code", "int16"),
        field("error_message", "string", "0+", nullable="0+"),
        field("resource_type", "int8"),
        field("resource_name", "string"),
        array(
            "configs",
            field("name", "string"),
            field("value", "string", "0+", nullable="0+"),
            field("read_only", "bool"),
            field("config_source", "int8", "1+", default=-1, ignorable=True),
            field("is_sensitive", "bool"),
            array(
                "synonyms",
                field("name", "string", "1+"),
                field("value", "string", "1+", nullable="1+"),
                field("source", "int8", "1+"),
                versions="1+",
                ignorable=True,
            ),
            field("config_type", "int8", "3+", ignorable=True),
            field("documentation", "string", "3+", nullable="3+", ignorable=True),
        ),
    ),
)

DESCRIBE_CONFIGS = api(
    32, "DescribeConfigs", "1-4", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
