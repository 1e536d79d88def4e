"""ShareFetch (key 78): a share consumer fetches records it acquires for a time-bounded lock,
and may piggyback acknowledgements of records it acquired before.

Declared from Apache Kafka 4.2's ShareFetchRequest/Response (validVersions 1-2, flexible from
the first version). v1 replaced the per-partition byte limit with ``max_records`` and
``batch_size`` and returns the lock duration (``acquisition_lock_timeout_ms``); v2 (KIP-1206,
KIP-1222) adds ``share_acquire_mode`` (0 batch-optimized, 1 record-limit) and ``is_renew_ack``
(acknowledge type 4, RENEW, extends a lock). Acknowledge types: 0 gap, 1 accept, 2 release,
3 reject. The share session epoch is 0 to open a session, -1 to close it.
"""

from sparklog.protocol.schema import api, array, field, message, struct

_ACK_BATCH = (
    field("first_offset", "int64"),
    field("last_offset", "int64"),
    field("acknowledge_types", "[]int8"),
)

REQUEST = message(
    "ShareFetchRequest",
    "1-2",
    "1+",
    field("group_id", "string", nullable="1+", default=None),
    field("member_id", "string", nullable="1+", default=None),
    field("share_session_epoch", "int32"),
    field("max_wait_ms", "int32"),
    field("min_bytes", "int32"),
    field("max_bytes", "int32", default=0x7FFFFFFF),
    field("max_records", "int32"),
    field("batch_size", "int32"),
    field("share_acquire_mode", "int8", "2+", default=0),
    field("is_renew_ack", "bool", "2+", default=False),
    array(
        "topics",
        field("topic_id", "uuid"),
        array(
            "partitions",
            field("partition_index", "int32"),
            array("acknowledgement_batches", *_ACK_BATCH),
        ),
    ),
    array(
        "forgotten_topics_data",
        field("topic_id", "uuid"),
        field("partitions", "[]int32"),
    ),
)

_NODE_ENDPOINTS = array(
    "node_endpoints",
    field("node_id", "int32"),
    field("host", "string"),
    field("port", "int32"),
    field("rack", "string", nullable="1+", default=None),
)

RESPONSE = message(
    "ShareFetchResponse",
    "1-2",
    "1+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="1+", default=None),
    field("acquisition_lock_timeout_ms", "int32"),
    array(
        "responses",
        field("topic_id", "uuid"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
            field("error_message", "string", nullable="1+", default=None),
            field("acknowledge_error_code", "int16"),
            field("acknowledge_error_message", "string", nullable="1+", default=None),
            struct("current_leader", field("leader_id", "int32"), field("leader_epoch", "int32")),
            field("records", "records", nullable="1+"),
            array(
                "acquired_records",
                field("first_offset", "int64"),
                field("last_offset", "int64"),
                field("delivery_count", "int16"),
            ),
        ),
    ),
    _NODE_ENDPOINTS,
)

SHARE_FETCH = api(78, "ShareFetch", "1-2", REQUEST, RESPONSE)
