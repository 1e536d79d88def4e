"""Produce/consume throughput over PLAINTEXT, SASL_SSL (SCRAM-SHA-512) and SSL (mTLS), one run.

Run: ``.venv/bin/python tests/bench/bench_security.py [--records N] [--record-size B]``.
Not collected by pytest (file name ``bench_*.py``); it asserts nothing and prints a table.
One node (tests.integration.security_support.SecureNode) listens on all three; for each
listener, confluent-kafka produces N records (batch.size 1 MiB, linger.ms 5, acks=all) to a
fresh 1-partition topic and then consumes them from the start (no group), so the figures differ
only by the listener's security. The node's CPU seconds per phase are shown, since on a small
machine TLS costs CPU before it costs throughput.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.integration.security_support import SecureNode


def node_cpu_s(node: SecureNode) -> float:
    fields = Path(f"/proc/{node.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0


def produce(config: dict[str, Any], topic: str, records: int, size: int) -> float:
    producer = Producer({**config, "batch.size": 1 << 20, "linger.ms": 5, "acks": "all"})
    value = b"x" * size
    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    return records / (time.perf_counter() - start)


def consume(config: dict[str, Any], topic: str, records: int) -> float:
    consumer = Consumer(
        {**config, "group.id": f"bench-{uuid.uuid4()}", "enable.auto.commit": False,
         "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = 0
    start = time.perf_counter()
    deadline = time.monotonic() + 300
    while seen < records and time.monotonic() < deadline:
        for message in consumer.consume(10000, 1.0):
            if not message.error():
                seen += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    return seen / elapsed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=2, help="rounds over the listeners")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-security-") as root:
        node = SecureNode(Path(root))
        node.start()
        try:
            listeners = {
                "PLAINTEXT": {"bootstrap.servers": node.bootstrap},
                "SASL_SSL SCRAM-SHA-512": node.confluent_sasl(),
                "SSL mTLS": node.confluent_mtls(),
            }
            admin = AdminClient(listeners["PLAINTEXT"])
            best: dict[str, tuple[float, float, float, float]] = {}
            # Rounds alternate the listeners, so warm-up and page-cache effects are shared;
            # each listener's best round is reported.
            for _ in range(args.rounds):
                for name, config in listeners.items():
                    topic = f"bench-{uuid.uuid4().hex[:8]}"
                    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)
                    cpu = node_cpu_s(node)
                    produced = produce(config, topic, args.records, args.record_size)
                    cpu_produce = node_cpu_s(node) - cpu
                    cpu = node_cpu_s(node)
                    consumed = consume(config, topic, args.records)
                    cpu_consume = node_cpu_s(node) - cpu
                    old = best.get(name)
                    best[name] = (
                        max(produced, old[0]) if old else produced,
                        min(cpu_produce, old[1]) if old else cpu_produce,
                        max(consumed, old[2]) if old else consumed,
                        min(cpu_consume, old[3]) if old else cpu_consume,
                    )
            rows = [(name, *figures) for name, figures in best.items()]
        finally:
            node.stop()
    mib = args.record_size / (1 << 20)
    print(
        f"{args.records} records of {args.record_size} B, 1 partition, one node, same run, "
        f"best of {args.rounds} rounds"
    )
    print(f"{'listener':<24} {'produce rec/s':>14} {'MiB/s':>7} {'node CPU s':>10}"
          f" {'consume rec/s':>14} {'MiB/s':>7} {'node CPU s':>10}")  # fmt: skip
    for name, produced, cpu_p, consumed, cpu_c in rows:
        print(f"{name:<24} {produced:>14,.0f} {produced * mib:>7.1f} {cpu_p:>10.1f}"
              f" {consumed:>14,.0f} {consumed * mib:>7.1f} {cpu_c:>10.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
