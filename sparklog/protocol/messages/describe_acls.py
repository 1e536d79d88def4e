"""DescribeAcls (key 29): list the ACL bindings a filter selects.

Declared from Apache Kafka's DescribeAclsRequest/Response (validVersions 0-3, flexible 2+; 4.0
serves 1-3). v1 adds the pattern type filter.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DescribeAclsRequest",
    "0-3",
    "2+",
    field("resource_type_filter", "int8"),
    field("resource_name_filter", "string", nullable="0+", default=None),
    field("pattern_type_filter", "int8", "1+", default=3),
    field("principal_filter", "string", nullable="0+", default=None),
    field("host_filter", "string", nullable="0+", default=None),
    field("operation", "int8"),
    field("permission_type", "int8"),
)

RESPONSE = message(
    "DescribeAclsResponse",
    "0-3",
    "2+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None),
    array(
        "resources",
        field("resource_type", "int8"),
        field("resource_name", "string"),
        field("pattern_type", "int8", "1+", default=3),
        array(
            "acls",
            field("principal", "string"),
            field("host", "string"),
            field("operation", "int8"),
            field("permission_type", "int8"),
        ),
    ),
)

DESCRIBE_ACLS = api(
    29, "DescribeAcls", "1-3", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
