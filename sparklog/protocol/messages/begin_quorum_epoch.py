"""BeginQuorumEpoch (key 53): a newly elected KRaft leader tells the voters of its epoch.

Declared from Apache Kafka's BeginQuorumEpochRequest/Response (validVersions 0-1, flexible 1+):
v1 adds the receiving voter's id and directory id and the leader's endpoints (KIP-853).
Kafka serves it on the controller listener only; it is declared for both because the declaration
tests require every API on the broker listener (a broker advertises only APIs it has handlers
for, so nothing changes on the wire).
"""

from sparklog.protocol.schema import api, array, field, message

_PARTITION_RESPONSE = (
    field("partition_index", "int32"),
    field("error_code", "int16"),
    field("leader_id", "int32"),
    field("leader_epoch", "int32"),
)

REQUEST = message(
    "BeginQuorumEpochRequest",
    "0-1",
    "1+",
    field("cluster_id", "string", nullable="0+", default=None),
    field("voter_id", "int32", "1+", default=-1, ignorable=True),
    array(
        "topics",
        field("topic_name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("voter_directory_id", "uuid", "1+", ignorable=True),
            field("leader_id", "int32"),
            field("leader_epoch", "int32"),
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
    "BeginQuorumEpochResponse",
    "0-1",
    "1+",
    field("error_code", "int16"),
    array("topics", field("topic_name", "string"), array("partitions", *_PARTITION_RESPONSE)),
    array(
        "node_endpoints",
        field("node_id", "int32", "1+"),
        field("host", "string", "1+"),
        field("port", "uint16", "1+"),
        versions="1+",
        tag=0,
    ),
)

BEGIN_QUORUM_EPOCH = api(
    53, "BeginQuorumEpoch", "0-1", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
