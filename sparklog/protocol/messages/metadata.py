"""Metadata (key 3): clients discover brokers, topics, partitions and their leaders.

Declared from Apache Kafka's MetadataRequest/Response (validVersions 0-13; 4.0 kept all of
them). A null ``topics`` array (v1+) asks for every topic; an empty one for none. v10+ carries
topic ids, v12+ lets a request name topics by id alone (null ``name``), v13 adds a top-level
``error_code`` (KIP-1102 rebootstrap).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "MetadataRequest",
    "0-13",
    "9+",
    array(
        "topics",
        field("topic_id", "uuid", "10+", ignorable=True),
        field("name", "string", "0+", nullable="10+"),
        nullable="1+",
    ),
    field("allow_auto_topic_creation", "bool", "4+", default=True),
    field("include_cluster_authorized_operations", "bool", "8-10"),
    field("include_topic_authorized_operations", "bool", "8+"),
)

RESPONSE = message(
    "MetadataResponse",
    "0-13",
    "9+",
    field("throttle_time_ms", "int32", "3+", ignorable=True),
    array(
        "brokers",
        field("node_id", "int32"),
        field("host", "string"),
        field("port", "int32"),
        field("rack", "string", "1+", nullable="1+", default=None, ignorable=True),
    ),
    field("cluster_id", "string", "2+", nullable="2+", default=None, ignorable=True),
    field("controller_id", "int32", "1+", default=-1, ignorable=True),
    array(
        "topics",
        field("error_code", "int16"),
        field("name", "string", "0+", nullable="12+"),
        field("topic_id", "uuid", "10+", ignorable=True),
        field("is_internal", "bool", "1+", ignorable=True),
        array(
            "partitions",
            field("error_code", "int16"),
            field("partition_index", "int32"),
            field("leader_id", "int32"),
            field("leader_epoch", "int32", "7+", default=-1, ignorable=True),
            field("replica_nodes", "[]int32"),
            field("isr_nodes", "[]int32"),
            field("offline_replicas", "[]int32", "5+", ignorable=True),
        ),
        field("topic_authorized_operations", "int32", "8+", default=-2147483648),
    ),
    field("cluster_authorized_operations", "int32", "8-10", default=-2147483648),
    field("error_code", "int16", "13+", ignorable=True),
)

METADATA = api(3, "Metadata", "0-13", REQUEST, RESPONSE)
