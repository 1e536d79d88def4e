"""The native batch plan (``sparklog.connector.read``) against ``format("sparklog")`` and
confluent-kafka, on a topic with tiered and hot segments holding committed and aborted
transactions (issue 15).

Partition 0 gets transactions (every third aborted, flushed before the abort so aborted data
reaches the log) with plain records carrying headers in between, enough for two tiered segments
and a hot tail; partition 1 gets a few plain records (hot only). Row for row (partition, offset,
key, value, headers, timestamp, timestampType) the native plan equals the data source and the
consumer: both isolation levels, includeHeaders on and off, JSON offsets that cross the tier
boundary, and (last, the node stopped) the store only. Also: ``count()`` reads no column of
filter-free objects, filters reach the Parquet scans, and a hand-written store's log start
offset (in the middle of a segment) clips the read.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from sparklog.connector import read as native_read
from sparklog.connector.stream import DEFAULT_BYTES_PER_OFFSET
from tests.integration.ck_helpers import (
    CLIENT_TIMEOUT_S,
    admin_for,
    create_topic,
    end_transaction,
    make_consumer,
    make_producer,
    transactional_producer,
)
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
    optional_bytes,
    running_node,
    spark_session,
    tiering_store,
    timestamp_ms,
    wait_tiering_at_rest,
)
from tests.unit.connector.store_builder import Row as StoreRow
from tests.unit.connector.store_builder import StoreBuilder

pytestmark = SPARK_MARKS

TOPIC = "spark-native"
TRANSACTIONS = 18
PER_TXN = 400
PLAIN_BETWEEN = 40
PARTITION1_RECORDS = 300

# partition, offset, key, value, headers, timestamp ms, timestampType
Row = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int, int]


def _headers(raw: Any) -> tuple[tuple[str, bytes | None], ...]:
    return tuple((h["key"], optional_bytes(h["value"])) for h in raw or ())


def spark_rows(df: Any) -> list[Row]:
    rows = df.orderBy("partition", "offset").collect()
    return [
        (
            r["partition"],
            r["offset"],
            optional_bytes(r["key"]),
            optional_bytes(r["value"]),
            _headers(r.asDict().get("headers")),
            timestamp_ms(r["timestamp"]),
            r["timestampType"],
        )
        for r in rows
    ]


class Env:
    def __init__(self, node: Node, store: StoreView, spark: Any) -> None:
        self.node, self.store, self.spark = node, store, spark
        self.reference: dict[str, list[Row]] = {}
        self.tiered_end = 0
        self.reference_end: dict[int, int] = {}

    def options(self, **options: str) -> dict[str, str]:
        return {
            "kafka.bootstrap.servers": self.node.bootstrap,
            "subscribe": TOPIC,
            "sparklog.store.url": self.store.url,
            **options,
        }

    def native(self, **options: str) -> Any:
        return native_read(self.spark).options(**self.options(**options)).load()

    def source(self, **options: str) -> Any:
        return batch_reader(self.spark, self.options(**options)).load()


def _produce(node: Node) -> None:
    txn = transactional_producer(node, "spark-native", 60_000)
    plain = make_producer(node)
    for t in range(TRANSACTIONS):
        abort = t % 3 == 2
        txn.begin_transaction()
        for i in range(PER_TXN):
            value = (b"A" if abort else b"C") + b"%03d-%04d-" % (t, i) + os.urandom(260)
            txn.produce(TOPIC, key=b"t%03d-%04d" % (t, i), value=value, partition=0)
        end_transaction(txn, abort)
        for i in range(PLAIN_BETWEEN):
            headers = [("h", b"%d" % i), ("n", None)] if i % 2 else None
            plain.produce(TOPIC, value=b"P%03d-%04d" % (t, i), partition=0, headers=headers)
    for i in range(PARTITION1_RECORDS):
        plain.produce(TOPIC, key=b"p1-%d" % i, value=b"v%d" % i, partition=1, headers=[("a", b"b")])
    assert plain.flush(30) == 0


def _consume(node: Node, expected: int) -> list[Row]:
    consumer = make_consumer(
        node, **{"fetch.max.bytes": 8_388_608, "isolation.level": "read_uncommitted"}
    )
    rows: list[Row] = []
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in (0, 1)])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(rows) < expected:
            for msg in consumer.consume(num_messages=10_000, timeout=1.0):
                assert msg.error() is None, msg.error()
                kind, stamp = msg.timestamp()
                headers = tuple((k, v) for k, v in msg.headers() or ())
                row = (msg.partition(), msg.offset(), msg.key(), msg.value(), headers, stamp)
                rows.append((*row, kind - 1))
    finally:
        consumer.close()
    assert len(rows) == expected
    return sorted(rows, key=lambda r: (r[0], r[1]))


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("spark-native")
    store = tiering_store(base)
    with running_node(base, store) as node:
        create_topic(node, TOPIC, 2, topic_configs())
        _produce(node)
        wait_tiering_at_rest(node, store, TOPIC)
        with spark_session("sparklog-native") as spark:
            result = Env(node, store, spark)
            total = TRANSACTIONS * (PER_TXN + PLAIN_BETWEEN) + PARTITION1_RECORDS
            uncommitted = _consume(node, total)
            result.reference = {
                "read_uncommitted": uncommitted,
                "read_committed": [r for r in uncommitted if not (r[3] or b"").startswith(b"A")],
            }
            result.tiered_end = store.finished(TOPIC)[-1]["end_offset"] + 1
            for p in (0, 1):
                result.reference_end[p] = max(r[1] for r in uncommitted if r[0] == p) + 1
            yield result


def _no_headers(rows: list[Row]) -> list[Row]:
    return [(p, o, k, v, (), ts, tt) for p, o, k, v, _, ts, tt in rows]


def test_the_manifest_counts_what_the_native_plan_needs(env: Env) -> None:
    segments = env.store.finished(TOPIC)
    assert all("control_records" in s and "aborted_records" in s for s in segments)
    assert sum(s["aborted_records"] for s in segments) > 0
    assert sum(s["control_records"] for s in segments) > 0


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
@pytest.mark.parametrize("headers", ["true", "false"])
def test_native_equals_source_and_consumer(env: Env, isolation: str, headers: str) -> None:
    options = {"kafka.isolation.level": isolation, "includeHeaders": headers}
    native = env.native(**options)
    assert native.schema == env.source(**options).schema
    want = env.reference[isolation]
    if headers == "false":
        want = _no_headers(want)
    got = spark_rows(native)
    assert len(got) == len(want)
    assert got == want
    assert spark_rows(env.source(**options)) == want


def test_hot_tail_read_by_tasks_when_the_driver_declines(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the driver's limit (here: any hot tail) the data source reads the hot pieces in
    tasks; the rows are the same."""
    from sparklog.connector import hot_tail

    monkeypatch.setattr(hot_tail, "MAX_OFFSETS", 0)
    options = {"kafka.isolation.level": "read_committed", "includeHeaders": "true"}
    native = env.native(**options)
    assert "/sparklog-hot-tail-" not in _plan(native)
    assert spark_rows(native) == env.reference["read_committed"]


def test_brokers_only_is_the_hot_tail_alone(env: Env) -> None:
    """``sparklog.read.from=brokers``: no tier object is planned; every piece is hot, read on
    the driver into tail files that the tier's scan code plans without a store URL."""
    options = {
        "sparklog.read.from": "brokers",
        "kafka.isolation.level": "read_committed",
        "includeHeaders": "true",
    }
    native = env.native(**options)
    # The scan may name the tail files through links (connector/local_layout.py).
    files = [os.path.realpath(url.removeprefix("file://")) for url in native.inputFiles()]
    assert files and all("/sparklog-hot-tail-" in f and "/topics/" not in f for f in files), files
    assert spark_rows(native) == env.reference["read_committed"]


def test_json_offsets_across_the_tier_boundary(env: Env) -> None:
    start, end = env.tiered_end - 700, env.tiered_end + 300
    options = {
        "startingOffsets": json.dumps({TOPIC: {"0": start, "1": 10}}),
        "endingOffsets": json.dumps({TOPIC: {"0": end, "1": -1}}),
        "kafka.isolation.level": "read_committed",
        "includeHeaders": "true",
    }
    want = [
        r
        for r in env.reference["read_committed"]
        if (r[0] == 0 and start <= r[1] < end) or (r[0] == 1 and r[1] >= 10)
    ]
    assert spark_rows(env.native(**options)) == want
    assert spark_rows(env.source(**options)) == want


def _plan(df: Any) -> str:
    df.sparkSession.conf.set("spark.sql.maxMetadataStringLength", "100000")
    return str(df._jdf.queryExecution().executedPlan().toString())


def test_count_reads_no_value_and_filters_reach_the_files(env: Env) -> None:
    df = env.native()
    scans = [line for line in _plan(df.groupBy().count()).splitlines() if "FileScan" in line]
    assert scans
    # Transactional objects need offset and is_control for their filter; no scan reads value.
    assert all("value" not in line.split("ReadSchema")[1] for line in scans), scans
    assert df.count() == len(env.reference["read_uncommitted"])
    cut = env.tiered_end - 100
    pruned = df.where(f"partition = 0 AND offset >= {cut}")
    plan = _plan(pruned)
    assert f"GreaterThanOrEqual(offset,{cut})" in plan, plan
    assert "FileScan parquet" in _plan(df.where("partition = 0"))
    # Partition 1 is hot only: its rows come from the hot tail's Parquet (materialised on the
    # driver, local master), the one file read; no tier object is.
    assert _scan_files(df.where("partition = 1")) == [1]
    want = [r[1] for r in env.reference["read_uncommitted"] if r[0] == 0 and r[1] >= cut]
    assert [r["offset"] for r in pruned.orderBy("offset").collect()] == want


PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def test_pushdown_plans_only_the_filtered_ranges(env: Env) -> None:
    cut = 100
    want = [r[1] for r in env.reference["read_uncommitted"] if r[0] == 1 and r[1] >= cut]

    def query() -> Any:
        return env.source().where(f"partition = 1 AND offset >= {cut}")

    # The default (pushdown off): the plain reader, every range planned.
    assert env.spark.conf.get(PUSHDOWN) == "false"
    assert [r["offset"] for r in query().orderBy("offset").collect()] == want
    everything = query().rdd.getNumPartitions()
    assert everything >= 3  # partition 0's tiered and hot pieces, partition 1's piece
    env.spark.conf.set(PUSHDOWN, "true")
    try:
        assert query().rdd.getNumPartitions() == 1
        assert [r["offset"] for r in query().orderBy("offset").collect()] == want
        # A filter the reader cannot use changes nothing.
        assert env.source().where("topic = 'nope'").count() == 0
        # A lower timestamp bound drops tiered objects whose records all end before it; the
        # rows stay those Spark's filter keeps.
        rows = env.reference["read_uncommitted"]
        tiered_max = max(s["max_timestamp"] for s in env.store.finished(TOPIC))
        # No tiered object ends before the earliest end of them all, so that bound prunes none
        # (the first hot record's timestamp did not do: older tiered objects may end before it).
        earliest_end = min(s["max_timestamp"] for s in env.store.finished(TOPIC))
        for since, pruned in ((tiered_max + 1, True), (earliest_end, False)):
            late = env.source().where(f"timestamp >= timestamp_millis({since})")
            assert (late.rdd.getNumPartitions() < everything) == pruned
            got = sorted((r["partition"], r["offset"]) for r in late.collect())
            assert got == [(r[0], r[1]) for r in rows if r[5] >= since]
    finally:
        env.spark.conf.unset(PUSHDOWN)


def test_log_start_offset_clips_a_store_only_read(env: Env, tmp_path: Path) -> None:
    builder = StoreBuilder(tmp_path / "store")
    segments = [
        [StoreRow(o, 1_000 + o, control=o == 9, aborted=o in (3, 4)) for o in range(0, 10)],
        [StoreRow(o, 1_000 + o) for o in range(10, 20)],
    ]
    builder.add_partition("clip", 0, segments, log_start_offset=5)
    for isolation, want in (
        ("read_uncommitted", [o for o in range(5, 20) if o != 9]),
        ("read_committed", [o for o in range(5, 20) if o != 9]),
    ):
        options = {
            "subscribe": "clip",
            "sparklog.store.url": builder.url,
            "sparklog.read.from": "store",
            "kafka.isolation.level": isolation,
        }
        df = native_read(env.spark).options(**options).load()
        assert [r["offset"] for r in df.orderBy("offset").collect()] == want
    # The second object is whole and clean (the manifest counts say so): no filter, and
    # count() reads none of its columns; the first (cut at the log start) is filtered.
    whole = native_read(env.spark).options(**options).load()
    scans = [line for line in _plan(whole.groupBy().count()).splitlines() if "FileScan" in line]
    assert len(scans) == 2 and any("ReadSchema: struct<>" in line for line in scans), scans
    committed = native_read(env.spark).options(
        subscribe="clip",
        startingOffsets=json.dumps({"clip": {"0": 5}}),
        **{"sparklog.store.url": builder.url, "sparklog.read.from": "store"},
    )
    assert committed.load().count() == 14


def _scan_files(df: Any) -> list[int]:
    """Run ``df`` and return the files each of its Parquet scans read (Spark's ``numFiles``
    metric, after pruning), with adaptive execution off so the plan run is the one asked."""
    spark = df.sparkSession
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        df.collect()
        leaves = df._jdf.queryExecution().executedPlan().collectLeaves()
        found = []
        for index in range(leaves.size()):
            metrics = leaves.apply(index).metrics()
            if metrics.contains("numFiles"):
                found.append(int(metrics.apply("numFiles").value()))
        return found
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", "true")


def test_one_scan_names_the_partitions_of_clean_objects(env: Env, tmp_path: Path) -> None:
    """Clean objects of several partitions are one Parquet scan whose ``partition`` comes from
    each file's size; a filter on it still prunes files, and rows carry the right partition.
    Objects whose size another partition shares are told apart by file name in the same scan
    (pruning too; tests/unit/connector/test_partition_case.py has the fallbacks)."""
    builder = StoreBuilder(tmp_path / "store")
    want = []
    for partition in range(3):
        # Different lengths per partition, so sizes differ across partitions.
        segments = [
            [StoreRow(o, 1_000 + o) for o in range(s, s + 10 + partition)] for s in range(0, 40, 20)
        ]
        builder.add_partition("shared", partition, segments)
        want += [(partition, r.offset) for rows in segments for r in rows]
    options = {"subscribe": "shared", "sparklog.store.url": builder.url}
    options["sparklog.read.from"] = "store"
    df = native_read(env.spark).options(**options).load()
    assert [(r["partition"], r["offset"]) for r in df.orderBy("partition", "offset").collect()] == (
        sorted(want)
    )
    scans = [line for line in _plan(df.groupBy().count()).splitlines() if "FileScan" in line]
    assert len(scans) == 1, scans
    assert _scan_files(df.where("partition = 1")) == [2]
    assert _scan_files(df) == [6]
    twins = StoreBuilder(tmp_path / "twins")
    for partition in range(2):
        twins.add_partition("twins", partition, [[StoreRow(o, 1_000 + o) for o in range(10)]])
    options = {**options, "subscribe": "twins", "sparklog.store.url": twins.url}
    df = native_read(env.spark).options(**options).load()
    assert [(r["partition"], r["offset"]) for r in df.orderBy("partition", "offset").collect()] == (
        [(p, o) for p in range(2) for o in range(10)]
    )
    assert len([line for line in _plan(df).splitlines() if "FileScan" in line]) == 1
    assert _scan_files(df.where("partition = 1")) == [1]


def _group_offsets(env: Env, group: str) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    admin = admin_for(env.node)
    futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    result = futures[group].result(timeout=30)
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def _offsets(text: str | None) -> dict[int, int]:
    doc = json.loads(text or "null") or {TOPIC: {}}
    return {int(p): o for p, o in doc[TOPIC].items()}


def test_byte_limited_stream_commits_progress_to_a_group(env: Env, tmp_path: Path) -> None:
    group, max_bytes = "spark-native-progress", 1 << 20
    options = env.options(
        startingOffsets="earliest",
        maxBytesPerTrigger=str(max_bytes),
        **{"sparklog.commitOffsetsToGroup": group},
    )
    segments = env.store.finished(TOPIC)[-4:]
    per_offset = {
        0: sum(s["segment_bytes"] for s in segments)
        / sum(s["end_offset"] - s["base_offset"] + 1 for s in segments),
        1: DEFAULT_BYTES_PER_OFFSET,  # never tiered: the reader's assumption
    }

    seen: list[dict[int, int]] = []  # the group's offsets while each batch runs
    rows: list[int] = []

    def batch(df: Any, _batch_id: int) -> None:
        rows.append(df.count())
        seen.append(_group_offsets(env, group))

    def run() -> list[tuple[dict[int, int], dict[int, int]]]:
        reader = env.spark.readStream.format("sparklog").options(**options)
        query = (
            reader.load()
            .writeStream.option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .foreachBatch(batch)
            .start()
        )
        query.awaitTermination(240)
        ranges = []
        for progress in query.recentProgress:
            source = progress["sources"][0]
            # The first batch has no start ("null"): it starts at earliest, offset 0 here.
            start, end = (_offsets(source[k]) for k in ("startOffset", "endOffset"))
            if end and end != start:
                ranges.append((start, end))
        return ranges

    batches = run()
    assert len(batches) >= 3, batches
    for start, end in batches:
        size = sum((end[p] - start.get(p, 0)) * per_offset[p] for p in end)
        # At least one offset of each lagging partition, else within the budget.
        assert size <= max_bytes + sum(per_offset.values()), (start, end)
    final = batches[-1][1]
    assert final == {0: env.reference_end[0], 1: env.reference_end[1]}
    assert sum(rows) == len(env.reference["read_uncommitted"])
    # While a batch runs, the group holds the previous batch's end; after the run, the last.
    assert seen == [{0: 0, 1: 0}] + [end for _, end in batches[:-1]], seen
    assert _group_offsets(env, group) == final


def test_records_below_the_log_start_offset_never_appear(env: Env) -> None:
    """DeleteRecords inside the tiered range: both reads start at the new log start offset,
    which the brokers report; the rest equals what a consumer reads from there."""
    topic, count = "spark-native-deleted", 16_000
    create_topic(env.node, topic, 1, topic_configs())
    produce(env.node, topic, make_records(count, now_ms() - 3_600_000, seed=5))
    wait_tiering_at_rest(env.node, env.store, topic)
    first_end = env.store.finished(topic)[0]["end_offset"]
    deleted_below = first_end // 2  # inside the first tiered object
    admin = admin_for(env.node)  # must outlive its futures
    futures = admin.delete_records(
        [TopicPartition(topic, 0, deleted_below)], operation_timeout=CLIENT_TIMEOUT_S
    )
    for future in futures.values():
        future.result(timeout=CLIENT_TIMEOUT_S)
    want = consume_confluent(env.node, topic, deleted_below, count - deleted_below)
    options = {"subscribe": topic, "includeHeaders": "true"}
    for df in (env.native(**options), env.source(**options)):
        got = [(o, r) for (_, o, k, v, h, ts, _) in spark_rows(df) for r in [Rec(k, v, h, ts)]]
        assert got[0][0] == deleted_below
        assert got == want


def test_store_only_with_node_stopped(env: Env) -> None:
    """Runs last in the module: it stops the node."""
    env.node.stop()
    for isolation in ("read_committed", "read_uncommitted"):
        options = {"sparklog.read.from": "store", "kafka.isolation.level": isolation}
        want = [r for r in env.reference[isolation] if r[0] == 0 and r[1] < env.tiered_end]
        options["includeHeaders"] = "true"
        # No hot part here: the schema is Spark's all the same.
        assert env.native(**options).schema == env.source(**options).schema
        assert spark_rows(env.native(**options)) == want, isolation
        assert spark_rows(env.source(**options)) == want, isolation
