"""InitializeShareGroupState (key 83): a broker asks the share coordinator to start the state of
share-partitions at a start offset with a new state epoch (KIP-932, inter-broker).

Declared from Apache Kafka 4.2's InitializeShareGroupStateRequest/Response (validVersions 0,
flexible 0+).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "InitializeShareGroupStateRequest",
    "0",
    "0+",
    field("group_id", "string"),
    array(
        "topics",
        field("topic_id", "uuid"),
        array(
            "partitions",
            field("partition", "int32"),
            field("state_epoch", "int32"),
            field("start_offset", "int64"),
        ),
    ),
)

RESPONSE = message(
    "InitializeShareGroupStateResponse",
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
        ),
    ),
)

INITIALIZE_SHARE_GROUP_STATE = api(83, "InitializeShareGroupState", "0", REQUEST, RESPONSE)
