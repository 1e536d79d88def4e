"""Produce (key 0): a producer appends record batches to partition logs.

Declared from Apache Kafka's ProduceRequest/Response (validVersions 3-13; v0-2 were removed in
4.0 by KIP-896). v9+ is flexible; v10 adds the tagged ``current_leader``/``node_endpoints`` hints
of KIP-951; v13 names topics by ``topic_id`` instead of ``name`` (KIP-516). ``records`` is the
raw record-batch bytes of one partition (null allowed). Apache Kafka still advertises Produce v0
in ApiVersions because librdkafka's compressed produce needs it (KAFKA-18659), while rejecting
v0-2 requests; this declaration covers only the versions actually parsed.
"""

from sparklog.protocol.schema import api, array, field, message, struct

REQUEST = message(
    "ProduceRequest",
    "3-13",
    "9+",
    field("transactional_id", "string", "3+", nullable="3+", default=None),
    field("acks", "int16"),
    field("timeout_ms", "int32"),
    array(
        "topic_data",
        field("name", "string", "0-12", ignorable=True),
        field("topic_id", "uuid", "13+", ignorable=True),
        array(
            "partition_data",
            field("index", "int32"),
            field("records", "records", "0+", nullable="0+"),
        ),
    ),
)

RESPONSE = message(
    "ProduceResponse",
    "3-13",
    "9+",
    array(
        "responses",
        field("name", "string", "0-12", ignorable=True),
        field("topic_id", "uuid", "13+", ignorable=True),
        array(
            "partition_responses",
            field("index", "int32"),
            field("error_code", "int16"),
            field("base_offset", "int64"),
            field("log_append_time_ms", "int64", "2+", default=-1, ignorable=True),
            field("log_start_offset", "int64", "5+", default=-1, ignorable=True),
            array(
                "record_errors",
                field("batch_index", "int32", "8+"),
                field("batch_index_error_message", "string", "8+", nullable="8+", default=None),
                versions="8+",
                ignorable=True,
            ),
            field("error_message", "string", "8+", nullable="8+", default=None, ignorable=True),
            struct(
                "current_leader",
                field("leader_id", "int32", "10+", default=-1),
                field("leader_epoch", "int32", "10+", default=-1),
                versions="10+",
                tag=0,
            ),
        ),
    ),
    field("throttle_time_ms", "int32", "1+", ignorable=True),
    array(
        "node_endpoints",
        field("node_id", "int32", "10+"),
        field("host", "string", "10+"),
        field("port", "int32", "10+"),
        field("rack", "string", "10+", nullable="10+", default=None),
        versions="10+",
        tag=0,
    ),
)

PRODUCE = api(0, "Produce", "3-13", REQUEST, RESPONSE)
