"""FindCoordinator (key 10): locate the group or transaction coordinator for a key.

Declared from Apache Kafka's FindCoordinatorRequest/Response (validVersions 0-6). ``key_type``
is 0 group, 1 transaction, 2 share (v6). v0-3 ask for one ``key`` and answer at top level; v4+
batch ``coordinator_keys`` and answer per key in ``coordinators`` (KIP-699).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "FindCoordinatorRequest",
    "0-6",
    "3+",
    field("key", "string", "0-3"),
    field("key_type", "int8", "1+"),
    field("coordinator_keys", "[]string", "4+"),
)

RESPONSE = message(
    "FindCoordinatorResponse",
    "0-6",
    "3+",
    field("throttle_time_ms", "int32", "1+", ignorable=True),
    field("error_code", "int16", "0-3"),
    field("error_message", "string", "1-3", nullable="1-3", ignorable=True),
    field("node_id", "int32", "0-3"),
    field("host", "string", "0-3"),
    field("port", "int32", "0-3"),
    array(
        "coordinators",
        field("key", "string", "4+"),
        field("node_id", "int32", "4+"),
        field("host", "string", "4+"),
        field("port", "int32", "4+"),
        field("error_code", "int16", "4+"),
        field("error_message", "string", "4+", nullable="4+", ignorable=True),
        versions="4+",
    ),
)

FIND_COORDINATOR = api(10, "FindCoordinator", "0-6", REQUEST, RESPONSE)
