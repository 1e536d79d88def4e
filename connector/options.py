"""Options of the ``sparklog`` source: Spark's Kafka source names and semantics, plus ours.

:func:`parse_options` turns Spark's option map (keys are case-insensitive, values strings) into
a frozen :class:`SourceOptions`, or raises :class:`OptionError` whose message names the option.
The typed single-value options (numbers, booleans, choices) are declared in :data:`OPTION_DEFS`
and parsed by the one configuration framework, :mod:`sparklog.configdef`.
Where Spark's Kafka source (``KafkaSourceProvider``) has a message for the same mistake, the
message is Spark's; where Spark's message would not name the option (a bad number, bad JSON),
Spark's text is followed by ``(option 'name')``.

Spark's options (both batch and streaming unless noted):

- ``kafka.bootstrap.servers`` (required unless ``sparklog.read.from=store``); exactly one of
  ``subscribe`` / ``subscribePattern`` / ``assign``.
- Where to start, in Spark's order of precedence: ``startingTimestamp`` (ms, every partition),
  ``startingOffsetsByTimestamp`` (JSON ``{"t": {"0": ms}}``), ``startingOffsets`` (``earliest``,
  ``latest`` (streaming only) or JSON with -2 = earliest, -1 = latest). Default: earliest for
  batch, latest for streaming. ``startingOffsetsByTimestampStrategy`` = ``error`` (default) |
  ``latest``: what a starting timestamp without a matching offset does.
- Where to end (batch only; any of them on a stream fails as in Spark): ``endingTimestamp``,
  ``endingOffsetsByTimestamp``, ``endingOffsets`` (``latest`` or JSON, -1 = latest). A timestamp
  without a matching offset means latest.
- ``failOnDataLoss`` (true), ``includeHeaders`` (false), ``kafka.isolation.level``
  (read_uncommitted | read_committed), ``minPartitions`` and ``maxRecordsPerPartition`` (> 0).
- Streaming admission control: ``maxOffsetsPerTrigger``, ``maxBytesPerTrigger`` (> 0; both may
  be set, a batch then ends at whichever limit it reaches first), ``minOffsetsPerTrigger`` (> 0,
  min <= max) and ``maxTriggerDelay`` (a Spark time string such as ``15m``, ``30s``, ``500ms``;
  default 15m). In batch queries they are ignored with a warning, as in Spark.
- ``groupIdPrefix``; ``kafka.group.id`` is accepted with Spark's warning (no group is joined);
  ``fetchOffset.numRetries`` (3), ``fetchOffset.retryIntervalMs`` (1000),
  ``kafkaConsumer.pollTimeoutMs`` (120000). Other ``kafka.*`` keys are kept in ``kafka_params``.
- Rejected with Spark's messages: ``kafka.auto.offset.reset``, ``kafka.key.deserializer``,
  ``kafka.value.deserializer``, ``kafka.enable.auto.commit``, ``kafka.interceptor.classes``.

Ours: ``sparklog.store.url`` and ``sparklog.store.s3.{endpoint.url,access.key.id,
secret.access.key,region}`` (the tiered store), ``sparklog.read.from`` = ``both`` (default) |
``brokers`` | ``store``. ``sparklog.commitOffsetsToGroup`` = a group id: a stream commits each
finished micro-batch's end offsets to that consumer group (progress for Kafka lag tools; Spark's
checkpoint stays the source of truth). With ``store`` the brokers are never contacted, so
``kafka.bootstrap.servers`` is optional. ``sparklog.hot.protocol`` = ``grpc`` (default: the
brokers' hot read service) | ``kafka`` (Kafka Fetch) for the hot pieces.

Invariants of the result: an :class:`OffsetSpec` is exactly one of "every partition at
earliest/latest", "specific offsets", "one timestamp" or "per-partition timestamps"; a batch
starting spec never holds latest and a batch ending spec never holds earliest.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sparklog.configdef import AtLeast, ConfigDef, ConfigError, OneOf
from sparklog.tiering.config import s3_storage_options

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetSpec",
    "OptionError",
    "SourceOptions",
    "parse_options",
    "parse_time_ms",
]

log = logging.getLogger(__name__)

EARLIEST: Final = -2
LATEST: Final = -1
READ_FROM_CHOICES: Final = ("both", "brokers", "store")
HOT_PROTOCOL_CHOICES: Final = ("grpc", "kafka")
NO_MATCH_STRATEGIES: Final = ("error", "latest")
DEFAULT_MAX_TRIGGER_DELAY: Final = "15m"
_STRATEGY_OPTIONS: Final = ("subscribe", "subscribepattern", "assign")
_STRATEGY_NAMES: Final = "subscribe, subscribepattern, assign"
_OFFSETS_EXAMPLE: Final = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_TIMESTAMPS_EXAMPLE: Final = (
    '{"topicA": {"0": 123456789, "1": 123456789},\n"topicB": {"0": 123456789, "1": 123456789}}'
)

# Spark's Kafka source refuses these consumer settings because it manages them itself; the
# messages are Spark's, line breaks included.
_UNSUPPORTED_KAFKA: Final = {
    "auto.offset.reset": (
        "\nKafka option 'auto.offset.reset' is not supported.\n"
        "Instead set the source option 'startingoffsets' to 'earliest' or 'latest'\n"
        "to specify where to start. Structured Streaming manages which offsets are consumed\n"
        "internally, rather than relying on the kafkaConsumer to do it. This will ensure that no\n"
        "data is missed when new topics/partitions are dynamically subscribed. Note that\n"
        "'startingoffsets' only applies when a new Streaming query is started, and\n"
        "that resuming will always pick up from where the query left off. See the docs for more\n"
        "details.\n"
    ),
    "key.deserializer": (
        "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte"
        " arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize"
        " the keys."
    ),
    "value.deserializer": (
        "Kafka option 'value.deserializer' is not supported as values are deserialized as byte"
        " arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize"
        " the values."
    ),
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}

CUSTOM_GROUP_ID_WARNING: Final = (
    "Kafka option 'kafka.group.id' has been set on this query, it is\n"
    " not recommended to set this option. This option is unsafe to use since multiple"
    " concurrent\n queries or sources using the same group id will interfere with each other"
    " as they are part\n of the same consumer group. Restarted queries may also suffer"
    " interference from the\n previous run having the same group id. The user should have only"
    " one query per group id,\n and/or set the option 'kafka.session.timeout.ms' to be very"
    " small so that the Kafka\n consumers from the previous query are marked dead by the Kafka"
    " group coordinator before the\n restarted query starts running.\n"
)

_TIME_UNITS_MS: Final = {
    "us": 0.001,
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "min": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
}
_TIME_PATTERN: Final = re.compile(r"(-?[0-9]+)([a-z]+)?")


class OptionError(ValueError):
    """A missing, conflicting or malformed option; the message names it."""


_POSITIVE: Final = AtLeast(1)
# The typed single-value options, declared and parsed with the one configuration framework
# (sparklog.configdef); Spark's names, types (toInt / toLong) and defaults. Keyed lower-case, as
# Spark's option map is case-insensitive. A choice is matched case-insensitively too.
OPTION_DEFS: Final = {
    d.name.lower(): d
    for d in (
        ConfigDef("minPartitions", "int", None, _POSITIVE),
        ConfigDef("maxRecordsPerPartition", "long", None, _POSITIVE),
        ConfigDef("maxOffsetsPerTrigger", "long", None, _POSITIVE),
        ConfigDef("maxBytesPerTrigger", "long", None, _POSITIVE),
        ConfigDef("minOffsetsPerTrigger", "long", None, _POSITIVE),
        ConfigDef("fetchOffset.numRetries", "int", 3, _POSITIVE),
        ConfigDef("fetchOffset.retryIntervalMs", "long", 1000, AtLeast(0)),
        ConfigDef("kafkaConsumer.pollTimeoutMs", "long", 120_000, _POSITIVE),
        ConfigDef("failOnDataLoss", "boolean", True),
        ConfigDef("includeHeaders", "boolean", False),
        ConfigDef(
            "kafka.isolation.level",
            "string",
            "read_uncommitted",
            OneOf(("read_uncommitted", "read_committed")),
        ),
        ConfigDef("sparklog.read.from", "string", "both", OneOf(READ_FROM_CHOICES)),
        ConfigDef("sparklog.hot.protocol", "string", "grpc", OneOf(HOT_PROTOCOL_CHOICES)),
        ConfigDef(
            "startingOffsetsByTimestampStrategy", "string", "error", OneOf(NO_MATCH_STRATEGIES)
        ),
    )
}


TopicPartitionValue = tuple[str, int, int]


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """Where a read starts or ends, before resolution against the log.

    Exactly one form: ``default`` (EARLIEST or LATEST) for every partition; ``per_partition``
    offsets (-2 / -1 allowed per partition); ``timestamp_ms`` for every partition; or
    ``per_partition_timestamps``.
    """

    default: int | None
    per_partition: tuple[TopicPartitionValue, ...] = ()
    timestamp_ms: int | None = None
    per_partition_timestamps: tuple[TopicPartitionValue, ...] = ()

    @property
    def by_timestamp(self) -> bool:
        return self.timestamp_ms is not None or bool(self.per_partition_timestamps)

    def lookup(self) -> dict[tuple[str, int], int]:
        return {(t, p): o for t, p, o in self.per_partition}

    def timestamp_lookup(self) -> dict[tuple[str, int], int]:
        return {(t, p): ts for t, p, ts in self.per_partition_timestamps}

    def specified_partitions(self) -> set[tuple[str, int]] | None:
        """The partitions a specific spec names; None when it applies to every partition."""
        if self.per_partition:
            return {(t, p) for t, p, _ in self.per_partition}
        if self.per_partition_timestamps:
            return {(t, p) for t, p, _ in self.per_partition_timestamps}
        return None


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
    hot_protocol: str = "grpc"
    streaming: bool = False
    #: startingOffsetsByTimestampStrategy: "error" or "latest".
    no_match_strategy: str = "error"
    max_offsets_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    commit_offsets_to_group: str | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 900_000
    group_id: str | None = None
    group_id_prefix: str | None = None
    fetch_offset_num_retries: int = 3
    fetch_offset_retry_interval_ms: int = 1000
    poll_timeout_ms: int = 120_000
    #: Every other ``kafka.*`` option, without the prefix (kept for parity; not interpreted).
    kafka_params: Mapping[str, str] = field(default_factory=dict)

    @property
    def uses_brokers(self) -> bool:
        return self.read_from != "store"

    @property
    def uses_store(self) -> bool:
        return self.read_from != "brokers" and self.store_url is not None


def _typed(options: Mapping[str, str], key: str) -> Any:
    """The typed value of option ``key`` (lower-case) by :data:`OPTION_DEFS`, or its default.
    Errors keep Spark's wording: ``Invalid value 'x' for option 'name', must be ...``, and
    ``name must be positive`` for a count below 1."""
    definition = OPTION_DEFS[key]
    raw = options.get(key)
    if raw is None:
        return definition.default
    try:
        return definition.parse(raw.lower() if isinstance(definition.validator, OneOf) else raw)
    except ConfigError as exc:
        problem = str(exc.problem)
        if definition.validator is _POSITIVE and not problem.startswith("expected "):
            raise OptionError(f"{definition.name} must be positive (got {raw.strip()})") from None
        if isinstance(definition.validator, OneOf):
            choices = definition.validator.choices
            listed = " or ".join(choices) if len(choices) == 2 else "one of " + ", ".join(choices)
            problem = "must be " + listed
        elif problem.startswith("expected "):
            problem = "must be " + problem.removeprefix("expected ")
        raise OptionError(
            f"Invalid value '{raw}' for option '{definition.name}', "
            + problem.removeprefix("Value ")
        ) from None


def parse_time_ms(text: str, name: str) -> int:
    """A Spark time string (``15m``, ``30s``, ``500ms``, ``2h``, ``1d``; a bare number is ms)."""
    match = _TIME_PATTERN.fullmatch(text.strip().lower())
    unit = match.group(2) if match else None
    if match is None or (unit is not None and unit not in _TIME_UNITS_MS):
        raise OptionError(
            f"Invalid value '{text}' for option '{name}': expected a time such as 15m, 30s,"
            " 500ms, 2h or 1d"
        )
    value = int(match.group(1)) * _TIME_UNITS_MS[unit or "ms"]
    if value < 0:
        raise OptionError(f"Invalid value '{text}' for option '{name}': must not be negative")
    return int(value)


def _partition_json(raw: str, name: str, example: str) -> dict[str, dict[str, Any]]:
    """Spark's ``{"topic": {"partition": long}}`` JSON, with Spark's message when malformed."""
    bad = OptionError(f"Expected e.g. {example}, got {raw} (option '{name}')")
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError:
        raise bad from None
    if not isinstance(doc, dict) or not all(isinstance(v, dict) for v in doc.values()):
        raise bad
    return doc


def _partition_values(raw: str, name: str, example: str) -> list[TopicPartitionValue]:
    entries: list[TopicPartitionValue] = []
    for topic, parts in _partition_json(raw, name, example).items():
        for part, value in parts.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise OptionError(f"Expected e.g. {example}, got {raw} (option '{name}')")
            try:
                partition = int(part)
            except ValueError:
                raise OptionError(f"Expected e.g. {example}, got {raw} (option '{name}')") from None
            entries.append((str(topic), partition, value))
    return sorted(entries)


def _offset_spec(
    options: Mapping[str, str],
    keys: tuple[str, str, str],
    names: tuple[str, str, str],
    default: int,
) -> tuple[OffsetSpec, str | None]:
    """Spark's precedence: global timestamp, then per-partition timestamps, then offsets.
    Returns the spec and the name of the option it came from (None for the default)."""
    timestamp_key, by_timestamp_key, offsets_key = keys
    timestamp_name, by_timestamp_name, offsets_name = names
    if timestamp_key in options:
        text = options[timestamp_key].strip()
        try:
            timestamp = int(text)
        except ValueError:
            raise OptionError(
                f"Expected a single long value, got {text} (option '{timestamp_name}')"
            ) from None
        if timestamp < 0:
            raise OptionError(
                f"Invalid value '{text}' for option '{timestamp_name}': a timestamp in"
                " milliseconds since the epoch must not be negative"
            )
        return OffsetSpec(None, timestamp_ms=timestamp), timestamp_name
    if by_timestamp_key in options:
        raw = options[by_timestamp_key].strip()
        entries = _partition_values(raw, by_timestamp_name, _TIMESTAMPS_EXAMPLE)
        for topic, partition, timestamp in entries:
            if timestamp < 0:
                raise OptionError(
                    f"Invalid timestamp {timestamp} for {topic}-{partition} in option"
                    f" '{by_timestamp_name}': must not be negative"
                )
        if not entries:
            raise OptionError(f"Option '{by_timestamp_name}' names no partition: {raw}")
        return OffsetSpec(None, per_partition_timestamps=tuple(entries)), by_timestamp_name
    if offsets_key not in options:
        return OffsetSpec(default), None
    text = options[offsets_key].strip()
    word = text.lower()
    if word == "earliest":
        return OffsetSpec(EARLIEST), offsets_name
    if word == "latest":
        return OffsetSpec(LATEST), offsets_name
    entries = _partition_values(text, offsets_name, _OFFSETS_EXAMPLE)
    for topic, partition, offset in entries:
        if offset < EARLIEST:
            raise OptionError(
                f"Invalid offset {offset} for {topic}-{partition} in option '{offsets_name}':"
                " use an offset >= 0, -1 for latest or -2 for earliest"
            )
    if not entries:
        raise OptionError(f"Option '{offsets_name}' names no partition: {text}")
    return OffsetSpec(None, tuple(entries)), offsets_name


def _check_batch_specs(starting: OffsetSpec, ending: OffsetSpec) -> None:
    if starting.default == LATEST:
        raise OptionError("starting offset can't be latest for batch queries on Kafka")
    for topic, partition, offset in starting.per_partition:
        if offset == LATEST:
            raise OptionError(
                f"startingOffsets for {topic}-{partition} can't be latest for batch queries on"
                " Kafka"
            )
    if ending.default == EARLIEST:
        raise OptionError("ending offset can't be earliest for batch queries on Kafka")
    for topic, partition, offset in ending.per_partition:
        if offset == EARLIEST:
            raise OptionError(
                f"ending offset for {topic}-{partition} can't be earliest for batch queries on"
                " Kafka"
            )
    # Spark's checkOffsetLimitValidity: like with like, same partitions, start <= end.
    pairs: list[tuple[dict[tuple[str, int], int], dict[tuple[str, int], int], str]] = []
    if starting.per_partition and ending.per_partition:
        pairs.append((starting.lookup(), ending.lookup(), "offset"))
    if starting.per_partition_timestamps and ending.per_partition_timestamps:
        pairs.append((starting.timestamp_lookup(), ending.timestamp_lookup(), "timestamp"))
    for start, end, what in pairs:
        if set(start) != set(end):
            raise OptionError(
                "The specified start offset and end offset should have the same"
                " topic-partitions. Topic-partitions for start offset:"
                f" {_tp_set(start)}, topic-partitions for end offset: {_tp_set(end)}."
            )
        for (topic, partition), first in sorted(start.items()):
            last = end[(topic, partition)]
            if first > last and first >= 0 and last >= 0:
                raise OptionError(
                    f"The specified start {what} {first} is greater than the end {what} {last}"
                    f" for topic {topic} partition {partition}."
                )


def _tp_set(values: Mapping[tuple[str, int], int]) -> str:
    return "{" + ", ".join(f"{t}-{p}" for t, p in sorted(values)) + "}"


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
    bad = OptionError(
        f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {raw} (option \'assign\')'
    )
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError:
        raise bad from None
    if not isinstance(doc, dict):
        raise bad
    assigned: list[tuple[str, int]] = []
    for topic, parts in doc.items():
        if not isinstance(parts, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts
        ):
            raise bad
        assigned.extend((str(topic), p) for p in parts)
    if not assigned:
        raise OptionError(
            f"No topicpartitions to assign as specified value for option 'assign' is '{raw}'"
        )
    return None, None, tuple(sorted(set(assigned)))


def _check_kafka_params(options: Mapping[str, str]) -> tuple[str | None, dict[str, str]]:
    """Spark's checks of user ``kafka.*`` options; returns group.id and the rest."""
    group_id = options.get("kafka.group.id")
    if group_id is not None:
        log.warning(CUSTOM_GROUP_ID_WARNING)
        if "groupidprefix" in options:
            log.warning(
                "Option groupIdPrefix will be ignored as option kafka.group.id has been set."
            )
    for key, message in _UNSUPPORTED_KAFKA.items():
        if f"kafka.{key}" in options:
            raise OptionError(message)
    rest = {
        key[len("kafka.") :]: value
        for key, value in options.items()
        if key.startswith("kafka.") and key not in ("kafka.bootstrap.servers", "kafka.group.id")
    }
    return group_id, rest


def parse_options(raw_options: Mapping[str, str], *, streaming: bool = False) -> SourceOptions:
    """Validate Spark's option map for a batch read (or, with ``streaming``, a stream)."""
    options = {str(k).lower(): str(v) for k, v in raw_options.items()}
    starting, _ = _offset_spec(
        options,
        ("startingtimestamp", "startingoffsetsbytimestamp", "startingoffsets"),
        ("startingTimestamp", "startingOffsetsByTimestamp", "startingOffsets"),
        LATEST if streaming else EARLIEST,
    )
    if streaming:
        if "endingoffsets" in options:
            raise OptionError("ending offset not valid in streaming queries")
        # Spark checks only endingOffsetsByTimestamp; an endingTimestamp a stream would
        # silently ignore is refused too.
        if "endingoffsetsbytimestamp" in options or "endingtimestamp" in options:
            raise OptionError("ending timestamp not valid in streaming queries")
        ending = OffsetSpec(LATEST)
    else:
        ending, _ = _offset_spec(
            options,
            ("endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets"),
            ("endingTimestamp", "endingOffsetsByTimestamp", "endingOffsets"),
            LATEST,
        )
        _check_batch_specs(starting, ending)
    strategy = _typed(options, "startingoffsetsbytimestampstrategy")
    subscribe, pattern, assign = _strategy(options)
    min_partitions = _typed(options, "minpartitions")
    max_records = _typed(options, "maxrecordsperpartition")
    group_id, kafka_params = _check_kafka_params(options)
    read_from = _typed(options, "sparklog.read.from")
    hot_protocol = _typed(options, "sparklog.hot.protocol")
    bootstrap = options.get("kafka.bootstrap.servers", "").strip() or None
    if bootstrap is None and read_from != "store":
        raise OptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
        )
    max_offsets = _typed(options, "maxoffsetspertrigger")
    max_bytes = _typed(options, "maxbytespertrigger")
    commit_group = options.get("sparklog.commitoffsetstogroup", "").strip() or None
    if commit_group is not None and streaming and read_from == "store":
        raise OptionError(
            "Option 'sparklog.commitOffsetsToGroup' needs the brokers; it cannot be used with"
            " sparklog.read.from=store"
        )
    min_offsets = _typed(options, "minoffsetspertrigger")
    if min_offsets is not None and max_offsets is not None and min_offsets > max_offsets:
        raise OptionError(
            f"The value of minOffsetPerTrigger({min_offsets}) is higher than the"
            f" maxOffsetsPerTrigger({max_offsets})."
        )
    delay_ms = parse_time_ms(
        options.get("maxtriggerdelay", DEFAULT_MAX_TRIGGER_DELAY), "maxTriggerDelay"
    )
    if not streaming:
        for key, name in (
            ("maxoffsetspertrigger", "maxOffsetsPerTrigger"),
            ("maxbytespertrigger", "maxBytesPerTrigger"),
            ("minoffsetspertrigger", "minOffsetsPerTrigger"),
            ("sparklog.commitoffsetstogroup", "sparklog.commitOffsetsToGroup"),
            ("maxtriggerdelay", "maxTriggerDelay"),
        ):
            if key in options:
                log.warning("%s option ignored in batch queries", name)
    store_url = options.get("sparklog.store.url", "").strip() or None
    if store_url is None and read_from == "store":
        raise OptionError(
            "Option 'sparklog.store.url' must be specified with sparklog.read.from=store"
        )
    isolation = _typed(options, "kafka.isolation.level")
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
        starting=starting,
        ending=ending,
        read_committed=isolation == "read_committed",
        include_headers=_typed(options, "includeheaders"),
        min_partitions=min_partitions,
        max_records_per_partition=max_records,
        fail_on_data_loss=_typed(options, "failondataloss"),
        store_url=store_url,
        store_options=store_options,
        read_from=read_from,
        hot_protocol=hot_protocol,
        streaming=streaming,
        no_match_strategy=strategy,
        max_offsets_per_trigger=max_offsets,
        max_bytes_per_trigger=max_bytes,
        commit_offsets_to_group=commit_group,
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_ms=delay_ms,
        group_id=group_id,
        group_id_prefix=options.get("groupidprefix"),
        fetch_offset_num_retries=_typed(options, "fetchoffset.numretries"),
        fetch_offset_retry_interval_ms=_typed(options, "fetchoffset.retryintervalms"),
        poll_timeout_ms=_typed(options, "kafkaconsumer.polltimeoutms"),
        kafka_params=kafka_params,
    )
