"""Topic-level log configuration with Apache Kafka 4.x names, types, defaults and validation.

Contract:
- :data:`CONFIG_DEFS` is the table of every public topic config key, declared with the one
  framework of :mod:`sparklog.configdef` (``ConfigDef``: name, Kafka type, default, validator,
  doc and the server key it defaults to, ``synonym``); the broker's DescribeConfigs and
  CreateTopics validation read it. Values keep Kafka's spelling: ``Long.MAX_VALUE`` means
  "never" for ``flush.messages`` / ``flush.ms``; ``-1`` means "infinite" for retention.
- :class:`LogConfig` is an immutable value. ``LogConfig.from_props`` parses Kafka property
  strings; ``with_overrides`` layers more properties on top (Kafka's ``fromProps(defaults,
  overrides)``). An unknown key (with the closest known one) or a bad value raises
  :class:`~sparklog.configdef.ConfigError` (a ``ValueError``) naming the key and what is
  allowed; values are parsed by :func:`sparklog.configdef.parse_value`. Constructing
  ``LogConfig(...)`` directly skips string parsing but not the validators.
- ``internal.segment.bytes`` (internal, as in Kafka) overrides ``segment.bytes`` below its 1 MiB
  minimum; tests use it to get small segments. It is not listed in :data:`CONFIG_DEFS`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sparklog.configdef import (
    AtLeast,
    Between,
    ConfigDef,
    ConfigError,
    OneOf,
    Validator,
    did_you_mean,
    format_value,
)

LONG_MAX: Final = (1 << 63) - 1

_DAY_MS: Final = 24 * 60 * 60 * 1000

CLEANUP_POLICIES: Final = ("compact", "delete")
COMPRESSION_TYPES: Final = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES: Final = ("CreateTime", "LogAppendTime")


def _d(
    name: str,
    type_: str,
    default: Any,
    doc: str,
    synonym: str | None,
    validator: Validator | None = None,
) -> ConfigDef:
    return ConfigDef(name, type_, default, validator, doc, synonym)


_UNSORTED_DEFS: Final[tuple[ConfigDef, ...]] = (
    _d(
        "cleanup.policy",
        "list",
        ("delete",),
        "Retention policy for old segments: "
        "'delete' removes them by time/size, 'compact' keeps the latest value per key.",
        "log.cleanup.policy",
        OneOf(CLEANUP_POLICIES, unique=True),
    ),
    _d(
        "compression.type",
        "string",
        "producer",
        "Final compression of the topic's data; 'producer' keeps the producer's codec.",
        "compression.type",
        OneOf(COMPRESSION_TYPES),
    ),
    _d(
        "compression.gzip.level",
        "int",
        -1,
        "Compression level for gzip.",
        "compression.gzip.level",
        Between(1, 9, also=(-1,)),
    ),
    _d(
        "compression.lz4.level",
        "int",
        9,
        "Compression level for lz4.",
        "compression.lz4.level",
        Between(1, 17),
    ),
    _d(
        "compression.zstd.level",
        "int",
        3,
        "Compression level for zstd.",
        "compression.zstd.level",
        Between(-131072, 22),
    ),
    _d(
        "delete.retention.ms",
        "long",
        _DAY_MS,
        "How long compaction tombstones are kept.",
        "log.cleaner.delete.retention.ms",
        AtLeast(0),
    ),
    _d(
        "file.delete.delay.ms",
        "long",
        60000,
        "Delay before a deleted segment's files are removed from disk.",
        "log.segment.delete.delay.ms",
        AtLeast(0),
    ),
    _d(
        "flush.messages",
        "long",
        LONG_MAX,
        "Force an fsync after this many messages.",
        "log.flush.interval.messages",
        AtLeast(1),
    ),
    _d(
        "flush.ms",
        "long",
        LONG_MAX,
        "Force an fsync when this much time has passed since the last one.",
        "log.flush.interval.ms",
        AtLeast(0),
    ),
    _d(
        "follower.replication.throttled.replicas",
        "list",
        (),
        "Replicas whose follower replication is throttled.",
        "follower.replication.throttled.replicas",
    ),
    _d(
        "index.interval.bytes",
        "int",
        4096,
        "Bytes of log between two offset index entries.",
        "log.index.interval.bytes",
        AtLeast(0),
    ),
    _d(
        "leader.replication.throttled.replicas",
        "list",
        (),
        "Replicas whose leader replication is throttled.",
        "leader.replication.throttled.replicas",
    ),
    _d(
        "local.retention.bytes",
        "long",
        -2,
        "Local size limit when tiered storage is on; -2 means retention.bytes.",
        "log.local.retention.bytes",
        AtLeast(-2),
    ),
    _d(
        "local.retention.ms",
        "long",
        -2,
        "Local time limit when tiered storage is on; -2 means retention.ms.",
        "log.local.retention.ms",
        AtLeast(-2),
    ),
    _d(
        "max.compaction.lag.ms",
        "long",
        LONG_MAX,
        "Longest time a message stays ineligible for compaction.",
        "log.cleaner.max.compaction.lag.ms",
        AtLeast(1),
    ),
    _d(
        "max.message.bytes",
        "int",
        1048588,
        "Largest record batch size allowed.",
        "message.max.bytes",
        AtLeast(0),
    ),
    _d(
        "message.timestamp.after.max.ms",
        "long",
        3600000,
        "Largest allowed amount a CreateTime timestamp may be ahead of the broker's clock.",
        "log.message.timestamp.after.max.ms",
        AtLeast(0),
    ),
    _d(
        "message.timestamp.before.max.ms",
        "long",
        LONG_MAX,
        "Largest allowed amount a CreateTime timestamp may be behind the broker's clock.",
        "log.message.timestamp.before.max.ms",
        AtLeast(0),
    ),
    _d(
        "message.timestamp.type",
        "string",
        "CreateTime",
        "Whether record timestamps come from "
        "the producer (CreateTime) or the broker (LogAppendTime).",
        "log.message.timestamp.type",
        OneOf(TIMESTAMP_TYPES),
    ),
    _d(
        "min.cleanable.dirty.ratio",
        "double",
        0.5,
        "Dirty ratio above which compaction runs.",
        "log.cleaner.min.cleanable.ratio",
        Between(0, 1),
    ),
    _d(
        "min.compaction.lag.ms",
        "long",
        0,
        "Shortest time a message stays uncompacted.",
        "log.cleaner.min.compaction.lag.ms",
        AtLeast(0),
    ),
    _d(
        "min.insync.replicas",
        "int",
        1,
        "Replicas that must acknowledge an acks=all write.",
        "min.insync.replicas",
        AtLeast(1),
    ),
    _d(
        "preallocate",
        "boolean",
        False,
        "Preallocate segment files (accepted, not used).",
        "log.preallocate",
    ),
    _d(
        "remote.log.copy.disable",
        "boolean",
        False,
        "Stop copying segments to tiered storage.",
        None,
    ),
    _d(
        "remote.log.delete.on.disable",
        "boolean",
        False,
        "Delete tiered data when tiered storage is turned off for the topic.",
        None,
    ),
    _d("remote.storage.enable", "boolean", False, "Tier closed segments to remote storage.", None),
    _d(
        "retention.bytes",
        "long",
        -1,
        "Largest size of the partition log before old segments are deleted; -1 means no limit.",
        "log.retention.bytes",
    ),
    _d(
        "retention.ms",
        "long",
        7 * _DAY_MS,
        "Longest time a segment is kept; -1 means no limit.",
        "log.retention.ms",
        AtLeast(-1),
    ),
    _d(
        "segment.bytes",
        "int",
        1 << 30,
        "Size at which a segment is rolled.",
        "log.segment.bytes",
        AtLeast(1 << 20),
    ),
    _d(
        "segment.index.bytes",
        "int",
        10 * 1024 * 1024,
        "Largest size of an offset or time index file; a full index rolls the segment.",
        "log.index.size.max.bytes",
        AtLeast(4),
    ),
    _d(
        "segment.jitter.ms",
        "long",
        0,
        "Random jitter subtracted from segment.ms.",
        "log.roll.jitter.ms",
        AtLeast(0),
    ),
    _d(
        "segment.ms",
        "long",
        7 * _DAY_MS,
        "Time after which a segment is rolled even if not full.",
        "log.roll.ms",
        AtLeast(1),
    ),
    _d(
        "unclean.leader.election.enable",
        "boolean",
        False,
        "Allow an out-of-sync replica to become leader (data loss).",
        "unclean.leader.election.enable",
    ),
)

# Sorted by name, as Kafka lists them.
CONFIG_DEFS: Final = tuple(sorted(_UNSORTED_DEFS, key=lambda d: d.name))
# Internal (as in Kafka): not described, not in CONFIG_DEFS.
_INTERNAL_SEGMENT_BYTES: Final = ConfigDef("internal.segment.bytes", "int", None, AtLeast(64))
CONFIG_BY_NAME: Final[Mapping[str, ConfigDef]] = {d.name: d for d in CONFIG_DEFS}


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Configuration of one partition log; field names are the Kafka keys with '_' for '.'."""

    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    delete_retention_ms: int = _DAY_MS
    file_delete_delay_ms: int = 60000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    follower_replication_throttled_replicas: tuple[str, ...] = ()
    index_interval_bytes: int = 4096
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    local_retention_bytes: int = -2
    local_retention_ms: int = -2
    max_compaction_lag_ms: int = LONG_MAX
    max_message_bytes: int = 1048588
    message_timestamp_after_max_ms: int = 3600000
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_type: str = "CreateTime"
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    min_insync_replicas: int = 1
    preallocate: bool = False
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    remote_storage_enable: bool = False
    retention_bytes: int = -1
    retention_ms: int = 7 * _DAY_MS
    segment_bytes: int = 1 << 30
    segment_index_bytes: int = 10 * 1024 * 1024
    segment_jitter_ms: int = 0
    segment_ms: int = 7 * _DAY_MS
    unclean_leader_election_enable: bool = False
    internal_segment_bytes: int | None = None
    # Keys set explicitly (not defaults); DescribeConfigs reports their source from this.
    overridden_keys: frozenset[str] = field(default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        for definition in CONFIG_DEFS:
            definition.check(getattr(self, definition.field_name))
        _INTERNAL_SEGMENT_BYTES.check(self.internal_segment_bytes)
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise ConfigError(
                "conflict topic config setting min.compaction.lag.ms "
                f"({self.min_compaction_lag_ms}) > max.compaction.lag.ms "
                f"({self.max_compaction_lag_ms})"
            )

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> LogConfig:
        """Parse Kafka property strings over the Kafka defaults."""
        return cls().with_overrides(props)

    def with_overrides(self, props: Mapping[str, str]) -> LogConfig:
        """A copy with ``props`` (Kafka names, string values) applied on top of this config."""
        changes: dict[str, Any] = {}
        for key, raw in props.items():
            definition = CONFIG_BY_NAME.get(key)
            if key == _INTERNAL_SEGMENT_BYTES.name:
                definition = _INTERNAL_SEGMENT_BYTES
            elif definition is None:
                hint = did_you_mean(key, CONFIG_BY_NAME)
                raise ConfigError(f"Unknown topic config name: {key}.{hint}")
            changes[definition.field_name] = definition.parse(raw)
        overridden = self.overridden_keys | frozenset(props)
        return dataclasses.replace(self, **changes, overridden_keys=overridden)

    @property
    def segment_size(self) -> int:
        """Roll threshold in bytes: ``internal.segment.bytes`` if set, else segment.bytes."""
        if self.internal_segment_bytes is not None:
            return self.internal_segment_bytes
        return self.segment_bytes

    @property
    def delete_enabled(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def compact_enabled(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    def value_string(self, name: str) -> str:
        """The value of config ``name`` as DescribeConfigs shows it."""
        return format_value(getattr(self, CONFIG_BY_NAME[name].field_name))

    def to_props(self) -> dict[str, str]:
        """Every public key with its current value, as Kafka property strings."""
        return {d.name: self.value_string(d.name) for d in CONFIG_DEFS}
