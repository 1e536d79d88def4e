"""CreateAcls (key 30): create ACL bindings.

Declared from Apache Kafka's CreateAclsRequest/Response (validVersions 0-3, flexible 2+; 4.0
serves 1-3, v0 was removed by KIP-896). v1 adds the resource pattern type.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "CreateAclsRequest",
    "0-3",
    "2+",
    array(
        "creations",
        field("resource_type", "int8"),
        field("resource_name", "string"),
        field("resource_pattern_type", "int8", "1+", default=3),
        field("principal", "string"),
        field("host", "string"),
        field("operation", "int8"),
        field("permission_type", "int8"),
    ),
)

RESPONSE = message(
    "CreateAclsResponse",
    "0-3",
    "2+",
    field("throttle_time_ms", "int32"),
    array(
        "results",
        field("error_code", "int16"),
        field("error_message", "string", nullable="0+", default=None),
    ),
)

CREATE_ACLS = api(
    30, "CreateAcls", "1-3", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
