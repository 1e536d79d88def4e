"""DescribeShareGroupOffsets (key 90): the share-partition start offsets of share groups, asked
of their group coordinator (KIP-932; kafka-share-groups.sh --describe --offsets).

Declared from Apache Kafka 4.2's DescribeShareGroupOffsetsRequest/Response (validVersions 0-1,
flexible 0+): version 1 (KIP-1226) adds each partition's ``Lag`` to the response (-1 when it
cannot be computed), the request is the same. A null topic list asks for every topic-partition
the group has state for.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DescribeShareGroupOffsetsRequest",
    "0-1",
    "0+",
    array(
        "groups",
        field("group_id", "string"),
        array(
            "topics",
            field("topic_name", "string"),
            field("partitions", "[]int32"),
            nullable="0+",
        ),
    ),
)

RESPONSE = message(
    "DescribeShareGroupOffsetsResponse",
    "0-1",
    "0+",
    field("throttle_time_ms", "int32"),
    array(
        "groups",
        field("group_id", "string"),
        array(
            "topics",
            field("topic_name", "string"),
            field("topic_id", "uuid"),
            array(
                "partitions",
                field("partition_index", "int32"),
                field("start_offset", "int64"),
                field("leader_epoch", "int32"),
                field("lag", "int64", "1+", default=-1, ignorable=True),
                field("error_code", "int16"),
                field("error_message", "string", nullable="0+", default=None),
            ),
        ),
        field("error_code", "int16"),
        field("error_message", "string", nullable="0+", default=None),
    ),
)

DESCRIBE_SHARE_GROUP_OFFSETS = api(90, "DescribeShareGroupOffsets", "0-1", REQUEST, RESPONSE)
