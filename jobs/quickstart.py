"""Quickstart: the whole story on embedded defaults, in about a minute.

1. Formats a fresh node in a temporary directory (or --data-dir) with tiered storage to
   ``file://<data-dir>/remote`` and starts it as a child process.
2. Creates a topic with small segments that tier quickly, produces --records records with
   librdkafka (confluent-kafka), and reads them back by assign/seek, checking every one.
3. Waits until closed segments of every partition are in the object store.
4. Runs a Structured Streaming query (``jobs/stream_to_parquet.py``, Trigger.AvailableNow,
   --max-offsets-per-trigger per micro-batch) over the ``sparklog`` format into Parquet: tiered
   offsets come from the store, the rest from the broker.
5. Stops the node and runs a backfill (``jobs/backfill.py``) from the object store alone into
   another Parquet dataset, then checks both datasets against what was produced. The backfill
   uses the fast batch path, ``sparklog.connector.read``: Spark's own Parquet scan over the
   tiered objects the manifests name.

Needs Java 17+ for Spark. Everything it writes stays under the data directory.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import backfill
import stream_to_parquet
from common import spark_session

TOPIC = "quickstart"
SEGMENT_BYTES = 1_048_576


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the node exited with status {proc.returncode}; see node.log")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the node did not listen on port {port} within {timeout_s:.0f}s")


def _start_node(data_dir: Path, store_url: str) -> tuple[subprocess.Popen[bytes], str]:
    port, controller_port = _free_port(), _free_port()
    props = data_dir / "server.properties"
    props.write_text(
        "process.roles=broker,controller\n"
        "node.id=1\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}\n"
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n"
        "controller.listener.names=CONTROLLER\n"
        f"controller.quorum.bootstrap.servers=127.0.0.1:{controller_port}\n"
        f"log.dirs={data_dir / 'logs'}\n"
        "remote.log.storage.system.enable=true\n"
        f"sparklog.remote.storage.url={store_url}\n"
        "remote.log.manager.task.interval.ms=500\n"
        "log.retention.check.interval.ms=500\n"
    )
    sparklog = [sys.executable, "-m", "sparklog.cli.main"]
    cluster_id = subprocess.run(
        [*sparklog, "storage", "random-uuid"], check=True, capture_output=True, text=True
    ).stdout.strip()
    subprocess.run(
        [
            *sparklog,
            "storage",
            "format",
            "--cluster-id",
            cluster_id,
            "--config",
            str(props),
            "--standalone",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    print(f"== starting a node (cluster {cluster_id}) on 127.0.0.1:{port}, data in {data_dir}")
    print(f"   tiered storage: {store_url}; node log: {data_dir / 'node.log'}")
    log = (data_dir / "node.log").open("ab")
    node = subprocess.Popen(
        [*sparklog, "server", "start", str(props)], stdout=log, stderr=subprocess.STDOUT
    )
    _wait_ready(port, node)
    return node, f"127.0.0.1:{port}"


def _stop_node(node: subprocess.Popen[bytes]) -> None:
    if node.poll() is not None:
        return
    node.send_signal(signal.SIGTERM)
    try:
        node.wait(timeout=30)
    except subprocess.TimeoutExpired:
        node.kill()
        node.wait()


def _value(i: int) -> bytes:
    # Not compressible, so segments roll at the size the topic is configured with.
    return (b"value-%08d-" % i) + os.urandom(100).hex().encode()


def _produce_and_check(bootstrap: str, records: int, partitions: int) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic_config = {
        "remote.storage.enable": "true",
        "segment.bytes": str(SEGMENT_BYTES),
        "local.retention.bytes": "1",  # once copied, closed segments live only in the store
    }
    futures = admin.create_topics([NewTopic(TOPIC, partitions, 1, config=topic_config)])
    futures[TOPIC].result(timeout=30)
    print(f"== created topic {TOPIC!r}: {partitions} partitions, tiered, 1 MiB segments")

    started = time.perf_counter()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    failures: list[str] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    for i in range(records):
        while True:
            try:
                producer.produce(
                    TOPIC,
                    key=f"key-{i}".encode(),
                    value=_value(i),
                    headers=[("seq", str(i).encode())],
                    partition=i % partitions,
                    on_delivery=on_delivery,
                )
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush(60)
    produce_s = time.perf_counter() - started
    if failures:
        raise SystemExit(f"{len(failures)} records failed: {failures[0]}")
    print(
        f"== produced {records} records with librdkafka in {produce_s:.2f}s"
        f" ({records / produce_s:,.0f} records/s)"
    )

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "quickstart", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < records and time.monotonic() < deadline:
        for msg in consumer.consume(num_messages=10_000, timeout=1.0):
            if msg.error():
                raise KafkaException(msg.error())
            i = int((msg.value() or b"").split(b"-")[1])
            if msg.key() != f"key-{i}".encode() or msg.partition() != i % partitions:
                raise SystemExit(f"record {i} came back wrong: {msg.key()!r}")
            seen += 1
    consumer.close()
    if seen != records:
        raise SystemExit(f"consumed {seen} of {records} records")
    print(f"== consumed all {seen} records back with librdkafka, keys and partitions checked")


def _tiered_ends(store_dir: Path) -> dict[int, int]:
    """partition -> first offset not in a finished tiered segment (from the manifests)."""
    ends = {}
    for manifest in store_dir.glob(f"topics/{TOPIC}/*/*/manifest.json"):
        doc = json.loads(manifest.read_text())
        finished = [s for s in doc["segments"] if s["state"] == "COPY_SEGMENT_FINISHED"]
        if finished:
            ends[int(manifest.parent.name)] = max(s["end_offset"] for s in finished) + 1
    return ends


def _wait_tiered(store_dir: Path, partitions: int, timeout_s: float = 60.0) -> dict[int, int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ends = _tiered_ends(store_dir)
        if len(ends) == partitions:
            return ends
        time.sleep(0.5)
    raise SystemExit(f"segments were not tiered within {timeout_s:.0f}s: {_tiered_ends(store_dir)}")


def _dataset(path: Path) -> dict[tuple[int, int], tuple[bytes, bytes]]:
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["partition", "offset", "key", "value"])
    rows = zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True)
    result = {}
    for partition, offset, key, value in rows:
        if (partition, offset) in result:
            raise SystemExit(f"{path}: record {partition}/{offset} appears twice")
        result[(partition, offset)] = (key, value)
    return result


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--records", type=int, default=30_000, help="records to produce (30000)")
    p.add_argument("--partitions", type=int, default=3, help="topic partitions (3)")
    p.add_argument(
        "--max-offsets-per-trigger", type=int, default=10_000, help="per micro-batch (10000)"
    )
    p.add_argument("--data-dir", help="where everything goes (default: a new temp dir)")
    args = p.parse_args()

    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="sparklog-quickstart-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    store_dir = data_dir / "remote"
    store_url = f"file://{store_dir}"
    node, bootstrap = _start_node(data_dir, store_url)
    spark: Any = None
    try:
        _produce_and_check(bootstrap, args.records, args.partitions)
        tiered = _wait_tiered(store_dir, args.partitions)
        print(
            "== tiered to the object store: "
            + ", ".join(f"{TOPIC}-{p} offsets 0..{end - 1}" for p, end in sorted(tiered.items()))
        )
        tiered = _tiered_ends(store_dir)  # the picture the backfill below will see

        print("== starting Spark (local[2])")
        spark = spark_session("sparklog-quickstart", "local[2]")
        stream_args = stream_to_parquet.parser().parse_args(
            [
                "--bootstrap-servers",
                bootstrap,
                "--subscribe",
                TOPIC,
                "--store-url",
                store_url,
                "--output",
                str(data_dir / "stream-out"),
                "--checkpoint",
                str(data_dir / "stream-checkpoint"),
                "--trigger",
                "available-now",
                "--max-offsets-per-trigger",
                str(args.max_offsets_per_trigger),
            ]
        )
        started = time.perf_counter()
        streamed = stream_to_parquet.run(stream_args, spark)
        print(
            f"== streaming query (available-now, maxOffsetsPerTrigger="
            f"{args.max_offsets_per_trigger}): {streamed.rows} records in {streamed.batches}"
            f" micro-batches, {time.perf_counter() - started:.1f}s -> {data_dir / 'stream-out'}"
        )

        _stop_node(node)
        print("== node stopped: the backfill reads the object store alone")
        backfill_args = backfill.parser().parse_args(
            [
                "--subscribe",
                TOPIC,
                "--store-url",
                store_url,
                "--output",
                str(data_dir / "backfill-out"),
            ]
        )
        started = time.perf_counter()
        filled = backfill.run(backfill_args, spark)
        print(
            f"== backfill from {store_url}: {filled.rows} records,"
            f" {time.perf_counter() - started:.1f}s -> {data_dir / 'backfill-out'}"
        )

        stream_rows = _dataset(data_dir / "stream-out")
        backfill_rows = _dataset(data_dir / "backfill-out")
        expected_backfill = sum(_tiered_ends(store_dir).values())
        checks = {
            "stream holds every produced record once": len(stream_rows) == args.records,
            "backfill holds every tiered record once": len(backfill_rows) == expected_backfill,
            "backfill records equal the stream's": all(
                stream_rows.get(k) == v for k, v in backfill_rows.items()
            ),
        }
        for label, ok in checks.items():
            print(f"   {'ok  ' if ok else 'FAIL'} {label}")
        if not all(checks.values()):
            raise SystemExit("quickstart: a check failed")
        print(
            f"== match: {len(stream_rows)} streamed, {len(backfill_rows)} backfilled from the"
            " store, same keys and values"
        )
        return 0
    finally:
        if spark is not None:
            spark.stop()
        _stop_node(node)
        print(f"== node stopped (exit status {node.returncode}); everything kept in {data_dir}")


if __name__ == "__main__":
    sys.exit(main())
