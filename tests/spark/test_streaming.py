"""Structured Streaming through the ``sparklog`` format against a real node tiering to file://.

One node and one SparkSession (local[2]) per module. The main test runs a stream with
``maxOffsetsPerTrigger`` into a Parquet sink while a producer writes and tiering moves segments
to the store underneath, stops it, restarts it from the checkpoint (available-now) and checks
that the sink holds every record exactly once, equal to what librdkafka reads. Others: a stream
that bootstraps from the object store then moves on to the broker, the default ``latest`` start,
new partitions from earliest, the min-offsets hold, and data loss.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import TopicPartition

from sparklog.connector.options import parse_options
from sparklog.connector.planning import ColdPiece, DataLossError, HotPiece
from tests.integration.ck_helpers import admin_for, create_topic, make_consumer, make_producer
from tests.integration.node_harness import Node
from tests.integration.tiering_support import (
    StoreView,
    tiering_state,
    topic_configs,
    wait_until,
)
from tests.spark.support import SPARK_MARKS, running_node, spark_session, tiering_store

pytestmark = SPARK_MARKS

Row = tuple[int, int, bytes | None, bytes | None]  # partition, offset, key, value


class Env:
    def __init__(self, node: Node, store: StoreView, spark: Any, base: Path) -> None:
        self.node, self.store, self.spark, self.base = node, store, spark, base

    def options(self, topic: str, **extra: str) -> dict[str, str]:
        return {
            "kafka.bootstrap.servers": self.node.bootstrap,
            "subscribe": topic,
            "sparklog.store.url": self.store.url,
            **extra,
        }

    def stream(self, options: dict[str, str]) -> Any:
        reader = self.spark.readStream.format("sparklog")
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("stream")
    store = tiering_store(base)
    with running_node(base, store) as node, spark_session("sparklog-stream-tests") as spark:
        yield Env(node, store, spark, base)


def _produce(node: Node, topic: str, first: int, count: int, partitions: int) -> None:
    producer = make_producer(node, **{"linger.ms": 20, "acks": "all"})
    for i in range(first, first + count):
        value = b"value-%08d-" % i + bytes(range(256))[: 100 + i % 100]
        while True:
            try:
                producer.produce(topic, key=b"k%d" % i, value=value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def _consume(node: Node, topic: str, partitions: int, count: int) -> list[Row]:
    consumer = make_consumer(node, **{"fetch.max.bytes": 8_388_608})
    got: list[Row] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 120
        while len(got) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                assert msg.error() is None, msg.error()
                got.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
    finally:
        consumer.close()
    assert len(got) == count, f"consumed {len(got)} of {count}"
    return sorted(got)


def _sink_rows(path: Path) -> list[Row]:
    table = pq.read_table(path, columns=["partition", "offset", "key", "value"])
    return sorted(
        zip(
            table.column("partition").to_pylist(),
            table.column("offset").to_pylist(),
            table.column("key").to_pylist(),
            table.column("value").to_pylist(),
            strict=True,
        )
    )


def _input_rows(query: Any) -> list[int]:
    return [int(p["numInputRows"]) for p in query.recentProgress]


def test_rate_limited_stream_with_tiering_underneath_restarts_exactly_once(env: Env) -> None:
    topic, partitions, limit = "stream-main", 2, 3000
    create_topic(env.node, topic, partitions, topic_configs())
    _produce(env.node, topic, 0, 8000, partitions)
    out, checkpoint = env.base / "main-out", env.base / "main-checkpoint"

    def start(**trigger: Any) -> Any:
        df = env.stream(
            env.options(topic, startingOffsets="earliest", maxOffsetsPerTrigger=str(limit))
        )
        return (
            df.writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(**trigger)
            .start()
        )

    query = start(processingTime="500 milliseconds")

    def produce_more() -> None:
        for first in range(8000, 40_000, 4000):
            _produce(env.node, topic, first, 4000, partitions)

    producer = threading.Thread(target=produce_more)
    producer.start()
    try:
        wait_until(
            "the stream to read 20,000 records",
            lambda: sum(_input_rows(query)) >= 20_000 or query.exception() is not None,
            180.0,
            lambda: _input_rows(query),
        )
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
        producer.join()
    first_run = _input_rows(query)
    assert max(first_run) <= limit + partitions, first_run
    assert len([n for n in first_run if n]) >= 7, first_run
    wait_until(
        "segments of both partitions tiered",
        lambda: all(
            any(s["state"] == "COPY_SEGMENT_FINISHED" for s in _manifest(env, topic, p))
            for p in range(partitions)
        ),
        90.0,
        lambda: tiering_state(env.node, env.store, topic),
    )

    query = start(availableNow=True)
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    second_run = _input_rows(query)
    assert max(second_run) <= limit + partitions, second_run
    assert sum(first_run) + sum(second_run) == 40_000, (first_run, second_run)

    got = _sink_rows(out)
    assert len({(p, o) for p, o, _, _ in got}) == len(got), "duplicate records in the sink"
    assert got == _consume(env.node, topic, partitions, 40_000)


def _manifest(env: Env, topic: str, partition: int) -> list[dict[str, Any]]:
    found = env.store.fs.glob(f"{env.store.root}/topics/{topic}/*/{partition}/manifest.json")
    if not found:
        return []
    segments: list[dict[str, Any]] = json.loads(env.store.fs.cat_file(found[0]))["segments"]
    return segments


def test_bootstraps_from_the_store_then_moves_on_to_the_broker(env: Env) -> None:
    from pyspark.sql.streaming.datasource import ReadMaxRows

    from sparklog.connector.stream import SparklogStreamReader

    topic, total = "stream-bootstrap", 16_000
    create_topic(env.node, topic, 1, topic_configs())
    _produce(env.node, topic, 0, total, 1)
    wait_until(
        "two tiered segments",
        lambda: len(env.store.finished(topic)) >= 2,
        90.0,
        lambda: tiering_state(env.node, env.store, topic),
    )
    tiered_end = env.store.finished(topic)[-1]["end_offset"] + 1
    options = env.options(topic, startingOffsets="earliest", maxOffsetsPerTrigger="5000")

    # What the driver plans: cold pieces up to the tier boundary, then hot, no gap or overlap.
    reader = SparklogStreamReader(parse_options(options, streaming=True))
    start = reader.initialOffset()
    assert start == {topic: {"0": 0}}
    pieces: list[Any] = []
    while start[topic]["0"] < total:
        end = reader.latestOffset(start, ReadMaxRows(5000))
        assert end[topic]["0"] - start[topic]["0"] <= 5000
        pieces.extend(reader.partitions(start, end))
        start = end
    assert start == {topic: {"0": total}}
    assert isinstance(pieces[0], ColdPiece) and isinstance(pieces[-1], HotPiece), pieces
    assert {type(p) for p in pieces if p.end <= tiered_end} == {ColdPiece}
    assert pieces[0].start == 0
    for before, after in itertools.pairwise(pieces):
        assert before.end == after.start, (before, after)

    df = env.stream(options)
    query = df.writeStream.format("memory").queryName("bootstrap").trigger(availableNow=True)
    running = query.start()
    running.awaitTermination(300)
    assert running.exception() is None, running.exception()
    rows = env.spark.sql("SELECT partition, offset, key, value FROM bootstrap").collect()
    got = sorted((r[0], r[1], bytes(r[2]), bytes(r[3])) for r in rows)
    assert got == _consume(env.node, topic, 1, total)
    assert len(_input_rows(running)) >= 4


def _parquet_run(env: Env, options: dict[str, str], out: Path, checkpoint: Path) -> list[Row]:
    """One available-now run into a Parquet sink; returns everything the sink holds."""
    query = (
        env.stream(options)
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    if not list(out.glob("*.parquet")):
        return []
    return _sink_rows(out)


def test_latest_by_default_and_new_partitions_from_earliest(env: Env) -> None:
    create_topic(env.node, "grow-a", 1)
    _produce(env.node, "grow-a", 0, 100, 1)
    options = {
        "kafka.bootstrap.servers": env.node.bootstrap,
        "subscribePattern": "grow-.*",
    }
    out, checkpoint = env.base / "grow-out", env.base / "grow-checkpoint"
    assert _parquet_run(env, options, out, checkpoint) == []  # starts at latest
    _produce(env.node, "grow-a", 100, 10, 1)
    create_topic(env.node, "grow-b", 2)
    _produce(env.node, "grow-b", 0, 30, 2)
    got = _parquet_run(env, options, out, checkpoint)
    # grow-a from where the first run stopped; grow-b, new, from its earliest offset.
    want = [b"k%d" % i for i in itertools.chain(range(100, 110), range(30))]
    assert sorted(k or b"" for _, _, k, _ in got) == sorted(want)
    last = max(int(f.name) for f in (checkpoint / "offsets").iterdir() if f.name.isdigit())
    offsets = json.loads((checkpoint / "offsets" / str(last)).read_text().splitlines()[-1])
    assert offsets == {"grow-a": {"0": 110}, "grow-b": {"0": 15, "1": 15}}


def test_min_offsets_holds_the_trigger_until_the_delay(env: Env) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from sparklog.connector.stream import SparklogStreamReader

    topic = "stream-min"
    create_topic(env.node, topic, 1)
    _produce(env.node, topic, 0, 50, 1)
    held = SparklogStreamReader(
        parse_options(
            env.options(topic, startingOffsets="earliest", minOffsetsPerTrigger="100"),
            streaming=True,
        )
    )
    start = held.initialOffset()
    assert held.latestOffset(start, ReadAllAvailable()) == start
    _produce(env.node, topic, 50, 50, 1)
    assert held.latestOffset(start, ReadAllAvailable()) == {topic: {"0": 100}}
    delayed = SparklogStreamReader(
        parse_options(
            env.options(
                topic,
                startingOffsets="earliest",
                minOffsetsPerTrigger="1000",
                maxTriggerDelay="200ms",
            ),
            streaming=True,
        )
    )
    start = delayed.initialOffset()
    assert delayed.latestOffset(start, ReadAllAvailable()) == start
    time.sleep(0.3)
    assert delayed.latestOffset(start, ReadAllAvailable()) == {topic: {"0": 100}}
    # Available-now ignores the hold: it must not end the run with data left behind.
    now = SparklogStreamReader(held.options)
    now.prepareForTriggerAvailableNow()
    assert now.latestOffset({topic: {"0": 0}}, ReadAllAvailable()) == {topic: {"0": 100}}


def test_data_loss_fails_or_skips(env: Env) -> None:
    from confluent_kafka import TopicPartition as TP

    from sparklog.connector.stream import SparklogStreamReader

    topic = "stream-loss"
    create_topic(env.node, topic, 1)
    _produce(env.node, topic, 0, 100, 1)
    admin = admin_for(env.node)  # must outlive its futures
    futures = admin.delete_records([TP(topic, 0, 40)])
    futures[TP(topic, 0, 40)].result(timeout=30)
    start = json.dumps({topic: {"0": 10}})
    strict = SparklogStreamReader(
        parse_options(env.options(topic, startingOffsets=start), streaming=True)
    )
    with pytest.raises(DataLossError, match=r"offsets \[10, 40\) of stream-loss-0"):
        strict.initialOffset()
    with pytest.raises(DataLossError, match=r"offsets \[10, 40\) of stream-loss-0"):
        strict.partitions({topic: {"0": 10}}, {topic: {"0": 100}})
    lenient = SparklogStreamReader(
        parse_options(
            env.options(topic, startingOffsets=start, failOnDataLoss="false"), streaming=True
        )
    )
    assert lenient.initialOffset() == {topic: {"0": 40}}
    pieces = lenient.partitions({topic: {"0": 10}}, {topic: {"0": 100}})
    assert [(p.start, p.end) for p in pieces if isinstance(p, HotPiece)] == [(40, 100)]
    assert len(pieces) == 1
