"""ElectLeaders (key 43): trigger preferred or unclean leader election for partitions.

Declared from Apache Kafka's ElectLeadersRequest/Response (validVersions 0-2). ``election_type``
(v1+) is 0 preferred, 1 unclean; a null ``topic_partitions`` means every partition.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "ElectLeadersRequest",
    "0-2",
    "2+",
    field("election_type", "int8", "1+"),
    array(
        "topic_partitions",
        field("topic", "string"),
        field("partitions", "[]int32"),
        nullable="0+",
    ),
    field("timeout_ms", "int32", "0+", default=60000),
)

RESPONSE = message(
    "ElectLeadersResponse",
    "0-2",
    "2+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16", "1+"),
    array(
        "replica_election_results",
        field("topic", "string"),
        array(
            "partition_result",
            field("partition_id", "int32"),
            field("error_code", "int16"),
            field("error_message", "string", "0+", nullable="0+"),
        ),
    ),
)

ELECT_LEADERS = api(
    43, "ElectLeaders", "0-2", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
