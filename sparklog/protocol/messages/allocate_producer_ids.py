"""AllocateProducerIds (key 67): a broker asks the active controller for a producer-id block.

Declared from Apache Kafka's AllocateProducerIdsRequest/Response (validVersions 0, flexible
0+). Controller listener only. Errors: BROKER_ID_NOT_REGISTERED, STALE_BROKER_EPOCH,
NOT_CONTROLLER.
Kafka declares it for the controller listener only, and only the controller listener's
handler (``sparklog.controller.apis``) answers it; it is declared for both here because the
registry requires every API to name the broker listener (broker ApiVersions lists only the
APIs the broker has handlers for, so it never advertises this one).
"""

from sparklog.protocol.schema import api, field, message

REQUEST = message(
    "AllocateProducerIdsRequest",
    "0",
    "0+",
    field("broker_id", "int32"),
    field("broker_epoch", "int64", default=-1),
)

RESPONSE = message(
    "AllocateProducerIdsResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("producer_id_start", "int64"),
    field("producer_id_len", "int32"),
)

ALLOCATE_PRODUCER_IDS = api(
    67, "AllocateProducerIds", "0", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
