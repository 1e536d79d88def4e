"""DescribeClientQuotas (key 48): the client quotas whose entities match some components.

Declared from Apache Kafka's DescribeClientQuotasRequest/Response (validVersions 0-1,
flexible 1+). ``match_type``: 0 exact name, 1 the default entity, 2 any entity of the type.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DescribeClientQuotasRequest",
    "0-1",
    "1+",
    array(
        "components",
        field("entity_type", "string"),
        field("match_type", "int8"),
        field("match", "string", nullable="0+", default=None),
    ),
    field("strict", "bool"),
)

RESPONSE = message(
    "DescribeClientQuotasResponse",
    "0-1",
    "1+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None),
    array(
        "entries",
        array(
            "entity",
            field("entity_type", "string"),
            field("entity_name", "string", nullable="0+", default=None),
        ),
        array("values", field("key", "string"), field("value", "float64")),
        nullable="0+",
    ),
)

DESCRIBE_CLIENT_QUOTAS = api(48, "DescribeClientQuotas", "0-1", REQUEST, RESPONSE)
