"""ListOffsets (key 2): resolve a timestamp or a special spec to an offset per partition.

Declared from Apache Kafka's ListOffsetsRequest/Response (validVersions 1-11; v0 was removed in
4.0). ``timestamp`` is a real timestamp or a spec: -1 latest, -2 earliest, -3 max timestamp
(v7+), -4 earliest local (v8+), -5 latest tiered (v9+), -6 earliest pending upload (v11).
v11 is newer than Apache Kafka 4.1, so we serve 1-10.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "ListOffsetsRequest",
    "1-11",
    "6+",
    field("replica_id", "int32"),
    field("isolation_level", "int8", "2+"),
    array(
        "topics",
        field("name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("current_leader_epoch", "int32", "4+", default=-1, ignorable=True),
            field("timestamp", "int64"),
        ),
    ),
    field("timeout_ms", "int32", "10+", ignorable=True),
)

RESPONSE = message(
    "ListOffsetsResponse",
    "1-11",
    "6+",
    field("throttle_time_ms", "int32", "2+", ignorable=True),
    array(
        "topics",
        field("name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
            field("timestamp", "int64", "1+", default=-1),
            field("offset", "int64", "1+", default=-1),
            field("leader_epoch", "int32", "4+", default=-1),
        ),
    ),
)

LIST_OFFSETS = api(2, "ListOffsets", "1-10", REQUEST, RESPONSE)
