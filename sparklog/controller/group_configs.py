"""Group configs (config resource type GROUP, 32): Kafka 4.x's GroupConfig.

Contract:
- ``GROUP_CONFIGS`` names every key a group may override (KIP-848 consumer groups, KIP-932
  share groups, KIP-1071 streams groups), its type and the broker key whose value it defaults to.
- :func:`validate_group_configs` checks a group's whole override set as Kafka's
  ``GroupConfig.validate`` does: an unknown key, a value of the wrong type or one outside the
  broker's bounds is INVALID_CONFIG (raised as ``KafkaApiError``); nothing is changed.
- :func:`group_config_value` is a key's effective value for a group: its override, else the
  broker default (``defaults`` maps broker keys to their values on this node).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparklog.protocol.errors import ErrorCode, KafkaApiError

RESOURCE_GROUP = 32


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    kind: str  # "int" | "string"
    broker_key: str | None  # the broker config it defaults to
    default: str
    minimum: int | None = None  # Kafka's group.*.min.* bound (its default)
    maximum: int | None = None  # Kafka's group.*.max.* bound (its default)
    choices: tuple[str, ...] = ()


def _int(name: str, default: int, low: int, high: int) -> GroupConfigDef:
    """An int key defaulting to the broker's ``group.<name>``."""
    return GroupConfigDef(name, "int", f"group.{name}", str(default), low, high)


GROUP_CONFIGS: dict[str, GroupConfigDef] = {
    d.name: d
    for d in (
        _int("consumer.session.timeout.ms", 45000, 45000, 60000),
        _int("consumer.heartbeat.interval.ms", 5000, 5000, 15000),
        _int("share.session.timeout.ms", 45000, 45000, 60000),
        _int("share.heartbeat.interval.ms", 5000, 5000, 15000),
        _int("share.record.lock.duration.ms", 30000, 15000, 60000),
        GroupConfigDef("share.auto.offset.reset", "string", None, "latest"),
        GroupConfigDef(
            "share.isolation.level",
            "string",
            None,
            "read_uncommitted",
            choices=("read_uncommitted", "read_committed"),
        ),
        _int("streams.session.timeout.ms", 45000, 45000, 60000),
        _int("streams.heartbeat.interval.ms", 5000, 5000, 15000),
        _int("streams.num.standby.replicas", 0, 0, 2),
    )
}  # fmt: skip


def _invalid(message: str) -> KafkaApiError:
    return KafkaApiError(ErrorCode.INVALID_CONFIG, message)


def validate_group_configs(configs: Mapping[str, str]) -> None:
    """Raise INVALID_CONFIG for the first key or value Kafka's GroupConfig would refuse."""
    for key, value in configs.items():
        definition = GROUP_CONFIGS.get(key)
        if definition is None:
            raise _invalid(f"Unknown group config name: {key}")
        if definition.kind == "int":
            try:
                number = int(value.strip())
            except ValueError:
                raise _invalid(
                    f"Invalid value {value} for configuration {key}: Not a number of type INT"
                ) from None
            if definition.minimum is not None and number < definition.minimum:
                raise _invalid(
                    f"{key} must be greater than or equal to {_bound(definition, 'min')}"
                )
            if definition.maximum is not None and number > definition.maximum:
                raise _invalid(f"{key} must be less than or equal to {_bound(definition, 'max')}")
        elif definition.choices and value not in definition.choices:
            raise _invalid(
                f"Invalid value {value} for configuration {key}: String must be one of: "
                + ", ".join(definition.choices)
            )
        elif key == "share.auto.offset.reset":
            _validate_offset_reset(value)


def _bound(definition: GroupConfigDef, which: str) -> str:
    """Kafka's name of the broker bound: group.consumer.session.timeout.ms ->
    group.consumer.min.session.timeout.ms."""
    group, kind, rest = (definition.broker_key or definition.name).split(".", 2)
    return f"{group}.{kind}.{which}.{rest}"


def _validate_offset_reset(value: str) -> None:
    if value in ("latest", "earliest"):
        return
    if value.startswith("by_duration:") and len(value) > len("by_duration:"):
        return
    raise _invalid(
        f"Invalid value {value} for configuration share.auto.offset.reset: must be latest, "
        "earliest or by_duration:<ISO-8601 duration>"
    )


def group_config_value(
    key: str, overrides: Mapping[str, str], defaults: Mapping[str, str]
) -> str | None:
    """``key``'s effective value for a group with ``overrides``; None for an unknown key."""
    if key in overrides:
        return overrides[key]
    definition = GROUP_CONFIGS.get(key)
    if definition is None:
        return None
    if definition.broker_key is not None and definition.broker_key in defaults:
        return defaults[definition.broker_key]
    return definition.default
