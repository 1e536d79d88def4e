"""DeleteShareGroupOffsets (key 92): forget an empty share group's state for whole topics
(KIP-932; kafka-share-groups.sh --delete-offsets).

Declared from Apache Kafka 4.2's DeleteShareGroupOffsetsRequest/Response (validVersions 0,
flexible 0+).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DeleteShareGroupOffsetsRequest",
    "0",
    "0+",
    field("group_id", "string"),
    array("topics", field("topic_name", "string")),
)

RESPONSE = message(
    "DeleteShareGroupOffsetsResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None),
    array(
        "responses",
        field("topic_name", "string"),
        field("topic_id", "uuid"),
        field("error_code", "int16"),
        field("error_message", "string", nullable="0+", default=None),
    ),
)

DELETE_SHARE_GROUP_OFFSETS = api(92, "DeleteShareGroupOffsets", "0", REQUEST, RESPONSE)
