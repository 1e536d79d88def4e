"""RemoveRaftVoter (key 81): remove a controller from the KRaft voter set (KIP-853).

Declared from Apache Kafka's RemoveRaftVoterRequest/Response (validVersions 0, flexible 0+).
Served on both listeners. Errors: NOT_LEADER_OR_FOLLOWER, VOTER_NOT_FOUND,
UNSUPPORTED_VERSION, REQUEST_TIMED_OUT.
"""

from sparklog.protocol.schema import api, field, message

REQUEST = message(
    "RemoveRaftVoterRequest",
    "0",
    "0+",
    field("cluster_id", "string", nullable="0+", default=None),
    field("voter_id", "int32"),
    field("voter_directory_id", "uuid"),
)

RESPONSE = message(
    "RemoveRaftVoterResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None, ignorable=True),
)

REMOVE_RAFT_VOTER = api(
    81, "RemoveRaftVoter", "0", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
