"""AlterClientQuotas (key 49): set or remove client quota values of entities.

Declared from Apache Kafka's AlterClientQuotasRequest/Response (validVersions 0-1,
flexible 1+).
"""

from sparklog.protocol.schema import api, array, field, message

_ENTITY = array(
    "entity",
    field("entity_type", "string"),
    field("entity_name", "string", nullable="0+", default=None),
)

REQUEST = message(
    "AlterClientQuotasRequest",
    "0-1",
    "1+",
    array(
        "entries",
        _ENTITY,
        array(
            "ops",
            field("key", "string"),
            field("value", "float64"),
            field("remove", "bool"),
        ),
    ),
    field("validate_only", "bool"),
)

RESPONSE = message(
    "AlterClientQuotasResponse",
    "0-1",
    "1+",
    field("throttle_time_ms", "int32"),
    array(
        "entries",
        field("error_code", "int16"),
        field("error_message", "string", nullable="0+", default=None),
        _ENTITY,
    ),
)

ALTER_CLIENT_QUOTAS = api(
    49,
    "AlterClientQuotas",
    "0-1",
    REQUEST,
    RESPONSE,
    listeners=frozenset({"broker", "controller"}),
)
