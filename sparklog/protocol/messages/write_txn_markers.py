"""WriteTxnMarkers (key 27): the transaction coordinator asks partition leaders to write
COMMIT/ABORT markers.

Declared from Apache Kafka's WriteTxnMarkersRequest/Response (v0 was removed in Apache Kafka
4.0, v1 is flexible, v2 adds the marker's TransactionVersion, KIP-1228, after 4.1). We serve v1
only, as Kafka 4.0 and 4.1 do: v2 matters once transaction version 2 (an epoch bump per
transaction, KIP-890) is written, which it is not yet. The declarations keep 0-2 so the codec
can read what any Kafka sends.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "WriteTxnMarkersRequest",
    "0-2",
    "1+",
    array(
        "markers",
        field("producer_id", "int64"),
        field("producer_epoch", "int16"),
        field("transaction_result", "bool"),
        array(
            "topics",
            field("name", "string"),
            field("partition_indexes", "[]int32"),
        ),
        field("coordinator_epoch", "int32"),
        field("transaction_version", "int8", "2+", ignorable=True),
    ),
)

RESPONSE = message(
    "WriteTxnMarkersResponse",
    "0-2",
    "1+",
    array(
        "markers",
        field("producer_id", "int64"),
        array(
            "topics",
            field("name", "string"),
            array(
                "partitions",
                field("partition_index", "int32"),
                field("error_code", "int16"),
            ),
        ),
    ),
)

WRITE_TXN_MARKERS = api(27, "WriteTxnMarkers", "1-1", REQUEST, RESPONSE)
