"""Tiered-storage soak, by hand: does the tier keep up with a node's full ingest?

Run: ``.venv/bin/python tests/bench/bench_tier_soak.py [--minutes 5] [--partitions 4]
[--value-bytes 100] [--copier-threads 10] [--workdir DIR]``. Not collected by pytest.

One combined broker+controller node with tiered storage on a ``file://`` store, one topic of
``--partitions`` partitions with ``remote.storage.enable=true``, 1 MiB segments and
``local.retention.bytes=1`` (only the active segment stays local once the rest is copied;
``file.delete.delay.ms=1000``, so deleted segments leave the disk within a second). A
confluent-kafka producer (idempotent, lz4, large batches) sends ``--value-bytes`` records as fast
as it can for ``--minutes``; every 10 s one line shows the records produced and their rate,
the broker's copy lag (``RemoteCopyLagSegments`` / ``RemoteCopyLagBytes``), the copy rate
(``RemoteCopyBytesPerSec`` one-minute rate), the local disk use of the topic's partitions and
the bytes in the store. The copy lag and local disk must stay bounded: they are reported,
with their maximum over the second half of the run, against the first half.

Afterwards every record is read back from offset 0 of every partition (through remote fetch
for all but the active segments): offsets dense from 0 and each value carrying its own
sequence number, so a lost, duplicated or reordered record fails the run (exit status 1).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from confluent_kafka import Consumer, Producer, TopicPartition

from sparklog.cli.metrics_tool import fetch_metrics
from tests.integration.ck_helpers import create_topic
from tests.integration.node_harness import Node, free_port
from tests.integration.tiering_support import SEGMENT_BYTES, StoreView, file_store

TOPIC = "soak"
MB = 1_000_000
BTM = "kafka.server:type=BrokerTopicMetrics,name="
_SEQ = struct.Struct(">q")


def du(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):  # a segment deleted meanwhile
                total += os.path.getsize(os.path.join(root, name))
    return total


class Load:
    """The producer thread: ``count[p]`` records acknowledged per partition."""

    def __init__(self, node: Node, partitions: int, value_bytes: int) -> None:
        self.partitions = partitions
        self.value_bytes = value_bytes
        self.sent = [0] * partitions
        self.acked = [0] * partitions
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.producer = Producer(
            {
                "bootstrap.servers": node.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "compression.type": "lz4",
                "linger.ms": 20,
                "batch.size": 1_000_000,
                "queue.buffering.max.messages": 2_000_000,
                "queue.buffering.max.kbytes": 1_048_576,
                "log_level": 0,
            }
        )

    def _report(self, err: object, msg: object) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked[msg.partition()] += 1  # type: ignore[attr-defined]

    def run(self) -> None:
        # Random bytes, more of them than lz4's 64 KiB window: the records do not compress.
        pads = [os.urandom(self.value_bytes - _SEQ.size) for _ in range(4096)]
        produce = self.producer.produce
        p = 0
        while not self.stop.is_set():
            for i in range(1000):
                value = _SEQ.pack(self.sent[p]) + pads[(self.sent[p] + i) & 4095]
                try:
                    produce(TOPIC, value, partition=p, on_delivery=self._report)
                except BufferError:
                    self.producer.poll(0.01)
                    continue
                self.sent[p] += 1
                p = (p + 1) % self.partitions
            self.producer.poll(0)
        left = self.producer.flush(300)
        if left:
            self.errors.append(f"{left} records unacknowledged")


def metric(metrics: dict[str, dict[str, object]], name: str, attribute: str = "Value") -> float:
    value = metrics.get(BTM + name, {}).get(attribute, 0)
    return float(value) if isinstance(value, int | float) else 0.0


def verify(node: Node, partition: int, count: int) -> str | None:
    """None when ``partition`` holds exactly ``count`` records, offsets and sequence numbers
    dense from 0; else what is wrong."""
    consumer = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": f"soak-verify-{partition}",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 8_388_608,
            "log_level": 0,
        }
    )
    consumer.assign([TopicPartition(TOPIC, partition, 0)])
    seen = 0
    deadline = time.monotonic() + 600
    try:
        while seen < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=50_000, timeout=0.5):
                if msg.error() is not None:
                    return f"partition {partition}: {msg.error()}"
                offset = msg.offset()
                (seq,) = _SEQ.unpack_from(msg.value() or b"")
                if offset != seen or seq != seen:
                    return f"partition {partition}: offset {offset} seq {seq}, expected {seen}"
                seen += 1
        extra = consumer.consume(num_messages=10, timeout=1.0)
        if seen != count or extra:
            return f"partition {partition}: read {seen} (+{len(extra)}) of {count}"
    finally:
        consumer.close()
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--copier-threads", type=int, default=10)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tier-soak-"))
    store: StoreView = file_store(f"file://{workdir}/store")
    node = Node(
        workdir / "node",
        {
            "remote.log.storage.system.enable": "true",
            "remote.log.manager.task.interval.ms": 500,
            "remote.log.manager.copier.thread.pool.size": args.copier_threads,
            "log.retention.check.interval.ms": 500,
            "sparklog.remote.storage.url": store.url,
            "sparklog.metrics.listener": f"127.0.0.1:{free_port()}",
        },
    )
    node.start()
    metrics_url = "http://" + node.properties["sparklog.metrics.listener"]
    try:
        create_topic(
            node,
            TOPIC,
            args.partitions,
            {
                "remote.storage.enable": "true",
                "segment.bytes": str(SEGMENT_BYTES),
                "local.retention.bytes": "1",
                "retention.ms": "-1",
                # Deleted segments linger this long (Kafka: 60 s) before their files go.
                "file.delete.delay.ms": "1000",
            },
        )
        load = Load(node, args.partitions, args.value_bytes)
        thread = threading.Thread(target=load.run, daemon=True)
        start = time.monotonic()
        thread.start()
        print(
            f"{'t':>5} {'records':>11} {'krec/s':>8} {'lag seg':>8} {'lag MB':>8}"
            f" {'copy MB/s':>10} {'local MB':>9} {'store MB':>9}",
            flush=True,
        )
        samples: list[tuple[float, float, float]] = []  # (t, lag bytes, local bytes)
        last_count, last_t = 0, start
        stop_at = start + args.minutes * 60
        while True:
            time.sleep(max(min(10.0, stop_at - time.monotonic()), 0.0))
            now = time.monotonic()
            metrics = fetch_metrics(metrics_url, timeout_s=10.0)
            acked = sum(load.acked)
            lag_bytes = metric(metrics, "RemoteCopyLagBytes")
            local = du(node.log_dir) - du(node.log_dir / "__cluster_metadata-0")
            samples.append((now - start, lag_bytes, local))
            rate = (acked - last_count) / (now - last_t) / 1000
            print(
                f"{now - start:5.0f} {acked:11,d} {rate:8.1f}"
                f" {metric(metrics, 'RemoteCopyLagSegments'):8.0f} {lag_bytes / MB:8.1f}"
                f" {metric(metrics, 'RemoteCopyBytesPerSec', 'OneMinuteRate') / MB:10.1f}"
                f" {local / MB:9.1f} {du(workdir / 'store') / MB:9.1f}",
                flush=True,
            )
            last_count, last_t = acked, now
            if now >= stop_at:
                break
        load.stop.set()
        thread.join(600)
        if load.errors:
            print(f"FAILED: produce errors: {load.errors[:3]}")
            return 1
        half = [s for s in samples if s[0] >= samples[-1][0] / 2] or samples
        first = [s for s in samples if s[0] < samples[-1][0] / 2] or samples
        print(
            f"copy lag max {max(s[1] for s in first) / MB:.1f} MB (first half),"
            f" {max(s[1] for s in half) / MB:.1f} MB (second half); local disk max"
            f" {max(s[2] for s in first) / MB:.1f} / {max(s[2] for s in half) / MB:.1f} MB;"
            f" {sum(load.acked):,d} records in {samples[-1][0]:.0f} s",
            flush=True,
        )
        t0 = time.monotonic()
        for partition in range(args.partitions):
            problem = verify(node, partition, load.acked[partition])
            if problem is not None:
                print(f"FAILED: {problem}")
                return 1
        print(
            f"verified: every record readable once from offset 0 in"
            f" {time.monotonic() - t0:.0f} s (workdir {workdir})"
        )
        return 0
    finally:
        node.stop()


if __name__ == "__main__":
    sys.exit(main())
