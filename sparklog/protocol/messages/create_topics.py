"""CreateTopics (key 19): an admin client creates topics.

Declared from Apache Kafka's CreateTopicsRequest/Response (validVersions 2-7; v0-1 were removed
in 4.0). ``num_partitions``/``replication_factor`` are -1 when ``assignments`` are given or
the broker defaults apply. v5+ returns the resulting configs; v7 returns the new topic id.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "CreateTopicsRequest",
    "2-7",
    "5+",
    array(
        "topics",
        field("name", "string"),
        field("num_partitions", "int32"),
        field("replication_factor", "int16"),
        array(
            "assignments",
            field("partition_index", "int32"),
            field("broker_ids", "[]int32"),
        ),
        array(
            "configs",
            field("name", "string"),
            field("value", "string", "0+", nullable="0+"),
        ),
    ),
    field("timeout_ms", "int32", "0+", default=60000),
    field("validate_only", "bool", "1+"),
)

RESPONSE = message(
    "CreateTopicsResponse",
    "2-7",
    "5+",
    field("throttle_time_ms", "int32", "2+", ignorable=True),
    array(
        "topics",
        field("name", "string"),
        field("topic_id", "uuid", "7+", ignorable=True),
        field("error_code", "int16"),
        field("error_message", "string", "1+", nullable="1+", ignorable=True),
        field("topic_config_error_code", "int16", "5+", tag=0, ignorable=True),
        field("num_partitions", "int32", "5+", default=-1, ignorable=True),
        field("replication_factor", "int16", "5+", default=-1, ignorable=True),
        array(
            "configs",
            field("name", "string", "5+"),
            field("value", "string", "5+", nullable="5+"),
            field("read_only", "bool", "5+"),
            field("config_source", "int8", "5+", default=-1, ignorable=True),
            field("is_sensitive", "bool", "5+"),
            versions="5+",
            nullable="5+",
            ignorable=True,
        ),
    ),
)

CREATE_TOPICS = api(
    19, "CreateTopics", "2-7", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
