"""WriteShareGroupState (key 85): a share-partition leader persists its start offset and state
batches with the share coordinator (KIP-932, inter-broker); a write naming an older leader epoch
than the coordinator has seen is FENCED_LEADER_EPOCH.

Declared from Apache Kafka 4.2's WriteShareGroupStateRequest/Response (validVersions 0-1,
flexible 0+); both are served. v1 adds KIP-1226's ``DeliveryCompleteCount`` to each partition
(the offsets at or after the start offset whose delivery is complete); the share coordinator
derives that count from the state batches it keeps, so the field is read and not stored.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "WriteShareGroupStateRequest",
    "0-1",
    "0+",
    field("group_id", "string"),
    array(
        "topics",
        field("topic_id", "uuid"),
        array(
            "partitions",
            field("partition", "int32"),
            field("state_epoch", "int32"),
            field("leader_epoch", "int32"),
            field("start_offset", "int64"),
            field("delivery_complete_count", "int32", "1+", default=-1),
            array(
                "state_batches",
                field("first_offset", "int64"),
                field("last_offset", "int64"),
                field("delivery_state", "int8"),
                field("delivery_count", "int16"),
            ),
        ),
    ),
)

RESPONSE = message(
    "WriteShareGroupStateResponse",
    "0-1",
    "0+",
    array(
        "results",
        field("topic_id", "uuid"),
        array(
            "partitions",
            field("partition", "int32"),
            field("error_code", "int16"),
            field("error_message", "string", nullable="0+", default=None),
        ),
    ),
)

WRITE_SHARE_GROUP_STATE = api(85, "WriteShareGroupState", "0-1", REQUEST, RESPONSE)
