"""AlterPartitionReassignments (key 45): start, change or cancel partition reassignments.

Declared from Apache Kafka's AlterPartitionReassignmentsRequest/Response (validVersions 0-1,
flexible). A null ``replicas`` cancels the partition's pending reassignment (KIP-455); v1's
``allow_replication_factor_change`` (KIP-860, default true) false refuses a target whose
replica count differs from the current one, and the response echoes it.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "AlterPartitionReassignmentsRequest",
    "0-1",
    "0+",
    field("timeout_ms", "int32", default=60000),
    field("allow_replication_factor_change", "bool", "1+", default=True),
    array(
        "topics",
        field("name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("replicas", "[]int32", nullable="0+", default=None),
        ),
    ),
)

RESPONSE = message(
    "AlterPartitionReassignmentsResponse",
    "0-1",
    "0+",
    field("throttle_time_ms", "int32"),
    field("allow_replication_factor_change", "bool", "1+", default=True, ignorable=True),
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None),
    array(
        "responses",
        field("name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
            field("error_message", "string", nullable="0+", default=None),
        ),
    ),
)

ALTER_PARTITION_REASSIGNMENTS = api(
    45,
    "AlterPartitionReassignments",
    "0-1",
    REQUEST,
    RESPONSE,
    listeners=frozenset({"broker", "controller"}),
)
