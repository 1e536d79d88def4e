"""OffsetDelete (key 47): delete committed offsets of partitions a group no longer consumes.

Declared from Apache Kafka's OffsetDeleteRequest/Response (validVersions 0, not flexible).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "OffsetDeleteRequest",
    "0",
    "none",
    field("group_id", "string"),
    array(
        "topics",
        field("name", "string"),
        array("partitions", field("partition_index", "int32")),
    ),
)

RESPONSE = message(
    "OffsetDeleteResponse",
    "0",
    "none",
    field("error_code", "int16"),
    field("throttle_time_ms", "int32", ignorable=True),
    array(
        "topics",
        field("name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
        ),
    ),
)

OFFSET_DELETE = api(47, "OffsetDelete", "0", REQUEST, RESPONSE)
