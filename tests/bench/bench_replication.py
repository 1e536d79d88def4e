"""Replicated produce: acks=all next to acks=1 with RF=3 on one machine, and failover time.

Run: ``.venv/bin/python tests/bench/bench_replication.py [--records N] [--value-bytes B]
[--partitions P] [--kills K]``. Not collected by pytest (file name ``bench_*.py``); it asserts
nothing about timings and prints one line per scenario.

Set-up: a real cluster of 3 controllers + 3 brokers (``tests/integration/cluster_harness.py``,
every node its own process on this machine's 2 cores), one topic per scenario with P partitions,
RF=3 and min.insync.replicas=2.

Scenarios (confluent-kafka, linger.ms 5, batch.size 1 MiB):
  acks=1    N records of B bytes as fast as the producer goes: records/s, MB/s, and the produce
            latency (delivery report time - produce() time) p50 / p99 over every record, which
            at full speed is mostly time queued in the producer; then 10 s paced at
            ``--paced-rate`` records/s, where the latency is the round trip through the brokers
  acks=all  the same, in the same run, so the cost of waiting for the ISR is the difference
  failover  a producer (acks=all) writes steadily to a 1-partition topic; the partition leader
            is SIGKILLed K times (restarted and back in the ISR before the next kill): the time
            from each kill to the first acknowledgement of a record sent after it
No peer run: no Kafka broker can be installed from the registries this machine reaches.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import confluent_kafka
from confluent_kafka import admin as admin_module
from confluent_kafka.cimpl import NewTopic

from tests.integration.cluster_harness import Cluster, running_cluster

TIMINGS = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "broker.session.timeout.ms": 4000,
    "broker.heartbeat.interval.ms": 500,
    "min.insync.replicas": 2,
}


def create_topic(cluster: Cluster, name: str, partitions: int) -> None:
    client = admin_module.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = NewTopic(name, partitions, 3, config={"min.insync.replicas": "2"})
    client.create_topics([topic], operation_timeout=30)[name].result(timeout=60)
    wait_full_isr(cluster, name)


def isr_sizes(cluster: Cluster, topic: str) -> list[int]:
    client = admin_module.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    metadata = client.list_topics(topic=topic, timeout=5)
    return [len(p.isrs) for p in metadata.topics[topic].partitions.values()]


def leader_of(cluster: Cluster, topic: str) -> int:
    client = admin_module.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    metadata = client.list_topics(topic=topic, timeout=5)
    return int(metadata.topics[topic].partitions[0].leader)


def wait_full_isr(cluster: Cluster, topic: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            sizes = isr_sizes(cluster, topic)
            if sizes and all(size == 3 for size in sizes):
                return
        except confluent_kafka.KafkaException:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic}: ISR not full after {timeout_s}s")
        time.sleep(0.2)


def produce_run(
    cluster: Cluster,
    topic: str,
    acks: str,
    records: int,
    value_bytes: int,
    rate: float | None = None,
) -> str:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": acks,
            "linger.ms": 5,
            "batch.size": 1024 * 1024,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1024 * 1024,
        }
    )
    value = b"x" * value_bytes
    latencies: list[float] = []
    errors: list[Any] = []

    def on_delivery(sent_at: float) -> Any:
        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(err)
            else:
                latencies.append(time.perf_counter() - sent_at)

        return delivered

    started = time.perf_counter()
    for i in range(records):
        if rate is not None:
            pause = started + i / rate - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
        sent_at = time.perf_counter()
        while True:
            try:
                producer.produce(
                    topic,
                    value=value,
                    on_delivery=on_delivery(sent_at),
                )
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush(300)
    elapsed = time.perf_counter() - started
    if errors:
        return f"acks={acks}: {len(errors)} error(s), first {errors[0]}"
    latencies.sort()
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[int(len(latencies) * 0.99) - 1] * 1000
    achieved = records / elapsed
    label = "max rate" if rate is None else f"paced at {rate:,.0f}/s"
    return (
        f"acks={acks:<4} {label:<16} {achieved:>10,.0f} rec/s "
        f"{achieved * value_bytes / 1e6:>7.1f} MB/s  latency p50 {p50:7.1f} ms  p99 {p99:7.1f} ms"
    )


def failover_run(cluster: Cluster, topic: str, kills: int) -> list[float]:
    acked: list[float] = []
    lock = threading.Lock()
    stop = threading.Event()

    def run() -> None:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                "linger.ms": 1,
                "message.timeout.ms": 120_000,
                "log_level": 0,
            }
        )

        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                with lock:
                    acked.append(time.monotonic())

        while not stop.is_set():
            producer.produce(topic, value=b"v", on_delivery=delivered)
            producer.poll(0.005)
        producer.flush(120)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    times: list[float] = []
    try:
        for _ in range(kills):
            time.sleep(1.0)
            victim = cluster.broker(leader_of(cluster, topic))
            killed_at = time.monotonic()
            victim.kill()
            while True:
                with lock:
                    first = next((t for t in acked if t > killed_at + 0.05), None)
                if first is not None:
                    break
                time.sleep(0.01)
            times.append(first - killed_at)
            print(f"  kill broker {victim.node_id}: first ack after {first - killed_at:.2f} s")
            victim.launch()
            victim.wait_ready()
            wait_full_isr(cluster, topic)
    finally:
        stop.set()
        thread.join(180)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument(
        "--paced-rate", type=float, default=2000.0, help="records/s of the latency run"
    )
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-replication-") as tmp,
        running_cluster(Path(tmp), controllers=3, brokers=3, overrides=TIMINGS) as cluster,
    ):
        print(
            f"3 controllers + 3 brokers, RF=3, min ISR 2, {args.partitions} partition(s), "
            f"{args.records:,} x {args.value_bytes} B"
        )
        for acks in ("1", "all"):
            topic = f"bench-acks-{acks}"
            create_topic(cluster, topic, args.partitions)
            print(produce_run(cluster, topic, acks, args.records, args.value_bytes))
            paced = min(args.records, int(args.paced_rate * 10))
            rate = args.paced_rate
            print(produce_run(cluster, topic, acks, paced, args.value_bytes, rate=rate))
        create_topic(cluster, "bench-failover", 1)
        times = failover_run(cluster, "bench-failover", args.kills)
        print(
            f"failover: kill -> first ack median {statistics.median(times):.2f} s, "
            f"max {max(times):.2f} s over {len(times)} kill(s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
