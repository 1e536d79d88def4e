"""The hot path over gRPC, end to end through Spark: the rows equal the Kafka-Fetch path's,
row for row, and a Kafka consumer's.

One node (tiering off) and one SparkSession (local[2]) per module. A two-partition topic gets
records from confluent-kafka in batches of mixed codecs, with null keys/values and headers;
``maxRecordsPerPartition`` cuts the pieces inside batches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from sparklog.connector.hot import read_hot
from sparklog.connector.options import parse_options
from sparklog.connector.planning import HotPiece, plan
from tests.integration.ck_helpers import create_topic, make_producer
from tests.integration.node_harness import Node
from tests.integration.tiering_support import Rec, make_records, now_ms
from tests.spark.support import SPARK_MARKS, batch_reader, running_node, spark_rec, spark_session

pytestmark = SPARK_MARKS

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
        return batch_reader(self.spark, self.options(**extra)).load()


def _spark_rows(df: Any) -> list[Row]:
    return [
        (r["partition"], r["offset"], spark_rec(r["key"], r["value"], r["headers"], r["timestamp"]))
        for r in df.orderBy("partition", "offset").collect()
    ]


def _arrow_rows(batches: list[pa.RecordBatch]) -> list[Row]:
    rows = pa.Table.from_batches(batches).to_pylist()
    return [
        (r["partition"], r["offset"], spark_rec(r["key"], r["value"], r["headers"], r["timestamp"]))
        for r in rows
    ]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("hot-grpc")
    with running_node(base) as node, spark_session("sparklog-hot-grpc") as spark:
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
