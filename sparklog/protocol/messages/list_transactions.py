"""ListTransactions (key 66): the transactions a coordinator holds, filtered (KIP-664).

Declared from Apache Kafka's ListTransactionsRequest/Response (validVersions 0-1, flexible;
v1 adds the duration filter of KIP-994: only transactions running longer than it).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "ListTransactionsRequest",
    "0-1",
    "0+",
    field("state_filters", "[]string"),
    field("producer_id_filters", "[]int64"),
    field("duration_filter", "int64", "1+", default=-1),
)

RESPONSE = message(
    "ListTransactionsResponse",
    "0-1",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("unknown_state_filters", "[]string"),
    array(
        "transaction_states",
        field("transactional_id", "string"),
        field("producer_id", "int64"),
        field("transaction_state", "string"),
    ),
)

LIST_TRANSACTIONS = api(66, "ListTransactions", "0-1", REQUEST, RESPONSE)
