"""BrokerHeartbeat (key 63): a registered broker renews its lease with the active controller.

Declared from Apache Kafka's BrokerHeartbeatRequest/Response (validVersions 0-1, flexible 0+;
v1 adds the tagged ``offline_log_dirs``). The broker reports how far it has replayed the
metadata log and whether it wants to be fenced or to shut down; the controller answers whether
the broker is caught up, fenced, and may finish a controlled shutdown. Controller listener only.
Kafka declares it for the controller listener only, and only the controller listener's
handler (``sparklog.controller.apis``) answers it; it is declared for both here because the
registry requires every API to name the broker listener (broker ApiVersions lists only the
APIs the broker has handlers for, so it never advertises this one).
"""

from sparklog.protocol.schema import api, field, message

REQUEST = message(
    "BrokerHeartbeatRequest",
    "0-1",
    "0+",
    field("broker_id", "int32"),
    field("broker_epoch", "int64", default=-1),
    field("current_metadata_offset", "int64"),
    field("want_fence", "bool"),
    field("want_shut_down", "bool"),
    field("offline_log_dirs", "[]uuid", "1+", tag=0),
)

RESPONSE = message(
    "BrokerHeartbeatResponse",
    "0-1",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("is_caught_up", "bool", default=False),
    field("is_fenced", "bool", default=True),
    field("should_shut_down", "bool"),
)

BROKER_HEARTBEAT = api(
    63, "BrokerHeartbeat", "0-1", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
