"""EndTxn (key 26): commit or abort a producer's ongoing transaction.

Declared from Apache Kafka's EndTxnRequest/Response (validVersions 0-5, flexible 3+). v5 is
KIP-890 part 2 (the coordinator bumps the epoch on every transaction and answers the new
producer id and epoch), honoured as such when the cluster finalized ``transaction.version`` 2;
older versions keep transactions version 1 semantics.
"""

from sparklog.protocol.schema import api, field, message

REQUEST = message(
    "EndTxnRequest",
    "0-5",
    "3+",
    field("transactional_id", "string"),
    field("producer_id", "int64"),
    field("producer_epoch", "int16"),
    field("committed", "bool"),
)

RESPONSE = message(
    "EndTxnResponse",
    "0-5",
    "3+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("producer_id", "int64", "5+", default=-1, ignorable=True),
    field("producer_epoch", "int16", "5+", default=-1, ignorable=True),
)

END_TXN = api(26, "EndTxn", "0-5", REQUEST, RESPONSE)
