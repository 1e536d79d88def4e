"""The stream reader of the ``sparklog`` format: micro-batches over the batch read path.

``spark.readStream.format("sparklog")`` takes Spark's Kafka source options (see
:mod:`.options`, parsed with ``streaming=True``). Each micro-batch is a range of offsets per
partition, planned like a batch read (:func:`.planning.plan_ranges`): cold pieces from the
object store, hot pieces from the leaders, the same executor readers.

Contract:
- Offsets are Spark's Kafka source JSON, ``{"topic": {"0": 12, "1": 40}}``: string partition
  keys, sorted by topic then partition number, each value the next offset to read. Spark
  checkpoints them verbatim, so a restarted query resumes at the checkpointed offsets and reads
  every offset once: micro-batches are ``[start, end)`` ranges that tile each partition.
- ``initialOffset``: ``startingOffsets`` / ``startingOffsetsByTimestamp`` /
  ``startingTimestamp`` resolved once (default latest). Partitions that appear later (new
  topics matching a pattern, added partitions) start at their earliest offset.
- ``latestOffset(start, limit)``: the newest offsets (HW, or LSO under read_committed), cut by
  admission control (:mod:`.admission`): ``maxOffsetsPerTrigger`` (the default read limit,
  ``ReadMaxRows``) is split across partitions in proportion to their lag;
  ``minOffsetsPerTrigger`` holds a trigger (returns ``start``) until that many offsets are
  available or ``maxTriggerDelay`` passed since the last batch. ``maxBytesPerTrigger`` (the
  default read limit when it is the only one, ``ReadMaxBytes``) splits a byte budget the same
  way, with each partition's bytes per offset estimated from its tiered segments (Kafka log
  bytes, :data:`DEFAULT_BYTES_PER_OFFSET` for a partition with none); with both limits a batch
  ends where the first is reached. After
  ``prepareForTriggerAvailableNow`` the ends never pass the offsets seen then, and the
  min-offsets hold is off (it would end the run early with data left behind).
- Data loss (``failOnDataLoss``): offsets below the earliest available, a partition that
  disappeared, or a partition whose latest offset went below the checkpointed one. True fails
  the query naming the partition and offsets; false logs it and skips ahead.
- With ``sparklog.commitOffsetsToGroup`` set, each finished batch's end is committed to that
  consumer group (:mod:`.group_commit`): ``latestOffset(start, ...)`` commits ``start``, the end
  of the batch Spark just recorded as done (it asks only then, also once more after the last
  batch of an available-now run), and ``commit(end)`` commits ``end``; an unchanged position is
  not committed again. A failed commit is logged, never fails the query.
- The reader keeps no state that executors need: everything a task reads travels in its piece.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from .admission import byte_limit, combine, rate_limit, should_delay
from .offsets import open_tiered_store
from .options import SourceOptions
from .planning import (
    DataLossError,
    PartitionRange,
    PartitionState,
    data_loss_message,
    partition_states,
    plan_ranges,
)
from .security import security_params

__all__ = ["SparklogStreamReader", "offsets_from_json", "offsets_to_json"]

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

#: Bytes per offset assumed for a partition without tiered segments to measure.
DEFAULT_BYTES_PER_OFFSET = 1024.0


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{(topic, partition): offset}`` as Spark's Kafka offsets JSON, in a stable order."""
    result: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        result.setdefault(topic, {})[str(partition)] = int(offsets[(topic, partition)])
    return result


def offsets_from_json(doc: Mapping[str, Any]) -> dict[TopicPartition, int]:
    return {
        (str(topic), int(partition)): int(offset)
        for topic, partitions in doc.items()
        for partition, offset in partitions.items()
    }


def _now_ms() -> int:
    return int(time.time() * 1000)


class SparklogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._available_now: dict[TopicPartition, int] | None = None
        self._last_trigger_ms = _now_ms()
        self._latest: dict[TopicPartition, int] | None = None
        self._bytes_per_offset: dict[TopicPartition, float] = {}
        self._group_position: dict[TopicPartition, int] | None = None

    # -- driver side (Spark's long-lived streaming runner process)

    def initialOffset(self) -> dict[str, dict[str, int]]:
        offsets = {}
        for key, state in partition_states(self.options).items():
            start = state.starting
            if start < state.earliest:
                self._data_loss(
                    data_loss_message(
                        state.topic, state.partition, start, state.earliest, state.earliest
                    )
                )
                start = state.earliest
            offsets[key] = start
        return offsets_to_json(offsets)

    def getDefaultReadLimit(self) -> ReadLimit:
        # minOffsetsPerTrigger is applied from the options: pyspark has no composite limit.
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.max_bytes_per_trigger is not None:
            return ReadMaxBytes(self.options.max_bytes_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        states = partition_states(self.options, resolve_starting=False)
        self._available_now = {key: s.latest for key, s in states.items()}

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, dict[str, int]]:
        begin = offsets_from_json(start)
        self._commit_to_group(begin)
        states = partition_states(self.options, resolve_starting=False)
        latest = {key: s.latest for key, s in states.items()}
        self._latest = dict(latest)
        from_offsets: dict[TopicPartition, int] = {}
        for key, state in states.items():
            from_offsets[key] = begin.get(key, state.earliest)
        gone = sorted(set(begin) - set(states))
        if gone:
            self._data_loss(
                f"Partitions {', '.join(f'{t}-{p}' for t, p in gone)} are gone (the topic or the"
                " partitions were deleted); their unread records are lost."
            )
        target = dict(latest)
        if self._available_now is not None:
            # Partitions found after the run was prepared are left for a later run.
            target = {
                key: min(end, self._available_now.get(key, from_offsets[key]))
                for key, end in latest.items()
            }
        for key, end in target.items():
            if end < from_offsets[key]:
                topic, partition = key
                self._data_loss(
                    f"Partition {topic}-{partition}'s offset was changed from"
                    f" {from_offsets[key]} to {end}, some data may have been missed."
                )
        now = _now_ms()
        min_rows = self.options.min_offsets_per_trigger
        if (
            min_rows is not None
            and self._available_now is None
            and should_delay(
                from_offsets,
                target,
                min_rows,
                self.options.max_trigger_delay_ms,
                self._last_trigger_ms,
                now,
            )
        ):
            return offsets_to_json(from_offsets)
        limits = []
        if isinstance(limit, ReadMaxRows):
            limits.append(rate_limit(from_offsets, target, limit.max_rows))
        max_bytes = self.options.max_bytes_per_trigger
        if isinstance(limit, ReadMaxBytes):
            max_bytes = limit.max_bytes
        if max_bytes is not None and isinstance(limit, ReadMaxRows | ReadMaxBytes):
            sizes = self._sizes(list(target))
            limits.append(byte_limit(from_offsets, target, max_bytes, sizes))
        ends = combine(*limits) if limits else target
        if any(ends[key] != from_offsets[key] for key in ends):
            self._last_trigger_ms = now
        return offsets_to_json(ends)

    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:
        return None if self._latest is None else offsets_to_json(self._latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin, until = offsets_from_json(start), offsets_from_json(end)
        states = partition_states(self.options, resolve_starting=False)
        ranges = []
        for key, stop in until.items():
            topic, partition = key
            state: PartitionState | None = states.get(key)
            if state is None:
                self._data_loss(f"Partition {topic}-{partition} is gone; it is not read.")
                continue
            first = begin.get(key, state.earliest)
            if first < state.earliest:
                self._data_loss(
                    data_loss_message(
                        topic, partition, first, min(stop, state.earliest), state.earliest
                    )
                )
                first = state.earliest
            if stop < first:
                self._data_loss(
                    f"Partition {topic}-{partition}'s offset was changed from {first} to {stop},"
                    " some data may have been missed."
                )
                continue
            ranges.append(PartitionRange(topic, partition, first, stop))
        return plan_ranges(self.options, states, ranges)

    def commit(self, end: dict[str, Any]) -> None:
        self._commit_to_group(offsets_from_json(end))

    def _commit_to_group(self, offsets: dict[TopicPartition, int]) -> None:
        # The checkpoint is the source of truth; the group only shows progress.
        group = self.options.commit_offsets_to_group
        if group is None or self.options.bootstrap_servers is None:
            return
        if not offsets or offsets == self._group_position:
            return
        from .group_commit import commit_group_offsets

        try:
            commit_group_offsets(
                self.options.bootstrap_servers,
                group,
                offsets,
                security_params(self.options.kafka_params),
            )
            self._group_position = dict(offsets)
        except Exception as exc:  # a lag display must never stop the query
            log.warning("could not commit offsets to group %r: %s", group, exc)

    def _sizes(self, keys: list[TopicPartition]) -> dict[TopicPartition, float]:
        """Estimated Kafka log bytes per offset of each partition (from its newest tiered
        segments; measured once per partition for the reader's lifetime)."""
        missing = [key for key in keys if key not in self._bytes_per_offset]
        store = open_tiered_store(self.options) if missing else None
        for topic, partition in missing:
            estimate = DEFAULT_BYTES_PER_OFFSET
            if store is not None:
                try:
                    segments = store.read_manifest(topic, partition).finished_segments[-4:]
                except LookupError:
                    segments = ()
                offsets = sum(s.end_offset - s.base_offset + 1 for s in segments)
                if offsets:
                    estimate = sum(s.segment_bytes for s in segments) / offsets
            self._bytes_per_offset[(topic, partition)] = estimate
        return {key: self._bytes_per_offset[key] for key in keys}

    def _data_loss(self, message: str) -> None:
        if self.options.fail_on_data_loss:
            raise DataLossError(message)
        log.warning("failOnDataLoss=false: %s", message)

    # -- executors

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from .source import read_piece

        return read_piece(partition)
