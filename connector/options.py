"""Options of the ``sparklog`` source: Spark's Kafka source names and semantics, plus ours.

:func:`parse_options` turns Spark's option map (keys are case-insensitive, values strings) into
a frozen :class:`SourceOptions` or raises :class:`OptionError` whose message names the option;
where Spark's Kafka source has a message for the same mistake, the message is Spark's.

Supported (batch): ``kafka.bootstrap.servers``, exactly one of ``subscribe`` /
``subscribePattern`` / ``assign``, ``startingOffsets`` (earliest or JSON, -2 = earliest),
``endingOffsets`` (latest or JSON, -1 = latest), ``kafka.isolation.level``, ``includeHeaders``,
``minPartitions``, ``maxRecordsPerPartition``, ``failOnDataLoss``. Ours: ``sparklog.store.url``
and ``sparklog.store.s3.{endpoint.url,access.key.id,secret.access.key,region}`` (the tiered
store), ``sparklog.read.from`` = ``both`` (default) | ``brokers`` | ``store``. With ``store``
the brokers are never contacted, so ``kafka.bootstrap.servers`` is optional.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sparklog.tiering.config import s3_storage_options

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetSpec",
    "OptionError",
    "SourceOptions",
    "parse_options",
]

EARLIEST: Final = -2
LATEST: Final = -1
READ_FROM_CHOICES: Final = ("both", "brokers", "store")
_STRATEGY_OPTIONS: Final = ("subscribe", "subscribepattern", "assign")
_STRATEGY_NAMES: Final = "subscribe, subscribePattern, assign"

# Spark's Kafka source refuses these consumer settings because it manages them itself.
_UNSUPPORTED_KAFKA: Final = {
    "group.id": "Kafka option 'group.id' is not supported as user-specified consumer groups "
    "are not used to track offsets.",
    "auto.offset.reset": "Kafka option 'auto.offset.reset' is not supported. Instead set the "
    "source option 'startingOffsets' to 'earliest' or 'latest' to specify where to start.",
    "key.deserializer": "Kafka option 'key.deserializer' is not supported, as keys are always "
    "deserialized as byte arrays with ByteArrayDeserializer.",
    "value.deserializer": "Kafka option 'value.deserializer' is not supported, as values are "
    "always deserialized as byte arrays with ByteArrayDeserializer.",
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported, as offsets are "
    "not committed to Kafka.",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported as the source "
    "does not call interceptors.",
}


class OptionError(ValueError):
    """A missing, conflicting or malformed option; the message names it."""


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """``default`` (EARLIEST or LATEST) for every partition, or per-partition offsets."""

    default: int | None
    per_partition: tuple[tuple[str, int, int], ...] = ()

    def lookup(self) -> dict[tuple[str, int], int]:
        return {(t, p): o for t, p, o in self.per_partition}


@dataclass(frozen=True, slots=True)
class SourceOptions:
    bootstrap_servers: str | None
    subscribe: tuple[str, ...] | None
    subscribe_pattern: str | None
    assign: tuple[tuple[str, int], ...] | None
    starting: OffsetSpec
    ending: OffsetSpec
    read_committed: bool
    include_headers: bool
    min_partitions: int | None
    max_records_per_partition: int | None
    fail_on_data_loss: bool
    store_url: str | None
    store_options: Mapping[str, Any] = field(default_factory=dict)
    read_from: str = "both"

    @property
    def uses_brokers(self) -> bool:
        return self.read_from != "store"

    @property
    def uses_store(self) -> bool:
        return self.read_from != "brokers" and self.store_url is not None


def _bool(options: Mapping[str, str], key: str, name: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"Invalid value '{raw}' for option '{name}', must be true or false")
    return value == "true"


def _positive(options: Mapping[str, str], key: str, name: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise OptionError(f"Invalid value '{raw}' for option '{name}', must be a positive integer")
    return value


def _partition_json(raw: str, name: str) -> dict[str, Any]:
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise OptionError(
            f'Expected e.g. {{"topicA":{{"0":23,"1":-1}},"topicB":{{"0":-2}}}}, got {raw}'
            f" (option '{name}': {exc.msg})"
        ) from None
    if not isinstance(doc, dict):
        raise OptionError(f"Option '{name}' must be a JSON object, got {raw}")
    return doc


def _offsets(options: Mapping[str, str], key: str, name: str, ending: bool) -> OffsetSpec:
    default = LATEST if ending else EARLIEST
    raw = options.get(key)
    if raw is None:
        return OffsetSpec(default)
    text = raw.strip()
    word = text.lower()
    if word == "earliest":
        if ending:
            raise OptionError("ending offset can't be earliest for batch queries on Kafka")
        return OffsetSpec(EARLIEST)
    if word == "latest":
        if not ending:
            raise OptionError("starting offset can't be latest for batch queries on Kafka")
        return OffsetSpec(LATEST)
    if not text.startswith("{"):
        raise OptionError(
            f"Invalid value '{raw}' for option '{name}': expected earliest, latest or a JSON object"
        )
    entries: list[tuple[str, int, int]] = []
    for topic, parts in _partition_json(text, name).items():
        if not isinstance(parts, dict):
            raise OptionError(f"Option '{name}': topic {topic!r} must map partitions to offsets")
        for part, offset in parts.items():
            try:
                partition, value = int(part), int(offset)
            except (TypeError, ValueError):
                raise OptionError(
                    f"Option '{name}': bad partition/offset {part!r}: {offset!r} for {topic}"
                ) from None
            if ending and value == EARLIEST:
                raise OptionError(
                    f"{name} for {topic}-{partition} can't be earliest for batch queries on Kafka"
                )
            if not ending and value == LATEST:
                raise OptionError(
                    f"{name} for {topic}-{partition} can't be latest for batch queries on Kafka"
                )
            if value < EARLIEST:
                raise OptionError(
                    f"Option '{name}': invalid offset {value} for {topic}-{partition}"
                )
            entries.append((str(topic), partition, value))
    return OffsetSpec(None, tuple(sorted(entries)))


def _strategy(
    options: Mapping[str, str],
) -> tuple[tuple[str, ...] | None, str | None, tuple[tuple[str, int], ...] | None]:
    given = [k for k in _STRATEGY_OPTIONS if k in options]
    if not given:
        raise OptionError(
            "One of the following options must be specified for Kafka source: "
            f"{_STRATEGY_NAMES}. See the docs for more details."
        )
    if len(given) > 1:
        raise OptionError(
            "Only one of the following options can be specified for Kafka source: "
            f"{_STRATEGY_NAMES}. See the docs for more details."
        )
    raw = options[given[0]]
    if given[0] == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise OptionError(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{raw}'"
            )
        return topics, None, None
    if given[0] == "subscribepattern":
        if not raw.strip():
            raise OptionError(
                "Pattern to subscribe is empty as specified value for option "
                f"'subscribePattern' is '{raw}'"
            )
        try:
            re.compile(raw.strip())
        except re.error as exc:
            raise OptionError(f"Invalid regex for option 'subscribePattern': {exc}") from None
        return None, raw.strip(), None
    if not raw.strip().startswith("{"):
        raise OptionError(
            f"No topicpartitions to assign as specified value for option 'assign' is '{raw}'"
        )
    assigned: list[tuple[str, int]] = []
    for topic, parts in _partition_json(raw.strip(), "assign").items():
        if not isinstance(parts, list) or not all(isinstance(p, int) for p in parts):
            raise OptionError(f"Option 'assign': topic {topic!r} must map to a list of partitions")
        assigned.extend((str(topic), p) for p in parts)
    if not assigned:
        raise OptionError(
            f"No topicpartitions to assign as specified value for option 'assign' is '{raw}'"
        )
    return None, None, tuple(sorted(set(assigned)))


def parse_options(raw_options: Mapping[str, str]) -> SourceOptions:
    """Validate Spark's option map for a batch read."""
    options = {str(k).lower(): str(v) for k, v in raw_options.items()}
    for key, message in _UNSUPPORTED_KAFKA.items():
        if f"kafka.{key}" in options:
            raise OptionError(message)
    read_from = options.get("sparklog.read.from", "both").strip().lower()
    if read_from not in READ_FROM_CHOICES:
        raise OptionError(
            f"Invalid value '{options['sparklog.read.from']}' for option 'sparklog.read.from',"
            f" must be one of {', '.join(READ_FROM_CHOICES)}"
        )
    bootstrap = options.get("kafka.bootstrap.servers", "").strip() or None
    if bootstrap is None and read_from != "store":
        raise OptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
        )
    store_url = options.get("sparklog.store.url", "").strip() or None
    if store_url is None and read_from == "store":
        raise OptionError(
            "Option 'sparklog.store.url' must be specified with sparklog.read.from=store"
        )
    isolation = options.get("kafka.isolation.level", "read_uncommitted").strip().lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise OptionError(
            f"Invalid value '{options['kafka.isolation.level']}' for option "
            "'kafka.isolation.level', must be read_uncommitted or read_committed"
        )
    subscribe, pattern, assign = _strategy(options)
    prefix = "sparklog.store.s3."
    store_options = s3_storage_options(
        endpoint_url=options.get(prefix + "endpoint.url"),
        access_key_id=options.get(prefix + "access.key.id"),
        secret_access_key=options.get(prefix + "secret.access.key"),
        region=options.get(prefix + "region"),
    )
    return SourceOptions(
        bootstrap_servers=bootstrap,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting=_offsets(options, "startingoffsets", "startingOffsets", ending=False),
        ending=_offsets(options, "endingoffsets", "endingOffsets", ending=True),
        read_committed=isolation == "read_committed",
        include_headers=_bool(options, "includeheaders", "includeHeaders", False),
        min_partitions=_positive(options, "minpartitions", "minPartitions"),
        max_records_per_partition=_positive(
            options, "maxrecordsperpartition", "maxRecordsPerPartition"
        ),
        fail_on_data_loss=_bool(options, "failondataloss", "failOnDataLoss", True),
        store_url=store_url,
        store_options=store_options,
        read_from=read_from,
    )
