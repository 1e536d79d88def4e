"""The broker/controller configuration key table: every key this node knows, with its Kafka 4.x
type, default and checks, declared with the one framework of :mod:`sparklog.configdef` (which
also parses each value: ``DEFS[key].parse(raw)``).

Contract:

- ``DEFS`` maps each key this node reads to its :class:`~sparklog.configdef.ConfigDef`; a
  default of ``None`` means "unset" (the key is nullable and :class:`sparklog.config.ServerConfig`
  resolves it, e.g. ``log.retention.ms`` falling back to ``.hours``). Defaults are Kafka's,
  except ``log.dir`` (``/tmp/kraft-combined-logs``, the value Kafka ships in its sample file).
  The tiering keys (``remote.log.*``, ``sparklog.remote.storage.*``) are declared here too, so
  ``server.properties`` accepts them; ``sparklog.tiering.config`` reads them.
- ``ACCEPTED`` holds Kafka keys we accept so a real Kafka ``server.properties`` loads, but do
  not use yet. ``DEFS`` and ``ACCEPTED`` are disjoint.
- ``MULTI_SYNONYMS`` maps a topic-level key to the broker-level keys that give its default,
  in Kafka's order of precedence (ServerTopicConfigSynonyms; the first key set wins); every
  broker key named there is in ``DEFS``. The direct synonyms are the ``synonym`` fields of the
  topic table (:data:`sparklog.storage.config.CONFIG_DEFS`).
- A key of :data:`LISTENER_KEYS` may also be set for one listener as
  ``listener.name.<listener>.<key>`` (Kafka's listener prefix, the listener's name lower-cased),
  and ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` gives a listener's SASL logins.
  :func:`listener_def` declares such a key: the un-prefixed key's type, default and check under
  the full name (a login module is Kafka's PASSWORD type), so it is parsed, refused and, a
  password, hidden exactly as the key itself. Which listener it names is not checked here.
- :class:`ConfigError` and :func:`~sparklog.configdef.did_you_mean` are re-exported from
  :mod:`sparklog.configdef` for the modules that raise it about server settings.

Nothing here reads files or checks keys against each other; that is :mod:`sparklog.config`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sparklog.configdef import AtLeast, ConfigDef, ConfigError, OneOf, did_you_mean

__all__ = [
    "ACCEPTED",
    "DEFS",
    "JAAS_SUFFIX",
    "LISTENER_KEYS",
    "LISTENER_PREFIX",
    "MULTI_SYNONYMS",
    "ConfigError",
    "did_you_mean",
    "listener_def",
    "split_listener_key",
]

_LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1


def _d(
    name: str,
    kind: str,
    default: Any = None,
    *,
    minimum: int | None = None,
    choices: tuple[str, ...] | None = None,
) -> ConfigDef:
    validator = AtLeast(minimum) if minimum is not None else OneOf(choices) if choices else None
    return ConfigDef(name, kind, default, validator)


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
        _d("controller.quorum.auto.join.enable", "boolean", False),
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
        _d("auto.create.topics.enable", "boolean", True),
        _d("delete.topic.enable", "boolean", True),
        _d("auto.leader.rebalance.enable", "boolean", True),
        _d("leader.imbalance.check.interval.seconds", "long", 300, minimum=1),
        _d("leader.imbalance.per.broker.percentage", "int", 10, minimum=0),
        _d("controlled.shutdown.enable", "boolean", True),
        _d("unclean.leader.election.enable", "boolean", False),
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
        _d("log.cleaner.enable", "boolean", True),
        _d("log.cleaner.threads", "int", 1, minimum=0),
        _d("log.cleaner.delete.retention.ms", "long", 86400000, minimum=0),
        _d("log.cleaner.min.compaction.lag.ms", "long", 0, minimum=0),
        _d("log.cleaner.max.compaction.lag.ms", "long", _LONG_MAX, minimum=1),
        _d("log.cleaner.min.cleanable.ratio", "double", 0.5),
        _d("log.cleaner.backoff.ms", "long", 15000, minimum=0),
        _d("log.preallocate", "boolean", False),
        _d("log.message.timestamp.type", "string", "CreateTime", choices=_TIMESTAMP_TYPES),
        _d("log.message.timestamp.before.max.ms", "long", _LONG_MAX, minimum=0),
        _d("log.message.timestamp.after.max.ms", "long", 3600000, minimum=0),
        _d("num.recovery.threads.per.data.dir", "int", 2, minimum=1),
        _d("socket.request.max.bytes", "int", 104857600, minimum=1),
        _d("socket.send.buffer.bytes", "int", 102400),
        _d("socket.receive.buffer.bytes", "int", 102400),
        _d("connections.max.idle.ms", "long", 600000),
        _d("queued.max.requests", "int", 500, minimum=1),
        # Authorization and quotas (sparklog.security.authorizer, sparklog.broker.quotas,
        # sparklog.net.connection_quotas document them).
        _d("authorizer.class.name", "string", ""),
        _d("super.users", "string"),
        _d("allow.everyone.if.no.acl.found", "boolean", False),
        _d("quota.window.num", "int", 11, minimum=1),
        _d("quota.window.size.seconds", "int", 1, minimum=1),
        _d("max.connections", "int", _INT_MAX, minimum=0),
        _d("max.connections.per.ip", "int", _INT_MAX, minimum=0),
        _d("max.connections.per.ip.overrides", "string", ""),
        _d("max.connection.creation.rate", "int", _INT_MAX, minimum=0),
        _d("num.network.threads", "int", 3, minimum=1),
        _d("num.io.threads", "int", 8, minimum=1),
        _d("num.replica.fetchers", "int", 1),
        _d("replica.lag.time.max.ms", "long", 30000),
        _d("replica.fetch.max.bytes", "int", 1048576, minimum=0),
        _d("replica.fetch.wait.max.ms", "int", 500),
        _d("replica.fetch.min.bytes", "int", 1, minimum=1),
        _d("replica.fetch.backoff.ms", "int", 1000, minimum=0),
        _d("replica.fetch.response.max.bytes", "int", 10485760, minimum=0),
        _d("replica.socket.timeout.ms", "int", 30000),
        # Inter-broker requests (transaction markers) and a marker's wait for replication.
        _d("request.timeout.ms", "int", 30000, minimum=0),
        _d("fetch.max.bytes", "int", 57671680, minimum=1024),
        _d("max.incremental.fetch.session.cache.slots", "int", 1000, minimum=0),
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
        _d("transaction.partition.verification.enable", "boolean", True),
        _d("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10000, minimum=1),
        _d("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3600000, minimum=1),
        _d("producer.id.expiration.ms", "int", 86400000, minimum=1),
        _d("group.initial.rebalance.delay.ms", "int", 3000),
        _d("group.consumer.session.timeout.ms", "int", 45000, minimum=1),
        _d("group.consumer.heartbeat.interval.ms", "int", 5000, minimum=1),
        _d("group.consumer.assignors", "list", ("uniform", "range")),
        _d("offset.metadata.max.bytes", "int", 4096, minimum=0),
        _d("group.min.session.timeout.ms", "int", 6000),
        _d("group.max.session.timeout.ms", "int", 1800000),
        _d("group.max.size", "int", _INT_MAX, minimum=1),
        _d("group.coordinator.rebalance.protocols", "list", ("classic", "consumer", "streams")),
        # KIP-932 share groups: served when group.share.enable is true or the protocols list
        # names "share" (Kafka 4.x); the rest are Kafka's share-group keys and defaults.
        _d("group.share.enable", "boolean", False),
        _d("group.share.record.lock.duration.ms", "int", 30000, minimum=1000),
        _d("group.share.delivery.count.limit", "int", 5, minimum=2),
        _d("group.share.partition.max.record.locks", "int", 2000, minimum=100),
        _d("group.share.session.timeout.ms", "int", 45000, minimum=1),
        _d("group.share.heartbeat.interval.ms", "int", 5000, minimum=1),
        _d("group.share.max.size", "int", 200, minimum=1),
        # The share coordinator's __share_group_state (Kafka 4.x keys and defaults).
        _d("share.coordinator.state.topic.num.partitions", "int", 50, minimum=1),
        _d("share.coordinator.state.topic.replication.factor", "short", 3, minimum=1),
        _d("share.coordinator.state.topic.min.isr", "short", 2, minimum=1),
        _d("share.coordinator.state.topic.segment.bytes", "int", 104857600, minimum=1),
        _d("share.coordinator.snapshot.update.records.per.snapshot", "int", 500, minimum=0),
        _d("share.coordinator.write.timeout.ms", "int", 5000, minimum=1),
        _d("share.coordinator.state.topic.prune.interval.ms", "long", 300000, minimum=1),
        _d("broker.heartbeat.interval.ms", "int", 2000),
        _d("broker.session.timeout.ms", "int", 9000),
        _d("initial.broker.registration.timeout.ms", "int", 60000),
        _d("remote.log.storage.system.enable", "boolean", False),
        _d("remote.log.manager.task.interval.ms", "long", 30000, minimum=1),
        _d("remote.log.manager.copier.thread.pool.size", "int", 10, minimum=1),
        _d("remote.log.manager.expiration.thread.pool.size", "int", 10, minimum=1),
        _d("remote.log.manager.thread.pool.size", "int", 2, minimum=1),
        _d("remote.log.reader.threads", "int", 10, minimum=1),
        # Tiered storage (sparklog.tiering.config documents them): the store URL (unset: file://
        # next to the first log dir), S3 endpoint override and credentials, Parquet row groups.
        _d("sparklog.remote.storage.url", "string"),
        _d("sparklog.remote.storage.s3.endpoint.url", "string"),
        _d("sparklog.remote.storage.s3.access.key.id", "string"),
        _d("sparklog.remote.storage.s3.secret.access.key", "password"),
        _d("sparklog.remote.storage.s3.region", "string"),
        _d("sparklog.remote.storage.parquet.row.group.rows", "int", 131072, minimum=1),
        _d("sparklog.remote.storage.fetch.cache.bytes", "long", 0, minimum=0),
        _d("sparklog.read.listener", "string"),
        # The listener whose TLS/SASL the read service uses (sparklog.security.grpc_security).
        _d("sparklog.read.security.listener", "string"),
        # host:port of the HTTP metrics listener (sparklog.net.metrics_http); unset: none.
        _d("sparklog.metrics.listener", "string"),
        # The read-only web console at /console on that listener (sparklog.console).
        _d("sparklog.console.enable", "boolean", False),
        # Open segment files kept at most (sparklog.storage.handles); 0: half of RLIMIT_NOFILE.
        _d("sparklog.log.open.files.max", "int", 0, minimum=0),
        # Listener security (sparklog.security.server_config reads them, with the
        # listener.name.<listener>.* overrides); Kafka 4.x defaults.
        _d("security.inter.broker.protocol", "string"),
        _d("sasl.enabled.mechanisms", "list", ("GSSAPI",)),
        _d("sasl.mechanism.inter.broker.protocol", "string", "GSSAPI"),
        _d("sasl.mechanism.controller.protocol", "string", "GSSAPI"),
        _d("connections.max.reauth.ms", "long", 0, minimum=0),
        _d("sasl.server.max.receive.size", "int", 524288, minimum=1),
        _d("ssl.protocol", "string", "TLSv1.3"),
        _d("ssl.enabled.protocols", "list", ("TLSv1.2", "TLSv1.3")),
        _d("ssl.keystore.type", "string", "JKS"),
        _d("ssl.keystore.location", "string"),
        _d("ssl.keystore.password", "password"),
        _d("ssl.key.password", "password"),
        _d("ssl.keystore.certificate.chain", "password"),
        _d("ssl.keystore.key", "password"),
        _d("ssl.truststore.type", "string", "JKS"),
        _d("ssl.truststore.location", "string"),
        _d("ssl.truststore.password", "password"),
        _d("ssl.truststore.certificates", "password"),
        _d("ssl.client.auth", "string", "none", choices=("none", "requested", "required")),
        _d("ssl.endpoint.identification.algorithm", "string", "https"),
        _d("ssl.principal.mapping.rules", "string", "DEFAULT"),
    )
}

LISTENER_PREFIX = "listener.name."
# The keys a listener may set for itself (listener.name.<listener>.<key>): its TLS and SASL
# settings (sparklog.security.server_config) and connection limits (sparklog.net).
LISTENER_KEYS = frozenset(
    {
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
        "ssl.client.auth",
        "ssl.principal.mapping.rules",
        "ssl.endpoint.identification.algorithm",
        "sasl.enabled.mechanisms",
        "connections.max.reauth.ms",
        "max.connections",
        "max.connection.creation.rate",
    }
)
# listener.name.<listener>.<mechanism> + JAAS_SUFFIX: the listener's login module for that SASL
# mechanism (which mechanisms are served: sparklog.security.server_config).
JAAS_SUFFIX = ".sasl.jaas.config"


def split_listener_key(key: str) -> tuple[str, str] | None:
    """``(listener, key)`` of ``listener.name.<listener>.<key>``; None for any other key."""
    if not key.startswith(LISTENER_PREFIX):
        return None
    listener, _, suffix = key[len(LISTENER_PREFIX) :].partition(".")
    return listener, suffix


def listener_def(key: str) -> ConfigDef | None:
    """The definition of a listener-prefixed ``key`` (see the module docstring); None when
    ``key`` is not listener-prefixed or names nothing a listener may set."""
    split = split_listener_key(key)
    if split is None:
        return None
    suffix = split[1]
    if suffix in LISTENER_KEYS:
        return dataclasses.replace(DEFS[suffix], name=key)
    if suffix.endswith(JAAS_SUFFIX) and len(suffix) > len(JAAS_SUFFIX):
        return ConfigDef(key, "password")
    return None


# Kafka keys accepted so a real Kafka server.properties loads, but not used by this node yet.
_ACCEPTED_TEXT = """
    broker.id delete.records.purgatory.purge.interval.requests
    fetch.purgatory.purge.interval.requests producer.purgatory.purge.interval.requests
    log.cleaner.dedupe.buffer.size log.cleaner.io.buffer.size log.cleaner.io.buffer.load.factor
    log.cleaner.io.max.bytes.per.second num.replica.alter.log.dirs.threads
    replica.socket.receive.buffer.bytes
    replica.high.watermark.checkpoint.interval.ms reserved.broker.max.id
    metric.reporters metrics.num.samples
    metrics.sample.window.ms metrics.recording.level num.quota.samples offsets.commit.timeout.ms
    offsets.load.buffer.size
    unstable.api.versions.enable
    unstable.feature.versions.enable early.start.listeners
    remote.log.metadata.manager.listener.name remote.log.storage.manager.class.name
    remote.log.metadata.manager.class.name background.threads auto.include.jmx.reporter
    socket.listen.backlog.size
"""
ACCEPTED = frozenset(_ACCEPTED_TEXT.split())

MULTI_SYNONYMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("segment.ms", ("log.roll.ms", "log.roll.hours")),
    ("segment.jitter.ms", ("log.roll.jitter.ms", "log.roll.jitter.hours")),
    ("retention.ms", ("log.retention.ms", "log.retention.minutes", "log.retention.hours")),
    ("flush.ms", ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")),
)
