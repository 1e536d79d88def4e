"""EndQuorumEpoch (key 54): a resigning KRaft leader asks the voters to elect a successor.

Declared from Apache Kafka's EndQuorumEpochRequest/Response (validVersions 0-1, flexible 1+): v1
replaces ``preferred_successors`` with ``preferred_candidates`` carrying directory ids and adds
the leader's endpoints (KIP-853). Kafka serves it on the controller listener only; it is
declared for both because the declaration tests require every API on the broker listener (a
broker advertises only APIs it has handlers for, so nothing changes on the wire).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "EndQuorumEpochRequest",
    "0-1",
    "1+",
    field("cluster_id", "string", nullable="0+", default=None),
    array(
        "topics",
        field("topic_name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("leader_id", "int32"),
            field("leader_epoch", "int32"),
            field("preferred_successors", "[]int32", "0", ignorable=True),
            array(
                "preferred_candidates",
                field("candidate_id", "int32", "1+"),
                field("candidate_directory_id", "uuid", "1+"),
                versions="1+",
                ignorable=True,
            ),
        ),
    ),
    array(
        "leader_endpoints",
        field("name", "string", "1+"),
        field("host", "string", "1+"),
        field("port", "uint16", "1+"),
        versions="1+",
        ignorable=True,
    ),
)

RESPONSE = message(
    "EndQuorumEpochResponse",
    "0-1",
    "1+",
    field("error_code", "int16"),
    array(
        "topics",
        field("topic_name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
            field("leader_id", "int32"),
            field("leader_epoch", "int32"),
        ),
    ),
    array(
        "node_endpoints",
        field("node_id", "int32", "1+"),
        field("host", "string", "1+"),
        field("port", "uint16", "1+"),
        versions="1+",
        tag=0,
    ),
)

END_QUORUM_EPOCH = api(
    54, "EndQuorumEpoch", "0-1", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
