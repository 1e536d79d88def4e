"""read_committed and read_uncommitted batch reads of a topic with committed and aborted
transactions, some segments tiered and some hot, against what confluent-kafka reads.

A confluent-kafka transactional producer writes TRANSACTIONS transactions of PER_TXN records
(every third one aborted; flushed before the abort so aborted data reaches the log) and a plain
producer writes records in between, so both tiers hold data, aborted data and COMMIT/ABORT
markers. Spark's rows must equal, record for record, what a confluent-kafka consumer with the
same isolation level reads from offset 0: over both paths, brokers only, and (node stopped) the
store only for the tiered range, where the cold reader drops aborted rows with the Parquet
``aborted`` column. The read_committed reference is the read_uncommitted consumer's records
without the aborted ones; that a read_committed consumer reads exactly that is its own test.
Skips with a reason while the broker cannot run transactions.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from tests.integration.ck_helpers import (
    create_topic,
    end_transaction,
    make_consumer,
    make_producer,
    transactional_producer,
)
from tests.integration.node_harness import Node
from tests.integration.tiering_support import StoreView, topic_configs
from tests.spark.support import (
    SPARK_MARKS,
    batch_reader,
    optional_bytes,
    running_node,
    spark_session,
    tiering_store,
    timestamp_ms,
    wait_tiering_at_rest,
)

pytestmark = SPARK_MARKS

TOPIC = "spark-txn"
TRANSACTIONS = 30
PER_TXN = 450
PLAIN_BETWEEN = 50
VALUE_BYTES = 260

Row = tuple[int, bytes | None, bytes | None, int]  # offset, key, value, timestamp ms


class Env:
    def __init__(self, node: Node, store: StoreView, spark: Any) -> None:
        self.node, self.store, self.spark = node, store, spark
        self.reference: dict[str, list[Row]] = {}
        self.consumed_committed: list[Row] = []
        self.tiered_end = 0

    def read(self, isolation: str, **options: str) -> list[Row]:
        defaults = {
            "kafka.bootstrap.servers": self.node.bootstrap,
            "subscribe": TOPIC,
            "sparklog.store.url": self.store.url,
            "kafka.isolation.level": isolation,
        }
        df = batch_reader(self.spark, {**defaults, **options}).load()
        return [
            (
                row["offset"],
                optional_bytes(row["key"]),
                optional_bytes(row["value"]),
                timestamp_ms(row["timestamp"]),
            )
            for row in df.orderBy("offset").collect()
        ]


def _produce(node: Node) -> tuple[int, int]:
    """Writes the transactions; returns (committed data records, aborted data records)."""
    txn = transactional_producer(node, "spark-txn", 60_000)
    plain = make_producer(node)
    committed = aborted = 0
    for t in range(TRANSACTIONS):
        abort = t % 3 == 2
        tag = b"A" if abort else b"C"
        txn.begin_transaction()
        for i in range(PER_TXN):
            value = tag + b"%03d-%04d-" % (t, i) + os.urandom(VALUE_BYTES)
            txn.produce(TOPIC, key=b"t%03d-%04d" % (t, i), value=value, partition=0)
        end_transaction(txn, abort)
        if abort:
            aborted += PER_TXN
        else:
            committed += PER_TXN
        for i in range(PLAIN_BETWEEN):
            plain.produce(TOPIC, key=None, value=b"P%03d-%04d" % (t, i), partition=0)
        assert plain.flush(30) == 0
        committed += PLAIN_BETWEEN
    return committed, aborted


def _consume(node: Node, isolation: str, at_least: int) -> list[Row]:
    """Everything a confluent-kafka consumer with ``isolation`` reads from offset 0 (it stops
    after ``at_least`` records once nothing more arrives)."""
    consumer = make_consumer(node, **{"isolation.level": isolation, "fetch.max.bytes": 8_388_608})
    rows: list[Row] = []
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            batch = consumer.consume(num_messages=10_000, timeout=1.0)
            for msg in batch:
                if msg.error() is not None:
                    raise AssertionError(f"confluent consumer error: {msg.error()}")
                rows.append((msg.offset(), msg.key(), msg.value(), msg.timestamp()[1]))
            if not batch and len(rows) >= at_least:
                break
        assert len(rows) >= at_least, f"{isolation}: {len(rows)} of {at_least} records"
    finally:
        consumer.close()
    return rows


def _is_aborted(row: Row) -> bool:
    return row[2] is not None and row[2].startswith(b"A")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("spark-txn")
    store = tiering_store(base)
    with running_node(base, store) as node:
        create_topic(node, TOPIC, 1, topic_configs())
        committed, aborted = _produce(node)
        wait_tiering_at_rest(node, store, TOPIC)
        with spark_session("sparklog-read-committed") as spark:
            result = Env(node, store, spark)
            uncommitted = _consume(node, "read_uncommitted", committed + aborted)
            assert len(uncommitted) == committed + aborted
            # What a read_committed consumer must read: the same minus the aborted records.
            result.reference = {
                "read_uncommitted": uncommitted,
                "read_committed": [row for row in uncommitted if not _is_aborted(row)],
            }
            result.consumed_committed = _consume(node, "read_committed", committed)
            result.tiered_end = store.finished(TOPIC)[-1]["end_offset"] + 1
            yield result


def test_the_log_holds_aborted_records_in_both_tiers(env: Env) -> None:
    uncommitted = env.reference["read_uncommitted"]
    aborted = [row[0] for row in uncommitted if _is_aborted(row)]
    assert len(aborted) == TRANSACTIONS // 3 * PER_TXN
    assert any(o < env.tiered_end for o in aborted) and any(o >= env.tiered_end for o in aborted)
    assert len(env.reference["read_committed"]) == len(uncommitted) - len(aborted)


def test_confluent_read_committed_skips_aborted_records(env: Env) -> None:
    """The Spark tests compare with this expectation; when it passes, Spark's rows equal what
    a confluent-kafka read_committed consumer reads."""
    assert env.consumed_committed == env.reference["read_committed"]


@pytest.mark.parametrize(
    ("isolation", "read_from"),
    [
        ("read_committed", "both"),
        ("read_uncommitted", "both"),
        # Brokers only: the tiered offsets come through the broker's remote fetch.
        ("read_committed", "brokers"),
        ("read_uncommitted", "brokers"),
    ],
)
def test_spark_equals_consumer(env: Env, isolation: str, read_from: str) -> None:
    got = env.read(isolation, **{"sparklog.read.from": read_from})
    want = env.reference[isolation]
    assert len(got) == len(want), (isolation, read_from, len(got), len(want))
    assert got == want


def test_store_only_with_node_stopped(env: Env) -> None:
    """Runs last in the module: it stops the node."""
    env.node.stop()
    for isolation in ("read_committed", "read_uncommitted"):
        got = env.read(isolation, **{"sparklog.read.from": "store"})
        want = [row for row in env.reference[isolation] if row[0] < env.tiered_end]
        assert got == want, isolation
