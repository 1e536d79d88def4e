"""The ``sparklog`` sink: ``df.write`` and ``writeStream`` produce to a real node; librdkafka
reads the result back. One node and one SparkSession (local[2]) for the module.

Checks: Spark's Kafka sink columns (key/value as string or binary, headers, topic column or
option, partition) land record for record; a stream copies one topic into another through the
source and the sink; schema, option and save-mode errors carry Spark's messages; a producer
error fails the job with the reason.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from tests.integration.ck_helpers import create_topic, make_consumer, make_producer
from tests.integration.node_harness import Node
from tests.spark.support import SPARK_MARKS, running_node, spark_session

pytestmark = SPARK_MARKS

Got = tuple[int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


class Env:
    def __init__(self, node: Node, spark: Any, base: Path) -> None:
        self.node, self.spark, self.base = node, spark, base

    def writer(self, df: Any, **options: str) -> Any:
        # Python data sources take only Append and Overwrite: Spark refuses ErrorIfExists, the
        # default save mode, before the source sees the query.
        writer = (
            df.write.format("sparklog")
            .mode("append")
            .option("kafka.bootstrap.servers", self.node.bootstrap)
        )
        for key, value in options.items():
            writer = writer.option(key, value)
        return writer


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("sink")
    with running_node(base) as node, spark_session("sparklog-sink-tests", utc=False) as spark:
        yield Env(node, spark, base)


def _consume(node: Node, topic: str, partitions: int, count: int) -> list[Got]:
    consumer = make_consumer(node)
    got: list[Got] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                assert msg.error() is None, msg.error()
                headers = tuple(
                    (k, None if v is None else bytes(v)) for k, v in msg.headers() or ()
                )
                got.append((msg.partition(), msg.key(), msg.value(), headers))
        for msg in consumer.consume(num_messages=10, timeout=0.5):
            raise AssertionError(f"unexpected extra record at offset {msg.offset()}")
    finally:
        consumer.close()
    assert len(got) == count, f"consumed {len(got)} of {count}"
    return got


def test_batch_write_all_columns(env: Env) -> None:
    topic = "sink-all"
    create_topic(env.node, topic, 3)
    Header = dict[str, str | bytes | None]
    rows: list[tuple[str | None, bytes | None, list[Header] | None, str, int | None]] = [
        (
            f"key-{i}" if i % 10 else None,
            b"value-%d" % i if i % 17 else None,
            [{"key": "seq", "value": b"%d" % i}, {"key": "nil", "value": None}] if i % 2 else None,
            topic,
            i % 3 if i % 5 else None,
        )
        for i in range(2000)
    ]
    df = env.spark.createDataFrame(
        rows,
        "key STRING, value BINARY, headers ARRAY<STRUCT<key: STRING, value: BINARY>>,"
        " topic STRING, partition INT",
    ).repartition(4)
    env.writer(df).save()
    got = _consume(env.node, topic, 3, len(rows))
    want: list[tuple[bytes | None, bytes | None, tuple[Any, ...], int | None]] = []
    for key, value, headers, _, partition in rows:
        hdrs = tuple((h["key"], h["value"]) for h in headers or ())
        want.append((key.encode() if key else None, value, hdrs, partition))
    assert sorted((k or b"", v or b"", h) for _, k, v, h in got) == sorted(
        (k or b"", v or b"", h) for k, v, h, _ in want
    )
    by_value = {v: p for p, _, v, _ in got if v is not None}
    for _, value, _, partition in want:
        if partition is not None and value is not None:
            assert by_value[value] == partition


def test_topic_option_overrides_column_and_strings_are_utf8(env: Env) -> None:
    topic = "sink-option"
    create_topic(env.node, topic, 1)
    df = env.spark.createDataFrame(
        [("k1", "v1", "ignored-topic"), ("k2", "vé", "ignored-topic")],
        "key STRING, value STRING, topic STRING",
    )
    env.writer(df, topic=topic).save()
    got = _consume(env.node, topic, 1, 2)
    assert sorted((k, v) for _, k, v, _ in got) == [(b"k1", b"v1"), (b"k2", "vé".encode())]


def test_stream_copies_a_topic_through_source_and_sink(env: Env) -> None:
    source, target = "sink-stream-in", "sink-stream-out"
    create_topic(env.node, source, 2)
    create_topic(env.node, target, 2)
    producer = make_producer(env.node)
    for i in range(3000):
        producer.produce(
            source,
            key=b"k%d" % i,
            value=b"v%d" % i,
            partition=i % 2,
            headers=[("h", b"%d" % i)],
        )
    assert producer.flush(30) == 0
    stream = (
        env.spark.readStream.format("sparklog")
        .option("kafka.bootstrap.servers", env.node.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .option("maxOffsetsPerTrigger", "1000")
        .load()
        .selectExpr("key", "value", "headers", "partition")
    )
    query = (
        stream.writeStream.format("sparklog")
        .option("kafka.bootstrap.servers", env.node.bootstrap)
        .option("topic", target)
        .option("kafka.compression.type", "zstd")
        .option("checkpointLocation", str(env.base / "copy-checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    got = _consume(env.node, target, 2, 3000)
    assert sorted(got) == sorted(
        (i % 2, b"k%d" % i, b"v%d" % i, (("h", b"%d" % i),)) for i in range(3000)
    )


@pytest.mark.parametrize(
    ("ddl", "options", "message"),
    [
        ("key STRING, topic STRING", {}, "Required attribute 'value' not found"),
        ("value STRING", {}, "topic option required when no 'topic' attribute is present"),
        ("value INT, topic STRING", {}, "value attribute type must be a string or binary"),
        ("value STRING, key INT, topic STRING", {}, "key attribute type must be a string or"),
        ("value STRING, topic INT", {}, "Topic type must be a string"),
        ("value STRING, topic STRING, partition STRING", {}, "partition attribute type must be"),
        ("value STRING, headers STRING", {"topic": "t"}, "headers attribute type must be"),
        ("value STRING", {"topic": "t", "kafka.key.serializer": "x"}, "key.serializer"),
        ("value STRING", {"topic": "t", "kafka.acks": "0"}, "kafka.acks"),
        ("value STRING", {"topic": "t", "kafka.compression.type": "brotli"}, "compression.type"),
        ("value STRING", {"topic": "t", "kafka.bootstrap.servers": ""}, "kafka.bootstrap.servers"),
    ],
)
def test_schema_and_option_errors(
    env: Env, ddl: str, options: dict[str, str], message: str
) -> None:
    from pyspark.sql import Row

    fields = [f.strip().split(" ")[0] for f in ddl.split(",")]
    sample = {"key": "k", "value": "v", "topic": "t", "partition": "p", "headers": "h"}
    values = tuple(1 if f"{name} INT" in ddl else sample[name] for name in fields)
    df = env.spark.createDataFrame([Row(*values)], ddl)
    with pytest.raises(Exception, match=re.escape(message)):
        env.writer(df, **options).save()


def test_overwrite_is_refused_and_append_is_needed(env: Env) -> None:
    df = env.spark.createDataFrame([("v",)], "value STRING")
    with pytest.raises(Exception, match="Save mode Overwrite not allowed for Kafka"):
        env.writer(df, topic="t").mode("overwrite").save()
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        env.writer(df, topic="t").mode("errorifexists").save()


def test_producer_errors_fail_the_job_with_the_reason(env: Env) -> None:
    topic = "sink-two-partitions"
    create_topic(env.node, topic, 2)
    df = env.spark.createDataFrame([("v", 7)], "value STRING, partition INT")
    with pytest.raises(Exception, match=r"Invalid partition given with record: 7"):
        env.writer(df, topic=topic).save()
