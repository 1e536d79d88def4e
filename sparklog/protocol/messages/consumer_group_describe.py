"""ConsumerGroupDescribe (key 69): the state, epochs and members of KIP-848 consumer groups.

Declared from Apache Kafka 4.x's ConsumerGroupDescribeRequest/Response (validVersions 0-1,
flexible 0+; v1 adds the member type of KIP-1099).
"""

from sparklog.protocol.schema import api, array, field, message, struct

REQUEST = message(
    "ConsumerGroupDescribeRequest",
    "0-1",
    "0+",
    field("group_ids", "[]string"),
    field("include_authorized_operations", "bool"),
)


_TOPIC_PARTITIONS = (
    field("topic_id", "uuid"),
    field("topic_name", "string"),
    field("partitions", "[]int32"),
)

RESPONSE = message(
    "ConsumerGroupDescribeResponse",
    "0-1",
    "0+",
    field("throttle_time_ms", "int32"),
    array(
        "groups",
        field("error_code", "int16"),
        field("error_message", "string", nullable="0+", default=None),
        field("group_id", "string"),
        field("group_state", "string"),
        field("group_epoch", "int32"),
        field("assignment_epoch", "int32"),
        field("assignor_name", "string"),
        array(
            "members",
            field("member_id", "string"),
            field("instance_id", "string", nullable="0+", default=None),
            field("rack_id", "string", nullable="0+", default=None),
            field("member_epoch", "int32"),
            field("client_id", "string"),
            field("client_host", "string"),
            field("subscribed_topic_names", "[]string"),
            field("subscribed_topic_regex", "string", nullable="0+", default=None),
            struct("assignment", array("topic_partitions", *_TOPIC_PARTITIONS)),
            struct("target_assignment", array("topic_partitions", *_TOPIC_PARTITIONS)),
            field("member_type", "int8", "1+", default=-1, ignorable=True),
        ),
        field("authorized_operations", "int32", default=-2147483648),
    ),
)

CONSUMER_GROUP_DESCRIBE = api(69, "ConsumerGroupDescribe", "0-1", REQUEST, RESPONSE)
