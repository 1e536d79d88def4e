"""The effect of the source options that need Spark, against one node and one SparkSession.

A topic with 1 MiB segments and ``local.retention.bytes=1`` gets records whose timestamps rise
by 1 ms every 10 records; once some segments are tiered, reads with timestamps (both paths,
brokers only, store only), minPartitions, maxRecordsPerPartition, includeHeaders and the
isolation level are compared with what confluent-kafka reads. A second, untiered topic has its
first records deleted (DeleteRecords) for failOnDataLoss both ways. Every option's parse error
is covered without Spark in tests/unit/connector; a few are checked here as a user sees them.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from tests.integration.ck_helpers import CLIENT_TIMEOUT_S, admin_for, create_topic
from tests.integration.node_harness import Node
from tests.integration.tiering_support import (
    Rec,
    StoreView,
    consume_confluent,
    make_records,
    now_ms,
    produce,
    topic_configs,
)
from tests.spark.support import (
    SPARK_MARKS,
    batch_reader,
    running_node,
    spark_rows,
    spark_session,
    tiering_store,
    wait_tiering_at_rest,
)

pytestmark = SPARK_MARKS

RECORDS = 16_000
TOPIC = "spark-options"
LOSS_TOPIC = "spark-options-loss"
LOSS_RECORDS = 1_000
DELETED_BELOW = 300


class Env:
    def __init__(
        self,
        node: Node,
        store: StoreView,
        spark: Any,
        consumed: list[tuple[int, Rec]],
        tiered_end: int,
    ) -> None:
        self.node, self.store, self.spark = node, store, spark
        self.consumed = consumed  # what confluent-kafka reads from offset 0
        self.tiered_end = tiered_end  # offsets below it are in finished remote segments
        self.timestamps = [r.timestamp for _, r in consumed]

    def reader(self, topic: str = TOPIC, **options: str) -> Any:
        defaults = {
            "kafka.bootstrap.servers": self.node.bootstrap,
            "subscribe": topic,
            "sparklog.store.url": self.store.url,
        }
        return batch_reader(self.spark, {**defaults, **options})

    def read(self, topic: str = TOPIC, **options: str) -> Any:
        return self.reader(topic, **options).load()

    def first_at(self, timestamp_ms: int) -> int:
        """The first offset whose timestamp is at least ``timestamp_ms`` (they never fall)."""
        return bisect.bisect_left(self.timestamps, timestamp_ms)

    def expected(self, start: int, end: int) -> list[tuple[int, Rec]]:
        return [(o, Rec(r.key, r.value, (), r.timestamp)) for o, r in self.consumed[start:end]]


def _offsets(df: Any) -> list[int]:
    return [r["offset"] for r in df.select("offset").orderBy("offset").collect()]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("spark-options")
    store = tiering_store(base)
    with running_node(base, store) as node, spark_session("sparklog-options") as spark:
        create_topic(node, TOPIC, 1, topic_configs())
        produce(node, TOPIC, make_records(RECORDS, now_ms() - 3_600_000, seed=11))
        wait_tiering_at_rest(node, store, TOPIC)
        consumed = consume_confluent(node, TOPIC, 0, RECORDS)
        create_topic(node, LOSS_TOPIC, 1)
        produce(node, LOSS_TOPIC, make_records(LOSS_RECORDS, now_ms(), seed=12))
        admin = admin_for(node)  # must outlive its futures
        futures = admin.delete_records(
            [TopicPartition(LOSS_TOPIC, 0, DELETED_BELOW)], operation_timeout=CLIENT_TIMEOUT_S
        )
        for future in futures.values():
            future.result(timeout=CLIENT_TIMEOUT_S)
        tiered_end = store.finished(TOPIC)[-1]["end_offset"] + 1
        yield Env(node, store, spark, consumed, tiered_end)


def test_starting_and_ending_timestamp_across_the_tier_boundary(env: Env) -> None:
    # A start inside the tiered range and an end in the hot tail.
    start_ts = env.timestamps[env.tiered_end // 2] + 1
    end_ts = env.timestamps[(env.tiered_end + RECORDS) // 2]
    start, end = env.first_at(start_ts), env.first_at(end_ts)
    assert start < env.tiered_end < end
    for read_from in ("both", "brokers"):
        df = env.read(
            startingTimestamp=str(start_ts),
            endingTimestamp=str(end_ts),
            **{"sparklog.read.from": read_from},
        )
        assert spark_rows(df) == env.expected(start, end), read_from


def test_offsets_by_timestamp_per_partition(env: Env) -> None:
    start_ts = env.timestamps[123] + 1
    end_ts = env.timestamps[RECORDS - 77]
    df = env.read(
        startingOffsetsByTimestamp=json.dumps({TOPIC: {"0": start_ts}}),
        endingOffsetsByTimestamp=json.dumps({TOPIC: {"0": end_ts}}),
        # The timestamp options take precedence over these.
        startingOffsets="earliest",
        endingOffsets=json.dumps({TOPIC: {"0": 5}}),
    )
    assert _offsets(df) == list(range(env.first_at(start_ts), env.first_at(end_ts)))


def test_timestamps_from_the_store_alone(env: Env) -> None:
    start_ts = env.timestamps[1000] + 1
    end_ts = env.timestamps[env.tiered_end - 500]
    df = env.read(
        startingTimestamp=str(start_ts),
        endingTimestamp=str(end_ts),
        **{"sparklog.read.from": "store"},
    )
    assert spark_rows(df) == env.expected(env.first_at(start_ts), env.first_at(end_ts))
    # No tiered record is as late as the ending timestamp: the read ends with the tiered data.
    late = env.read(
        startingTimestamp=str(start_ts),
        endingTimestamp=str(now_ms() + 60_000),
        **{"sparklog.read.from": "store"},
    )
    assert _offsets(late) == list(range(env.first_at(start_ts), env.tiered_end))


def test_starting_timestamp_without_match(env: Env) -> None:
    future = str(now_ms() + 3_600_000)
    with pytest.raises(Exception, match="No offset matched from request of topic-partition"):
        env.read(startingTimestamp=future).collect()
    lenient = env.read(startingTimestamp=future, startingOffsetsByTimestampStrategy="latest")
    assert lenient.count() == 0
    # An ending timestamp without match means latest.
    assert env.read(endingTimestamp=future).count() == RECORDS


def test_min_partitions_and_max_records_per_partition(env: Env) -> None:
    plain = env.read(**{"sparklog.read.from": "brokers"})
    assert plain.rdd.getNumPartitions() == 1
    many = env.read(minPartitions="7", **{"sparklog.read.from": "brokers"})
    assert many.rdd.getNumPartitions() >= 7
    assert _offsets(many) == list(range(RECORDS))
    capped = env.read(maxRecordsPerPartition="3000")
    assert capped.rdd.getNumPartitions() >= math.ceil(RECORDS / 3000)
    assert _offsets(capped) == list(range(RECORDS))


def test_include_headers(env: Env) -> None:
    with_headers = env.read(includeHeaders="true", endingOffsets=json.dumps({TOPIC: {"0": 2500}}))
    assert with_headers.columns[-1] == "headers"
    assert spark_rows(with_headers) == env.consumed[:2500]
    assert any(not r.headers for _, r in env.consumed[:2500])  # some are null, and match
    without = env.read(includeHeaders="false")
    assert "headers" not in without.columns


def test_isolation_levels_agree_without_transactions(env: Env) -> None:
    committed = env.read(**{"kafka.isolation.level": "read_committed"})
    assert spark_rows(committed) == env.expected(0, RECORDS)


def test_fail_on_data_loss_after_delete_records(env: Env) -> None:
    starting = json.dumps({LOSS_TOPIC: {"0": 0}})
    with pytest.raises(Exception) as info:
        env.read(LOSS_TOPIC, startingOffsets=starting).collect()
    text = str(info.value)
    assert f"offsets [0, {DELETED_BELOW}) of {LOSS_TOPIC}-0 were requested" in text, text
    assert f"the earliest available offset is {DELETED_BELOW}" in text
    lenient = env.read(LOSS_TOPIC, startingOffsets=starting, failOnDataLoss="false")
    assert _offsets(lenient) == list(range(DELETED_BELOW, LOSS_RECORDS))
    # Starting at earliest is not data loss.
    assert env.read(LOSS_TOPIC).count() == LOSS_RECORDS - DELETED_BELOW


def test_accepted_options_that_change_nothing_here(env: Env) -> None:
    df = env.read(
        maxOffsetsPerTrigger="10",  # streaming only: ignored in batch with a warning
        minOffsetsPerTrigger="5",
        maxTriggerDelay="1m",
        groupIdPrefix="mine",
        **{"kafka.group.id": "spark-options", "kafka.client.id": "me"},
    )
    assert df.count() == RECORDS


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"kafka.auto.offset.reset": "earliest"}, "Kafka option 'auto.offset.reset' is not"),
        ({"kafka.enable.auto.commit": "true"}, "Kafka option 'enable.auto.commit' is not"),
        ({"startingTimestamp": "noon"}, "option 'startingTimestamp'"),
        ({"startingOffsetsByTimestampStrategy": "closest"}, "startingOffsetsByTimestampStrategy"),
        ({"minOffsetsPerTrigger": "9", "maxOffsetsPerTrigger": "3"}, "minOffsetPerTrigger(9)"),
        ({"failOnDataLoss": "perhaps"}, "option 'failOnDataLoss'"),
    ],
)
def test_errors_as_users_see_them(env: Env, options: dict[str, str], message: str) -> None:
    with pytest.raises(Exception, match=re.escape(message)):
        env.read(**options).collect()
