"""JoinGroup (key 11): a member joins a classic group and waits for the rebalance to complete.

Declared from Apache Kafka's JoinGroupRequest/Response (validVersions 0-9, flexible 6+). v4+
clients join twice: the first join with an empty member id is answered MEMBER_ID_REQUIRED
with the id to use (KIP-394); v5 adds static membership (``group_instance_id``, KIP-345).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "JoinGroupRequest",
    "0-9",
    "6+",
    field("group_id", "string"),
    field("session_timeout_ms", "int32"),
    field("rebalance_timeout_ms", "int32", "1+", default=-1, ignorable=True),
    field("member_id", "string"),
    field("group_instance_id", "string", "5+", nullable="5+", default=None),
    field("protocol_type", "string"),
    array(
        "protocols",
        field("name", "string"),
        field("metadata", "bytes"),
    ),
    field("reason", "string", "8+", nullable="8+", default=None, ignorable=True),
)

RESPONSE = message(
    "JoinGroupResponse",
    "0-9",
    "6+",
    field("throttle_time_ms", "int32", "2+", ignorable=True),
    field("error_code", "int16"),
    field("generation_id", "int32", default=-1),
    field("protocol_type", "string", "7+", nullable="7+", default=None, ignorable=True),
    field("protocol_name", "string", nullable="7+"),
    field("leader", "string"),
    field("skip_assignment", "bool", "9+"),
    field("member_id", "string"),
    array(
        "members",
        field("member_id", "string"),
        field("group_instance_id", "string", "5+", nullable="5+", default=None, ignorable=True),
        field("metadata", "bytes"),
    ),
)

JOIN_GROUP = api(11, "JoinGroup", "0-9", REQUEST, RESPONSE)
