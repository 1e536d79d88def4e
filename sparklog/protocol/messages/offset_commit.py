"""OffsetCommit (key 8): store a group's committed offsets.

Declared from Apache Kafka's OffsetCommitRequest/Response (validVersions 2-10, flexible 8+;
v0-1 were removed in Kafka 4.0). v2-4 carry a retention time that the broker ignores, as
Kafka's does since offsets retention became broker configuration; v10 names topics by id.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "OffsetCommitRequest",
    "2-10",
    "8+",
    field("group_id", "string"),
    field("generation_id_or_member_epoch", "int32", "1+", default=-1, ignorable=True),
    field("member_id", "string", "1+", ignorable=True),
    field("group_instance_id", "string", "7+", nullable="7+", default=None),
    field("retention_time_ms", "int64", "2-4", default=-1, ignorable=True),
    array(
        "topics",
        field("name", "string", "0-9", ignorable=True),
        field("topic_id", "uuid", "10+", ignorable=True),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("committed_offset", "int64"),
            field("committed_leader_epoch", "int32", "6+", default=-1, ignorable=True),
            field("committed_metadata", "string", nullable="0+"),
        ),
    ),
)

RESPONSE = message(
    "OffsetCommitResponse",
    "2-10",
    "8+",
    field("throttle_time_ms", "int32", "3+", ignorable=True),
    array(
        "topics",
        field("name", "string", "0-9", ignorable=True),
        field("topic_id", "uuid", "10+", ignorable=True),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
        ),
    ),
)

OFFSET_COMMIT = api(8, "OffsetCommit", "2-10", REQUEST, RESPONSE)
