"""ShareGroupDescribe (key 77): the state, epochs and members (with their assignments) of
KIP-932 share groups.

Declared from Apache Kafka 4.2's ShareGroupDescribeRequest/Response (validVersions 1,
flexible from the first version).
"""

from sparklog.protocol.schema import api, array, field, message, struct

REQUEST = message(
    "ShareGroupDescribeRequest",
    "1",
    "1+",
    field("group_ids", "[]string"),
    field("include_authorized_operations", "bool"),
)

_TOPIC_PARTITIONS = (
    field("topic_id", "uuid"),
    field("topic_name", "string"),
    field("partitions", "[]int32"),
)

RESPONSE = message(
    "ShareGroupDescribeResponse",
    "1",
    "1+",
    field("throttle_time_ms", "int32"),
    array(
        "groups",
        field("error_code", "int16"),
        field("error_message", "string", nullable="1+", default=None),
        field("group_id", "string"),
        field("group_state", "string"),
        field("group_epoch", "int32"),
        field("assignment_epoch", "int32"),
        field("assignor_name", "string"),
        array(
            "members",
            field("member_id", "string"),
            field("rack_id", "string", nullable="1+", default=None),
            field("member_epoch", "int32"),
            field("client_id", "string"),
            field("client_host", "string"),
            field("subscribed_topic_names", "[]string"),
            struct("assignment", array("topic_partitions", *_TOPIC_PARTITIONS)),
        ),
        field("authorized_operations", "int32", default=-2147483648),
    ),
)

SHARE_GROUP_DESCRIBE = api(77, "ShareGroupDescribe", "1", REQUEST, RESPONSE)
