"""DescribeCluster (key 60): an admin client learns the cluster id, controller and brokers.

Declared from Apache Kafka's DescribeClusterRequest/Response (validVersions 0-2, all flexible).
``endpoint_type`` (v1+) is 1 for brokers, 2 for controllers (KIP-919); v2 can include fenced
brokers (KIP-1073).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DescribeClusterRequest",
    "0-2",
    "0+",
    field("include_cluster_authorized_operations", "bool"),
    field("endpoint_type", "int8", "1+", default=1),
    field("include_fenced_brokers", "bool", "2+"),
)

RESPONSE = message(
    "DescribeClusterResponse",
    "0-2",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", "0+", nullable="0+", default=None),
    field("endpoint_type", "int8", "1+", default=1),
    field("cluster_id", "string"),
    field("controller_id", "int32", "0+", default=-1),
    array(
        "brokers",
        field("broker_id", "int32"),
        field("host", "string"),
        field("port", "int32"),
        field("rack", "string", "0+", nullable="0+", default=None),
        field("is_fenced", "bool", "2+"),
    ),
    field("cluster_authorized_operations", "int32", "0+", default=-2147483648),
)

DESCRIBE_CLUSTER = api(
    60, "DescribeCluster", "0-2", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
