"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch, for log truncation.

Declared from Apache Kafka's OffsetForLeaderEpochRequest/Response (validVersions 2-4; v0-1 were
removed in 4.0). Followers and consumers (KIP-320) ask which offset ends ``leader_epoch`` so they
can detect and truncate a diverged log. ``replica_id`` (v3+) is -1 for consumers, -2 (the
default) for requests that predate the field.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "OffsetForLeaderEpochRequest",
    "2-4",
    "4+",
    field("replica_id", "int32", "3+", default=-2, ignorable=True),
    array(
        "topics",
        field("topic", "string"),
        array(
            "partitions",
            field("partition", "int32"),
            field("current_leader_epoch", "int32", "2+", default=-1, ignorable=True),
            field("leader_epoch", "int32"),
        ),
    ),
)

RESPONSE = message(
    "OffsetForLeaderEpochResponse",
    "2-4",
    "4+",
    field("throttle_time_ms", "int32", "2+", ignorable=True),
    array(
        "topics",
        field("topic", "string"),
        array(
            "partitions",
            field("error_code", "int16"),
            field("partition", "int32"),
            field("leader_epoch", "int32", "1+", default=-1, ignorable=True),
            field("end_offset", "int64", "0+", default=-1),
        ),
    ),
)

OFFSET_FOR_LEADER_EPOCH = api(23, "OffsetForLeaderEpoch", "2-4", REQUEST, RESPONSE)
