"""DescribeQuorum (key 55): the KRaft leader reports voters, observers and their progress.

Declared from Apache Kafka's DescribeQuorumRequest/Response (validVersions 0-2, flexible 0+):
v1 adds last fetch / caught-up timestamps (KIP-836), v2 directory ids, error messages and the
voters' listeners (KIP-853). Served on both listeners (kafka-metadata-quorum uses either).
"""

from sparklog.protocol.schema import api, array, field, message

_REPLICA_STATE = (
    field("replica_id", "int32"),
    field("replica_directory_id", "uuid", "2+"),
    field("log_end_offset", "int64"),
    field("last_fetch_timestamp", "int64", "1+", default=-1, ignorable=True),
    field("last_caught_up_timestamp", "int64", "1+", default=-1, ignorable=True),
)

REQUEST = message(
    "DescribeQuorumRequest",
    "0-2",
    "0+",
    array(
        "topics",
        field("topic_name", "string"),
        array("partitions", field("partition_index", "int32")),
    ),
)

RESPONSE = message(
    "DescribeQuorumResponse",
    "0-2",
    "0+",
    field("error_code", "int16"),
    field("error_message", "string", "2+", nullable="2+", default=None, ignorable=True),
    array(
        "topics",
        field("topic_name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
            field("error_message", "string", "2+", nullable="2+", default=None, ignorable=True),
            field("leader_id", "int32"),
            field("leader_epoch", "int32"),
            field("high_watermark", "int64"),
            array("current_voters", *_REPLICA_STATE),
            array("observers", *_REPLICA_STATE),
        ),
    ),
    array(
        "nodes",
        field("node_id", "int32", "2+"),
        array(
            "listeners",
            field("name", "string", "2+"),
            field("host", "string", "2+"),
            field("port", "uint16", "2+"),
            versions="2+",
        ),
        versions="2+",
    ),
)

DESCRIBE_QUORUM = api(
    55, "DescribeQuorum", "0-2", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
