"""Driver-side offset resolution: which partitions, and which offsets of each to read.

Contract:
- Partitions come from Metadata (``subscribe``/``subscribePattern``/``assign``), or, with
  ``sparklog.read.from=store``, from the store's manifests alone (no broker is contacted).
  Specific offsets or per-partition timestamps must name exactly the assigned partitions.
- Each partition's range is ``[start, end)``: earliest is the log start offset, latest the high
  watermark (read_uncommitted) or the last stable offset (read_committed), from ListOffsets
  sent to each partition's leader (the Metadata of the first bootstrap server names it); in
  store-only mode the manifest's ``log_start_offset`` and the end of its last finished segment.
  Timestamps resolve to the first offset whose record timestamp is at least the timestamp:
  with ListOffsets on the brokers, from the manifests' timestamp ranges and the Parquet
  ``timestamp`` column (row-group statistics skip) in store-only mode. No match: a start fails
  (``startingOffsetsByTimestampStrategy=error``) or becomes latest; an end becomes latest.
  An ending offset above latest is cut to latest.
- Data loss is only "requested offsets below the earliest available offset" (retention,
  DeleteRecords). Gaps inside a range (control records, aborted transactions, compaction) are
  never data loss: readers skip them. With ``failOnDataLoss`` the plan fails naming the
  topic-partition, the requested range and the earliest available offset; otherwise it logs
  that and starts at the earliest offset.
- Driver lookups are retried ``fetchOffset.numRetries`` times, ``fetchOffset.retryIntervalMs``
  apart.

The steps are public for the batch planner (:mod:`.planning`) and the stream reader:
:func:`partition_states` (partitions, earliest, latest, resolved starting offsets) and
:func:`resolve_range` (one partition's batch range and the data-loss rule).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, TypeVar

from sparklog.client.connection import KafkaConnection
from sparklog.connector.security import client_security, security_params
from sparklog.protocol.errors import error_name
from sparklog.tiering.layout import Manifest, partition_dir
from sparklog.tiering.reader import TieredStoreReader
from sparklog.tiering.segment_reader import first_at_or_after, open_segment

from .options import EARLIEST, LATEST, OffsetSpec, OptionError, SourceOptions

__all__ = [
    "NO_MATCH",
    "BrokerPartition",
    "DataLossError",
    "PartitionRange",
    "PartitionState",
    "data_loss_message",
    "open_tiered_store",
    "partition_states",
    "resolve_range",
    "store_offset_for_timestamp",
]

log = logging.getLogger(__name__)

#: What ListOffsets answers for a timestamp no record reaches.
NO_MATCH: Final = -1
_T = TypeVar("_T")


class DataLossError(RuntimeError):
    """Requested offsets no longer exist and ``failOnDataLoss`` is true."""


class _RetryableError(RuntimeError):
    """A broker answer worth asking again (no leader yet, a moving partition)."""


@dataclass(frozen=True, slots=True)
class PartitionRange:
    topic: str
    partition: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class BrokerPartition:
    """A partition as Metadata reports it, with its leader's Kafka listener ``host:port``."""

    topic: str
    topic_id: bytes
    partition: int
    leader: str


def data_loss_message(topic: str, partition: int, start: int, end: int, earliest: int) -> str:
    """Spark's data-loss text plus what exactly is gone."""
    return (
        "Some data may have been lost because they are not available in Kafka any more; either"
        " the data was aged out by Kafka or the topic may have been deleted before all the data"
        " in the topic was processed. If you don't want your query to fail on such cases, set"
        " the source option failOnDataLoss to false."
        f" Reason: offsets [{start}, {end}) of {topic}-{partition} were requested, but the"
        f" earliest available offset is {earliest}."
    )


def resolve_range(
    options: SourceOptions,
    topic: str,
    partition: int,
    earliest: int,
    latest: int,
    start_for_timestamp: int | None = None,
    end_for_timestamp: int | None = None,
) -> PartitionRange | None:
    """The offsets to read of one partition, or None when there are none.

    ``start_for_timestamp`` / ``end_for_timestamp`` are the offsets the starting / ending
    timestamp resolved to (:data:`NO_MATCH` when no record is that late); they are used only
    when the corresponding spec is by timestamp.
    """
    start = _start_offset(options, topic, partition, latest, start_for_timestamp)
    end = _end_offset(options.ending, latest, end_for_timestamp, topic, partition)
    start = earliest if start == EARLIEST else latest if start == LATEST else start
    end = latest if end == LATEST else min(end, latest)
    if start < earliest:
        lost_end = min(earliest, end)
        if options.fail_on_data_loss:
            raise DataLossError(data_loss_message(topic, partition, start, lost_end, earliest))
        log.warning(
            "failOnDataLoss=false: offsets [%d, %d) of %s-%d are gone (earliest available"
            " offset %d); skipping them",
            start,
            lost_end,
            topic,
            partition,
            earliest,
        )
        start = earliest
        if start >= end:
            return None
    if start > end:
        raise OptionError(
            f"The resolved start offset {start} is greater than the resolved end offset {end}"
            f" for topic {topic} partition {partition}. The start offset may be set too large"
            " (beyond the end offset or latest), or the topic partition is broken."
        )
    return PartitionRange(topic, partition, start, end) if start < end else None


def _start_offset(
    options: SourceOptions, topic: str, partition: int, latest: int, by_timestamp: int | None
) -> int:
    spec = options.starting
    if spec.by_timestamp:
        if by_timestamp is None or by_timestamp == NO_MATCH:
            if options.no_match_strategy == "latest":
                return latest
            timestamp = _timestamp_of(spec, topic, partition)
            raise OptionError(
                f"No offset matched from request of topic-partition {topic}-{partition} and"
                f" timestamp {timestamp}."
            )
        return by_timestamp
    if spec.default is not None:
        return spec.default
    return spec.lookup()[(topic, partition)]


def _end_offset(
    spec: OffsetSpec, latest: int, by_timestamp: int | None, topic: str, partition: int
) -> int:
    if spec.by_timestamp:
        return LATEST if by_timestamp is None or by_timestamp == NO_MATCH else by_timestamp
    if spec.default is not None:
        return spec.default
    return spec.lookup()[(topic, partition)]


def _timestamp_of(spec: OffsetSpec, topic: str, partition: int) -> int:
    if spec.timestamp_ms is not None:
        return spec.timestamp_ms
    return spec.timestamp_lookup()[(topic, partition)]


def _check_specified(name: str, spec: OffsetSpec, assigned: Iterable[tuple[str, int]]) -> None:
    specified = spec.specified_partitions()
    have = set(assigned)
    if specified is None or specified == have:
        return

    def show(parts: set[tuple[str, int]]) -> str:
        return "{" + ", ".join(f"{t}-{p}" for t, p in sorted(parts)) + "}"

    raise OptionError(
        f"If {name} contains specific offsets, you must specify all TopicPartitions.\n"
        "Use -1 for latest, -2 for earliest.\n"
        f"Specified: {show(specified)} Assigned: {show(have)}"
    )


def _check_all_specified(options: SourceOptions, assigned: list[tuple[str, int]]) -> None:
    for name, spec in (
        (
            "startingOffsetsByTimestamp" if options.starting.by_timestamp else "startingOffsets",
            options.starting,
        ),
        (
            "endingOffsetsByTimestamp" if options.ending.by_timestamp else "endingOffsets",
            options.ending,
        ),
    ):
        _check_specified(name, spec, assigned)


def _select_topics(options: SourceOptions, available: Iterable[str]) -> list[str]:
    names = sorted(set(available))
    if options.subscribe is not None:
        return [t for t in options.subscribe if t in names]
    if options.subscribe_pattern is not None:
        pattern = re.compile(options.subscribe_pattern)
        return [t for t in names if pattern.fullmatch(t)]
    assert options.assign is not None
    return sorted({t for t, _ in options.assign})


def _broker_partitions(conn: KafkaConnection, options: SourceOptions) -> list[BrokerPartition]:
    if options.subscribe is not None:
        topics: list[str] | None = list(options.subscribe)
    elif options.assign is not None:
        topics = sorted({t for t, _ in options.assign})
    else:
        topics = None  # a pattern: every topic, filtered here
    response = conn.request(
        "Metadata",
        {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    brokers = {b["node_id"]: f"{b['host']}:{b['port']}" for b in response["brokers"]}
    found = {t["name"]: t for t in response["topics"] if t["error_code"] == 0}
    wanted = set(options.assign or ())
    result = []
    for name in _select_topics(options, found):
        if name not in found:
            continue
        topic = found[name]
        for p in topic["partitions"]:
            if options.assign is not None and (name, p["partition_index"]) not in wanted:
                continue
            leader = brokers.get(p["leader_id"])
            if leader is None:
                raise _RetryableError(f"{name}-{p['partition_index']} has no leader")
            result.append(
                BrokerPartition(name, bytes(topic["topic_id"]), p["partition_index"], leader)
            )
    if options.assign is not None:
        missing = wanted - {(b.topic, b.partition) for b in result}
        if missing:
            raise OptionError(f"Option 'assign': unknown partitions {sorted(missing)}")
    return sorted(result, key=lambda b: (b.topic, b.partition))


def _list_offsets(
    conn: KafkaConnection,
    parts: list[BrokerPartition],
    spec_for: Callable[[BrokerPartition], int],
    read_committed: bool,
) -> dict[tuple[str, int], int]:
    """ListOffsets of every partition at ``spec_for(partition)`` (-2, -1 or a timestamp)."""
    by_topic: dict[str, list[BrokerPartition]] = {}
    for b in parts:
        by_topic.setdefault(b.topic, []).append(b)
    if not by_topic:
        return {}
    response = conn.request(
        "ListOffsets",
        {
            "replica_id": -1,
            "isolation_level": 1 if read_committed else 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": b.partition,
                            "current_leader_epoch": -1,
                            "timestamp": spec_for(b),
                        }
                        for b in partitions
                    ],
                }
                for topic, partitions in by_topic.items()
            ],
            "timeout_ms": 30_000,
        },
    )
    result = {}
    for topic in response["topics"]:
        for p in topic["partitions"]:
            if p["error_code"] != 0:
                raise _RetryableError(
                    f"ListOffsets for {topic['name']}-{p['partition_index']} failed with error"
                    f" {p['error_code']} ({error_name(int(p['error_code']))})"
                )
            result[(topic["name"], p["partition_index"])] = int(p["offset"])
    return result


def _with_retries(options: SourceOptions, body: Callable[[], _T]) -> _T:
    """Spark's fetchOffset.numRetries / fetchOffset.retryIntervalMs around driver lookups."""
    attempt = 1
    while True:
        try:
            return body()
        except (_RetryableError, OSError) as exc:
            if attempt >= options.fetch_offset_num_retries:
                raise RuntimeError(f"cannot fetch offsets after {attempt} attempts: {exc}") from exc
            log.warning("attempt %d to fetch offsets failed: %s", attempt, exc)
            attempt += 1
            time.sleep(options.fetch_offset_retry_interval_ms / 1000)


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What the driver knows of one partition at planning time.

    ``starting`` is the resolved starting offset (before any data-loss check; ``earliest``
    when not asked for); ``start_for_timestamp`` / ``end_for_timestamp`` are the raw offsets
    the starting / ending timestamps resolved to (:data:`NO_MATCH` for none), when by
    timestamp. ``leader`` is None in store-only mode.
    """

    topic: str
    partition: int
    earliest: int
    latest: int
    starting: int
    leader: str | None = None
    topic_id: bytes = b""
    start_for_timestamp: int | None = None
    end_for_timestamp: int | None = None


def _state(
    options: SourceOptions,
    topic: str,
    partition: int,
    earliest: int,
    latest: int,
    resolve_starting: bool,
    times: tuple[int | None, int | None],
    leader: str | None = None,
    topic_id: bytes = b"",
) -> PartitionState:
    starting = earliest
    if resolve_starting:
        starting = _start_offset(options, topic, partition, latest, times[0])
        starting = earliest if starting == EARLIEST else latest if starting == LATEST else starting
    return PartitionState(
        topic, partition, earliest, latest, starting, leader, topic_id, times[0], times[1]
    )


def _broker_states(
    options: SourceOptions, resolve_starting: bool
) -> dict[tuple[str, int], PartitionState]:
    assert options.bootstrap_servers is not None
    bootstrap = options.bootstrap_servers.split(",")[0].strip()
    security = client_security(security_params(options.kafka_params))
    with KafkaConnection.connect(
        bootstrap, client_id="sparklog-connector", security=security
    ) as conn:
        parts = _broker_partitions(conn, options)
    if resolve_starting:
        _check_all_specified(options, [(b.topic, b.partition) for b in parts])
    # ListOffsets is answered by a partition's leader only (others: NOT_LEADER_OR_FOLLOWER),
    # so each leader is asked for the partitions it leads, as Kafka's clients do.
    by_leader: dict[str, list[BrokerPartition]] = {}
    for b in parts:
        by_leader.setdefault(b.leader, []).append(b)
    rc = options.read_committed
    earliest: dict[tuple[str, int], int] = {}
    latest: dict[tuple[str, int], int] = {}
    times: tuple[dict[tuple[str, int], int], ...] = ({}, {})
    for leader, led in by_leader.items():
        with KafkaConnection.connect(
            leader, client_id="sparklog-connector", security=security
        ) as conn:
            earliest.update(_list_offsets(conn, led, lambda b: EARLIEST, rc))
            latest.update(_list_offsets(conn, led, lambda b: LATEST, rc))
            for spec, wanted, found in (
                (options.starting, resolve_starting, times[0]),
                (options.ending, True, times[1]),
            ):
                if wanted and spec.by_timestamp:

                    def at(b: BrokerPartition, spec: OffsetSpec = spec) -> int:
                        return _timestamp_of(spec, b.topic, b.partition)

                    found.update(_list_offsets(conn, led, at, rc))
    states = {}
    for b in parts:
        key = (b.topic, b.partition)
        states[key] = _state(
            options,
            b.topic,
            b.partition,
            earliest[key],
            latest[key],
            resolve_starting,
            (times[0].get(key), times[1].get(key)),
            b.leader,
            b.topic_id,
        )
    return states


def store_offset_for_timestamp(
    store: TieredStoreReader, manifest: Manifest, timestamp_ms: int
) -> int | None:
    """The first tiered offset (at or above the log start) whose record timestamp is at least
    ``timestamp_ms``, as ListOffsets answers it; None if no tiered record is that late.

    The manifest's per-segment ``max_timestamp`` picks the segment; in it, row groups whose
    ``timestamp`` statistics end below the target are not read
    (:func:`sparklog.tiering.segment_reader.first_at_or_after`).
    """
    base = partition_dir(manifest.topic, manifest.topic_id, manifest.partition)
    for segment in store.segments_for_range(manifest, manifest.log_start_offset, None):
        if segment.max_timestamp < timestamp_ms:
            continue
        with open_segment(store.store, f"{base}/{segment.path}") as parquet:
            found = first_at_or_after(parquet, timestamp_ms, manifest.log_start_offset)
        if found is not None:
            return found[1]
    return None


def _store_states(
    options: SourceOptions, store: TieredStoreReader, resolve_starting: bool
) -> dict[tuple[str, int], PartitionState]:
    found: list[Manifest] = []
    wanted = set(options.assign or ())
    for topic in _select_topics(options, store.list_topics()):
        try:
            partitions = store.list_partitions(topic)
        except LookupError:
            continue
        for partition in partitions:
            if options.assign is not None and (topic, partition) not in wanted:
                continue
            found.append(store.read_manifest(topic, partition))
    if resolve_starting:
        _check_all_specified(options, [(m.topic, m.partition) for m in found])
    states = {}
    for manifest in found:
        finished = [
            s for s in manifest.finished_segments if s.end_offset >= manifest.log_start_offset
        ]
        if not finished:
            continue
        earliest = max(manifest.log_start_offset, finished[0].base_offset)
        latest = finished[-1].end_offset + 1
        topic, partition = manifest.topic, manifest.partition
        times: list[int | None] = []
        for spec, wanted_time in ((options.starting, resolve_starting), (options.ending, True)):
            if wanted_time and spec.by_timestamp:
                at = store_offset_for_timestamp(
                    store, manifest, _timestamp_of(spec, topic, partition)
                )
                times.append(NO_MATCH if at is None else at)
            else:
                times.append(None)
        states[(topic, partition)] = _state(
            options, topic, partition, earliest, latest, resolve_starting, (times[0], times[1])
        )
    return states


def open_tiered_store(options: SourceOptions) -> TieredStoreReader | None:
    """The tiered store the options read from, or None when they read only from brokers.
    It reads each manifest once: one store per planning pass sees one snapshot."""
    if options.uses_store and options.store_url:
        return TieredStoreReader.open(
            options.store_url, dict(options.store_options), cache_manifests=True
        )
    return None


def partition_states(
    options: SourceOptions,
    resolve_starting: bool = True,
    store: TieredStoreReader | None = None,
) -> dict[tuple[str, int], PartitionState]:
    """Every partition the options select, with earliest / latest offsets (HW or LSO) and,
    with ``resolve_starting``, the starting offset the options ask for. From the brokers, or
    from the manifests alone with ``sparklog.read.from=store`` (read through ``store`` when
    given, so the planner that cuts the ranges reads each manifest once)."""
    if options.uses_brokers:
        return _with_retries(options, lambda: _broker_states(options, resolve_starting))
    store = store or open_tiered_store(options)
    assert store is not None
    return _store_states(options, store, resolve_starting)
