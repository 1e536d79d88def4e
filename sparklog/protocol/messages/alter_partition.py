"""AlterPartition (key 56): a partition leader asks the active controller to change its ISR.

Declared from Apache Kafka's AlterPartitionRequest/Response (KIP-497; flexible in every
version): v1 adds ``leader_recovery_state`` (KIP-704), v2 replaces the topic name by its id
(KIP-841), v3 replaces ``new_isr`` by ``new_isr_with_epochs`` (broker id + broker epoch, KIP-903)
so the controller can refuse an ISR member that has since restarted. The messages are declared
for 0-3 as in Kafka's JSON, but only 2-3 are served: Kafka 4.0 removed 0-1 (KIP-896), and a
4.x controller resolves topics by id only.

Kafka declares it for the controller listener only; brokers send it straight to the active
controller (it is never forwarded), and only the controller listener's handler
(``sparklog.controller.apis``) answers it. It names the broker listener too because the
registry requires every API to; a broker's ApiVersions lists only the APIs it has handlers
for, so it never advertises this one.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "AlterPartitionRequest",
    "0-3",
    "0+",
    field("broker_id", "int32"),
    field("broker_epoch", "int64", default=-1),
    array(
        "topics",
        field("topic_name", "string", "0-1"),
        field("topic_id", "uuid", "2+", ignorable=True),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("leader_epoch", "int32"),
            field("new_isr", "[]int32", "0-2"),
            array(
                "new_isr_with_epochs",
                field("broker_id", "int32", "3+"),
                field("broker_epoch", "int64", "3+", default=-1),
                versions="3+",
            ),
            field("leader_recovery_state", "int8", "1+", default=0),
            field("partition_epoch", "int32"),
        ),
    ),
)

RESPONSE = message(
    "AlterPartitionResponse",
    "0-3",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    array(
        "topics",
        field("topic_name", "string", "0-1", ignorable=True),
        field("topic_id", "uuid", "2+", ignorable=True),
        array(
            "partitions",
            field("partition_index", "int32"),
            field("error_code", "int16"),
            field("leader_id", "int32"),
            field("leader_epoch", "int32"),
            field("isr", "[]int32"),
            field("leader_recovery_state", "int8", "1+", default=0, ignorable=True),
            field("partition_epoch", "int32"),
        ),
    ),
)

ALTER_PARTITION = api(
    56,
    "AlterPartition",
    "2-3",
    REQUEST,
    RESPONSE,
    listeners=frozenset({"broker", "controller"}),
)
