"""ConsumerGroupHeartbeat (key 68): a KIP-848 consumer joins, heartbeats, reconciles and
leaves its group through this one API.

Declared from Apache Kafka 4.x's ConsumerGroupHeartbeatRequest/Response (validVersions 0-1,
flexible 0+; v1 adds SubscribedTopicRegex and has the client generate its member id).
"""

from sparklog.protocol.schema import api, array, field, message, struct

_TOPIC_PARTITIONS = (field("topic_id", "uuid"), field("partitions", "[]int32"))

REQUEST = message(
    "ConsumerGroupHeartbeatRequest",
    "0-1",
    "0+",
    field("group_id", "string"),
    field("member_id", "string"),
    field("member_epoch", "int32"),
    field("instance_id", "string", nullable="0+", default=None),
    field("rack_id", "string", nullable="0+", default=None),
    field("rebalance_timeout_ms", "int32", default=-1),
    field("subscribed_topic_names", "[]string", nullable="0+", default=None),
    field("subscribed_topic_regex", "string", "1+", nullable="1+", default=None),
    field("server_assignor", "string", nullable="0+", default=None),
    array("topic_partitions", *_TOPIC_PARTITIONS, nullable="0+", default=None),
)

RESPONSE = message(
    "ConsumerGroupHeartbeatResponse",
    "0-1",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None),
    field("member_id", "string", nullable="0+", default=None),
    field("member_epoch", "int32"),
    field("heartbeat_interval_ms", "int32"),
    struct(
        "assignment",
        array("topic_partitions", *_TOPIC_PARTITIONS),
        nullable="0+",
        default=None,
    ),
)

CONSUMER_GROUP_HEARTBEAT = api(68, "ConsumerGroupHeartbeat", "0-1", REQUEST, RESPONSE)
