"""AddOffsetsToTxn (key 25): add a group's ``__consumer_offsets`` partition to a transaction.

Declared from Apache Kafka's AddOffsetsToTxnRequest/Response (validVersions 0-4, flexible 3+;
v2 may answer PRODUCER_FENCED, v4 TRANSACTION_ABORTABLE).
"""

from sparklog.protocol.schema import api, field, message

REQUEST = message(
    "AddOffsetsToTxnRequest",
    "0-4",
    "3+",
    field("transactional_id", "string"),
    field("producer_id", "int64"),
    field("producer_epoch", "int16"),
    field("group_id", "string"),
)

RESPONSE = message(
    "AddOffsetsToTxnResponse",
    "0-4",
    "3+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
)

ADD_OFFSETS_TO_TXN = api(25, "AddOffsetsToTxn", "0-4", REQUEST, RESPONSE)
