"""Client quotas on a real node: `sparklog configs` sets and shows them (AlterClientQuotas,
DescribeClientQuotas), and a producer over its producer_byte_rate is held near it while a
client without a quota, producing at the same time, is not.

The throughput test measures and prints; it asserts generous bounds only (a loaded CI machine
must not fail it): the throttled producer's steady rate within half to one and a half times the
quota, the other producer at more than 80% of its pace.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer

from tests.integration import wire
from tests.integration.ck_helpers import create_topic
from tests.integration.cli_support import sparklog, tool
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node, NodeError, free_port

pytestmark = pytest.mark.integration

QUOTA_BYTES_PER_S = 200_000
RECORD = b"x" * 1000
# Kafka's sampled rate spans quota.window.num windows and admits a burst of that span when the
# oldest sample expires, so a throttled producer's rate is a sawtooth with that period. The
# throughput test's node uses 4 windows of 1 s and measures over 5 periods after a warm-up.
QUOTA_WINDOWS = 4
WARMUP_S = 6.0
MEASURE_S = 20.0
# The other client produces at a steady pace, five times the quota: it must keep that pace.
FREE_BYTES_PER_S = 5 * QUOTA_BYTES_PER_S


def test_configs_tool_sets_and_describes_quotas(module_node: Node) -> None:
    boot = module_node.bootstrap
    rates = "producer_byte_rate=1048576,consumer_byte_rate=2097152"
    alice_args = ("--entity-type", "users", "--entity-name", "alice")
    done = tool(boot, "configs", "--alter", "--add-config", rates, *alice_args)
    assert done.out.strip() == "Completed updating config for user alice."
    tool(boot, "configs", "--alter", "--add-config", "request_percentage=50", "--user", "alice",
         "--client", "app")  # fmt: skip
    default = tool(boot, "configs", "--alter", "--add-config", "producer_byte_rate=10485760",
                   "--entity-type", "clients", "--entity-default")  # fmt: skip
    assert default.out.strip() == "Completed updating default config for clients in the cluster."
    alice = tool(boot, "configs", "--describe", "--entity-type", "users", "--entity-name", "alice")
    assert alice.out.strip() == (
        "Quota configs for user-principal 'alice' are consumer_byte_rate=2097152.0, "
        "producer_byte_rate=1048576.0"
    )
    pair = tool(boot, "configs", "--describe", "--user", "alice", "--client", "app")
    assert pair.out.strip() == (
        "Quota configs for user-principal 'alice', client-id 'app' are request_percentage=50.0"
    )
    clients = tool(boot, "configs", "--describe", "--entity-type", "clients", "--entity-default")
    assert "the default client-id are producer_byte_rate=1.048576E7" in clients.out
    tool(boot, "configs", "--alter", "--delete-config", "producer_byte_rate", "--entity-type",
         "clients", "--entity-default")  # fmt: skip
    assert tool(boot, "configs", "--describe", "--client-defaults").out == ""
    nobody = ("--entity-type", "clients", "--entity-name", "nobody")
    bad = sparklog("configs", "--bootstrap-server", boot, "--alter", "--delete-config",
                   "producer_byte_rate", *nobody)  # fmt: skip
    assert bad.status == 1 and "Invalid config(s): producer_byte_rate" in bad.err
    wrong = sparklog("configs", "--bootstrap-server", boot, "--alter", "--add-config",
                     "producer_byte_rate=1.5", "--user", "x")  # fmt: skip
    assert wrong.status == 1 and "INVALID_REQUEST" in wrong.err
    tool(boot, "configs", "--alter", "--delete-config", "producer_byte_rate,consumer_byte_rate",
         "--entity-type", "users", "--entity-name", "alice")  # fmt: skip
    tool(boot, "configs", "--alter", "--delete-config", "request_percentage", "--user", "alice",
         "--client", "app")  # fmt: skip


class _Meter:
    """Bytes acknowledged, by delivery time, for one producer running in a thread."""

    def __init__(
        self, node: Node, topic: str, client_id: str, paced_bytes_per_s: int | None = None
    ) -> None:
        self.topic = topic
        self.paced_bytes_per_s = paced_bytes_per_s
        self.acked: list[tuple[float, int]] = []
        self.throttle_events = 0
        self.stop = threading.Event()
        self.producer = Producer(
            {
                "bootstrap.servers": node.bootstrap,
                "client.id": client_id,
                "linger.ms": 5,
                "acks": 1,
                "enable.idempotence": False,
                "queue.buffering.max.kbytes": 4096,
                # small requests: after a throttle librdkafka would otherwise send one batch
                # of up to 1 MB (5 s of this quota), and a 20 s average would count whole MBs
                "batch.size": 16384,
                "statistics.interval.ms": 0,
                "throttle_cb": self._throttled,
            }
        )
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _throttled(self, event: Any) -> None:
        self.throttle_events += 1

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.append((time.monotonic(), len(msg.value())))

    def _run(self) -> None:
        started = time.monotonic()
        sent = 0
        while not self.stop.is_set():
            if self.paced_bytes_per_s is not None:
                wait = started + sent / self.paced_bytes_per_s - time.monotonic()
                if wait > 0:
                    # a negative timeout would make poll() wait for ever
                    self.producer.poll(min(wait, 0.05))
                    continue
            try:
                self.producer.produce(self.topic, RECORD, on_delivery=self._delivered)
            except BufferError:
                self.producer.poll(0.05)
                continue
            sent += len(RECORD)
            self.producer.poll(0)
        self.producer.flush(30)

    def rate(self, start: float, end: float) -> float:
        total = sum(size for at, size in self.acked if start <= at < end)
        return total / (end - start)


def test_producer_held_near_its_byte_rate_other_client_unaffected(
    node_factory: NodeFactory,
) -> None:
    metrics_port = free_port()
    module_node = node_factory.create(
        {
            "quota.window.num": QUOTA_WINDOWS,
            "quota.window.size.seconds": 1,
            "sparklog.metrics.listener": f"127.0.0.1:{metrics_port}",
        }
    )
    throttled_topic, free_topic = unique_topic("quota-slow"), unique_topic("quota-free")
    create_topic(module_node, throttled_topic, 1)
    create_topic(module_node, free_topic, 1)
    tool(module_node.bootstrap, "configs", "--alter", "--add-config",
         f"producer_byte_rate={QUOTA_BYTES_PER_S}", "--entity-type", "clients", "--entity-name",
         "slow-producer")  # fmt: skip
    try:
        slow = _Meter(module_node, throttled_topic, "slow-producer")
        free = _Meter(module_node, free_topic, "free-producer", FREE_BYTES_PER_S)
        started = time.monotonic()
        slow.thread.start()
        free.thread.start()
        time.sleep(WARMUP_S + MEASURE_S)
        window = (started + WARMUP_S, started + WARMUP_S + MEASURE_S)
        slow.stop.set()
        free.stop.set()
        slow.thread.join(60)
        free.thread.join(60)
    finally:
        tool(module_node.bootstrap, "configs", "--alter", "--delete-config",
             "producer_byte_rate", "--client", "slow-producer")  # fmt: skip
    slow_rate, free_rate = slow.rate(*window), free.rate(*window)
    print(
        f"\nquota {QUOTA_BYTES_PER_S} B/s: throttled producer {slow_rate:,.0f} B/s "
        f"({slow_rate / QUOTA_BYTES_PER_S:.2f}x the quota, {slow.throttle_events} throttle "
        f"callbacks); the other producer {free_rate:,.0f} B/s of its paced {FREE_BYTES_PER_S:,} "
        f"B/s over the same {MEASURE_S:.0f} s"
    )
    assert slow.throttle_events > 0
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics.json", timeout=30) as r:
        quotas = json.load(r)["sparklog:type=client-quotas"]
    assert quotas["produce-throttled-requests"] > 0
    assert quotas["produce-throttle-time-ms-total"] > 0
    assert 0.5 * QUOTA_BYTES_PER_S < slow_rate < 1.5 * QUOTA_BYTES_PER_S
    assert free_rate > 0.8 * FREE_BYTES_PER_S


def _answers_api_versions(sock: socket.socket) -> bool:
    try:
        sock.sendall(wire.api_versions_v0(correlation_id=3))
        correlation_id, body = wire.recv_response(sock)
    except (OSError, ConnectionError, ValueError):
        return False
    return correlation_id == 3 and wire.api_versions_error_code(body) == 0


def test_max_connections_per_ip_refuses_the_next_connection(node_factory: NodeFactory) -> None:
    node = node_factory.create({"max.connections.per.ip": 3})
    time.sleep(1.0)  # the start-up probes' connections are closed by now
    opened = []
    try:
        for _ in range(3):
            sock = socket.create_connection((node.host, node.port), timeout=10)
            opened.append(sock)
            assert _answers_api_versions(sock)
        refused = socket.create_connection((node.host, node.port), timeout=10)
        opened.append(refused)
        assert not _answers_api_versions(refused)
        opened.pop(0).close()
        deadline = time.monotonic() + 10
        while True:
            again = socket.create_connection((node.host, node.port), timeout=10)
            opened.append(again)
            if _answers_api_versions(again):
                break
            assert time.monotonic() < deadline, "a freed slot was never given back"
            time.sleep(0.2)
    finally:
        for sock in opened:
            sock.close()
    assert "Too many connections from /127.0.0.1 (maximum = 3)" in node.log_path.read_text()


def test_consumer_held_near_its_byte_rate(node_factory: NodeFactory) -> None:
    node = node_factory.create({"quota.window.num": QUOTA_WINDOWS, "quota.window.size.seconds": 1})
    topic = unique_topic("quota-fetch")
    create_topic(node, topic, 1)
    count = 3000  # 3 MB at a 200 KB/s consumer_byte_rate: about 15 s
    producer = Producer({"bootstrap.servers": node.bootstrap, "linger.ms": 20})
    for _ in range(count):
        producer.produce(topic, RECORD)
        producer.poll(0)
    assert producer.flush(60) == 0
    tool(node.bootstrap, "configs", "--alter", "--add-config",
         f"consumer_byte_rate={QUOTA_BYTES_PER_S}", "--client", "slow-consumer")  # fmt: skip
    consumer = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "client.id": "slow-consumer",
            "group.id": "quota-fetch",
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 1_100_000,
            "max.partition.fetch.bytes": 16_384,  # fine-grained, as the producer's batches
        }
    )
    received: list[float] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 120
        while len(received) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                received.append(time.monotonic())
    finally:
        consumer.close()
    assert len(received) == count
    # after the first windows' burst the steady rate shows
    start = received[0] + WARMUP_S
    steady = [at for at in received if at >= start]
    rate = len(steady) * len(RECORD) / max(received[-1] - start, 1e-3)
    print(f"\nconsumer_byte_rate {QUOTA_BYTES_PER_S} B/s: consumer held at {rate:,.0f} B/s")
    assert rate < 1.5 * QUOTA_BYTES_PER_S


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "max.connections.per.ip.overrides",
            "nohost",
            "Invalid value 'nohost' for configuration max.connections.per.ip.overrides",
        ),
        (
            "authorizer.class.name",
            "kafka.security.authorizer.AclAuthorizer",
            "sparklog provides only org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
    ],
)
def test_a_bad_value_stops_the_node_naming_the_key(
    tmp_path: Path, key: str, value: str, message: str
) -> None:
    node = Node(tmp_path / "node", {key: value})
    try:
        with pytest.raises(NodeError):
            node.start()
    finally:
        node.close()
    log = node.log_path.read_text()
    errors = [line for line in log.splitlines() if line.startswith("Error: ")]
    assert errors and key in errors[0] and message in errors[0]
    assert "Traceback" not in log
