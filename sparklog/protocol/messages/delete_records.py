"""DeleteRecords (key 21): an admin client advances partitions' log start offsets.

Declared from Apache Kafka's DeleteRecordsRequest/Response (validVersions 0-2). ``offset`` -1
means the high watermark; the response returns each partition's new ``low_watermark``.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DeleteRecordsRequest",
    "0-2",
    "2+",
    array(
        "topics",
        field("name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("offset", "int64"),
        ),
    ),
    field("timeout_ms", "int32"),
)

RESPONSE = message(
    "DeleteRecordsResponse",
    "0-2",
    "2+",
    field("throttle_time_ms", "int32"),
    array(
        "topics",
        field("name", "string"),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("low_watermark", "int64"),
            field("error_code", "int16"),
        ),
    ),
)

DELETE_RECORDS = api(21, "DeleteRecords", "0-2", REQUEST, RESPONSE)
