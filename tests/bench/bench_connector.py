"""Connector batch-scan throughput: cold path, hot path and ``spark.read.parquet``, same run.

Run: ``.venv/bin/python tests/bench/bench_connector.py [--records N] [--value-bytes B]
[--partitions P] [--reps R] [--codec none|lz4|zstd|snappy|gzip] [--scenarios a,b] [--keep]``. Not
collected by pytest (file name ``bench_*.py``); it asserts row counts, never timings, and prints
one line per scenario plus the ratios against the issues' targets (native >= 0.95x and mixed
>= 0.8x of ``spark.read.parquet``, hot >= 0.9x of the ceiling; older: cold >= 0.8x, hot >= 0.5x
of parquet).

Set-up: one node with tiering to ``file://``; N records of B random bytes (16-byte keys) are
produced by confluent-kafka to two topics of P partitions: ``cold`` (``remote.storage.enable``,
``local.retention.bytes=1``, segments of at most 8 MiB: every closed one is tiered) and ``hot``
(remote storage off). Spark runs local[2] in this process's venv.

Scenarios, each as ``count()``, as ``sum(length(value))`` and as a full-row scan into Spark's
``noop`` sink (``df.write.format("noop").mode("overwrite").save()``: every column of every row
materialised, nothing written), best of ``--reps`` (round-robin over the scenarios, after one
warm-up each), in rows/s, with the median and the range of the 1-minute load average:
  parquet   ``spark.read.parquet`` over the tiered Parquet objects of ``cold``
  ceiling   a trivial Python data source (:class:`CeilingSource`) yielding pre-built
            RecordBatches of the connector's 7-column schema, as many rows as ``cold`` holds, in
            ``--partitions`` tasks: what the Python Data Source path (IPC, JVM Arrow ->
            InternalRow) allows on this machine; no connector can beat it
  cold      format sparklog, ``sparklog.read.from=store`` (the same objects through the
            connector's cold reader)
  hot       format sparklog, ``sparklog.read.from=brokers`` on ``hot`` (gRPC read service)
  hot/kafka the same over Kafka Fetch, when the connector offers ``sparklog.hot.protocol``
  native    ``sparklog.connector.read`` (the native batch plan), ``sparklog.read.from=store``
            on ``cold``: Spark's Parquet scan over the same objects (target 0.95x of parquet)
  mixed     ``sparklog.connector.read`` over both tiers of ``cold`` (its closed segments are
            tiered, the active ones hot: about 90% / 10% at the defaults, the split is printed),
            against parquet's rate (target 0.8x); under the local master the hot tenth is read
            on the driver and scanned as Parquet (``connector/hot_tail.py``), cached per range,
            so repetitions of an unchanged topic reuse it
  mixed/1st the same with that cache emptied before every query: what a first read costs
Each line also gives the median CPU time of the whole process tree (this process, the JVM,
Spark's Python workers and the node) per million rows: on a shared machine, where other
work moves rows/s a lot, that is the steadier measure of what a scan costs. Ratios of cold
and hot are printed against parquet (the issue's targets) and against the
ceiling. Read ``count()`` with care: Spark's Parquet scan reads no column for it, while a
Python data source cannot prune columns (Spark's ``PythonScanBuilder`` offers no
``SupportsPushDownRequiredColumns``) and ships all seven through Arrow IPC, so the ceiling
itself sits far below parquet there; ``sum(length(value))`` makes both read one column, and
the noop write makes both produce every column of every row. Every query's figures and
ratios are printed; none is picked. Then
the decoder alone (``ArrowRecordBuilder`` over segment bytes, one core) and the
cold reader alone (``read_cold`` over the planned pieces, one core) for scale.
``--scenarios`` runs only the named ones (comma-separated; ``parquet`` and ``ceiling`` always
run, every ratio needs them); the default is all.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import statistics
import sys
import tempfile
import time
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

import tests.integration.tiering_support as ts
from sparklog.connector.arrow_decode import ArrowRecordBuilder
from sparklog.connector.cold import read_cold
from sparklog.connector.options import parse_options
from sparklog.connector.planning import ColdPiece, HotPiece, plan
from sparklog.connector.schema import arrow_schema, spark_ddl
from tests.integration.ck_helpers import create_topic, make_producer
from tests.integration.node_harness import Node

SEGMENT_BYTES = 8 << 20
NOOP = "noop write"
QUERIES = ("count", "sum(length(value))", NOOP)
CEILING_BATCH_ROWS = 1 << 16


@dataclasses.dataclass(frozen=True)
class _CeilingPart(InputPartition):
    rows: int
    batch_rows: int
    key_bytes: int
    value_bytes: int


class _CeilingReader(DataSourceReader):
    def __init__(self, rows: int, tasks: int, value_bytes: int, batch_rows: int) -> None:
        self.rows, self.tasks, self.value_bytes = rows, tasks, value_bytes
        self.batch_rows = batch_rows

    def partitions(self) -> list[InputPartition]:
        share = -(-self.rows // self.tasks)
        sizes = [min(share, self.rows - i * share) for i in range(self.tasks)]
        return [_CeilingPart(n, self.batch_rows, 16, self.value_bytes) for n in sizes if n > 0]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _CeilingPart)
        template = _template_batch(
            min(partition.batch_rows, partition.rows), partition.key_bytes, partition.value_bytes
        )
        left = partition.rows
        while left > 0:
            yield template if left >= template.num_rows else template.slice(0, left)
            left -= template.num_rows


class CeilingSource(DataSource):
    """Options ``rows``, ``tasks``, ``valueBytes``, ``batchRows``: that many rows of the
    connector's schema in that many tasks, yielding one batch of ``batchRows`` rows built before
    the first yield (contiguous buffers) again and again."""

    @classmethod
    def name(cls) -> str:
        return "bench_ceiling"

    def schema(self) -> str:
        return spark_ddl(False)

    def reader(self, schema: Any) -> DataSourceReader:
        return _CeilingReader(
            int(self.options["rows"]),
            int(self.options["tasks"]),
            int(self.options["valueBytes"]),
            int(self.options.get("batchRows", CEILING_BATCH_ROWS)),
        )


def _template_batch(rows: int, key_bytes: int, value_bytes: int) -> pa.RecordBatch:
    def binary(width: int) -> pa.Array:
        ends = pa.py_buffer(array("i", range(0, (rows + 1) * width, width)))
        return pa.Array.from_buffers(
            pa.binary(), rows, [None, ends, pa.py_buffer(os.urandom(rows * width))]
        )

    millis = pa.array(range(1_700_000_000_000, 1_700_000_000_000 + rows), pa.int64())
    return pa.RecordBatch.from_arrays(
        [
            binary(key_bytes),
            binary(value_bytes),
            pa.repeat(pa.scalar("cold", pa.string()), rows),
            pa.repeat(pa.scalar(0, pa.int32()), rows),
            pa.array(range(rows), pa.int64()),
            pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC")),
            pa.repeat(pa.scalar(0, pa.int32()), rows),
        ],
        schema=arrow_schema(False),
    )


def _produce(node: Node, topics: list[str], records: int, value_bytes: int, codec: str) -> None:
    rng = random.Random(7)
    producer = make_producer(
        node,
        **{
            "compression.codec": codec,
            "linger.ms": 50,
            "batch.num.messages": 10_000,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
        },
    )
    values = [rng.randbytes(value_bytes) for _ in range(4096)]
    partitions = 0
    for topic in topics:
        partitions = len(producer.list_topics(topic, timeout=10).topics[topic].partitions)
    for topic in topics:
        for i in range(records):
            while True:
                try:
                    producer.produce(
                        topic,
                        key=b"%016d" % i,
                        value=values[i % 4096][: value_bytes - 8] + b"%08d" % (i % 10**8),
                        partition=i % partitions,
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.flush(600)


def _tiered_all_closed(store: ts.StoreView, node: Node, topic: str, partitions: int) -> bool:
    done = 0
    for partition in range(partitions):
        local = list((node.log_dir / f"{topic}-{partition}").glob("*.log"))
        finished = _finished(store, topic, partition)
        if len(local) <= 1 and finished:
            done += 1
    return done == partitions


def _wait_tiered(store: ts.StoreView, node: Node, topic: str, partitions: int) -> None:
    ts.wait_until(
        f"closed segments of {topic!r} to be tiered",
        lambda: _tiered_all_closed(store, node, topic, partitions),
        600.0,
        lambda: [len(_finished(store, topic, p)) for p in range(partitions)],
    )


def _finished(store: ts.StoreView, topic: str, partition: int) -> list[dict[str, Any]]:
    import json

    found = store.fs.glob(f"{store.root}/topics/{topic}/*/{partition}/manifest.json")
    if not found:
        return []
    doc = json.loads(store.fs.cat_file(found[0]))
    return [s for s in doc["segments"] if s["state"] == ts.FINISHED]


def _parquet_paths(store: ts.StoreView, topic: str, partitions: int) -> tuple[list[str], int]:
    paths: list[str] = []
    rows = 0
    for partition in range(partitions):
        found = store.fs.glob(f"{store.root}/topics/{topic}/*/{partition}/manifest.json")
        base = found[0].rsplit("/", 1)[0]
        for segment in _finished(store, topic, partition):
            paths.append(f"file://{base}/{segment['path']}")
            rows += segment["end_offset"] - segment["base_offset"] + 1
    return paths, rows


@dataclasses.dataclass(slots=True)
class _Times:
    rows: int = 0
    elapsed: list[float] = dataclasses.field(default_factory=list)
    loads: list[float] = dataclasses.field(default_factory=list)
    cpu_s: list[float] = dataclasses.field(default_factory=list)

    @property
    def best(self) -> float:
        return min(self.elapsed)

    @property
    def median(self) -> float:
        return statistics.median(self.elapsed)

    @property
    def rate(self) -> float:
        return self.rows / self.best

    def cpu_efficiency(self, other: _Times) -> float:
        """Rows per CPU second (medians), relative to ``other``'s."""
        mine = self.rows / statistics.median(self.cpu_s)
        return mine / (other.rows / statistics.median(other.cpu_s))


def _interleaved(
    frames: list[tuple[str, Callable[[], Any]]], reps: int
) -> dict[tuple[str, str], _Times]:
    """Every scenario ``reps`` times after one warm-up each, round-robin, so load from other
    processes on a shared box falls on all scenarios alike rather than on one."""
    runs: dict[tuple[str, str], Callable[[], int]] = {}
    for query in QUERIES:
        for name, frame in frames:

            def run(frame: Callable[[], Any] = frame, query: str = query) -> int:
                df = frame()
                if query == "count":
                    return int(df.count())
                if query == NOOP:
                    df.write.format("noop").mode("overwrite").save()
                    return -1  # the noop sink reports no count
                return int(df.selectExpr("count(*)", "sum(length(value))").collect()[0][0])

            runs[(name, query)] = run
    results = {key: _Times() for key in runs}
    for warm_up in runs.values():
        warm_up()  # worker start, JIT, page cache
    for _ in range(reps):
        for key, scenario in runs.items():
            cpu_before = _tree_cpu_s()
            start = time.perf_counter()
            results[key].rows = scenario()
            results[key].elapsed.append(time.perf_counter() - start)
            results[key].cpu_s.append(_tree_cpu_s() - cpu_before)
            results[key].loads.append(os.getloadavg()[0])
    return results


def _tree_cpu_s() -> float:
    """CPU seconds used so far by this process and every live descendant (the JVM, Spark's
    Python workers, the node): unlike rows/s, hardly moved by other work on a shared box.
    Descendants that already exited are not counted (Spark keeps its workers alive)."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = int(fields[11]) + int(fields[12])
    root = os.getpid()
    total = 0
    for pid, used in ticks.items():
        ancestor = pid
        while ancestor not in (root, 0, 1) and ancestor in parents:
            ancestor = parents[ancestor]
        if ancestor == root:
            total += used
    return total / os.sysconf("SC_CLK_TCK")


def _decoder_only(node: Node, topic: str, partitions: int) -> None:
    total_rows, elapsed = 0, 0.0
    for partition in range(partitions):
        for path in sorted((node.log_dir / f"{topic}-{partition}").glob("*.log")):
            data = path.read_bytes()
            start = time.perf_counter()
            builder = ArrowRecordBuilder(topic, partition, False)
            pos = 0
            while pos < len(data):
                consumed, _ = builder.add(data[pos : pos + (32 << 20)], 0, 2**62)
                if consumed == 0:
                    break
                pos += consumed
                if builder.rows >= 1 << 16:
                    total_rows += builder.build().num_rows
            total_rows += builder.build().num_rows
            elapsed += time.perf_counter() - start
    print(f"{'decoder only (1 core)':<28} {total_rows / elapsed / 1e6:8.2f} M rows/s")


def _cold_reader_only(store_url: str, topic: str) -> None:
    pieces = plan(
        parse_options(
            {"subscribe": topic, "sparklog.read.from": "store", "sparklog.store.url": store_url}
        )
    )
    rows, largest, batches = 0, 0, 0
    start = time.perf_counter()
    for piece in pieces:
        assert isinstance(piece, ColdPiece)
        for batch in read_cold(piece):
            rows += batch.num_rows
            batches += 1
            largest = max(largest, batch.num_rows)
    elapsed = time.perf_counter() - start
    print(
        f"{'cold reader only (1 core)':<28} {rows / elapsed / 1e6:8.2f} M rows/s"
        f"  ({len(pieces)} pieces, {batches} batches of at most {largest} rows)"
    )


def _load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--codec", default="none")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument(
        "--scenarios", default="", help="comma-separated scenarios to run (default: all)"
    )
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="bench-connector-")
    store = ts.file_store(f"file://{tmp}/store")
    node = Node(Path(tmp) / "node", ts.node_overrides(store, None))
    node.start()
    spark: Any = None
    try:
        # At least ~4 segments per partition, so most of the topic is tiered.
        per_partition = args.records * (args.value_bytes + 40) // args.partitions
        segment_bytes = max(1 << 20, min(SEGMENT_BYTES, per_partition // 4))
        create_topic(
            node,
            "cold",
            args.partitions,
            ts.topic_configs(**{"segment.bytes": str(segment_bytes)}),
        )
        create_topic(node, "hot", args.partitions, {"segment.bytes": str(segment_bytes)})
        start = time.perf_counter()
        _produce(node, ["cold", "hot"], args.records, args.value_bytes, args.codec)
        print(f"produced 2 x {args.records} records in {time.perf_counter() - start:.1f} s")
        _wait_tiered(store, node, "cold", args.partitions)
        paths, tiered_rows = _parquet_paths(store, "cold", args.partitions)
        print(
            f"tiered: {len(paths)} Parquet objects, {tiered_rows} offsets"
            f" ({tiered_rows / args.records:.0%} of 'cold', the rest hot)"
        )

        from pyspark.sql import SparkSession

        from sparklog.connector import SparklogDataSource, hot_tail, read

        os.environ["PYSPARK_PYTHON"] = sys.executable
        repo = str(Path(__file__).resolve().parents[2])
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (repo, os.environ.get("PYTHONPATH")) if p
        )
        spark = (
            SparkSession.builder.master("local[2]")
            .appName("bench-connector")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.memory", "2g")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(SparklogDataSource)
        spark.dataSource.register(CeilingSource)
        print(f"cpus {os.cpu_count()}, {_load()} before Spark scenarios")

        def sparklog(topic: str, read_from: str, **extra: str) -> Any:
            reader = spark.read.format("sparklog")
            options = {
                "kafka.bootstrap.servers": node.bootstrap,
                "subscribe": topic,
                "sparklog.store.url": store.url,
                "sparklog.read.from": read_from,
                **extra,
            }
            for key, value in options.items():
                reader = reader.option(key, value)
            return reader.load()

        def native(topic: str, read_from: str) -> Any:
            options = {
                "kafka.bootstrap.servers": node.bootstrap,
                "subscribe": topic,
                "sparklog.store.url": store.url,
                "sparklog.read.from": read_from,
            }
            return read(spark).options(**options).load()

        def first_read(topic: str, read_from: str) -> Any:
            hot_tail.clear()
            return native(topic, read_from)

        frames: list[tuple[str, Callable[[], Any]]] = [
            ("parquet", lambda: spark.read.parquet(*paths)),
            (
                "ceiling",
                lambda: (
                    spark.read.format("bench_ceiling")
                    .option("rows", str(tiered_rows))
                    .option("tasks", str(args.partitions))
                    .option("valueBytes", str(args.value_bytes))
                    .load()
                ),
            ),
            ("cold", lambda: sparklog("cold", "store")),
            ("native", lambda: native("cold", "store")),
            ("mixed", lambda: native("cold", "both")),
            ("mixed/1st", lambda: first_read("cold", "both")),
            ("hot", lambda: sparklog("hot", "brokers")),
        ]
        if "hot_protocol" in {f.name for f in dataclasses.fields(HotPiece)}:
            frames.append(
                (
                    "hot/kafka",
                    lambda: sparklog("hot", "brokers", **{"sparklog.hot.protocol": "kafka"}),
                )
            )
        if args.scenarios:
            chosen = {"parquet", "ceiling", *args.scenarios.split(",")}
            unknown = chosen - {name for name, _ in frames}
            if unknown:
                raise SystemExit(f"unknown scenarios: {', '.join(sorted(unknown))}")
            frames = [(name, frame) for name, frame in frames if name in chosen]
        results = _interleaved(frames, args.reps)
        for (name, query), times in results.items():
            expected = args.records if name.startswith(("hot", "mixed")) else tiered_rows
            if query == NOOP:
                times.rows = expected
            rows = times.rows
            assert rows == expected, f"{name} {query}: {rows} rows, expected {expected}"
            cpu_per_million = statistics.median(times.cpu_s) / rows * 1e6
            print(
                f"{name:<10} {query:<20} {rows / times.best / 1e6:8.2f} M rows/s best,"
                f" {rows / times.median / 1e6:5.2f} median, {cpu_per_million:5.2f} CPU s per M"
                f" rows  ({rows} rows, {args.reps} reps,"
                f" load {min(times.loads):.1f}-{max(times.loads):.1f})"
            )
        ceiling_vs_parquet = {
            q: results[("ceiling", q)].rate / results[("parquet", q)].rate for q in QUERIES
        }
        for query, ratio in ceiling_vs_parquet.items():
            print(f"ratio {'ceiling':<10} {query:<20} {ratio:5.2f}x of parquet")
        for query in QUERIES:
            base = results[("parquet", query)].rate
            ceiling = results[("ceiling", query)].rate
            targets = (
                ("cold", 0.8),
                ("native", 0.95),
                ("mixed", 0.8),
                ("mixed/1st", 0.8),
                ("hot", 0.5),
            )
            for name, target in (*targets, ("hot/kafka", 0.5)):
                if (name, query) not in results:
                    continue
                rate = results[(name, query)].rate
                ratio = rate / base
                verdict = "ok" if ratio >= target else "BELOW TARGET"
                print(
                    f"ratio {name:<10} {query:<20} {ratio:5.2f}x of parquet (target {target}x)"
                    f" {verdict}; {rate / ceiling:5.2f}x of the ceiling; rows per CPU second"
                    f" {results[(name, query)].cpu_efficiency(results[('parquet', query)]):5.2f}x"
                    f" of parquet's,"
                    f" {results[(name, query)].cpu_efficiency(results[('ceiling', query)]):5.2f}x"
                    " of the ceiling's"
                )
        for query in QUERIES:
            for name in ("hot", "hot/kafka"):
                if (name, query) not in results:
                    continue
                ratio = results[(name, query)].rate / results[("ceiling", query)].rate
                verdict = "ok" if ratio >= 0.9 else "BELOW TARGET"
                print(
                    f"ratio {name:<10} {query:<20} {ratio:5.2f}x of the ceiling (target 0.9x)"
                    f" {verdict}"
                )
        _decoder_only(node, "hot", args.partitions)
        _cold_reader_only(store.url, "cold")
    finally:
        if spark is not None:
            spark.stop()
        node.stop()
        if not args.keep:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
