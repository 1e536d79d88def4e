"""WriteTxnMarkers (key 27): the transaction coordinator asks partition leaders to write
COMMIT/ABORT markers.

Declared from Apache Kafka's WriteTxnMarkersRequest/Response (validVersions 0-2; v0 was removed
from Apache Kafka 4.0, v1 is flexible, v2 adds the marker's TransactionVersion for KIP-890).
We serve 0-1: transaction version 2 markers (epoch bumped per transaction) are not written yet.
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

WRITE_TXN_MARKERS = api(27, "WriteTxnMarkers", "0-1", REQUEST, RESPONSE)
