"""ListConfigResources (key 74): the resources configs can be described or altered for.

Declared from Apache Kafka 4.1+'s ListConfigResourcesRequest/Response (validVersions 0-1,
flexible). Version 0 is the former ListClientMetricsResources (KIP-1000: client-metrics
resources only); v1 (KIP-1142) adds the ``resource_types`` filter and each resource's type.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "ListConfigResourcesRequest",
    "0-1",
    "0+",
    field("resource_types", "[]int8", "1+"),
)

RESPONSE = message(
    "ListConfigResourcesResponse",
    "0-1",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    array(
        "config_resources",
        field("resource_name", "string"),
        field("resource_type", "int8", "1+", default=16),
    ),
)

LIST_CONFIG_RESOURCES = api(74, "ListConfigResources", "0-1", REQUEST, RESPONSE)
