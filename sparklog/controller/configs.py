"""Config operations of the controller: topic config validation, IncrementalAlterConfigs and
the legacy AlterConfigs.

Follows Kafka's ``ConfigurationControlManager``: a TOPIC resource must name an existing topic
and its resulting overrides must form a valid topic config (INVALID_CONFIG otherwise, with the
validator's message); a BROKER resource is ``""`` (the cluster-wide default) or a broker id and
accepts the broker keys of :mod:`sparklog.config_keys`. Operations: SET (0), DELETE (1),
APPEND (2) and SUBTRACT (3); the last two only for list-typed keys, starting from the current
value (the override, else the default). A ConfigRecord is written only for keys whose value
changes; a DELETE writes a null value. Each resource succeeds or fails as a whole.

AlterConfigs (33, legacy) replaces a resource's whole configuration, as Kafka's
``legacyAlterConfigs`` does: the keys listed take their values (a null value removes the
override) and every override NOT listed is removed, i.e. reset to its default. Validation,
duplicate checks and validate_only are those of IncrementalAlterConfigs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from sparklog.config_keys import ACCEPTED as ACCEPTED_BROKER_KEYS
from sparklog.config_keys import DEFS as BROKER_DEFS
from sparklog.config_keys import ConfigError
from sparklog.controller.group_configs import validate_group_configs
from sparklog.metadata.image import RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC, MetadataImage
from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.message_types import (
    AlterConfigsRequest,
    AlterConfigsRequestResources,
    AlterConfigsResponse,
    CreateTopicsResponseTopicsConfigs,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestResources,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseResponses,
)
from sparklog.storage.config import CONFIG_BY_NAME, CONFIG_DEFS, LogConfig

OP_SET = 0
OP_DELETE = 1
OP_APPEND = 2
OP_SUBTRACT = 3

# DescribeConfigsResponse.ConfigSource
SOURCE_TOPIC_CONFIG = 1
SOURCE_DYNAMIC_BROKER_CONFIG = 2
SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG = 3
SOURCE_STATIC_BROKER_CONFIG = 4
SOURCE_DEFAULT_CONFIG = 5

_RESOURCE_NAMES = {
    0: "UNKNOWN",
    2: "TOPIC",
    4: "BROKER",
    8: "BROKER_LOGGER",
    16: "CLIENT_METRICS",
    32: "GROUP",
}


@dataclass(frozen=True, slots=True)
class TopicConfigPolicy:
    """Validates topic overrides against the broker-wide defaults and describes the result."""

    default_log_config: LogConfig = field(default_factory=LogConfig)
    static_broker_keys: frozenset[str] = frozenset()
    remote_storage_system_enabled: bool = False

    def validate_topic(self, overrides: Mapping[str, str]) -> LogConfig:
        try:
            merged = self.default_log_config.with_overrides(overrides)
        except ValueError as exc:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        if merged.remote_storage_enable and not self.remote_storage_system_enabled:
            # Kafka's wording, so scripts that match on it keep working.
            raise KafkaApiError(
                ErrorCode.INVALID_CONFIG,
                "Tiered Storage functionality is disabled in the broker. Topic cannot be "
                "configured with remote log storage. Set remote.log.storage.system.enable=true "
                "on the brokers to enable it.",
            )
        return merged

    def topic_config_record(self, topic: str, name: str, value: str | None) -> MetadataRecord:
        return make_record(
            "ConfigRecord",
            {"resource_type": RESOURCE_TOPIC, "resource_name": topic, "name": name, "value": value},
        )

    def describe_topic(
        self, overrides: Mapping[str, str]
    ) -> list[CreateTopicsResponseTopicsConfigs]:
        """Every topic config with its value and source, as CreateTopics v5+ returns them."""
        merged = self.validate_topic(overrides)
        entries: list[CreateTopicsResponseTopicsConfigs] = []
        for definition in CONFIG_DEFS:
            if definition.name in overrides:
                source = SOURCE_TOPIC_CONFIG
            elif definition.name in self.static_broker_keys:
                source = SOURCE_STATIC_BROKER_CONFIG
            else:
                source = SOURCE_DEFAULT_CONFIG
            entries.append(
                {
                    "name": definition.name,
                    "value": merged.value_string(definition.name),
                    "read_only": False,
                    "config_source": source,
                    "is_sensitive": False,
                }
            )
        return entries


def _is_list_key(resource_type: int, name: str) -> bool:
    if resource_type == RESOURCE_TOPIC:
        definition = CONFIG_BY_NAME.get(name)
        return definition is not None and definition.type == "list"
    broker = BROKER_DEFS.get(name)
    return broker is not None and broker.type == "list"


def _default_value(resource_type: int, name: str, policy: TopicConfigPolicy) -> str | None:
    if resource_type == RESOURCE_TOPIC:
        if name in CONFIG_BY_NAME:
            return policy.default_log_config.value_string(name)
        return None
    broker = BROKER_DEFS.get(name)
    return None if broker is None else broker.default_string


def incremental_alter_configs(
    image: MetadataImage, request: IncrementalAlterConfigsRequest, policy: TopicConfigPolicy
) -> tuple[list[MetadataRecord], IncrementalAlterConfigsResponse]:
    records, responses = _alter_resources(image, request["resources"], policy, _alter_one)
    return ([] if request["validate_only"] else records), {
        "throttle_time_ms": 0,
        "responses": responses,
    }


def alter_configs(
    image: MetadataImage, request: AlterConfigsRequest, policy: TopicConfigPolicy
) -> tuple[list[MetadataRecord], AlterConfigsResponse]:
    """AlterConfigs (33): each resource's overrides become exactly the keys listed."""
    records, responses = _alter_resources(image, request["resources"], policy, _replace_one)
    return ([] if request["validate_only"] else records), {
        "throttle_time_ms": 0,
        "responses": responses,
    }


_Resource = TypeVar(
    "_Resource", IncrementalAlterConfigsRequestResources, AlterConfigsRequestResources
)


def _alter_resources(
    image: MetadataImage,
    resources: list[_Resource],
    policy: TopicConfigPolicy,
    alter: Callable[[MetadataImage, _Resource, TopicConfigPolicy], list[MetadataRecord]],
) -> tuple[list[MetadataRecord], list[IncrementalAlterConfigsResponseResponses]]:
    """Each resource altered by ``alter``; both APIs' responses have the same TypedDict."""
    keys = [(r["resource_type"], r["resource_name"]) for r in resources]
    records: list[MetadataRecord] = []
    responses: list[IncrementalAlterConfigsResponseResponses] = []
    for resource in resources:
        resource_type = resource["resource_type"]
        resource_name = resource["resource_name"]
        response: IncrementalAlterConfigsResponseResponses = {
            "error_code": 0,
            "error_message": None,
            "resource_type": resource_type,
            "resource_name": resource_name,
        }
        try:
            if keys.count((resource_type, resource_name)) > 1:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Duplicate resource.")
            records.extend(alter(image, resource, policy))
        except KafkaApiError as exc:
            response["error_code"] = int(exc.code)
            response["error_message"] = exc.message
        responses.append(response)
    return records, responses


def _check_resource(
    image: MetadataImage, resource_type: int, name: str, api: str = "IncrementalAlterConfigs"
) -> None:
    if resource_type == RESOURCE_TOPIC:
        if image.topics.get_topic(name) is None:
            raise KafkaApiError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
            )
    elif resource_type == RESOURCE_BROKER:
        if name:
            try:
                broker_id = int(name)
            except ValueError:
                broker_id = -1
            if broker_id < 0:
                raise KafkaApiError(
                    ErrorCode.INVALID_REQUEST,
                    f"Illegal non-integral BROKER resource type name: {name}",
                )
    elif resource_type == RESOURCE_GROUP:
        if not name:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Group name can't be empty.")
    else:
        kind = _RESOURCE_NAMES.get(resource_type, str(resource_type))
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            f"Unsupported resource type {kind} for {api}",
        )


def _alter_one(
    image: MetadataImage,
    resource: IncrementalAlterConfigsRequestResources,
    policy: TopicConfigPolicy,
) -> list[MetadataRecord]:
    resource_type = resource["resource_type"]
    name = resource["resource_name"]
    _check_resource(image, resource_type, name)
    current = dict(image.configs.get(resource_type, name))
    updated = dict(current)
    config_names = [c["name"] for c in resource["configs"]]
    if len(set(config_names)) != len(config_names):
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    for entry in resource["configs"]:
        key = entry["name"]
        op = entry["config_operation"]
        value = entry["value"]
        if op not in (OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT):
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {op}")
        if op == OP_DELETE:
            updated.pop(key, None)
            continue
        if value is None:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {key}")
        if op == OP_SET:
            updated[key] = value
            continue
        if not _is_list_key(resource_type, key):
            verb = "append" if op == OP_APPEND else "subtract"
            raise KafkaApiError(
                ErrorCode.INVALID_CONFIG,
                f"Config value {verb} is not allowed for config key: {key}",
            )
        base = updated.get(key, _default_value(resource_type, key, policy)) or ""
        parts = [p.strip() for p in base.split(",") if p.strip()]
        items = [p.strip() for p in value.split(",") if p.strip()]
        if op == OP_APPEND:
            parts += [item for item in items if item not in parts]
        else:
            parts = [part for part in parts if part not in items]
        updated[key] = ",".join(parts)
    return _change_records(resource_type, name, current, updated, policy)


def _replace_one(
    image: MetadataImage, resource: AlterConfigsRequestResources, policy: TopicConfigPolicy
) -> list[MetadataRecord]:
    resource_type = resource["resource_type"]
    name = resource["resource_name"]
    _check_resource(image, resource_type, name, "AlterConfigs")
    current = dict(image.configs.get(resource_type, name))
    configs = resource["configs"]
    config_names = [c["name"] for c in configs]
    if len(set(config_names)) != len(config_names):
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    updated = {c["name"]: value for c in configs if (value := c["value"]) is not None}
    return _change_records(resource_type, name, current, updated, policy)


def _change_records(
    resource_type: int,
    name: str,
    current: Mapping[str, str],
    updated: Mapping[str, str],
    policy: TopicConfigPolicy,
) -> list[MetadataRecord]:
    """Validate ``updated`` as the resource's whole override set; a record per changed key."""
    if resource_type == RESOURCE_TOPIC:
        policy.validate_topic(updated)
    elif resource_type == RESOURCE_GROUP:
        validate_group_configs(updated)
    else:
        _validate_broker(updated)
    records = []
    for key in sorted(set(current) | set(updated)):
        if current.get(key) != updated.get(key):
            records.append(
                make_record(
                    "ConfigRecord",
                    {
                        "resource_type": resource_type,
                        "resource_name": name,
                        "name": key,
                        "value": updated.get(key),
                    },
                )
            )
    return records


# Kafka broker keys a client may set dynamically (Kafka's reconfigurable SASL settings) that this
# node keeps in the metadata but does not use, as it has no Kerberos/OAUTHBEARER login.
_DYNAMIC_UNUSED_BROKER_KEYS = frozenset(
    {
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.principal.to.local.rules",
        "sasl.kerberos.service.name",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.ticket.renew.window.factor",
    }
)


def _validate_broker(configs: Mapping[str, str]) -> None:
    for key, value in configs.items():
        definition = BROKER_DEFS.get(key)
        if definition is None:
            if key in ACCEPTED_BROKER_KEYS or key in _DYNAMIC_UNUSED_BROKER_KEYS:
                continue  # a Kafka key this node accepts and does not use
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, f"Unknown broker config: {key}")
        try:
            definition.parse(value)
        except ConfigError as exc:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, str(exc)) from None
