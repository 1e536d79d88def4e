"""InitProducerId (key 22): a producer obtains a producer id and epoch (idempotence/txns).

Declared from Apache Kafka's InitProducerIdRequest/Response (validVersions 0-6). v6 (KIP-939
two-phase commit) is still marked unstable in Apache Kafka 4.1, so we serve 0-5.
"""

from sparklog.protocol.schema import api, field, message

REQUEST = message(
    "InitProducerIdRequest",
    "0-6",
    "2+",
    field("transactional_id", "string", "0+", nullable="0+"),
    field("transaction_timeout_ms", "int32"),
    field("producer_id", "int64", "3+", default=-1),
    field("producer_epoch", "int16", "3+", default=-1),
    field("enable_2pc", "bool", "6+"),
    field("keep_prepared_txn", "bool", "6+"),
)

RESPONSE = message(
    "InitProducerIdResponse",
    "0-6",
    "2+",
    field("throttle_time_ms", "int32", "0+", ignorable=True),
    field("error_code", "int16"),
    field("producer_id", "int64", "0+", default=-1),
    field("producer_epoch", "int16"),
    field("ongoing_txn_producer_id", "int64", "6+", default=-1),
    field("ongoing_txn_producer_epoch", "int16", "6+", default=-1),
)

INIT_PRODUCER_ID = api(22, "InitProducerId", "0-5", REQUEST, RESPONSE)
