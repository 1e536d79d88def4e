"""Batch reads through the ``sparklog`` format against a real node with tiering to file://.

One node and one SparkSession (local[2]) per module. A topic with 1 MiB segments and
``local.retention.bytes=1`` gets 30,000 records with keys and headers; once some segments are
tiered, Spark's rows must equal, record for record, what confluent-kafka reads: over both paths,
brokers only, and (node stopped) the store only for the tiered range. Also: headers, JSON
offsets, splitting options and option errors.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from sparklog.connector.options import SourceOptions, parse_options
from sparklog.connector.planning import ColdPiece, HotPiece, plan
from tests.integration.ck_helpers import create_topic
from tests.integration.node_harness import Node
from tests.integration.tiering_support import (
    Rec,
    StoreView,
    check_records,
    consume_confluent,
    make_records,
    now_ms,
    produce,
    tiering_state,
    topic_configs,
    wait_until,
)
from tests.spark.support import (
    SPARK_MARKS,
    batch_reader,
    running_node,
    spark_rows,
    spark_session,
    tiering_store,
)

pytestmark = SPARK_MARKS

RECORDS = 30_000
TOPIC = "spark-batch"


class Env:
    def __init__(
        self, node: Node, store: StoreView, spark: Any, consumed: list[tuple[int, Rec]]
    ) -> None:
        self.node, self.store, self.spark = node, store, spark
        # What a confluent-kafka consumer reads from offset 0: the reference for every read.
        self.consumed = consumed

    def read(self, **options: str) -> Any:
        defaults = {
            "kafka.bootstrap.servers": self.node.bootstrap,
            "subscribe": TOPIC,
            "sparklog.store.url": self.store.url,
        }
        return batch_reader(self.spark, {**defaults, **options}).load()


def _without_headers(pairs: list[tuple[int, Rec]]) -> list[tuple[int, Rec]]:
    return [(o, Rec(r.key, r.value, (), r.timestamp)) for o, r in pairs]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("spark")
    store = tiering_store(base)
    with running_node(base, store) as node, spark_session("sparklog-tests") as spark:
        create_topic(node, TOPIC, 1, topic_configs())
        records = make_records(RECORDS, now_ms() - 3_600_000, seed=7)
        produce(node, TOPIC, records)
        wait_until(
            "two tiered segments",
            lambda: len(store.finished(TOPIC)) >= 2,
            60.0,
            lambda: tiering_state(node, store, TOPIC),
        )
        consumed = consume_confluent(node, TOPIC, 0, RECORDS)
        yield Env(node, store, spark, consumed)


def _options(env: Env) -> SourceOptions:
    return parse_options(
        {
            "kafka.bootstrap.servers": env.node.bootstrap,
            "subscribe": TOPIC,
            "sparklog.store.url": env.store.url,
        }
    )


def test_plan_has_cold_and_hot_pieces(env: Env) -> None:
    pieces = plan(_options(env))
    assert any(isinstance(p, ColdPiece) for p in pieces), pieces
    assert isinstance(pieces[-1], HotPiece), pieces
    assert pieces[0].start == 0 and pieces[-1].end == RECORDS
    for before, after in itertools.pairwise(pieces):
        assert before.end == after.start, (before, after)


def test_both_paths_with_headers_match_consumer(env: Env) -> None:
    df = env.read(includeHeaders="true")
    assert df.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    got = spark_rows(df)
    check_records("spark both", got, [r for _, r in env.consumed])
    assert got == env.consumed
    meta = df.groupBy("topic", "partition", "timestampType").count().collect()
    assert [(m["topic"], m["partition"], m["timestampType"], m["count"]) for m in meta] == [
        (TOPIC, 0, 0, RECORDS)
    ]


def test_brokers_only_without_headers(env: Env) -> None:
    df = env.read(**{"sparklog.read.from": "brokers"})
    assert "headers" not in df.columns
    assert spark_rows(df) == _without_headers(env.consumed)


def test_json_offsets_and_splitting(env: Env) -> None:
    tiered_end = env.store.finished(TOPIC)[0]["end_offset"] + 1
    start, end = tiered_end - 1234, tiered_end + 2345  # spans the first tier boundary
    df = env.read(
        startingOffsets=json.dumps({TOPIC: {"0": start}}),
        endingOffsets=json.dumps({TOPIC: {"0": end}}),
        maxRecordsPerPartition="1000",
        minPartitions="3",
    )
    assert df.rdd.getNumPartitions() >= 4
    assert spark_rows(df) == _without_headers(env.consumed[start:end])
    latest = env.read(endingOffsets=json.dumps({TOPIC: {"0": -1}}), startingOffsets="earliest")
    assert latest.count() == RECORDS


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": None}, "One of the following options must be specified"),
        ({"assign": '{"x":[0]}'}, "Only one of the following options"),
        ({"kafka.bootstrap.servers": None}, "kafka.bootstrap.servers"),
        ({"startingOffsets": "latest"}, "starting offset can't be latest"),
        ({"endingOffsets": "earliest"}, "ending offset can't be earliest"),
        ({"minPartitions": "0"}, "minPartitions"),
        ({"maxRecordsPerPartition": "x"}, "maxRecordsPerPartition"),
        ({"includeHeaders": "maybe"}, "includeHeaders"),
        ({"kafka.isolation.level": "dirty"}, "kafka.isolation.level"),
        ({"sparklog.read.from": "tape"}, "sparklog.read.from"),
        ({"kafka.auto.offset.reset": "earliest"}, "option 'auto.offset.reset' is not supported"),
        ({"startingOffsets": "{bad"}, "startingOffsets"),
    ],
)
def test_bad_options_name_the_option(
    env: Env, options: dict[str, str | None], message: str
) -> None:
    reader = env.spark.read.format("sparklog")
    merged: dict[str, str | None] = {
        "kafka.bootstrap.servers": env.node.bootstrap,
        "subscribe": TOPIC,
        **options,
    }
    for key, value in merged.items():
        if value is not None:
            reader = reader.option(key, value)
    with pytest.raises(Exception, match=re.escape(message)):
        reader.load().collect()


def test_store_only_with_node_stopped(env: Env) -> None:
    """Runs last in the module: it stops the node."""
    env.node.stop()
    finished = env.store.finished(TOPIC)
    tiered_end = finished[-1]["end_offset"] + 1
    df = env.read(**{"sparklog.read.from": "store", "includeHeaders": "true"})
    assert spark_rows(df) == env.consumed[:tiered_end]
