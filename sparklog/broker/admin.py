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
"""

from __future__ import annotations

from typing import Any

from sparklog.broker.config_describe import describe_broker_configs, describe_topic_configs
from sparklog.broker.context import BrokerContext
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import Request

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8


async def forward_to_controller(ctx: BrokerContext, request: Request) -> dict[str, Any]:
    operation = {
        19: "create_topics",
        20: "delete_topics",
        37: "create_partitions",
        43: "elect_leaders",
        33: "alter_configs",
        44: "incremental_alter_configs",
        45: "alter_partition_reassignments",
        46: "list_partition_reassignments",
        55: "describe_quorum",
        80: "add_raft_voter",
        81: "remove_raft_voter",
    }[request.api.key]
    return await ctx.controller(operation, request.body, request.header.api_version)


def _result(resource: dict[str, Any], code: int, message: str | None) -> dict[str, Any]:
    return {
        "error_code": int(code),
        "error_message": message,
        "resource_type": resource["resource_type"],
        "resource_name": resource["resource_name"],
        "configs": [],
    }


async def handle_describe_configs(ctx: BrokerContext, request: Request) -> dict[str, Any]:
    body = request.body
    include_synonyms = body.get("include_synonyms", False)
    include_docs = body.get("include_documentation", False)
    image = ctx.image
    results = []
    for resource in body["resources"]:
        rtype = resource["resource_type"]
        name = resource["resource_name"]
        keys = resource.get("configuration_keys")
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
        else:
            results.append(
                _result(resource, ErrorCode.INVALID_REQUEST, f"Unsupported resource type {rtype}")
            )
            continue
        configs = []
        for entry in entries:
            if keys is not None and entry.name not in keys:
                continue
            configs.append(
                {
                    "name": entry.name,
                    "value": entry.value,
                    "read_only": entry.read_only,
                    "is_default": entry.source == 5,
                    "config_source": entry.source,
                    "is_sensitive": False,
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
