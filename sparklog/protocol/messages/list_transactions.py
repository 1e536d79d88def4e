"""ListTransactions (key 66): the transactions a coordinator holds, filtered (KIP-664).

Declared from Apache Kafka 4.x's ListTransactionsRequest/Response (validVersions 0-2, flexible;
v1 adds the duration filter of KIP-994: only transactions running longer than it; v2 the
transactional id pattern of KIP-1152: only ids the regular expression matches whole).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "ListTransactionsRequest",
    "0-2",
    "0+",
    field("state_filters", "[]string"),
    field("producer_id_filters", "[]int64"),
    field("duration_filter", "int64", "1+", default=-1),
    field("transactional_id_pattern", "string", "2+", nullable="2+", default=None),
)

RESPONSE = message(
    "ListTransactionsResponse",
    "0-2",
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

LIST_TRANSACTIONS = api(66, "ListTransactions", "0-2", REQUEST, RESPONSE)
