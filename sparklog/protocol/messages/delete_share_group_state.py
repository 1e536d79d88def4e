"""DeleteShareGroupState (key 86): the group coordinator removes the persisted state of a share
group's partitions (deleting the group or its offsets; KIP-932, inter-broker).

Declared from Apache Kafka 4.2's DeleteShareGroupStateRequest/Response (validVersions 0,
flexible 0+).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DeleteShareGroupStateRequest",
    "0",
    "0+",
    field("group_id", "string"),
    array("topics", field("topic_id", "uuid"), array("partitions", field("partition", "int32"))),
)

RESPONSE = message(
    "DeleteShareGroupStateResponse",
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

DELETE_SHARE_GROUP_STATE = api(86, "DeleteShareGroupState", "0", REQUEST, RESPONSE)
