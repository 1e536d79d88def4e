"""Fetch (key 1): consumers and follower replicas read record batches from partition logs.

Declared from Apache Kafka's FetchRequest/Response (validVersions 4-18; v0-3 were removed in
4.0). v7+ carries fetch sessions (KIP-227), v12+ is flexible with the tagged ``diverging_epoch``,
``current_leader`` and ``snapshot_id`` partition fields, v13+ names topics by ``topic_id``, v15+
moves the follower's id into the tagged ``replica_state`` (KIP-903), v16+ returns tagged
``node_endpoints`` (KIP-951), v17 adds ``replica_directory_id`` (KIP-853) and v18 the
follower's ``high_watermark`` (KIP-1166). Served on the controller listener too, where KRaft
voters replicate the metadata log with it.
"""

from sparklog.protocol.schema import api, array, field, message, struct

REQUEST = message(
    "FetchRequest",
    "4-18",
    "12+",
    field("cluster_id", "string", "12+", nullable="12+", tag=0, default=None, ignorable=True),
    field("replica_id", "int32", "0-14", default=-1),
    struct(
        "replica_state",
        field("replica_id", "int32", "15+", default=-1),
        field("replica_epoch", "int64", "15+", default=-1),
        versions="15+",
        tag=1,
    ),
    field("max_wait_ms", "int32"),
    field("min_bytes", "int32"),
    field("max_bytes", "int32", "3+", default=0x7FFFFFFF, ignorable=True),
    field("isolation_level", "int8", "4+", ignorable=True),
    field("session_id", "int32", "7+", ignorable=True),
    field("session_epoch", "int32", "7+", default=-1, ignorable=True),
    array(
        "topics",
        field("topic", "string", "0-12", ignorable=True),
        field("topic_id", "uuid", "13+", ignorable=True),
        array(
            "partitions",
            field("partition", "int32"),
            field("current_leader_epoch", "int32", "9+", default=-1, ignorable=True),
            field("fetch_offset", "int64"),
            field("last_fetched_epoch", "int32", "12+", default=-1),
            field("log_start_offset", "int64", "5+", default=-1, ignorable=True),
            field("partition_max_bytes", "int32"),
            field("replica_directory_id", "uuid", "17+", tag=0, ignorable=True),
            field(
                "high_watermark", "int64", "18+", tag=1, default=9223372036854775807, ignorable=True
            ),
        ),
    ),
    array(
        "forgotten_topics_data",
        field("topic", "string", "7-12", ignorable=True),
        field("topic_id", "uuid", "13+", ignorable=True),
        field("partitions", "[]int32", "7+"),
        versions="7+",
    ),
    field("rack_id", "string", "11+", ignorable=True),
)

RESPONSE = message(
    "FetchResponse",
    "4-18",
    "12+",
    field("throttle_time_ms", "int32", "1+", ignorable=True),
    field("error_code", "int16", "7+", ignorable=True),
    field("session_id", "int32", "7+"),
    array(
        "responses",
        field("topic", "string", "0-12", ignorable=True),
        field("topic_id", "uuid", "13+", ignorable=True),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
            field("high_watermark", "int64"),
            field("last_stable_offset", "int64", "4+", default=-1, ignorable=True),
            field("log_start_offset", "int64", "5+", default=-1, ignorable=True),
            struct(
                "diverging_epoch",
                field("epoch", "int32", "12+", default=-1),
                field("end_offset", "int64", "12+", default=-1),
                versions="12+",
                tag=0,
            ),
            struct(
                "current_leader",
                field("leader_id", "int32", "12+", default=-1),
                field("leader_epoch", "int32", "12+", default=-1),
                versions="12+",
                tag=1,
            ),
            struct(
                "snapshot_id",
                field("end_offset", "int64", "0+", default=-1),
                field("epoch", "int32", "0+", default=-1),
                versions="12+",
                tag=2,
            ),
            array(
                "aborted_transactions",
                field("producer_id", "int64", "4+"),
                field("first_offset", "int64", "4+"),
                versions="4+",
                nullable="4+",
                ignorable=True,
            ),
            field("preferred_read_replica", "int32", "11+", default=-1),
            field("records", "records", "0+", nullable="0+"),
        ),
    ),
    array(
        "node_endpoints",
        field("node_id", "int32", "16+"),
        field("host", "string", "16+"),
        field("port", "int32", "16+"),
        field("rack", "string", "16+", nullable="16+", default=None),
        versions="16+",
        tag=0,
    ),
)

FETCH = api(1, "Fetch", "4-18", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"}))
