"""DescribeGroups (key 15): state, protocol and members of classic groups.

Declared from Apache Kafka's DescribeGroupsRequest/Response (validVersions 0-6, flexible 5+).
v6 answers GROUP_ID_NOT_FOUND for an unknown group (KIP-1043); older versions describe it as
a Dead group with no error.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DescribeGroupsRequest",
    "0-6",
    "5+",
    field("groups", "[]string"),
    field("include_authorized_operations", "bool", "3+"),
)

RESPONSE = message(
    "DescribeGroupsResponse",
    "0-6",
    "5+",
    field("throttle_time_ms", "int32", "1+", ignorable=True),
    array(
        "groups",
        field("error_code", "int16"),
        field("error_message", "string", "6+", nullable="6+", default=None),
        field("group_id", "string"),
        field("group_state", "string"),
        field("protocol_type", "string"),
        field("protocol_data", "string"),
        array(
            "members",
            field("member_id", "string"),
            field("group_instance_id", "string", "4+", nullable="4+", default=None, ignorable=True),
            field("client_id", "string"),
            field("client_host", "string"),
            field("member_metadata", "bytes"),
            field("member_assignment", "bytes"),
        ),
        field("authorized_operations", "int32", "3+", default=-2147483648),
    ),
)

DESCRIBE_GROUPS = api(15, "DescribeGroups", "0-6", REQUEST, RESPONSE)
