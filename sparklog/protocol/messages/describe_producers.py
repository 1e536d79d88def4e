"""DescribeProducers (key 61): the active producers of partitions led by this broker (KIP-664).

Declared from Apache Kafka's DescribeProducersRequest/Response (validVersions 0, flexible).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DescribeProducersRequest",
    "0",
    "0+",
    array("topics", field("name", "string"), field("partition_indexes", "[]int32")),
)

RESPONSE = message(
    "DescribeProducersResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32"),
    array(
        "topics",
        field("name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
            field("error_message", "string", nullable="0+", default=None),
            array(
                "active_producers",
                field("producer_id", "int64"),
                field("producer_epoch", "int32"),
                field("last_sequence", "int32", default=-1),
                field("last_timestamp", "int64", default=-1),
                field("coordinator_epoch", "int32"),
                field("current_txn_start_offset", "int64", default=-1),
            ),
        ),
    ),
)

DESCRIBE_PRODUCERS = api(61, "DescribeProducers", "0", REQUEST, RESPONSE)
