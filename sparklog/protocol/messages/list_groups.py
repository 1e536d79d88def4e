"""ListGroups (key 16): the groups this coordinator hosts, optionally filtered by state/type.

Declared from Apache Kafka's ListGroupsRequest/Response (validVersions 0-5, flexible 3+).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "ListGroupsRequest",
    "0-5",
    "3+",
    field("states_filter", "[]string", "4+"),
    field("types_filter", "[]string", "5+"),
)

RESPONSE = message(
    "ListGroupsResponse",
    "0-5",
    "3+",
    field("throttle_time_ms", "int32", "1+", ignorable=True),
    field("error_code", "int16"),
    array(
        "groups",
        field("group_id", "string"),
        field("protocol_type", "string"),
        field("group_state", "string", "4+", ignorable=True),
        field("group_type", "string", "5+", ignorable=True),
    ),
)

LIST_GROUPS = api(16, "ListGroups", "0-5", REQUEST, RESPONSE)
