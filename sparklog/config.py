"""Server configuration: Apache Kafka 4.x ``server.properties`` keys, defaults and checks.

Contract:

- :meth:`ServerConfig.from_file` reads a Java-properties file (``key=value`` or ``key: value``,
  ``#``/``!`` comments, ``\\`` line continuations); :meth:`ServerConfig.from_props` takes a dict of
  strings. Every key must be a Kafka broker/controller key this node knows (see ``DEFS`` and
  ``ACCEPTED``) or one of our own ``sparklog.*`` keys. An unknown key is an error that names the
  key and suggests the closest known one; a bad value is an error that names the key, the value
  and the expected type. Errors are :class:`ConfigError` (a ``ValueError``).
- Defaults are Kafka's, except ``log.dirs`` (``/tmp/kraft-combined-logs``, the value Kafka ships
  in its sample ``server.properties``).
- Precedence follows Kafka: ``log.dirs`` over ``log.dir``; ``log.roll.ms`` over
  ``log.roll.hours``; ``log.retention.ms`` over ``.minutes`` over ``.hours``;
  ``log.flush.interval.ms`` falls back to ``log.flush.scheduler.interval.ms``.
- The KRaft cross-key rules Kafka enforces at start-up are checked here too (process.roles,
  controller listeners, inter-broker listener, quorum voters / bootstrap servers), so a bad file
  fails before anything touches the disk.
- Keys in ``ACCEPTED`` are Kafka keys we accept (so a real Kafka file loads) but do not use yet;
  they are kept as strings in :attr:`ServerConfig.props`.

The object is immutable; there are no dynamic (runtime-altered) broker configs yet.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparklog.storage.config import LogConfig

__all__ = ["ConfigError", "Listener", "QuorumVoter", "ServerConfig"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One key: its Kafka type (int, long, short, double, bool, string, list), default, checks."""

    name: str
    kind: str
    default: Any = None
    minimum: int | None = None
    choices: tuple[str, ...] | None = None
    nullable: bool = False

    def describe_type(self) -> str:
        described = {
            "int": "a 32-bit integer",
            "long": "a 64-bit integer",
            "short": "a 16-bit integer",
            "double": "a number",
            "bool": "true or false",
            "list": "a comma-separated list",
            "string": "a string",
        }[self.kind]
        if self.choices is not None:
            described += f" from {{{', '.join(self.choices)}}}"
        if self.minimum is not None:
            described += f" >= {self.minimum}"
        return described


def _d(
    name: str,
    kind: str,
    default: Any = None,
    *,
    minimum: int | None = None,
    choices: tuple[str, ...] | None = None,
) -> ConfigDef:
    return ConfigDef(name, kind, default, minimum, choices, nullable=default is None)


_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
_CLEANUP_POLICIES = ("delete", "compact")
_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

# Keys this node reads, with Kafka 4.x defaults (None = unset; the property resolves it).
DEFS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        _d("process.roles", "list", (), choices=("broker", "controller")),
        _d("node.id", "int", minimum=0),
        _d("listeners", "list", ("PLAINTEXT://:9092", "CONTROLLER://:9093")),
        _d("advertised.listeners", "list"),
        _d(
            "listener.security.protocol.map",
            "list",
            (
                "PLAINTEXT:PLAINTEXT",
                "CONTROLLER:PLAINTEXT",
                "SSL:SSL",
                "SASL_PLAINTEXT:SASL_PLAINTEXT",
                "SASL_SSL:SASL_SSL",
            ),
        ),
        _d("controller.listener.names", "list", ()),
        _d("inter.broker.listener.name", "string"),
        _d("controller.quorum.voters", "list", ()),
        _d("controller.quorum.bootstrap.servers", "list", ()),
        _d("controller.quorum.election.timeout.ms", "int", 1000, minimum=0),
        _d("controller.quorum.fetch.timeout.ms", "int", 2000, minimum=0),
        _d("controller.quorum.election.backoff.max.ms", "int", 1000, minimum=0),
        _d("controller.quorum.append.linger.ms", "int", 25, minimum=0),
        _d("controller.quorum.request.timeout.ms", "int", 2000, minimum=0),
        _d("controller.quorum.retry.backoff.ms", "int", 20, minimum=0),
        _d("controller.quorum.auto.join.enable", "bool", False),
        _d("broker.rack", "string"),
        _d("log.dirs", "list"),
        _d("log.dir", "string", "/tmp/kraft-combined-logs"),
        _d("metadata.log.dir", "string"),
        _d("metadata.log.segment.bytes", "int", 1073741824, minimum=8 * 1024 * 1024),
        _d("metadata.log.segment.ms", "long", 604800000, minimum=1),
        _d("metadata.max.retention.bytes", "long", 104857600),
        _d("metadata.max.retention.ms", "long", 604800000),
        _d("metadata.log.max.record.bytes.between.snapshots", "long", 20971520, minimum=1),
        _d("metadata.log.max.snapshot.interval.ms", "long", 3600000, minimum=0),
        _d("metadata.max.idle.interval.ms", "int", 500, minimum=0),
        _d("num.partitions", "int", 1, minimum=1),
        _d("default.replication.factor", "int", 1, minimum=1),
        _d("auto.create.topics.enable", "bool", True),
        _d("delete.topic.enable", "bool", True),
        _d("auto.leader.rebalance.enable", "bool", True),
        _d("controlled.shutdown.enable", "bool", True),
        _d("unclean.leader.election.enable", "bool", False),
        _d("min.insync.replicas", "int", 1, minimum=1),
        _d("message.max.bytes", "int", 1048588, minimum=0),
        _d("compression.type", "string", "producer", choices=_COMPRESSION),
        _d("compression.gzip.level", "int", -1),
        _d("compression.lz4.level", "int", 9),
        _d("compression.zstd.level", "int", 3),
        _d("log.segment.bytes", "int", 1073741824, minimum=1024 * 1024),
        _d("log.roll.ms", "long", minimum=1),
        _d("log.roll.hours", "int", 168, minimum=1),
        _d("log.roll.jitter.ms", "long", minimum=0),
        _d("log.roll.jitter.hours", "int", 0, minimum=0),
        _d("log.retention.ms", "long"),
        _d("log.retention.minutes", "int"),
        _d("log.retention.hours", "int", 168),
        _d("log.retention.bytes", "long", -1),
        _d("log.local.retention.ms", "long", -2),
        _d("log.local.retention.bytes", "long", -2),
        _d("log.index.interval.bytes", "int", 4096, minimum=0),
        _d("log.index.size.max.bytes", "int", 10485760, minimum=4),
        _d("log.flush.interval.messages", "long", _LONG_MAX, minimum=1),
        _d("log.flush.interval.ms", "long"),
        _d("log.flush.scheduler.interval.ms", "long", _LONG_MAX),
        _d("log.flush.offset.checkpoint.interval.ms", "int", 60000, minimum=0),
        _d("log.flush.start.offset.checkpoint.interval.ms", "int", 60000, minimum=0),
        _d("log.retention.check.interval.ms", "long", 300000, minimum=1),
        _d("log.segment.delete.delay.ms", "long", 60000, minimum=0),
        _d("log.cleanup.policy", "list", ("delete",), choices=_CLEANUP_POLICIES),
        _d("log.cleaner.enable", "bool", True),
        _d("log.cleaner.threads", "int", 1, minimum=0),
        _d("log.cleaner.delete.retention.ms", "long", 86400000, minimum=0),
        _d("log.cleaner.min.compaction.lag.ms", "long", 0, minimum=0),
        _d("log.cleaner.max.compaction.lag.ms", "long", _LONG_MAX, minimum=1),
        _d("log.cleaner.min.cleanable.ratio", "double", 0.5),
        _d("log.cleaner.backoff.ms", "long", 15000, minimum=0),
        _d("log.preallocate", "bool", False),
        _d("log.message.timestamp.type", "string", "CreateTime", choices=_TIMESTAMP_TYPES),
        _d("log.message.timestamp.before.max.ms", "long", _LONG_MAX, minimum=0),
        _d("log.message.timestamp.after.max.ms", "long", 3600000, minimum=0),
        _d("num.recovery.threads.per.data.dir", "int", 2, minimum=1),
        _d("socket.request.max.bytes", "int", 104857600, minimum=1),
        _d("socket.send.buffer.bytes", "int", 102400),
        _d("socket.receive.buffer.bytes", "int", 102400),
        _d("connections.max.idle.ms", "long", 600000),
        _d("queued.max.requests", "int", 500, minimum=1),
        _d("num.network.threads", "int", 3, minimum=1),
        _d("num.io.threads", "int", 8, minimum=1),
        _d("num.replica.fetchers", "int", 1),
        _d("replica.lag.time.max.ms", "long", 30000),
        _d("replica.fetch.max.bytes", "int", 1048576, minimum=0),
        _d("replica.fetch.wait.max.ms", "int", 500),
        _d("fetch.max.bytes", "int", 57671680, minimum=1024),
        _d("offsets.topic.replication.factor", "short", 3, minimum=1),
        _d("offsets.topic.num.partitions", "int", 50, minimum=1),
        _d("offsets.topic.segment.bytes", "int", 104857600, minimum=1),
        _d("offsets.retention.minutes", "int", 10080, minimum=1),
        _d("offsets.retention.check.interval.ms", "long", 600000, minimum=1),
        _d("transaction.state.log.replication.factor", "short", 3, minimum=1),
        _d("transaction.state.log.num.partitions", "int", 50, minimum=1),
        _d("transaction.state.log.min.isr", "int", 2, minimum=1),
        _d("transaction.state.log.segment.bytes", "int", 104857600, minimum=1),
        _d("transactional.id.expiration.ms", "int", 604800000, minimum=1),
        _d("transaction.max.timeout.ms", "int", 900000, minimum=1),
        _d("producer.id.expiration.ms", "int", 86400000, minimum=1),
        _d("group.initial.rebalance.delay.ms", "int", 3000),
        _d("group.min.session.timeout.ms", "int", 6000),
        _d("group.max.session.timeout.ms", "int", 1800000),
        _d("group.max.size", "int", _INT_MAX, minimum=1),
        _d("group.coordinator.rebalance.protocols", "list", ("classic", "consumer", "streams")),
        _d("broker.heartbeat.interval.ms", "int", 2000),
        _d("broker.session.timeout.ms", "int", 9000),
        _d("initial.broker.registration.timeout.ms", "int", 60000),
        _d("remote.log.storage.system.enable", "bool", False),
        _d("sparklog.read.listener", "string"),
    )
}

# Kafka keys accepted so a real Kafka server.properties loads, but not used by this node yet.
_ACCEPTED_TEXT = """
    broker.id delete.records.purgatory.purge.interval.requests
    fetch.purgatory.purge.interval.requests producer.purgatory.purge.interval.requests
    max.connections max.connections.per.ip max.connections.per.ip.overrides
    max.incremental.fetch.session.cache.slots max.connection.creation.rate
    leader.imbalance.check.interval.seconds leader.imbalance.per.broker.percentage
    log.cleaner.dedupe.buffer.size log.cleaner.io.buffer.size log.cleaner.io.buffer.load.factor
    log.cleaner.io.max.bytes.per.second num.replica.alter.log.dirs.threads
    replica.socket.timeout.ms replica.socket.receive.buffer.bytes replica.fetch.min.bytes
    replica.fetch.backoff.ms replica.fetch.response.max.bytes
    replica.high.watermark.checkpoint.interval.ms request.timeout.ms reserved.broker.max.id
    sasl.enabled.mechanisms sasl.mechanism.inter.broker.protocol
    sasl.mechanism.controller.protocol security.inter.broker.protocol
    share.coordinator.state.topic.replication.factor share.coordinator.state.topic.min.isr
    share.coordinator.state.topic.num.partitions ssl.keystore.location ssl.keystore.password
    ssl.key.password ssl.truststore.location ssl.truststore.password ssl.client.auth
    ssl.endpoint.identification.algorithm authorizer.class.name super.users
    allow.everyone.if.no.acl.found metric.reporters metrics.num.samples
    metrics.sample.window.ms metrics.recording.level quota.window.num quota.window.size.seconds
    num.quota.samples offsets.commit.timeout.ms offsets.load.buffer.size
    offset.metadata.max.bytes transaction.abort.timed.out.transaction.cleanup.interval.ms
    transaction.remove.expired.transaction.cleanup.interval.ms
    transaction.partition.verification.enable unstable.api.versions.enable
    unstable.feature.versions.enable early.start.listeners remote.log.manager.task.interval.ms
    remote.log.metadata.manager.listener.name remote.log.storage.manager.class.name
    remote.log.metadata.manager.class.name background.threads auto.include.jmx.reporter
    socket.listen.backlog.size
"""
ACCEPTED = frozenset(_ACCEPTED_TEXT.split())

_SYNONYMS: tuple[tuple[str, str], ...] = (
    ("segment.bytes", "log.segment.bytes"),
    ("segment.index.bytes", "log.index.size.max.bytes"),
    ("index.interval.bytes", "log.index.interval.bytes"),
    ("flush.messages", "log.flush.interval.messages"),
    ("retention.bytes", "log.retention.bytes"),
    ("local.retention.ms", "log.local.retention.ms"),
    ("local.retention.bytes", "log.local.retention.bytes"),
    ("max.message.bytes", "message.max.bytes"),
    ("delete.retention.ms", "log.cleaner.delete.retention.ms"),
    ("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"),
    ("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"),
    ("file.delete.delay.ms", "log.segment.delete.delay.ms"),
    ("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"),
    ("cleanup.policy", "log.cleanup.policy"),
    ("unclean.leader.election.enable", "unclean.leader.election.enable"),
    ("min.insync.replicas", "min.insync.replicas"),
    ("compression.type", "compression.type"),
    ("compression.gzip.level", "compression.gzip.level"),
    ("compression.lz4.level", "compression.lz4.level"),
    ("compression.zstd.level", "compression.zstd.level"),
    ("preallocate", "log.preallocate"),
    ("message.timestamp.type", "log.message.timestamp.type"),
    ("message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms"),
    ("message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms"),
)
"""Topic-level key <- broker-level key (Kafka's ServerTopicConfigSynonyms, direct ones)."""
_MULTI_SYNONYMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("segment.ms", ("log.roll.ms", "log.roll.hours")),
    ("segment.jitter.ms", ("log.roll.jitter.ms", "log.roll.jitter.hours")),
    ("retention.ms", ("log.retention.ms", "log.retention.minutes", "log.retention.hours")),
    ("flush.ms", ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")),
)


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def _log_config_props(config: ServerConfig) -> dict[str, str]:
    props = {topic: _format_value(config.get(broker)) for topic, broker in _SYNONYMS}
    props["segment.ms"] = str(config.log_roll_ms)
    props["segment.jitter.ms"] = str(config.log_roll_jitter_ms)
    props["retention.ms"] = str(config.log_retention_ms)
    props["flush.ms"] = str(config.log_flush_interval_ms)
    return props


class ConfigError(ValueError):
    """A server configuration that cannot be used; the message says which key and why."""


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


def parse_config_value(definition: ConfigDef, raw: str) -> Any:
    text = raw.strip()
    kind = definition.kind
    expected = definition.describe_type()

    def bad(detail: str = "") -> ConfigError:
        suffix = f" ({detail})" if detail else ""
        return ConfigError(
            f"Invalid value {raw!r} for configuration {definition.name}: "
            f"expected {expected}{suffix}"
        )

    if definition.nullable and text == "":
        return None
    value: Any
    if kind in ("int", "long", "short"):
        try:
            value = int(text)
        except ValueError:
            raise bad() from None
        bits = {"int": 31, "long": 63, "short": 15}[kind]
        if not -(2**bits) <= value < 2**bits:
            raise bad("out of range")
    elif kind == "double":
        try:
            value = float(text)
        except ValueError:
            raise bad() from None
    elif kind == "bool":
        if text.lower() not in ("true", "false"):
            raise bad()
        value = text.lower() == "true"
    elif kind == "list":
        value = tuple(item.strip() for item in text.split(",") if item.strip())
    else:
        value = text
    if definition.minimum is not None and value is not None and value < definition.minimum:
        raise bad(f"must be at least {definition.minimum}")
    if definition.choices is not None:
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if item not in definition.choices:
                raise bad(f"must be one of {', '.join(definition.choices)}")
    return value


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
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"Cannot read configuration file {path}: {exc.strerror}") from None
        return cls.from_props(_read_properties(text))

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> ServerConfig:
        known = sorted(set(DEFS) | ACCEPTED)
        values: dict[str, Any] = {}
        for key, raw in props.items():
            definition = DEFS.get(key)
            if definition is None:
                if key in ACCEPTED or key.startswith("listener.name."):
                    continue
                close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"Unknown configuration key {key!r}.{hint}")
            if not isinstance(raw, str):
                raw = str(raw)
            values[key] = parse_config_value(definition, raw)
        for name, definition in DEFS.items():
            if name not in values:
                values[name] = definition.default
        config = cls(values, props)
        config._validate()
        return config

    def get(self, key: str) -> Any:
        """The typed value of a key we define (its default when unset)."""
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
        keys = {topic for topic, broker in _SYNONYMS if self.is_set(broker)}
        for topic, brokers in _MULTI_SYNONYMS:
            if any(self.is_set(broker) for broker in brokers):
                keys.add(topic)
        return frozenset(keys)

    def default_log_config(self) -> LogConfig:
        """The broker-wide ``LogConfig`` new topics start from (Kafka's synonym mapping)."""
        from sparklog.storage.config import LogConfig

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
