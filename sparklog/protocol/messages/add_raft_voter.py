"""AddRaftVoter (key 80): add a controller to the KRaft voter set (KIP-853).

Declared from Apache Kafka's AddRaftVoterRequest/Response (request validVersions 0-1, flexible
0+; v1 adds ``ack_when_committed``). Served on both listeners; a broker forwards it to the
active controller. Errors: NOT_LEADER_OR_FOLLOWER, DUPLICATE_VOTER, UNSUPPORTED_VERSION,
INVALID_REQUEST, REQUEST_TIMED_OUT (see ``sparklog.raft.voter_changes``).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "AddRaftVoterRequest",
    "0-1",
    "0+",
    field("cluster_id", "string", nullable="0+", default=None),
    field("timeout_ms", "int32"),
    field("voter_id", "int32"),
    field("voter_directory_id", "uuid"),
    array("listeners", field("name", "string"), field("host", "string"), field("port", "uint16")),
    field("ack_when_committed", "bool", "1+", default=True, ignorable=True),
)

RESPONSE = message(
    "AddRaftVoterResponse",
    "0-1",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None, ignorable=True),
)

ADD_RAFT_VOTER = api(
    80, "AddRaftVoter", "0-1", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
