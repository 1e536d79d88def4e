"""ReadShareGroupState (key 84): a share-partition's new leader reads its persisted state (start
offset and state batches) from the share coordinator (KIP-932, inter-broker). The leader epoch
it names fences writes of older leaders.

Declared from Apache Kafka 4.2's ReadShareGroupStateRequest/Response (validVersions 0,
flexible 0+).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "ReadShareGroupStateRequest",
    "0",
    "0+",
    field("group_id", "string"),
    array(
        "topics",
        field("topic_id", "uuid"),
        array("partitions", field("partition", "int32"), field("leader_epoch", "int32")),
    ),
)

RESPONSE = message(
    "ReadShareGroupStateResponse",
    "0",
    "0+",
    array(
        "results",
        field("topic_id", "uuid"),
        array(
            "partitions",
            field("partition", "int32"),
            field("error_code", "int16"),
            field("error_message", "string", nullable="0+", default=None),
            field("state_epoch", "int32"),
            field("start_offset", "int64"),
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

READ_SHARE_GROUP_STATE = api(84, "ReadShareGroupState", "0", REQUEST, RESPONSE)
