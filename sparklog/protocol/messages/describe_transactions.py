"""DescribeTransactions (key 65): the coordinator's state of some transactional ids (KIP-664).

Declared from Apache Kafka's DescribeTransactionsRequest/Response (validVersions 0, flexible).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DescribeTransactionsRequest",
    "0",
    "0+",
    field("transactional_ids", "[]string"),
)

RESPONSE = message(
    "DescribeTransactionsResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32"),
    array(
        "transaction_states",
        field("error_code", "int16"),
        field("transactional_id", "string"),
        field("transaction_state", "string"),
        field("transaction_timeout_ms", "int32"),
        field("transaction_start_time_ms", "int64"),
        field("producer_id", "int64"),
        field("producer_epoch", "int16"),
        array(
            "topics",
            field("topic", "string"),
            field("partitions", "[]int32"),
        ),
    ),
)

DESCRIBE_TRANSACTIONS = api(65, "DescribeTransactions", "0", REQUEST, RESPONSE)
