"""Share-consumer throughput beside a classic consumer group on the same topic (KIP-932).

Run: ``.venv/bin/python tests/bench/bench_share_groups.py [--records 50000] [--size 100]
[--partitions 1] [--consumers 1]``. Not collected by pytest (file name ``bench_*.py``); it
asserts only that every consumer group read every record, and prints one line per figure next
to the machine's load average.

One node with share groups enabled; one topic of ``--partitions`` partitions filled with
``--records`` records of ``--size`` bytes before anything reads. Then, one after the other:

  classic   ``--consumers`` confluent-kafka Consumers in one classic group
            (``auto.offset.reset=earliest``, auto commit) read every record
  share     ``--consumers`` confluent-kafka ShareConsumers in one share group (implicit
            acknowledgement: every record is accepted, and its acceptance persisted in
            ``__share_group_state``, before the next poll) read every record

Figures: records/s and MB/s from the first record read to the last (joining the group is left
out), the time from subscribe to the last record, and the node's CPU seconds per 10,000 records
from subscribe to the last record. A share group whose start offset is ``latest`` (Kafka's
default) would see nothing produced before it joined, so the share group's offsets are reset
to the earliest first (``sparklog share-groups --reset-offsets --to-earliest --execute``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from confluent_kafka import Consumer, Producer, ShareConsumer

from tests.integration.ck_helpers import create_topic
from tests.integration.cli_support import tool
from tests.integration.node_harness import Node

TOPIC = "bench-share"


def node_cpu_s(node: Node) -> float:
    fields = Path(f"/proc/{node.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce(node: Node, records: int, size: int, partitions: int) -> None:
    producer = Producer(
        {"bootstrap.servers": node.bootstrap, "linger.ms": 20, "batch.num.messages": 10000}
    )
    payload = os.urandom(size)
    for i in range(records):
        while True:
            try:
                producer.produce(
                    TOPIC, value=payload, key=str(i).encode(), partition=i % partitions
                )
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(120) == 0


def drain(consumers: list[Any], records: int, share: bool) -> float:
    """Poll every consumer until ``records`` arrived; seconds from the first record read."""
    seen = 0
    first: float | None = None
    deadline = time.monotonic() + 600
    while seen < records:
        assert time.monotonic() < deadline, f"only {seen} of {records} records read"
        for c in consumers:
            got = (
                sum(1 for m in c.poll(0.1) if m.error() is None)
                if share
                else sum(1 for m in c.consume(1000, 0.1) if m.error() is None)
            )
            if got and first is None:
                first = time.monotonic()
            seen += got
    assert first is not None
    return time.monotonic() - first


def run(node: Node, args: argparse.Namespace, share: bool) -> tuple[float, float, float]:
    group = f"bench-{'share' if share else 'classic'}-{time.monotonic_ns()}"
    if share:
        reset = tool(node.bootstrap, "share-groups", "--reset-offsets", "--group", group,
                     "--topic", TOPIC, "--to-earliest", "--execute")  # fmt: skip
        assert reset.status == 0, reset.err
        consumers: list[Any] = [
            ShareConsumer({"bootstrap.servers": node.bootstrap, "group.id": group})
            for _ in range(args.consumers)
        ]
    else:
        consumers = [
            Consumer(
                {
                    "bootstrap.servers": node.bootstrap,
                    "group.id": group,
                    "auto.offset.reset": "earliest",
                }
            )
            for _ in range(args.consumers)
        ]
    cpu_before = node_cpu_s(node)
    subscribed = time.monotonic()
    for c in consumers:
        c.subscribe([TOPIC])
    try:
        elapsed = drain(consumers, args.records, share)
        total = time.monotonic() - subscribed
        cpu = node_cpu_s(node) - cpu_before
    finally:
        for c in consumers:
            c.close()
    return elapsed, total, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--consumers", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        node = Node(Path(root) / "node")
        node.bootstrap_features = {"share.version": 1}  # share groups on, as Kafka's feature
        node.start()
        try:
            create_topic(node, TOPIC, args.partitions)
            produce(node, args.records, args.size, args.partitions)
            load = os.getloadavg()[0]
            print(
                f"{args.records} records of {args.size} B, {args.partitions} partition(s), "
                f"{args.consumers} consumer(s) per group; load average {load:.2f}"
            )
            for share in (False, True):
                elapsed, total, cpu = run(node, args, share)
                rate = args.records / elapsed
                mb = rate * args.size / 1e6
                name = "share group  " if share else "classic group"
                print(
                    f"{name}: {rate:10,.0f} records/s  {mb:6.2f} MB/s  "
                    f"{total:6.2f} s from subscribe to the last record  "
                    f"node CPU {cpu / args.records * 10_000:.3f} s per 10k records"
                )
        finally:
            node.close()


if __name__ == "__main__":
    main()
