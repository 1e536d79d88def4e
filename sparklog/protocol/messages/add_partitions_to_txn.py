"""AddPartitionsToTxn (key 24): add partitions to a producer's ongoing transaction.

Declared from Apache Kafka's AddPartitionsToTxnRequest/Response (validVersions 0-5, flexible
3+). v0-3 come from clients and name one transaction at top level (the ``v3_and_below_*``
fields); v4+ are the brokers' batched form (KIP-890): several transactions per request, each
possibly ``verify_only``, answered per transaction with a top-level error code.
"""

from sparklog.protocol.schema import api, array, field, message

_TOPIC = (
    field("name", "string"),
    field("partitions", "[]int32"),
)

_PARTITION_RESULT = (
    field("partition_index", "int32"),
    field("partition_error_code", "int16"),
)

REQUEST = message(
    "AddPartitionsToTxnRequest",
    "0-5",
    "3+",
    array(
        "transactions",
        field("transactional_id", "string", "4+"),
        field("producer_id", "int64", "4+"),
        field("producer_epoch", "int16", "4+"),
        field("verify_only", "bool", "4+", default=False),
        array("topics", *_TOPIC, versions="4+"),
        versions="4+",
    ),
    field("v3_and_below_transactional_id", "string", "0-3"),
    field("v3_and_below_producer_id", "int64", "0-3"),
    field("v3_and_below_producer_epoch", "int16", "0-3"),
    array("v3_and_below_topics", *_TOPIC, versions="0-3"),
)

RESPONSE = message(
    "AddPartitionsToTxnResponse",
    "0-5",
    "3+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16", "4+", ignorable=True),
    array(
        "results_by_transaction",
        field("transactional_id", "string", "4+"),
        array(
            "topic_results",
            field("name", "string"),
            array("results_by_partition", *_PARTITION_RESULT),
            versions="4+",
        ),
        versions="4+",
    ),
    array(
        "results_by_topic_v3_and_below",
        field("name", "string"),
        array("results_by_partition", *_PARTITION_RESULT),
        versions="0-3",
    ),
)

ADD_PARTITIONS_TO_TXN = api(24, "AddPartitionsToTxn", "0-5", REQUEST, RESPONSE)
