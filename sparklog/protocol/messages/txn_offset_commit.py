"""TxnOffsetCommit (key 28): commit a group's offsets as part of a producer's transaction.

Declared from Apache Kafka's TxnOffsetCommitRequest/Response (validVersions 0-5, flexible 3+;
v2 adds the committed leader epoch, v3 the member id, group instance id and generation so
the group coordinator can fence zombie members, v5 is KIP-890 part 2: the coordinator adds the
group's offsets partition to the transaction itself, with no AddOffsetsToTxn first).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "TxnOffsetCommitRequest",
    "0-5",
    "3+",
    field("transactional_id", "string"),
    field("group_id", "string"),
    field("producer_id", "int64"),
    field("producer_epoch", "int16"),
    field("generation_id", "int32", "3+", default=-1),
    field("member_id", "string", "3+", default=""),
    field("group_instance_id", "string", "3+", nullable="3+", default=None),
    array(
        "topics",
        field("name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("committed_offset", "int64"),
            field("committed_leader_epoch", "int32", "2+", default=-1, ignorable=True),
            field("committed_metadata", "string", nullable="0+"),
        ),
    ),
)

RESPONSE = message(
    "TxnOffsetCommitResponse",
    "0-5",
    "3+",
    field("throttle_time_ms", "int32"),
    array(
        "topics",
        field("name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
        ),
    ),
)

TXN_OFFSET_COMMIT = api(28, "TxnOffsetCommit", "0-5", REQUEST, RESPONSE)
