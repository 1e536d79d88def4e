"""Topic-level log configuration with Apache Kafka 4.x names, types, defaults and validation.

Contract:
- :data:`CONFIG_DEFS` is the table of every public topic config key as
  ``ConfigDef(name, type, default, doc, server_synonym)``; the broker's DescribeConfigs and
  CreateTopics validation read it. Values keep Kafka's spelling: ``Long.MAX_VALUE`` means
  "never" for ``flush.messages`` / ``flush.ms``; ``-1`` means "infinite" for retention.
- :class:`LogConfig` is an immutable value. ``LogConfig.from_props`` parses Kafka property
  strings; ``with_overrides`` layers more properties on top (Kafka's ``fromProps(defaults,
  overrides)``). An unknown key or a bad value raises ``ValueError`` naming the key and what is
  allowed. Constructing ``LogConfig(...)`` directly skips string parsing but not range checks.
- ``internal.segment.bytes`` (internal, as in Kafka) overrides ``segment.bytes`` below its 1 MiB
  minimum; tests use it to get small segments. It is not listed in :data:`CONFIG_DEFS`.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

LONG_MAX: Final = (1 << 63) - 1
LONG_MIN: Final = -(1 << 63)
INT_MAX: Final = (1 << 31) - 1
INT_MIN: Final = -(1 << 31)

_DAY_MS: Final = 24 * 60 * 60 * 1000

CLEANUP_POLICIES: Final = ("compact", "delete")
COMPRESSION_TYPES: Final = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES: Final = ("CreateTime", "LogAppendTime")


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One topic config key as DescribeConfigs reports it."""

    name: str
    type: str  # Kafka ConfigDef type name: int, long, double, string, list, boolean
    default: Any
    doc: str
    server_synonym: str | None
    field_name: str
    check: Callable[[Any], str | None]


def _at_least(low: float) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value >= low else f"Value must be at least {low}"

    return check


def _between(low: float, high: float) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if low <= value <= high else f"Value must be between {low} and {high}"

    return check


def _one_of(allowed: tuple[str, ...]) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in allowed else f"String must be one of: {', '.join(allowed)}"

    return check


def _subset_of(allowed: tuple[str, ...]) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        bad = [v for v in value if v not in allowed]
        if bad:
            return f"Invalid value(s) {bad}; allowed: {', '.join(allowed)}"
        if len(set(value)) != len(value):
            return "Values must not repeat"
        return None

    return check


def _gzip_level(value: Any) -> str | None:
    return None if value == -1 or 1 <= value <= 9 else "Value must be -1 or between 1 and 9"


def _any(value: Any) -> str | None:
    return None


def _d(
    name: str,
    type_: str,
    default: Any,
    doc: str,
    synonym: str | None,
    check: Callable[[Any], str | None] = _any,
) -> ConfigDef:
    return ConfigDef(name, type_, default, doc, synonym, name.replace(".", "_"), check)


_UNSORTED_DEFS: Final[tuple[ConfigDef, ...]] = (
    _d(
        "cleanup.policy",
        "list",
        ("delete",),
        "Retention policy for old segments: "
        "'delete' removes them by time/size, 'compact' keeps the latest value per key.",
        "log.cleanup.policy",
        _subset_of(CLEANUP_POLICIES),
    ),
    _d(
        "compression.type",
        "string",
        "producer",
        "Final compression of the topic's data; 'producer' keeps the producer's codec.",
        "compression.type",
        _one_of(COMPRESSION_TYPES),
    ),
    _d(
        "compression.gzip.level",
        "int",
        -1,
        "Compression level for gzip.",
        "compression.gzip.level",
        _gzip_level,
    ),
    _d(
        "compression.lz4.level",
        "int",
        9,
        "Compression level for lz4.",
        "compression.lz4.level",
        _between(1, 17),
    ),
    _d(
        "compression.zstd.level",
        "int",
        3,
        "Compression level for zstd.",
        "compression.zstd.level",
        _between(-131072, 22),
    ),
    _d(
        "delete.retention.ms",
        "long",
        _DAY_MS,
        "How long compaction tombstones are kept.",
        "log.cleaner.delete.retention.ms",
        _at_least(0),
    ),
    _d(
        "file.delete.delay.ms",
        "long",
        60000,
        "Delay before a deleted segment's files are removed from disk.",
        "log.segment.delete.delay.ms",
        _at_least(0),
    ),
    _d(
        "flush.messages",
        "long",
        LONG_MAX,
        "Force an fsync after this many messages.",
        "log.flush.interval.messages",
        _at_least(1),
    ),
    _d(
        "flush.ms",
        "long",
        LONG_MAX,
        "Force an fsync when this much time has passed since the last one.",
        "log.flush.interval.ms",
        _at_least(0),
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
        _at_least(0),
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
        _at_least(-2),
    ),
    _d(
        "local.retention.ms",
        "long",
        -2,
        "Local time limit when tiered storage is on; -2 means retention.ms.",
        "log.local.retention.ms",
        _at_least(-2),
    ),
    _d(
        "max.compaction.lag.ms",
        "long",
        LONG_MAX,
        "Longest time a message stays ineligible for compaction.",
        "log.cleaner.max.compaction.lag.ms",
        _at_least(1),
    ),
    _d(
        "max.message.bytes",
        "int",
        1048588,
        "Largest record batch size allowed.",
        "message.max.bytes",
        _at_least(0),
    ),
    _d(
        "message.timestamp.after.max.ms",
        "long",
        3600000,
        "Largest allowed amount a CreateTime timestamp may be ahead of the broker's clock.",
        "log.message.timestamp.after.max.ms",
        _at_least(0),
    ),
    _d(
        "message.timestamp.before.max.ms",
        "long",
        LONG_MAX,
        "Largest allowed amount a CreateTime timestamp may be behind the broker's clock.",
        "log.message.timestamp.before.max.ms",
        _at_least(0),
    ),
    _d(
        "message.timestamp.type",
        "string",
        "CreateTime",
        "Whether record timestamps come from "
        "the producer (CreateTime) or the broker (LogAppendTime).",
        "log.message.timestamp.type",
        _one_of(TIMESTAMP_TYPES),
    ),
    _d(
        "min.cleanable.dirty.ratio",
        "double",
        0.5,
        "Dirty ratio above which compaction runs.",
        "log.cleaner.min.cleanable.ratio",
        _between(0, 1),
    ),
    _d(
        "min.compaction.lag.ms",
        "long",
        0,
        "Shortest time a message stays uncompacted.",
        "log.cleaner.min.compaction.lag.ms",
        _at_least(0),
    ),
    _d(
        "min.insync.replicas",
        "int",
        1,
        "Replicas that must acknowledge an acks=all write.",
        "min.insync.replicas",
        _at_least(1),
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
        _at_least(-1),
    ),
    _d(
        "segment.bytes",
        "int",
        1 << 30,
        "Size at which a segment is rolled.",
        "log.segment.bytes",
        _at_least(1 << 20),
    ),
    _d(
        "segment.index.bytes",
        "int",
        10 * 1024 * 1024,
        "Largest size of an offset or time index file; a full index rolls the segment.",
        "log.index.size.max.bytes",
        _at_least(4),
    ),
    _d(
        "segment.jitter.ms",
        "long",
        0,
        "Random jitter subtracted from segment.ms.",
        "log.roll.jitter.ms",
        _at_least(0),
    ),
    _d(
        "segment.ms",
        "long",
        7 * _DAY_MS,
        "Time after which a segment is rolled even if not full.",
        "log.roll.ms",
        _at_least(1),
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
_INTERNAL_SEGMENT_BYTES: Final = "internal.segment.bytes"
CONFIG_BY_NAME: Final[Mapping[str, ConfigDef]] = {d.name: d for d in CONFIG_DEFS}


def _parse(definition: ConfigDef, raw: str) -> Any:
    text = raw.strip()
    name = definition.name
    kind = definition.type
    try:
        if kind in ("int", "long"):
            value = int(text)
            low, high = (INT_MIN, INT_MAX) if kind == "int" else (LONG_MIN, LONG_MAX)
            if not low <= value <= high:
                raise ValueError
            return value
        if kind == "double":
            return float(text)
        if kind == "boolean":
            lowered = text.lower()
            if lowered not in ("true", "false"):
                raise ValueError
            return lowered == "true"
        if kind == "list":
            return tuple(part.strip() for part in text.split(",") if part.strip())
        return text
    except ValueError:
        raise ValueError(
            f"Invalid value {raw!r} for configuration {name}: expected a {kind}"
        ) from None


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
            problem = definition.check(getattr(self, definition.field_name))
            if problem is not None:
                raise ValueError(
                    f"Invalid value {getattr(self, definition.field_name)!r} for configuration "
                    f"{definition.name}: {problem}"
                )
        if self.internal_segment_bytes is not None and self.internal_segment_bytes < 64:
            raise ValueError(
                f"Invalid value {self.internal_segment_bytes} for configuration "
                f"{_INTERNAL_SEGMENT_BYTES}: Value must be at least 64"
            )
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise ValueError(
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
            if key == _INTERNAL_SEGMENT_BYTES:
                changes["internal_segment_bytes"] = _parse(
                    ConfigDef(key, "int", None, "", None, "internal_segment_bytes", _any), raw
                )
                continue
            definition = CONFIG_BY_NAME.get(key)
            if definition is None:
                close = difflib.get_close_matches(key, list(CONFIG_BY_NAME), n=1, cutoff=0.6)
                hint = f" Did you mean {close[0]}?" if close else ""
                raise ValueError(f"Unknown topic config name: {key}.{hint}")
            changes[definition.field_name] = _parse(definition, raw)
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
        definition = CONFIG_BY_NAME[name]
        value = getattr(self, definition.field_name)
        if definition.type == "list":
            return ",".join(value)
        if definition.type == "boolean":
            return "true" if value else "false"
        return str(value)

    def to_props(self) -> dict[str, str]:
        """Every public key with its current value, as Kafka property strings."""
        return {d.name: self.value_string(d.name) for d in CONFIG_DEFS}
