"""The ``sparklog`` sink: ``df.write`` / ``df.writeStream`` ``.format("sparklog")`` produce rows
to topics with the project's producer (:mod:`sparklog.client.producer`), as Spark's Kafka sink.

Columns (Spark's Kafka sink): ``value`` (string or binary, required; null writes a null value),
``key`` (string or binary, optional), ``headers`` (array<struct<key string, value binary>>,
optional), ``topic`` (string; required unless the ``topic`` option is set, which overrides it),
``partition`` (int, optional; null or absent means Kafka's default partitioner). Other columns
are ignored. Options: ``kafka.bootstrap.servers`` (required), ``topic``, and producer settings
with Kafka's names: ``kafka.acks`` (all | -1 | 1, default all), ``kafka.compression.type``
(none | gzip | snappy | lz4 | zstd), ``kafka.batch.size``, ``kafka.retries``,
``kafka.retry.backoff.ms``, ``kafka.request.timeout.ms``, ``kafka.client.id``; other
``kafka.*`` keys are accepted and ignored; ``kafka.key.serializer`` /
``kafka.value.serializer`` are refused as in Spark.

Contract: schema and options are checked when the writer is created (analysis time), with
Spark's messages. A task returns only once every record it wrote is acknowledged (acks=all by
default), so a committed Spark job or micro-batch has all its rows in the log; a failed task is
retried by Spark and may write rows twice (at-least-once, like Spark's Kafka sink). Save modes
Overwrite is refused as in Spark. Producers are cached per worker process and configuration
(Python workers are reused across tasks).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from sparklog.client.producer import Producer, ProducerConfig

from .options import OptionError

__all__ = [
    "SinkOptions",
    "SparklogStreamWriter",
    "SparklogWriter",
    "WriteResult",
    "parse_sink_options",
    "write_batches",
]

HEADERS_TYPE: Final = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)
_REFUSED: Final = {
    "key.serializer": "Kafka option 'key.serializer' is not supported as keys are serialized"
    " with ByteArraySerializer.",
    "value.serializer": "Kafka option 'value.serializer' is not supported as value are"
    " serialized with ByteArraySerializer.",
}
_PRODUCERS: dict[tuple[str, ProducerConfig], Producer] = {}


@dataclass(frozen=True, slots=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None
    producer: ProducerConfig
    has_key: bool
    has_headers: bool
    has_partition: bool
    has_topic: bool


@dataclass(frozen=True)
class WriteResult(WriterCommitMessage):
    records: int


def _field(schema: StructType, name: str) -> StructField | None:
    for f in schema.fields:
        if f.name == name:
            return f
    return None


def _check_type(schema: StructType, name: str, allowed: tuple[DataType, ...], message: str) -> bool:
    found = _field(schema, name)
    if found is None:
        return False
    if not any(found.dataType == t for t in allowed):
        raise OptionError(message)
    return True


def _int_option(options: Mapping[str, str], key: str, default: int, minimum: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise OptionError(
            f"Invalid value '{raw}' for option 'kafka.{key[6:]}', must be an integer >= {minimum}"
        )
    return value


def _producer_config(options: Mapping[str, str]) -> ProducerConfig:
    acks_raw = options.get("kafka.acks", "all").strip().lower()
    acks = {"all": -1, "-1": -1, "1": 1}.get(acks_raw)
    if acks is None:
        raise OptionError(
            f"Invalid value '{acks_raw}' for option 'kafka.acks', must be all, -1 or 1"
            " (acks=0 is not supported)"
        )
    compression = options.get("kafka.compression.type", "none").strip().lower()
    try:
        return ProducerConfig(
            acks=acks,
            compression=compression,
            batch_size=_int_option(options, "kafka.batch.size", 1 << 20, 1),
            retries=_int_option(options, "kafka.retries", 10, 0),
            retry_backoff_ms=_int_option(options, "kafka.retry.backoff.ms", 100, 0),
            request_timeout_ms=_int_option(options, "kafka.request.timeout.ms", 30_000, 1),
            client_id=options.get("kafka.client.id", "sparklog-sink"),
        )
    except ValueError as exc:
        raise OptionError(f"Invalid value for option 'kafka.compression.type': {exc}") from None


def parse_sink_options(
    raw_options: Mapping[str, str], schema: StructType, overwrite: bool
) -> SinkOptions:
    """Validate the sink's options and the input schema, with Spark's messages."""
    if overwrite:
        raise OptionError(
            "Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and"
            " ErrorIfExists (default)."
        )
    options = {str(k).lower(): str(v) for k, v in raw_options.items()}
    for key, message in _REFUSED.items():
        if f"kafka.{key}" in options:
            raise OptionError(message)
    bootstrap = options.get("kafka.bootstrap.servers", "").strip()
    if not bootstrap:
        raise OptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer"
        )
    topic = options.get("topic", "").strip() or None
    has_topic = _check_type(schema, "topic", (StringType(),), "Topic type must be a string")
    if topic is None and not has_topic:
        raise OptionError(
            "topic option required when no 'topic' attribute is present. Use the topic option"
            " for setting a topic."
        )
    has_key = _check_type(
        schema,
        "key",
        (StringType(), BinaryType()),
        "key attribute type must be a string or binary",
    )
    if _field(schema, "value") is None:
        raise OptionError("Required attribute 'value' not found")
    _check_type(
        schema,
        "value",
        (StringType(), BinaryType()),
        "value attribute type must be a string or binary",
    )
    has_headers = _check_type(
        schema,
        "headers",
        (HEADERS_TYPE, ArrayType(HEADERS_TYPE.elementType, False)),
        "headers attribute type must be a array<struct<key:string,value:binary>>",
    )
    has_partition = _check_type(
        schema, "partition", (IntegerType(),), "partition attribute type must be an int"
    )
    return SinkOptions(
        bootstrap,
        topic,
        _producer_config(options),
        has_key,
        has_headers,
        has_partition,
        has_topic,
    )


def _bytes(column: pa.Array) -> list[bytes | None]:
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(pa.binary())
    return column.to_pylist()  # type: ignore[no-any-return]


def _producer(options: SinkOptions) -> Producer:
    key = (options.bootstrap_servers, options.producer)
    producer = _PRODUCERS.get(key)
    if producer is None:
        producer = Producer(options.bootstrap_servers, options.producer)
        _PRODUCERS[key] = producer
    return producer


def write_batches(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> int:
    """Produce every row of ``batches``; returns the row count once all are acknowledged."""
    producer = _producer(options)
    count = 0
    try:
        for batch in batches:
            rows = batch.num_rows
            values = _bytes(batch.column("value"))
            keys = _bytes(batch.column("key")) if options.has_key else [None] * rows
            topics: list[Any] = (
                [options.topic] * rows
                if options.topic is not None
                else batch.column("topic").to_pylist()
            )
            partitions: list[Any] = (
                batch.column("partition").to_pylist() if options.has_partition else [None] * rows
            )
            headers: list[Any] = (
                batch.column("headers").to_pylist() if options.has_headers else [None] * rows
            )
            for i in range(rows):
                topic = topics[i]
                if topic is None:
                    raise OptionError(
                        "null topic present in the data. Use the topic option for setting a topic."
                    )
                producer.send(
                    topic,
                    values[i],
                    key=keys[i],
                    headers=[(h["key"], h["value"]) for h in headers[i] or ()],
                    partition=partitions[i],
                )
            count += rows
        producer.flush()
    except BaseException:
        # Buffered records of a failed task must not leak into the next task of this worker.
        _PRODUCERS.pop((options.bootstrap_servers, options.producer), None)
        producer.close()
        raise
    return count


class SparklogWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return WriteResult(write_batches(self.options, iterator))


class SparklogStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return WriteResult(write_batches(self.options, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # Every task flushed before returning: the batch's records are already in the log.
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # Records cannot be taken back from a log; Spark replays the batch (at-least-once).
        pass
