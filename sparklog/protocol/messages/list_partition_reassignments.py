"""ListPartitionReassignments (key 46): the partition reassignments in progress.

Declared from Apache Kafka's ListPartitionReassignmentsRequest/Response (validVersions 0,
flexible). A null ``topics`` lists every reassignment in progress.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "ListPartitionReassignmentsRequest",
    "0",
    "0+",
    field("timeout_ms", "int32", default=60000),
    array(
        "topics",
        field("name", "string"),
        field("partition_indexes", "[]int32"),
        nullable="0+",
        default=None,
    ),
)

RESPONSE = message(
    "ListPartitionReassignmentsResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None),
    array(
        "topics",
        field("name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("replicas", "[]int32"),
            field("adding_replicas", "[]int32"),
            field("removing_replicas", "[]int32"),
        ),
    ),
)

LIST_PARTITION_REASSIGNMENTS = api(
    46,
    "ListPartitionReassignments",
    "0",
    REQUEST,
    RESPONSE,
    listeners=frozenset({"broker", "controller"}),
)
