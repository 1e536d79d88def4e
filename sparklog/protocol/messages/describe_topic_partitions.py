"""DescribeTopicPartitions (key 75): paginated partition metadata with ELR fields (KIP-966).

Declared from Apache Kafka's DescribeTopicPartitionsRequest/Response (validVersions 0,
flexible). An empty ``topics`` asks for every topic; ``cursor`` names the topic and partition
to resume from and ``next_cursor`` (null when done) where the next page starts.
"""

from sparklog.protocol.schema import api, array, field, message, struct

REQUEST = message(
    "DescribeTopicPartitionsRequest",
    "0",
    "0+",
    array("topics", field("name", "string")),
    field("response_partition_limit", "int32", default=2000),
    struct(
        "cursor",
        field("topic_name", "string"),
        field("partition_index", "int32"),
        nullable="0+",
        default=None,
    ),
)

RESPONSE = message(
    "DescribeTopicPartitionsResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32", ignorable=True),
    array(
        "topics",
        field("error_code", "int16"),
        field("name", "string", nullable="0+"),
        field("topic_id", "uuid", ignorable=True),
        field("is_internal", "bool", default=False, ignorable=True),
        array(
            "partitions",
            field("error_code", "int16"),
            field("partition_index", "int32"),
            field("leader_id", "int32"),
            field("leader_epoch", "int32", default=-1, ignorable=True),
            field("replica_nodes", "[]int32"),
            field("isr_nodes", "[]int32"),
            field("eligible_leader_replicas", "[]int32", nullable="0+", default=None),
            field("last_known_elr", "[]int32", nullable="0+", default=None),
            field("offline_replicas", "[]int32", ignorable=True),
        ),
        field("topic_authorized_operations", "int32", default=-2147483648),
    ),
    struct(
        "next_cursor",
        field("topic_name", "string"),
        field("partition_index", "int32"),
        nullable="0+",
        default=None,
    ),
)

DESCRIBE_TOPIC_PARTITIONS = api(75, "DescribeTopicPartitions", "0", REQUEST, RESPONSE)
