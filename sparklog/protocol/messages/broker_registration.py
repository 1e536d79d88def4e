"""BrokerRegistration (key 62): a broker registers with the active controller (KIP-631).

Declared from Apache Kafka's BrokerRegistrationRequest/Response (validVersions 0-4, flexible
0+): v1 adds ``is_migrating_zk_broker``, v2 the broker's log directory ids, v3
``previous_broker_epoch`` (KIP-966). Served on the controller listener only; the answer is the
broker epoch (the offset of the RegisterBrokerRecord) or an error such as
DUPLICATE_BROKER_REGISTRATION, INCONSISTENT_CLUSTER_ID, UNSUPPORTED_VERSION or NOT_CONTROLLER.
Kafka declares it for the controller listener only, and only the controller listener's
handler (``sparklog.controller.apis``) answers it; it is declared for both here because the
registry requires every API to name the broker listener (broker ApiVersions lists only the
APIs the broker has handlers for, so it never advertises this one).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "BrokerRegistrationRequest",
    "0-4",
    "0+",
    field("broker_id", "int32"),
    field("cluster_id", "string"),
    field("incarnation_id", "uuid"),
    array(
        "listeners",
        field("name", "string"),
        field("host", "string"),
        field("port", "uint16"),
        field("security_protocol", "int16"),
    ),
    array(
        "features",
        field("name", "string"),
        field("min_supported_version", "int16"),
        field("max_supported_version", "int16"),
    ),
    field("rack", "string", nullable="0+"),
    field("is_migrating_zk_broker", "bool", "1+", default=False),
    field("log_dirs", "[]uuid", "2+"),
    field("previous_broker_epoch", "int64", "3+", default=-1, ignorable=True),
)

RESPONSE = message(
    "BrokerRegistrationResponse",
    "0-4",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("broker_epoch", "int64", default=-1),
)

BROKER_REGISTRATION = api(
    62,
    "BrokerRegistration",
    "0-4",
    REQUEST,
    RESPONSE,
    listeners=frozenset({"broker", "controller"}),
)
