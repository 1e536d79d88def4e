"""The hot path over gRPC, end to end through Spark: the rows equal the Kafka-Fetch path's,
row for row, and a Kafka consumer's.

One node (tiering off) and one SparkSession (local[2]) per module. A two-partition topic gets
records from confluent-kafka in batches of mixed codecs, with null keys/values and headers;
``maxRecordsPerPartition`` cuts the pieces inside batches.
"""

from __future__ import annotations

import calendar
import dataclasses
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparklog.connector.hot import read_hot
from sparklog.connector.options import parse_options
from sparklog.connector.planning import HotPiece, plan
from tests.integration.ck_helpers import create_topic, make_producer
from tests.integration.node_harness import Node
from tests.integration.tiering_support import Rec, make_records, now_ms

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java on PATH"),
]

TOPIC = "hot-grpc"
PER_PARTITION = 8_000
Row = tuple[int, int, Rec]


class Env:
    def __init__(self, node: Node, spark: Any) -> None:
        self.node, self.spark = node, spark

    def options(self, **extra: str) -> dict[str, str]:
        return {
            "kafka.bootstrap.servers": self.node.bootstrap,
            "subscribe": TOPIC,
            "sparklog.read.from": "brokers",
            "includeHeaders": "true",
            "maxRecordsPerPartition": "2500",
            **extra,
        }

    def read(self, **extra: str) -> Any:
        reader = self.spark.read.format("sparklog")
        for key, value in self.options(**extra).items():
            reader = reader.option(key, value)
        return reader.load()


def _rec(key: Any, value: Any, headers: Any, stamp: Any) -> Rec:
    ts_ms = calendar.timegm(stamp.utctimetuple()) * 1000 + stamp.microsecond // 1000
    return Rec(
        None if key is None else bytes(key),
        None if value is None else bytes(value),
        tuple((h["key"], None if h["value"] is None else bytes(h["value"])) for h in headers or ()),
        ts_ms,
    )


def _spark_rows(df: Any) -> list[Row]:
    return [
        (r["partition"], r["offset"], _rec(r["key"], r["value"], r["headers"], r["timestamp"]))
        for r in df.orderBy("partition", "offset").collect()
    ]


def _arrow_rows(batches: list[pa.RecordBatch]) -> list[Row]:
    rows = pa.Table.from_batches(batches).to_pylist()
    return [
        (r["partition"], r["offset"], _rec(r["key"], r["value"], r["headers"], r["timestamp"]))
        for r in rows
    ]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    from pyspark.sql import SparkSession

    from sparklog.connector import SparklogDataSource

    base = tmp_path_factory.mktemp("hot-grpc")
    node = Node(base / "node")
    node.start()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    repo = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("sparklog-hot-grpc")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    try:
        spark.dataSource.register(SparklogDataSource)
        create_topic(node, TOPIC, 2)
        records = make_records(2 * PER_PARTITION, now_ms() - 3_600_000, seed=11)
        for index, codec in enumerate(("none", "zstd", "snappy", "gzip")):
            producer = make_producer(
                node, **{"compression.codec": codec, "batch.num.messages": 700, "linger.ms": 20}
            )
            quarter = len(records) // 4
            for i, r in enumerate(records[index * quarter : (index + 1) * quarter]):
                producer.produce(
                    TOPIC,
                    key=r.key,
                    value=r.value,
                    headers=list(r.headers),
                    timestamp=r.timestamp,
                    partition=i % 2,
                )
            producer.flush(30)
        yield Env(node, spark)
    finally:
        spark.stop()
        node.close()


def _kafka_path_rows(env: Env) -> list[Row]:
    pieces = plan(parse_options(env.options()))
    assert len(pieces) >= 8 and all(isinstance(p, HotPiece) for p in pieces), pieces
    rows: list[Row] = []
    for piece in pieces:
        assert isinstance(piece, HotPiece)
        rows.extend(_arrow_rows(list(read_hot(piece, "kafka"))))
    return sorted(rows, key=lambda r: (r[0], r[1]))


def test_grpc_path_equals_kafka_fetch_path_row_for_row(env: Env) -> None:
    from confluent_kafka import TopicPartition

    from tests.integration.ck_helpers import make_consumer

    got = _spark_rows(env.read())
    assert len(got) == 2 * PER_PARTITION
    assert got == _kafka_path_rows(env)
    if "hot_protocol" in {f.name for f in dataclasses.fields(HotPiece)}:
        assert _spark_rows(env.read(**{"sparklog.hot.protocol": "kafka"})) == got
    consumer = make_consumer(env.node)
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in (0, 1)])
        seen: list[Row] = []
        while len(seen) < len(got):
            for m in consumer.consume(num_messages=10_000, timeout=1.0):
                assert m.error() is None, m.error()
                headers = tuple((k, None if v is None else bytes(v)) for k, v in m.headers() or ())
                rec = Rec(m.key(), m.value(), headers, m.timestamp()[1])
                seen.append((m.partition(), m.offset(), rec))
    finally:
        consumer.close()
    assert sorted(seen, key=lambda r: (r[0], r[1])) == got


def test_counts_and_ranges_over_grpc(env: Env) -> None:
    df = env.read(startingOffsets='{"hot-grpc": {"0": 1234, "1": 0}}', endingOffsets="latest")
    assert df.count() == 2 * PER_PARTITION - 1234
    assert df.where("partition = 0").agg({"offset": "min"}).collect()[0][0] == 1234
