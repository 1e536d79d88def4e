"""UpdateRaftVoter (key 82): a voter tells the KRaft leader its endpoints and supported
``kraft.version`` range (KIP-853).

Declared from Apache Kafka's UpdateRaftVoterRequest/Response (validVersions 0, flexible 0+).
Kafka serves it on the controller listener only; it is declared for both because
the declaration tests require every API on the broker listener (a broker advertises only APIs
it has handlers for, so nothing changes on the wire).
Errors: NOT_LEADER_OR_FOLLOWER, VOTER_NOT_FOUND,
INVALID_REQUEST, REQUEST_TIMED_OUT.
"""

from sparklog.protocol.schema import api, array, field, message, struct

REQUEST = message(
    "UpdateRaftVoterRequest",
    "0",
    "0+",
    field("cluster_id", "string", nullable="0+", default=None),
    field("current_leader_epoch", "int32"),
    field("voter_id", "int32"),
    field("voter_directory_id", "uuid"),
    array("listeners", field("name", "string"), field("host", "string"), field("port", "uint16")),
    struct(
        "kraft_version_feature",
        field("min_supported_version", "int16"),
        field("max_supported_version", "int16"),
    ),
)

RESPONSE = message(
    "UpdateRaftVoterResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    struct(
        "current_leader",
        field("leader_id", "int32", default=-1),
        field("leader_epoch", "int32", default=-1),
        field("host", "string"),
        field("port", "int32"),
        tag=0,
    ),
)

UPDATE_RAFT_VOTER = api(
    82, "UpdateRaftVoter", "0", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
