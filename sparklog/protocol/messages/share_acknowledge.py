"""ShareAcknowledge (key 79): a share consumer acknowledges acquired records without fetching
(commitSync/commitAsync, and on close with share session epoch -1).

Declared from Apache Kafka 4.2's ShareAcknowledgeRequest/Response (validVersions 1-2,
flexible from the first version); v2 adds ``is_renew_ack`` to the request and the lock
duration to the response (KIP-1222).
"""

from sparklog.protocol.schema import api, array, field, message, struct

REQUEST = message(
    "ShareAcknowledgeRequest",
    "1-2",
    "1+",
    field("group_id", "string", nullable="1+", default=None),
    field("member_id", "string", nullable="1+", default=None),
    field("share_session_epoch", "int32"),
    field("is_renew_ack", "bool", "2+", default=False),
    array(
        "topics",
        field("topic_id", "uuid"),
        array(
            "partitions",
            field("partition_index", "int32"),
            array(
                "acknowledgement_batches",
                field("first_offset", "int64"),
                field("last_offset", "int64"),
                field("acknowledge_types", "[]int8"),
            ),
        ),
    ),
)

RESPONSE = message(
    "ShareAcknowledgeResponse",
    "1-2",
    "1+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="1+", default=None),
    field("acquisition_lock_timeout_ms", "int32", "2+", default=0),
    array(
        "responses",
        field("topic_id", "uuid"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
            field("error_message", "string", nullable="1+", default=None),
            struct("current_leader", field("leader_id", "int32"), field("leader_epoch", "int32")),
        ),
    ),
    array(
        "node_endpoints",
        field("node_id", "int32"),
        field("host", "string"),
        field("port", "int32"),
        field("rack", "string", nullable="1+", default=None),
    ),
)

SHARE_ACKNOWLEDGE = api(79, "ShareAcknowledge", "1-2", REQUEST, RESPONSE)
