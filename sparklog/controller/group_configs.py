"""Group configs (config resource type GROUP, 32): Kafka 4.x's GroupConfig.

Contract:
- ``GROUP_CONFIGS`` names every key a group may override (KIP-848 consumer groups, KIP-932
  share groups, KIP-1071 streams groups), declared with the one framework of
  :mod:`sparklog.configdef`: its type, bounds and the broker key whose value it defaults to
  (``synonym``).
- :func:`validate_group_configs` checks a group's whole override set as Kafka's
  ``GroupConfig.validate`` does: an unknown key, a value of the wrong type or one outside the
  broker's bounds is INVALID_CONFIG (raised as ``KafkaApiError``); nothing is changed.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparklog.configdef import Between, ConfigDef, ConfigError, OneOf
from sparklog.protocol.errors import ErrorCode, KafkaApiError


def _int(name: str, default: int, low: int, high: int) -> ConfigDef:
    """An int key defaulting to the broker's ``group.<name>``, within Kafka's
    ``group.*.min.*`` / ``group.*.max.*`` bounds (their defaults)."""
    return ConfigDef(name, "int", default, Between(low, high), synonym=f"group.{name}")


GROUP_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        _int("consumer.session.timeout.ms", 45000, 45000, 60000),
        _int("consumer.heartbeat.interval.ms", 5000, 5000, 15000),
        _int("share.session.timeout.ms", 45000, 45000, 60000),
        _int("share.heartbeat.interval.ms", 5000, 5000, 15000),
        _int("share.record.lock.duration.ms", 30000, 15000, 60000),
        ConfigDef("share.auto.offset.reset", "string", "latest"),
        ConfigDef(
            "share.isolation.level",
            "string",
            "read_uncommitted",
            OneOf(("read_uncommitted", "read_committed")),
        ),
        _int("streams.session.timeout.ms", 45000, 45000, 60000),
        _int("streams.heartbeat.interval.ms", 5000, 5000, 15000),
        _int("streams.num.standby.replicas", 0, 0, 2),
    )
}  # fmt: skip


def _invalid(message: str) -> KafkaApiError:
    return KafkaApiError(ErrorCode.INVALID_CONFIG, message)


def validate_group_configs(configs: Mapping[str, str]) -> None:
    """Raise INVALID_CONFIG for the first key or value Kafka's GroupConfig would refuse, with
    Kafka's message (values are parsed by :mod:`sparklog.configdef`)."""
    for key, value in configs.items():
        definition = GROUP_CONFIGS.get(key)
        if definition is None:
            raise _invalid(f"Unknown group config name: {key}")
        try:
            definition.parse(value)
        except ConfigError as exc:
            raise _invalid(_kafka_message(definition, value, str(exc.problem))) from None
        if key == "share.auto.offset.reset":
            _validate_offset_reset(value)


def _kafka_message(definition: ConfigDef, value: str, problem: str) -> str:
    key = definition.name
    if problem.startswith("expected "):
        return f"Invalid value {value} for configuration {key}: Not a number of type INT"
    validator = definition.validator
    if isinstance(validator, OneOf):
        choices = ", ".join(validator.choices)
        return f"Invalid value {value} for configuration {key}: String must be one of: {choices}"
    assert isinstance(validator, Between)
    if int(value) < validator.low:
        return f"{key} must be greater than or equal to {_bound(definition, 'min')}"
    return f"{key} must be less than or equal to {_bound(definition, 'max')}"


def _bound(definition: ConfigDef, which: str) -> str:
    """Kafka's name of the broker bound: group.consumer.session.timeout.ms ->
    group.consumer.min.session.timeout.ms."""
    group, kind, rest = (definition.synonym or definition.name).split(".", 2)
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
