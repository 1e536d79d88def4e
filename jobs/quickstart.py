"""Quickstart: a local node, a sample produced and consumed with librdkafka, a summary printed.

Formats a fresh node in a temporary directory (or --data-dir), starts it as a child process,
creates a topic, produces --records records with keys and headers, reads them back by
assign/seek, checks every one, and stops the node with SIGTERM (a clean shutdown).
"""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the node exited with status {proc.returncode}; see its log above")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the node did not listen on port {port} within {timeout_s:.0f}s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--data-dir", help="where the node keeps its logs (default: a temp dir)")
    args = parser.parse_args()

    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="sparklog-quickstart-"))
    port, controller_port = _free_port(), _free_port()
    props = data_dir / "server.properties"
    data_dir.mkdir(parents=True, exist_ok=True)
    props.write_text(
        "process.roles=broker,controller\n"
        "node.id=1\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}\n"
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n"
        "controller.listener.names=CONTROLLER\n"
        f"controller.quorum.bootstrap.servers=127.0.0.1:{controller_port}\n"
        f"log.dirs={data_dir / 'logs'}\n"
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
    )
    print(f"== starting a node (cluster {cluster_id}) on 127.0.0.1:{port}, data in {data_dir}")
    node = subprocess.Popen([*sparklog, "server", "start", str(props)])
    try:
        _wait_ready(port, node)
        bootstrap = f"127.0.0.1:{port}"
        topic = "quickstart"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.create_topics([NewTopic(topic, args.partitions, 1)])
        futures[topic].result(timeout=30)
        print(f"== created topic {topic!r} with {args.partitions} partitions")

        started = time.perf_counter()
        producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": "zstd"}
        )
        failures: list[str] = []

        def on_delivery(err: object, msg: object) -> None:
            if err is not None:
                failures.append(str(err))

        for i in range(args.records):
            producer.produce(
                topic,
                key=f"key-{i}".encode(),
                value=f"value-{i}".encode(),
                headers=[("seq", str(i).encode())],
                partition=i % args.partitions,
                on_delivery=on_delivery,
            )
            if i % 10_000 == 0:
                producer.poll(0)
        producer.flush(60)
        produce_s = time.perf_counter() - started
        if failures:
            raise SystemExit(f"{len(failures)} records failed: {failures[0]}")
        print(
            f"== produced {args.records} records in {produce_s:.2f}s "
            f"({args.records / produce_s:,.0f} records/s, zstd)"
        )

        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "quickstart", "enable.auto.commit": False}
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in range(args.partitions)])
        seen = 0
        deadline = time.monotonic() + 60
        started = time.perf_counter()
        while seen < args.records and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=1.0):
                if msg.error():
                    raise KafkaException(msg.error())
                value = msg.value() or b""
                i = int(value.decode().split("-")[1])
                if msg.key() != f"key-{i}".encode() or msg.partition() != i % args.partitions:
                    raise SystemExit(f"record {i} came back wrong: {msg.key()!r}")
                seen += 1
        consume_s = time.perf_counter() - started
        consumer.close()
        # Drop the clients before the node stops, so they do not log the disconnect.
        del producer, admin
        if seen != args.records:
            raise SystemExit(f"consumed {seen} of {args.records} records")
        print(
            f"== consumed all {seen} records back in {consume_s:.2f}s, keys and partitions checked"
        )
        return 0
    finally:
        node.send_signal(signal.SIGTERM)
        try:
            node.wait(timeout=30)
        except subprocess.TimeoutExpired:
            node.kill()
        print(f"== node stopped (exit status {node.returncode}); logs kept in {data_dir}")


if __name__ == "__main__":
    sys.exit(main())
