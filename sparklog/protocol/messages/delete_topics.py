"""DeleteTopics (key 20): an admin client deletes topics by name or (v6+) by id.

Declared from Apache Kafka's DeleteTopicsRequest/Response (validVersions 1-6; v0 was removed in
4.0). v0-5 send ``topic_names``; v6 sends ``topics`` entries with a nullable name and an id.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DeleteTopicsRequest",
    "1-6",
    "4+",
    array(
        "topics",
        field("name", "string", "6+", nullable="6+", default=None),
        field("topic_id", "uuid", "6+"),
        versions="6+",
    ),
    field("topic_names", "[]string", "0-5", ignorable=True),
    field("timeout_ms", "int32"),
)

RESPONSE = message(
    "DeleteTopicsResponse",
    "1-6",
    "4+",
    field("throttle_time_ms", "int32", "1+", ignorable=True),
    array(
        "responses",
        field("name", "string", "0+", nullable="6+"),
        field("topic_id", "uuid", "6+", ignorable=True),
        field("error_code", "int16"),
        field("error_message", "string", "5+", nullable="5+", default=None, ignorable=True),
    ),
)

DELETE_TOPICS = api(
    20, "DeleteTopics", "1-6", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
