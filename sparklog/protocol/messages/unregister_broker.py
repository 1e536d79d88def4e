"""UnregisterBroker (key 64): remove a (shut down) broker's registration from the metadata.

Declared from Apache Kafka's UnregisterBrokerRequest/Response (validVersions 0, flexible 0+).
Served on both listeners; a broker forwards it to the active controller. Errors:
BROKER_ID_NOT_REGISTERED, NOT_CONTROLLER.
"""

from sparklog.protocol.schema import api, field, message

REQUEST = message("UnregisterBrokerRequest", "0", "0+", field("broker_id", "int32"))

RESPONSE = message(
    "UnregisterBrokerResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None),
)

UNREGISTER_BROKER = api(
    64, "UnregisterBroker", "0", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
