"""AlterShareGroupOffsets (key 91): set the start offsets of an empty share group's
share-partitions (KIP-932; kafka-share-groups.sh --reset-offsets --execute).

Declared from Apache Kafka 4.2's AlterShareGroupOffsetsRequest/Response (validVersions 0,
flexible 0+).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "AlterShareGroupOffsetsRequest",
    "0",
    "0+",
    field("group_id", "string"),
    array(
        "topics",
        field("topic_name", "string"),
        array("partitions", field("partition_index", "int32"), field("start_offset", "int64")),
    ),
)

RESPONSE = message(
    "AlterShareGroupOffsetsResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None),
    array(
        "responses",
        field("topic_name", "string"),
        field("topic_id", "uuid"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
            field("error_message", "string", nullable="0+", default=None),
        ),
    ),
)

ALTER_SHARE_GROUP_OFFSETS = api(91, "AlterShareGroupOffsets", "0", REQUEST, RESPONSE)
