"""FetchSnapshot (key 59): a KRaft replica behind the log start downloads the leader's snapshot.

Declared from Apache Kafka's FetchSnapshotRequest/Response (validVersions 0-1, flexible 0+): v1
adds the follower's directory id and the leaders' endpoints (KIP-853). Kafka serves it on the
controller listener only; it is declared for both because the declaration tests require every
API on the broker listener (a broker advertises only APIs it has handlers for, so nothing
changes on the wire).
"""

from sparklog.protocol.schema import api, array, field, message, struct

REQUEST = message(
    "FetchSnapshotRequest",
    "0-1",
    "0+",
    field("cluster_id", "string", nullable="0+", default=None, tag=0, ignorable=True),
    field("replica_id", "int32", default=-1),
    field("max_bytes", "int32", default=0x7FFFFFFF),
    array(
        "topics",
        field("name", "string"),
        array(
            "partitions",
            field("partition", "int32"),
            field("current_leader_epoch", "int32"),
            struct("snapshot_id", field("end_offset", "int64"), field("epoch", "int32")),
            field("position", "int64"),
            field("replica_directory_id", "uuid", "1+", tag=0, ignorable=True),
        ),
    ),
)

RESPONSE = message(
    "FetchSnapshotResponse",
    "0-1",
    "0+",
    field("throttle_time_ms", "int32", ignorable=True),
    field("error_code", "int16"),
    array(
        "topics",
        field("name", "string"),
        array(
            "partitions",
            field("index", "int32"),
            field("error_code", "int16"),
            struct("snapshot_id", field("end_offset", "int64"), field("epoch", "int32")),
            struct(
                "current_leader",
                field("leader_id", "int32", default=-1),
                field("leader_epoch", "int32", default=-1),
                tag=0,
            ),
            field("size", "int64"),
            field("position", "int64"),
            field("unaligned_records", "records"),
        ),
    ),
    array(
        "node_endpoints",
        field("node_id", "int32", "1+"),
        field("host", "string", "1+"),
        field("port", "uint16", "1+"),
        versions="1+",
        tag=0,
    ),
)

FETCH_SNAPSHOT = api(
    59, "FetchSnapshot", "0-1", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
