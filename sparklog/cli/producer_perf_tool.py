"""``sparklog producer-perf-test``: kafka-producer-perf-test.sh's load and report.

    sparklog producer-perf-test --topic T --num-records N --record-size B --throughput R \\
        (--bootstrap-server HOST:PORT | --producer-props bootstrap.servers=HOST:PORT ...)

Every 5 s it prints Kafka's progress line (``N records sent, X records/sec (Y MB/sec), A ms
avg latency, M ms max latency.``) and at the end the summary with the 50th, 95th, 99th and
99.9th latency percentiles. ``--throughput`` caps records/s (-1: no cap). Records are sent in
batches of ``batch.size`` bytes (``--producer-props``); a record's latency is from its send to
its batch's acknowledgement, as the Java producer's callback measures it. The blocking client
has one batch per partition in flight, so absolute figures are lower than Kafka's.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from sparklog.cli.admin_client import CliError, command_security, read_command_config, run_tool
from sparklog.cli.console_producer_tool import parse_properties
from sparklog.client.producer import ProduceError, Producer, ProducerConfig

_REPORT_EVERY_S = 5.0


def add_producer_perf_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "producer-perf-test",
        help="measure produce throughput and latency (kafka-producer-perf-test.sh)",
        description="Produce --num-records records of --record-size bytes and report rates.",
    )
    parser.add_argument("--bootstrap-server", help="HOST:PORT of a broker")
    parser.add_argument("--command-config", "--producer.config", dest="command_config",
                        help="a properties file of producer settings")  # fmt: skip
    parser.add_argument("--topic", required=True, help="the topic to produce to")
    parser.add_argument("--num-records", type=int, required=True, help="records to send")
    parser.add_argument("--record-size", type=int, default=100, help="bytes per record")
    parser.add_argument("--throughput", type=float, required=True, help="records/s cap; -1 none")
    parser.add_argument("--producer-props", nargs="*", default=[], metavar="KEY=VALUE",
                        help="bootstrap.servers, acks, batch.size, ...")  # fmt: skip
    parser.set_defaults(run=run_producer_perf)


class Stats:
    """Kafka's perf-test Stats: a window for progress lines and every latency for the end."""

    def __init__(self, record_size: int) -> None:
        self.record_size = record_size
        self.start = time.monotonic()
        self.latencies_ms: list[float] = []
        self.window_start = self.start
        self.window_count = 0
        self.window_latency = 0.0
        self.window_max = 0.0

    def record(self, latencies_ms: list[float]) -> None:
        self.latencies_ms += latencies_ms
        self.window_count += len(latencies_ms)
        self.window_latency += sum(latencies_ms)
        self.window_max = max([self.window_max, *latencies_ms])
        now = time.monotonic()
        if now - self.window_start >= _REPORT_EVERY_S:
            elapsed = now - self.window_start
            rate = self.window_count / elapsed
            print(
                f"{self.window_count} records sent, {rate:.1f} records/sec "
                f"({rate * self.record_size / 1024 / 1024:.2f} MB/sec), "
                f"{self.window_latency / max(self.window_count, 1):.1f} ms avg latency, "
                f"{self.window_max:.1f} ms max latency.",
                flush=True,
            )
            self.window_start, self.window_count = now, 0
            self.window_latency, self.window_max = 0.0, 0.0

    def summary(self) -> str:
        count = len(self.latencies_ms)
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = count / elapsed
        ordered = sorted(self.latencies_ms) or [0.0]

        def pct(p: float) -> int:
            return int(ordered[min(int(p * len(ordered)), len(ordered) - 1)])

        return (
            f"{count} records sent, {rate:f} records/sec "
            f"({rate * self.record_size / 1024 / 1024:.2f} MB/sec), "
            f"{sum(ordered) / max(count, 1):.2f} ms avg latency, {max(ordered):.2f} ms max "
            f"latency, {pct(0.5)} ms 50th, {pct(0.95)} ms 95th, {pct(0.99)} ms 99th, "
            f"{pct(0.999)} ms 99.9th."
        )


def run_producer_perf(args: argparse.Namespace) -> int:
    def body() -> int:
        settings = read_command_config(args.command_config)
        settings.update(parse_properties(args.producer_props))
        bootstrap = args.bootstrap_server or settings.get("bootstrap.servers")
        if not bootstrap:
            raise CliError("give --bootstrap-server or --producer-props bootstrap.servers=...")
        if args.num_records <= 0 or args.record_size <= 0:
            raise CliError("--num-records and --record-size must be positive")
        acks = settings.get("acks", "all").lower()
        try:
            config = ProducerConfig(
                acks=-1 if acks in ("all", "-1") else int(acks),
                compression=settings.get("compression.type", "none"),
                batch_size=int(settings.get("batch.size", 16384)),
                client_id=settings.get("client.id", "perf-producer"),
                security=command_security(settings),
            )
        except ValueError as exc:
            raise CliError(f"bad producer setting: {exc}") from None
        payload = bytes(random.Random(0).randrange(65, 91) for _ in range(args.record_size))
        per_flush = max(1, config.batch_size // (args.record_size + 21))
        stats = Stats(args.record_size)
        with Producer(bootstrap, config) as producer:
            try:
                producer.partitions_for(args.topic)
                sent = 0
                while sent < args.num_records:
                    chunk = min(per_flush, args.num_records - sent)
                    started = []
                    for _ in range(chunk):
                        started.append(time.monotonic())
                        producer.send(args.topic, payload)
                    producer.flush()
                    acked = time.monotonic()
                    stats.record([(acked - s) * 1000 for s in started])
                    sent += chunk
                    if args.throughput > 0:
                        due = stats.start + sent / args.throughput
                        time.sleep(max(0.0, due - time.monotonic()))
            except ProduceError as exc:
                raise CliError(str(exc)) from None
        print(stats.summary())
        return 0

    return run_tool("Error: ", body)
