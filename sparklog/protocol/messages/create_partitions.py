"""CreatePartitions (key 37): an admin client adds partitions to existing topics.

Declared from Apache Kafka's CreatePartitionsRequest/Response (validVersions 0-3; v2+ is
flexible). ``count`` is the new total; a null ``assignments`` lets the controller place them.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "CreatePartitionsRequest",
    "0-3",
    "2+",
    array(
        "topics",
        field("name", "string"),
        field("count", "int32"),
        array(
            "assignments",
            field("broker_ids", "[]int32"),
            nullable="0+",
        ),
    ),
    field("timeout_ms", "int32"),
    field("validate_only", "bool"),
)

RESPONSE = message(
    "CreatePartitionsResponse",
    "0-3",
    "2+",
    field("throttle_time_ms", "int32"),
    array(
        "results",
        field("name", "string"),
        field("error_code", "int16"),
        field("error_message", "string", "0+", nullable="0+", default=None),
    ),
)

CREATE_PARTITIONS = api(
    37, "CreatePartitions", "0-3", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
