"""Vote (key 52): a KRaft candidate asks a voter for its vote; with ``pre_vote`` (v2, KIP-996)
a prospective asks whether it *would* get it, changing no state.

Declared from Apache Kafka's VoteRequest/Response (validVersions 0-2, flexible 0+): v1 adds the
directory ids of both replicas and the leader's endpoints (KIP-853), v2 ``pre_vote``. The
candidate fields are named ``replica_*`` as in Kafka 4.x (a pre-vote's epoch is not bumped).
Kafka serves it on the controller listener only; it is declared for both because the declaration
tests require every API on the broker listener (a broker advertises only APIs it has handlers
for, so nothing changes on the wire).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "VoteRequest",
    "0-2",
    "0+",
    field("cluster_id", "string", nullable="0+", default=None),
    field("voter_id", "int32", "1+", default=-1, ignorable=True),
    array(
        "topics",
        field("topic_name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("replica_epoch", "int32"),
            field("replica_id", "int32"),
            field("replica_directory_id", "uuid", "1+", ignorable=True),
            field("voter_directory_id", "uuid", "1+", ignorable=True),
            field("last_offset_epoch", "int32"),
            field("last_offset", "int64"),
            field("pre_vote", "bool", "2+"),
        ),
    ),
)

RESPONSE = message(
    "VoteResponse",
    "0-2",
    "0+",
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
            field("vote_granted", "bool"),
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

VOTE = api(52, "Vote", "0-2", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"}))
