"""LeaveGroup (key 13): members leave a classic group (one member in v0-2, a batch in v3+).

Declared from Apache Kafka's LeaveGroupRequest/Response (validVersions 0-5, flexible 4+).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "LeaveGroupRequest",
    "0-5",
    "4+",
    field("group_id", "string"),
    field("member_id", "string", "0-2"),
    array(
        "members",
        field("member_id", "string", "3+"),
        field("group_instance_id", "string", "3+", nullable="3+", default=None),
        field("reason", "string", "5+", nullable="5+", default=None, ignorable=True),
        versions="3+",
    ),
)

RESPONSE = message(
    "LeaveGroupResponse",
    "0-5",
    "4+",
    field("throttle_time_ms", "int32", "1+", ignorable=True),
    field("error_code", "int16"),
    array(
        "members",
        field("member_id", "string", "3+"),
        field("group_instance_id", "string", "3+", nullable="3+"),
        field("error_code", "int16", "3+"),
        versions="3+",
    ),
)

LEAVE_GROUP = api(13, "LeaveGroup", "0-5", REQUEST, RESPONSE)
