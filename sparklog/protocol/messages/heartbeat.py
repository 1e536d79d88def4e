"""Heartbeat (key 12): a classic group member proves it is alive and learns of rebalances.

Declared from Apache Kafka's HeartbeatRequest/Response (validVersions 0-4, flexible 4+).
"""

from sparklog.protocol.schema import api, field, message

REQUEST = message(
    "HeartbeatRequest",
    "0-4",
    "4+",
    field("group_id", "string"),
    field("generation_id", "int32"),
    field("member_id", "string"),
    field("group_instance_id", "string", "3+", nullable="3+", default=None),
)

RESPONSE = message(
    "HeartbeatResponse",
    "0-4",
    "4+",
    field("throttle_time_ms", "int32", "1+", ignorable=True),
    field("error_code", "int16"),
)

HEARTBEAT = api(12, "Heartbeat", "0-4", REQUEST, RESPONSE)
