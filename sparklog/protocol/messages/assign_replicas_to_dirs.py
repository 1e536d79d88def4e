"""AssignReplicasToDirs (key 73): a broker tells the active controller which of its log
directories holds each of its replicas (KIP-858, JBOD in KRaft).

Declared from Apache Kafka's AssignReplicasToDirsRequest/Response (validVersions 0, flexible
0+). Kafka declares it for the controller listener only: brokers send it straight to the
active controller (batched, at most 2250 partitions a request) and only the controller
listener's handler (``sparklog.controller.apis``) answers it; the registry requires every API
to name the broker listener too, but a broker's ApiVersions lists only the APIs it has
handlers for. Errors: STALE_BROKER_EPOCH, BROKER_ID_NOT_REGISTERED, UNSUPPORTED_VERSION (a
``metadata.version`` before 3.7-IV2), NOT_CONTROLLER at the top; UNKNOWN_TOPIC_ID,
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (not a replica) per partition.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "AssignReplicasToDirsRequest",
    "0",
    "0+",
    field("broker_id", "int32"),
    field("broker_epoch", "int64", default=-1),
    array(
        "directories",
        field("id", "uuid"),
        array(
            "topics",
            field("topic_id", "uuid"),
            array("partitions", field("partition_index", "int32")),
        ),
    ),
)

RESPONSE = message(
    "AssignReplicasToDirsResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    array(
        "directories",
        field("id", "uuid"),
        array(
            "topics",
            field("topic_id", "uuid"),
            array("partitions", field("partition_index", "int32"), field("error_code", "int16")),
        ),
    ),
)

ASSIGN_REPLICAS_TO_DIRS = api(
    73,
    "AssignReplicasToDirs",
    "0",
    REQUEST,
    RESPONSE,
    listeners=frozenset({"broker", "controller"}),
)
