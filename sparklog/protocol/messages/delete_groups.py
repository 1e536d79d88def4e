"""DeleteGroups (key 42): delete empty groups and their committed offsets.

Declared from Apache Kafka's DeleteGroupsRequest/Response (validVersions 0-2, flexible 2+).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DeleteGroupsRequest",
    "0-2",
    "2+",
    field("groups_names", "[]string"),
)

RESPONSE = message(
    "DeleteGroupsResponse",
    "0-2",
    "2+",
    field("throttle_time_ms", "int32"),
    array(
        "results",
        field("group_id", "string"),
        field("error_code", "int16"),
    ),
)

DELETE_GROUPS = api(42, "DeleteGroups", "0-2", REQUEST, RESPONSE)
