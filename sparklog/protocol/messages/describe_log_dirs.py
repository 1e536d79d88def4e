"""DescribeLogDirs (key 35): report log directories and the partition replicas they hold.

Declared from Apache Kafka's DescribeLogDirsRequest/Response (validVersions 1-4; v0 was removed
in 4.0). A null ``topics`` asks for every partition; v4 adds per-directory capacity.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DescribeLogDirsRequest",
    "1-4",
    "2+",
    array(
        "topics",
        field("topic", "string"),
        field("partitions", "[]int32"),
        nullable="0+",
    ),
)

RESPONSE = message(
    "DescribeLogDirsResponse",
    "1-4",
    "2+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16", "3+", ignorable=True),
    array(
        "results",
        field("error_code", "int16"),
        field("log_dir", "string"),
        array(
            "topics",
            field("name", "string"),
            array(
                "partitions",
                field("partition_index", "int32"),
                field("partition_size", "int64"),
                field("offset_lag", "int64"),
                field("is_future_key", "bool"),
            ),
        ),
        field("total_bytes", "int64", "4+", default=-1, ignorable=True),
        field("usable_bytes", "int64", "4+", default=-1, ignorable=True),
    ),
)

DESCRIBE_LOG_DIRS = api(35, "DescribeLogDirs", "1-4", REQUEST, RESPONSE)
