"""OffsetFetch (key 9): read a group's committed offsets (v8+: several groups per request).

Declared from Apache Kafka's OffsetFetchRequest/Response (validVersions 1-10, flexible 6+;
v0 was removed in Kafka 4.0). A null topic list asks for every committed offset; v10 names
topics by id.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "OffsetFetchRequest",
    "1-10",
    "6+",
    field("group_id", "string", "0-7"),
    array(
        "topics",
        field("name", "string", "0-7"),
        field("partition_indexes", "[]int32", "0-7"),
        versions="0-7",
        nullable="2-7",
    ),
    array(
        "groups",
        field("group_id", "string", "8+"),
        field("member_id", "string", "9+", nullable="9+", default=None, ignorable=True),
        field("member_epoch", "int32", "9+", default=-1, ignorable=True),
        array(
            "topics",
            field("name", "string", "8-9", ignorable=True),
            field("topic_id", "uuid", "10+", ignorable=True),
            field("partition_indexes", "[]int32", "8+"),
            versions="8+",
            nullable="8+",
        ),
        versions="8+",
    ),
    field("require_stable", "bool", "7+"),
)

_PARTITION_FIELDS = (
    field("partition_index", "int32"),
    field("committed_offset", "int64"),
)

RESPONSE = message(
    "OffsetFetchResponse",
    "1-10",
    "6+",
    field("throttle_time_ms", "int32", "3+", ignorable=True),
    array(
        "topics",
        field("name", "string", "0-7"),
        array(
            "partitions",
            *_PARTITION_FIELDS,
            field("committed_leader_epoch", "int32", "5-7", default=-1, ignorable=True),
            field("metadata", "string", "0-7", nullable="0-7"),
            field("error_code", "int16", "0-7"),
            versions="0-7",
        ),
        versions="0-7",
    ),
    field("error_code", "int16", "2-7", ignorable=True),
    array(
        "groups",
        field("group_id", "string", "8+"),
        array(
            "topics",
            field("name", "string", "8-9", ignorable=True),
            field("topic_id", "uuid", "10+", ignorable=True),
            array(
                "partitions",
                *_PARTITION_FIELDS,
                field("committed_leader_epoch", "int32", "8+", default=-1, ignorable=True),
                field("metadata", "string", "8+", nullable="8+"),
                field("error_code", "int16", "8+"),
                versions="8+",
            ),
            versions="8+",
        ),
        field("error_code", "int16", "8+"),
        versions="8+",
    ),
)

OFFSET_FETCH = api(9, "OffsetFetch", "1-10", REQUEST, RESPONSE)
