"""ReadShareGroupStateSummary (key 87): the start offset (and state epoch) of share-partitions,
for DescribeShareGroupOffsets (KIP-932, inter-broker).

Declared from Apache Kafka 4.2's ReadShareGroupStateSummaryRequest/Response (validVersions
0-1, flexible 0+); both are served. Every version answers the leader epoch; v1 adds KIP-1226's
``DeliveryCompleteCount`` (the offsets at or after the start offset whose delivery is complete,
Acknowledged or Archived, -1 when there is no state).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "ReadShareGroupStateSummaryRequest",
    "0-1",
    "0+",
    field("group_id", "string"),
    array(
        "topics",
        field("topic_id", "uuid"),
        array("partitions", field("partition", "int32"), field("leader_epoch", "int32")),
    ),
)

RESPONSE = message(
    "ReadShareGroupStateSummaryResponse",
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
            field("state_epoch", "int32"),
            field("leader_epoch", "int32"),
            field("start_offset", "int64"),
            field("delivery_complete_count", "int32", "1+"),
        ),
    ),
)

READ_SHARE_GROUP_STATE_SUMMARY = api(87, "ReadShareGroupStateSummary", "0-1", REQUEST, RESPONSE)
