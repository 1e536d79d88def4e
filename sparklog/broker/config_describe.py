"""DescribeConfigs entries: each key's effective value, its source, synonyms and type.

A key of Kafka's PASSWORD type (``ssl.keystore.password``, ``ssl.keystore.key``, the S3 secret,
...) is sensitive: as in Kafka its value and its synonyms' values are ``None`` (null on the
wire) and the entry says ``sensitive``, so no secret leaves the broker through DescribeConfigs.
A listener-prefixed key (``listener.name.<listener>.ssl.keystore.password``) has the type of
its un-prefixed key, so the same holds for it.

Sources follow Kafka's DescribeConfigsResponse.ConfigSource: a topic override is
TOPIC_CONFIG (1), a topic key whose broker-level synonym is set in server.properties is
STATIC_BROKER_CONFIG (4), anything else DEFAULT_CONFIG (5). Synonyms list, in order of
precedence, the topic override, the static broker setting and the default, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparklog.config import ServerConfig
from sparklog.config_keys import DEFS as BROKER_DEFS
from sparklog.config_keys import listener_def, split_listener_key
from sparklog.controller.group_configs import GROUP_CONFIGS
from sparklog.storage.config import CONFIG_DEFS, LogConfig

TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

# DescribeConfigsResponse.ConfigType
_CONFIG_TYPES = {
    "boolean": 1,
    "string": 2,
    "int": 3,
    "short": 4,
    "long": 5,
    "double": 6,
    "list": 7,
    "class": 8,
    "password": 9,
}


@dataclass(frozen=True, slots=True)
class Synonym:
    name: str
    value: str | None
    source: int


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    read_only: bool
    config_type: int
    documentation: str | None
    synonyms: tuple[Synonym, ...]
    sensitive: bool = False


def describe_topic_configs(config: ServerConfig, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    broker_defaults = config.default_log_config()
    static_keys = config.explicit_topic_defaults()
    effective = broker_defaults.with_overrides(dict(overrides)) if overrides else broker_defaults
    builtin = LogConfig()
    entries = []
    for definition in CONFIG_DEFS:
        name = definition.name
        synonyms: list[Synonym] = []
        if name in overrides:
            synonyms.append(Synonym(name, effective.value_string(name), TOPIC_CONFIG))
        if name in static_keys and definition.synonym:
            synonyms.append(
                Synonym(
                    definition.synonym,
                    broker_defaults.value_string(name),
                    STATIC_BROKER_CONFIG,
                )
            )
        if definition.synonym:
            synonyms.append(Synonym(definition.synonym, builtin.value_string(name), DEFAULT_CONFIG))
        source = synonyms[0].source if synonyms else DEFAULT_CONFIG
        entries.append(
            ConfigEntry(
                name=name,
                value=effective.value_string(name),
                source=source,
                read_only=False,
                config_type=_CONFIG_TYPES.get(definition.type, 0),
                documentation=definition.doc,
                synonyms=tuple(synonyms),
            )
        )
    return entries


def _broker_value(config: ServerConfig, name: str) -> str | None:
    if config.is_set(name):
        return config.props[name]
    return BROKER_DEFS[name].default_string


def _broker_synonym(config: ServerConfig, name: str, sensitive: bool) -> Synonym:
    source = STATIC_BROKER_CONFIG if config.is_set(name) else DEFAULT_CONFIG
    return Synonym(name, None if sensitive else _broker_value(config, name), source)


def describe_broker_configs(config: ServerConfig) -> list[ConfigEntry]:
    """Every broker key, and each listener-prefixed key the file sets (Kafka lists those too),
    whose synonyms are itself then its un-prefixed key."""
    definitions = dict(BROKER_DEFS)
    for name in config.props:
        prefixed = listener_def(name)
        if prefixed is not None:
            definitions[name] = prefixed
    entries = []
    for name, definition in sorted(definitions.items()):
        sensitive = definition.type == "password"
        synonyms = [_broker_synonym(config, name, sensitive)]
        if name not in BROKER_DEFS:
            base = split_listener_key(name)
            if base is not None and base[1] in BROKER_DEFS:
                synonyms.append(_broker_synonym(config, base[1], sensitive))
        entries.append(
            ConfigEntry(
                name=name,
                value=synonyms[0].value,
                source=synonyms[0].source,
                # Nothing can be changed on a running node yet (no dynamic broker configs).
                read_only=True,
                config_type=_CONFIG_TYPES.get(definition.type, 0),
                documentation=None,
                synonyms=tuple(synonyms),
                sensitive=sensitive,
            )
        )
    return entries


GROUP_CONFIG = 8  # DescribeConfigsResponse.ConfigSource.GROUP_CONFIG


def describe_group_configs(config: ServerConfig, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """Every group config key (Kafka's GroupConfig): the group's override (GROUP_CONFIG) or the
    broker's ``group.*`` value it defaults to, with that broker key as a synonym."""
    entries = []
    for name, definition in sorted(GROUP_CONFIGS.items()):
        synonyms: list[Synonym] = []
        if name in overrides:
            synonyms.append(Synonym(name, overrides[name], GROUP_CONFIG))
        broker_key = definition.synonym
        if broker_key is not None and broker_key in BROKER_DEFS:
            broker_value = _broker_value(config, broker_key)
            source = STATIC_BROKER_CONFIG if config.is_set(broker_key) else DEFAULT_CONFIG
            synonyms.append(Synonym(broker_key, broker_value, source))
        else:
            synonyms.append(Synonym(name, definition.default_string, DEFAULT_CONFIG))
        value = synonyms[0].value
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=GROUP_CONFIG if name in overrides else DEFAULT_CONFIG,
                read_only=False,
                config_type=_CONFIG_TYPES[definition.type],
                documentation=None,
                synonyms=tuple(synonyms),
            )
        )
    return entries
