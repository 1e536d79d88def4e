"""Admin APIs: metadata changes go to the controller; DescribeConfigs reads the image.

CreateTopics (19), DeleteTopics (20), CreatePartitions (37), ElectLeaders (43),
IncrementalAlterConfigs (44), AlterConfigs (33, the legacy whole-resource replace),
AlterPartitionReassignments (45) and ListPartitionReassignments
(46, which reads the controller's state) change metadata, so the broker forwards them to the
controller (the only writer of metadata) and relays its answer. DescribeQuorum (55),
AddRaftVoter (80) and RemoveRaftVoter (81) are forwarded the same way
(``kafka-metadata-quorum --bootstrap-server``). The controller answers once the records are
committed and applied, so a client that creates a topic and then asks for metadata sees it.

DescribeConfigs (32) answers from the latest image: for a topic, every topic-level key with its
effective value and source (a topic override, a static broker setting in server.properties, or
the default); for a broker, the node's server properties.

ListConfigResources (74) lists from the latest image, as Kafka 4.1's
``handleListConfigResources``: v0 (the former ListClientMetricsResources) client-metrics
resources only; v1 the requested types (empty: all of GROUP, CLIENT_METRICS, BROKER_LOGGER,
BROKER, TOPIC), in that fixed order, each sorted by name. Brokers (and their loggers) are those
with an endpoint on the request's listener; groups and client-metrics resources are those with
configs set. Any other requested type fails the request with UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from typing import Any

from sparklog.broker.config_describe import (
    describe_broker_configs,
    describe_group_configs,
    describe_topic_configs,
)
from sparklog.broker.context import BrokerContext
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    ApiKey,
    DescribeConfigsRequest,
    DescribeConfigsRequestResources,
    DescribeConfigsResponse,
    DescribeConfigsResponseResults,
    DescribeConfigsResponseResultsConfigs,
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
    ListConfigResourcesResponseConfigResources,
)

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
CLIENT_METRICS = 16
GROUP = 32
# ListConfigResources v1: the types listed, in Kafka's order.
_LISTED_TYPES = (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)


# The APIs a broker forwards to the active controller, and the controller operation of each.
_FORWARDED: dict[int, str] = {
    ApiKey.CREATE_TOPICS: "create_topics",
    ApiKey.DELETE_TOPICS: "delete_topics",
    ApiKey.CREATE_PARTITIONS: "create_partitions",
    ApiKey.ELECT_LEADERS: "elect_leaders",
    ApiKey.ALTER_CONFIGS: "alter_configs",
    ApiKey.INCREMENTAL_ALTER_CONFIGS: "incremental_alter_configs",
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: "alter_partition_reassignments",
    ApiKey.LIST_PARTITION_REASSIGNMENTS: "list_partition_reassignments",
    ApiKey.CREATE_ACLS: "create_acls",
    ApiKey.DELETE_ACLS: "delete_acls",
    ApiKey.ALTER_CLIENT_QUOTAS: "alter_client_quotas",
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: "alter_user_scram_credentials",
    ApiKey.DESCRIBE_QUORUM: "describe_quorum",
    ApiKey.UPDATE_FEATURES: "update_features",
    ApiKey.ADD_RAFT_VOTER: "add_raft_voter",
    ApiKey.REMOVE_RAFT_VOTER: "remove_raft_voter",
}


async def forward_to_controller(ctx: BrokerContext, request: TypedRequest[Any]) -> dict[str, Any]:
    """Any admin API the controller answers: its request body as decoded, its response as the
    controller sent it (the broker forwards both unchanged)."""
    operation = _FORWARDED[request.api.key]
    return await ctx.controller(operation, request.body, request.header.api_version)


def _result(
    resource: DescribeConfigsRequestResources, code: int, message: str | None
) -> DescribeConfigsResponseResults:
    return {
        "error_code": int(code),
        "error_message": message,
        "resource_type": resource["resource_type"],
        "resource_name": resource["resource_name"],
        "configs": [],
    }


async def handle_describe_configs(
    ctx: BrokerContext, request: TypedRequest[DescribeConfigsRequest]
) -> DescribeConfigsResponse:
    body = request.body
    include_synonyms = body["include_synonyms"]
    include_docs = body["include_documentation"]
    image = ctx.image
    results: list[DescribeConfigsResponseResults] = []
    for resource in body["resources"]:
        rtype = resource["resource_type"]
        name = resource["resource_name"]
        keys = resource["configuration_keys"]
        if rtype == TOPIC:
            topic = image.topics.by_name.get(name)
            if topic is None:
                results.append(
                    _result(
                        resource,
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"Topic {name} does not exist",
                    )
                )
                continue
            entries = describe_topic_configs(ctx.config, image.configs.topic_config(name))
        elif rtype == BROKER:
            if name not in ("", str(ctx.node_id)):
                results.append(
                    _result(
                        resource,
                        ErrorCode.INVALID_REQUEST,
                        f"Unexpected broker id, expected {ctx.node_id} or empty string, "
                        f"but received {name}",
                    )
                )
                continue
            entries = describe_broker_configs(ctx.config)
        elif rtype == GROUP:
            if not name:
                results.append(
                    _result(resource, ErrorCode.INVALID_REQUEST, "Group name can't be empty.")
                )
                continue
            entries = describe_group_configs(ctx.config, image.configs.get(GROUP, name))
        else:
            results.append(
                _result(resource, ErrorCode.INVALID_REQUEST, f"Unsupported resource type {rtype}")
            )
            continue
        configs: list[DescribeConfigsResponseResultsConfigs] = []
        for entry in entries:
            if keys is not None and entry.name not in keys:
                continue
            configs.append(
                {
                    "name": entry.name,
                    "value": entry.value,
                    "read_only": entry.read_only,
                    "config_source": entry.source,
                    "is_sensitive": entry.sensitive,
                    "synonyms": [
                        {"name": s.name, "value": s.value, "source": s.source}
                        for s in entry.synonyms
                    ]
                    if include_synonyms
                    else [],
                    "config_type": entry.config_type,
                    "documentation": entry.documentation if include_docs else None,
                }
            )
        results.append(
            {
                "error_code": 0,
                "error_message": None,
                "resource_type": rtype,
                "resource_name": name,
                "configs": configs,
            }
        )
    return {"throttle_time_ms": 0, "results": results}


async def handle_list_config_resources(
    ctx: BrokerContext, request: TypedRequest[ListConfigResourcesRequest], listener: str
) -> ListConfigResourcesResponse:
    requested = set(request.body["resource_types"])
    if request.header.api_version == 0:
        requested = {CLIENT_METRICS}
    elif not requested:
        requested = set(_LISTED_TYPES)
    elif not requested <= set(_LISTED_TYPES):
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.UNSUPPORTED_VERSION),
            "config_resources": [],
        }
    image = ctx.image
    brokers = sorted(
        b.broker_id for b in image.cluster.brokers.values() if b.endpoint(listener) is not None
    )
    resources: list[ListConfigResourcesResponseConfigResources] = []
    for rtype in _LISTED_TYPES:
        if rtype not in requested:
            continue
        if rtype in (BROKER, BROKER_LOGGER):
            names = [str(b) for b in brokers]
        elif rtype == TOPIC:
            names = sorted(image.topics.by_name)
        else:
            names = sorted(name for kind, name in image.configs.resources if kind == rtype)
        resources += [{"resource_name": n, "resource_type": rtype} for n in names]
    return {"throttle_time_ms": 0, "error_code": 0, "config_resources": resources}
