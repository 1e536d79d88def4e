"""Server configuration: Apache Kafka 4.x ``server.properties`` keys, defaults and checks.

Contract:

- :meth:`ServerConfig.from_file` reads a Java-properties file (``key=value`` or ``key: value``,
  ``#``/``!`` comments, ``\\`` line continuations); :meth:`ServerConfig.from_props` takes a dict of
  strings. Every key must be a Kafka broker/controller key this node knows (see ``DEFS`` and
  ``ACCEPTED`` in :mod:`sparklog.config_keys`) or one of our own ``sparklog.*`` keys. Values are
  parsed by the one framework, :mod:`sparklog.configdef`, a listener-prefixed key
  (``listener.name.<listener>.ssl.keystore.password``) with its un-prefixed key's definition,
  whichever listener it names. An unknown key is an error that names the key and suggests the
  closest known one; a bad value is an error that names the key, the value and the expected
  type. Errors are :class:`ConfigError` (a ``ValueError``).
- Defaults are Kafka's, except ``log.dirs`` (``/tmp/kraft-combined-logs``, the value Kafka ships
  in its sample ``server.properties``).
- Precedence follows Kafka: ``log.dirs`` over ``log.dir``; ``log.roll.ms`` over
  ``log.roll.hours``; ``log.retention.ms`` over ``.minutes`` over ``.hours``;
  ``log.flush.interval.ms`` falls back to ``log.flush.scheduler.interval.ms``.
- The KRaft cross-key rules Kafka enforces at start-up are checked here too (process.roles,
  controller listeners, inter-broker listener, quorum voters / bootstrap servers), so a bad file
  fails before anything touches the disk.
- Keys in ``ACCEPTED`` are Kafka keys we accept (so a real Kafka file loads) but do not use yet;
  they are kept as strings in :attr:`ServerConfig.props`. So are the RLMM plugin's keys (under
  ``remote.log.metadata.manager.impl.prefix``, default ``rlmm.config.``, e.g. Kafka's
  ``remote.log.metadata.common.client.*`` client security): the RLMM here has no clients.

The object is immutable; there are no dynamic (runtime-altered) broker configs yet.

Two start-up checks read the configuration too: :func:`check_formatted` (every directory holds
this node's ``meta.properties``, or a :class:`~sparklog.storage.meta_properties.MetaPropertiesError`
names the directory and the ``sparklog storage format`` command to run) and
:func:`controller_endpoints` (the controller listeners a voter announces to the quorum).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sparklog.config_keys import (
    ACCEPTED,
    DEFS,
    LISTENER_PREFIX,
    MULTI_SYNONYMS,
    ConfigError,
    listener_def,
)
from sparklog.configdef import did_you_mean, format_value
from sparklog.security.server_config import unsupported_key_message, validate_security
from sparklog.storage.config import CONFIG_DEFS, LogConfig
from sparklog.storage.meta_properties import (
    META_PROPERTIES,
    MetaProperties,
    MetaPropertiesError,
    read_meta_properties,
    verify_ensemble,
)

__all__ = [
    "ConfigError",
    "Listener",
    "QuorumVoter",
    "ServerConfig",
    "check_formatted",
    "controller_endpoints",
]

# Kafka hands the keys under remote.log.metadata.manager.impl.prefix (default rlmm.config.) to
# its RemoteLogMetadataManager plugin: the TopicBasedRLMM's __remote_log_metadata settings and
# the remote.log.metadata.common.client.* / .producer.* / .consumer.* security of its clients.
# This node's RLMM keeps its state in the store's manifests (sparklog.tiering.rlmm) and has no
# Kafka clients, so those keys are accepted (a secured tiered Kafka file loads) and unused.
RLMM_PREFIX_KEY = "remote.log.metadata.manager.impl.prefix"
RLMM_PREFIX_DEFAULT = "rlmm.config."

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


# Topic key <- the one broker key giving its default (Kafka's direct ServerTopicConfigSynonyms):
# the topic table's synonyms that are broker keys here, less those with several broker keys.
_MULTI = {topic for topic, _ in MULTI_SYNONYMS}
SYNONYMS = tuple(
    (d.name, d.synonym) for d in CONFIG_DEFS if d.synonym in DEFS and d.name not in _MULTI
)


def _log_config_props(config: ServerConfig) -> dict[str, str]:
    props = {topic: format_value(config.get(broker)) for topic, broker in SYNONYMS}
    props["segment.ms"] = str(config.log_roll_ms)
    props["segment.jitter.ms"] = str(config.log_roll_jitter_ms)
    props["retention.ms"] = str(config.log_retention_ms)
    props["flush.ms"] = str(config.log_flush_interval_ms)
    return props


@dataclass(frozen=True, slots=True)
class Listener:
    """One entry of ``listeners`` / ``advertised.listeners``; host ``""`` binds every interface."""

    name: str
    host: str
    port: int
    security_protocol: str


@dataclass(frozen=True, slots=True)
class QuorumVoter:
    """One entry of ``controller.quorum.voters`` (``id@host:port``)."""

    node_id: int
    host: str
    port: int


def _read_properties(text: str) -> dict[str, str]:
    """Java ``Properties.load`` for the subset people write in server.properties."""
    props: dict[str, str] = {}
    logical = ""
    for raw_line in text.splitlines():
        line = raw_line.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        key, value = _split_property(logical)
        props[key] = value
        logical = ""
    if logical:
        key, value = _split_property(logical)
        props[key] = value
    return props


def _split_property(line: str) -> tuple[str, str]:
    for index, char in enumerate(line):
        if char in "=:":
            return line[:index].strip(), line[index + 1 :].strip()
        if char.isspace():
            rest = line[index:].lstrip()
            if rest[:1] in ("=", ":"):
                rest = rest[1:]
            return line[:index].strip(), rest.strip()
    return line.strip(), ""


def _parse_host_port(text: str, what: str) -> tuple[str, int]:
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1 : end + 2] != ":":
            raise ConfigError(f"Invalid {what}: {text!r} (expected [ipv6]:port)")
        host, port_text = text[1:end], text[end + 2 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise ConfigError(f"Invalid {what}: {text!r} (expected host:port)")
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError(
            f"Invalid {what}: {text!r} (port {port_text!r} is not a number)"
        ) from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"Invalid {what}: {text!r} (port must be 0-65535)")
    return host, port


class ServerConfig:
    """The parsed, validated configuration of one node. Build with ``from_file``/``from_props``."""

    __slots__ = ("_values", "props")

    def __init__(self, values: dict[str, Any], props: Mapping[str, str]) -> None:
        self._values = values
        self.props: Mapping[str, str] = MappingProxyType(dict(props))

    @classmethod
    def from_file(cls, path: str | Path) -> ServerConfig:
        return cls.from_props(read_properties_file(path))

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> ServerConfig:
        rlmm_prefix = str(props.get(RLMM_PREFIX_KEY) or RLMM_PREFIX_DEFAULT)
        values: dict[str, Any] = {}
        for key, raw in props.items():
            definition = DEFS.get(key) or listener_def(key)
            if definition is None:
                refused = unsupported_key_message(key)
                if refused is not None:
                    raise ConfigError(refused)
                if key in ACCEPTED:
                    continue
                if key.startswith(LISTENER_PREFIX):
                    continue  # validate_security refuses it, naming the per-listener keys
                if key == RLMM_PREFIX_KEY or key.startswith(rlmm_prefix):
                    continue
                hint = did_you_mean(key, DEFS.keys() | ACCEPTED)
                raise ConfigError(f"Unknown configuration key {key!r}.{hint}")
            if not isinstance(raw, str):
                raw = str(raw)
            values[key] = definition.parse(raw)
        for name, definition in DEFS.items():
            if name not in values:
                values[name] = definition.default
        config = cls(values, props)
        config._validate()
        return config

    def get(self, key: str) -> Any:
        """The typed value of a key we define (its default when unset), or of a
        listener-prefixed key that is set (:func:`sparklog.config_keys.listener_def`)."""
        if key not in self._values:
            raise KeyError(key)
        return self._values[key]

    def is_set(self, key: str) -> bool:
        return key in self.props

    # -- identity and roles --------------------------------------------------------------

    @property
    def node_id(self) -> int:
        value: int = self._values["node.id"]
        return value

    @property
    def process_roles(self) -> frozenset[str]:
        return frozenset(self._values["process.roles"])

    @property
    def is_broker(self) -> bool:
        return "broker" in self.process_roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    # -- listeners ---------------------------------------------------------------------------

    @property
    def security_protocol_map(self) -> dict[str, str]:
        mapping: dict[str, str] = {}
        for entry in self._values["listener.security.protocol.map"]:
            name, sep, protocol = entry.partition(":")
            if not sep or not name.strip():
                raise ConfigError(
                    f"Invalid value {entry!r} in listener.security.protocol.map: "
                    "expected LISTENER_NAME:SECURITY_PROTOCOL"
                )
            protocol = protocol.strip().upper()
            if protocol not in SECURITY_PROTOCOLS:
                raise ConfigError(
                    f"Invalid security protocol {protocol!r} for listener {name.strip()} in "
                    "listener.security.protocol.map: expected one of "
                    + ", ".join(SECURITY_PROTOCOLS)
                )
            mapping[name.strip().upper()] = protocol
        return mapping

    def _parse_listeners(self, key: str, entries: tuple[str, ...]) -> tuple[Listener, ...]:
        mapping = self.security_protocol_map
        result: list[Listener] = []
        for entry in entries:
            name, sep, rest = entry.partition("://")
            if not sep or not name:
                raise ConfigError(
                    f"Invalid value {entry!r} in {key}: expected LISTENER_NAME://host:port"
                )
            name = name.upper()
            host, port = _parse_host_port(rest, f"endpoint in {key}")
            if name in mapping:
                protocol = mapping[name]
            elif name in SECURITY_PROTOCOLS:
                protocol = name
            else:
                raise ConfigError(
                    f"Listener {name} in {key} has no security protocol: add "
                    f"{name}:PLAINTEXT (or another protocol) to listener.security.protocol.map"
                )
            result.append(Listener(name, host, port, protocol))
        names = [listener.name for listener in result]
        if len(set(names)) != len(names):
            raise ConfigError(f"Each listener must have a different name in {key}: {entries}")
        return tuple(result)

    @property
    def listeners(self) -> tuple[Listener, ...]:
        return self._parse_listeners("listeners", self._values["listeners"])

    @property
    def advertised_listeners(self) -> tuple[Listener, ...]:
        """``advertised.listeners``, or ``listeners`` for the names not advertised explicitly."""
        if self._values["advertised.listeners"] is None:
            return self.listeners
        advertised = self._parse_listeners(
            "advertised.listeners", self._values["advertised.listeners"]
        )
        names = {listener.name for listener in advertised}
        extra = tuple(item for item in self.listeners if item.name not in names)
        return advertised + extra

    @property
    def controller_listener_names(self) -> tuple[str, ...]:
        return tuple(name.upper() for name in self._values["controller.listener.names"])

    @property
    def inter_broker_listener_name(self) -> str:
        value = self._values["inter.broker.listener.name"]
        if not value:
            # Kafka: the listener named after security.inter.broker.protocol.
            value = self._values["security.inter.broker.protocol"]
        return str(value).upper() if value else "PLAINTEXT"

    @property
    def broker_listeners(self) -> tuple[Listener, ...]:
        controller = set(self.controller_listener_names)
        return tuple(item for item in self.listeners if item.name not in controller)

    @property
    def controller_listeners(self) -> tuple[Listener, ...]:
        controller = set(self.controller_listener_names)
        return tuple(item for item in self.listeners if item.name in controller)

    # -- quorum ------------------------------------------------------------------------------

    @property
    def quorum_voters(self) -> tuple[QuorumVoter, ...]:
        voters: list[QuorumVoter] = []
        for entry in self._values["controller.quorum.voters"]:
            node, sep, address = entry.partition("@")
            try:
                node_id = int(node)
            except ValueError:
                node_id = -1
            if not sep or node_id < 0:
                raise ConfigError(
                    f"Invalid value {entry!r} in controller.quorum.voters: expected id@host:port"
                )
            host, port = _parse_host_port(address, "voter in controller.quorum.voters")
            voters.append(QuorumVoter(node_id, host, port))
        return tuple(voters)

    @property
    def quorum_bootstrap_servers(self) -> tuple[tuple[str, int], ...]:
        return tuple(
            _parse_host_port(entry, "address in controller.quorum.bootstrap.servers")
            for entry in self._values["controller.quorum.bootstrap.servers"]
        )

    # -- storage -----------------------------------------------------------------------------

    @property
    def log_dirs(self) -> tuple[str, ...]:
        dirs = self._values["log.dirs"]
        if dirs is None:
            dirs = (self._values["log.dir"],)
        return tuple(dirs)

    @property
    def metadata_log_dir(self) -> str:
        value = self._values["metadata.log.dir"]
        return str(value) if value else self.log_dirs[0]

    @property
    def all_dirs(self) -> tuple[str, ...]:
        """Every directory the node formats and owns: log dirs plus the metadata log dir."""
        dirs = list(self.log_dirs)
        if self.metadata_log_dir not in dirs:
            dirs.append(self.metadata_log_dir)
        return tuple(dirs)

    @property
    def log_retention_ms(self) -> int:
        for key, factor in (
            ("log.retention.ms", 1),
            ("log.retention.minutes", 60_000),
            ("log.retention.hours", 3_600_000),
        ):
            value = self._values[key]
            if value is not None:
                return -1 if value < 0 else int(value) * factor
        raise AssertionError("log.retention.hours has a default")

    @property
    def log_roll_ms(self) -> int:
        value = self._values["log.roll.ms"]
        return int(value) if value is not None else int(self._values["log.roll.hours"]) * 3_600_000

    @property
    def log_roll_jitter_ms(self) -> int:
        value = self._values["log.roll.jitter.ms"]
        if value is not None:
            return int(value)
        return int(self._values["log.roll.jitter.hours"]) * 3_600_000

    @property
    def log_flush_interval_ms(self) -> int:
        value = self._values["log.flush.interval.ms"]
        if value is not None:
            return int(value)
        return int(self._values["log.flush.scheduler.interval.ms"])

    def default_log_props(self) -> dict[str, str]:
        """Topic-level config keys (``segment.bytes``...) with this broker's defaults."""
        return _log_config_props(self)

    def explicit_topic_defaults(self) -> frozenset[str]:
        """Topic keys whose broker-level synonym is set in the file (DescribeConfigs reports
        their source as STATIC_BROKER_CONFIG rather than DEFAULT_CONFIG)."""
        keys = {topic for topic, broker in SYNONYMS if self.is_set(broker)}
        for topic, brokers in MULTI_SYNONYMS:
            if any(self.is_set(broker) for broker in brokers):
                keys.add(topic)
        return frozenset(keys)

    def default_log_config(self) -> LogConfig:
        """The broker-wide ``LogConfig`` new topics start from (Kafka's synonym mapping)."""
        # The broker defaults are not topic overrides: DescribeConfigs must not report them as
        # DYNAMIC_TOPIC_CONFIG, so the override set is cleared.
        config = LogConfig.from_props(self.default_log_props())
        return dataclasses.replace(config, overridden_keys=frozenset())

    # -- cross-key validation ----------------------------------------------------------------

    def _validate(self) -> None:
        roles = self._values["process.roles"]
        if not roles:
            raise ConfigError(
                "Missing required configuration process.roles: set it to broker, controller or "
                "broker,controller"
            )
        if len(set(roles)) != len(roles):
            raise ConfigError(f"Duplicate role names found in process.roles: {','.join(roles)}")
        if self._values["node.id"] is None:
            raise ConfigError("Missing required configuration node.id (a non-negative integer)")
        checks: tuple[Callable[[], None], ...] = (
            self._validate_listeners,
            self._validate_quorum,
            lambda: validate_security(self),
        )
        for check in checks:
            check()

    def _validate_listeners(self) -> None:
        listeners = self.listeners
        names = {item.name for item in listeners}
        ports = [item.port for item in listeners if item.port != 0]
        if len(set(ports)) != len(ports):
            raise ConfigError(f"Each listener must have a different port in listeners: {ports}")
        controller_names = self.controller_listener_names
        if not controller_names:
            raise ConfigError(
                "controller.listener.names must contain at least one value when running in "
                "KRaft mode (e.g. CONTROLLER)"
            )
        if self.is_controller:
            missing = [name for name in controller_names if name not in names]
            if len(missing) == len(controller_names):
                raise ConfigError(
                    f"The listeners config must contain a listener named in "
                    f"controller.listener.names ({','.join(controller_names)}) when "
                    "process.roles contains controller"
                )
        elif names & set(controller_names):
            raise ConfigError(
                "controller.listener.names must not contain a listener of listeners when "
                "process.roles is broker only: " + ",".join(sorted(names & set(controller_names)))
            )
        if self.is_broker:
            inter = self.inter_broker_listener_name
            if inter in controller_names:
                raise ConfigError(
                    f"inter.broker.listener.name {inter} must not be a controller listener"
                )
            if inter not in names:
                raise ConfigError(
                    f"inter.broker.listener.name must be a listener name defined in listeners; "
                    f"{inter} is not one of {','.join(sorted(names))}"
                )
            for item in self.advertised_listeners:
                if item.host in ("0.0.0.0", "::"):
                    raise ConfigError(
                        f"advertised.listeners cannot use the nonroutable meta-address "
                        f"{item.host}: use a routable IP address ({item.name})"
                    )

    def _validate_quorum(self) -> None:
        voters = self.quorum_voters
        bootstrap = self.quorum_bootstrap_servers
        if not voters and not bootstrap:
            raise ConfigError(
                "Either controller.quorum.bootstrap.servers must contain the controllers to "
                "bootstrap from, or controller.quorum.voters must list the voters (id@host:port); "
                "for one combined node use controller.quorum.bootstrap.servers=localhost:9093"
            )
        if voters and self.is_controller and self.node_id not in {v.node_id for v in voters}:
            raise ConfigError(
                f"If process.roles contains controller, the node id {self.node_id} must be "
                "included in the set of voters controller.quorum.voters="
                + ",".join(self._values["controller.quorum.voters"])
            )


def read_properties_file(path: str | Path) -> dict[str, str]:
    """The key/value pairs of a Java properties file (for tools that layer overrides on it)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot read configuration file {path}: {exc.strerror}") from None
    return _read_properties(text)


def controller_endpoints(config: ServerConfig) -> list[dict[str, Any]]:
    """The controller listeners of ``config`` as AddRaftVoter ``listeners`` (advertised first)."""
    advertised = {listener.name: listener for listener in config.advertised_listeners}
    endpoints = []
    for listener in config.controller_listeners:
        chosen = advertised.get(listener.name, listener)
        endpoints.append(
            {"name": chosen.name, "host": chosen.host or "localhost", "port": chosen.port}
        )
    return endpoints


def _format_hint(config: ServerConfig, config_path: str, cluster_id: str | None) -> str:
    if cluster_id is not None:
        return (
            f"sparklog storage format --cluster-id {cluster_id} --config {config_path} "
            "--ignore-formatted"
        )
    command = (
        "sparklog storage format --cluster-id $(sparklog storage random-uuid) "
        f"--config {config_path}"
    )
    if config.is_controller and not config.quorum_voters:
        command += " --standalone"
    return command


def check_formatted(
    config: ServerConfig, config_path: str = "server.properties"
) -> tuple[str, dict[str, str]]:
    """Verify every directory is formatted for this node; returns ``(cluster id, {dir: dir id})``.

    The MetaPropertiesError message names the directory and the command to run.
    """
    found: dict[str, MetaProperties] = {}
    missing: list[str] = []
    for directory in config.all_dirs:
        props = read_meta_properties(directory)
        if props is None:
            missing.append(directory)
        else:
            found[directory] = props
    cluster_id = verify_ensemble(found, None, config.node_id)
    if missing:
        raise MetaPropertiesError(
            f"No {META_PROPERTIES} found in {missing[0]}. Format it with: "
            + _format_hint(config, config_path, cluster_id)
        )
    assert cluster_id is not None
    directory_ids = {d: p.directory_id or "" for d, p in found.items()}
    return cluster_id, directory_ids
