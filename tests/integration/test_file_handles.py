"""Resource exhaustion leaves a node that comes back (issue 16, part 4).

A real node runs under ``RLIMIT_NOFILE`` 1024 (set in the child before exec, like
``prlimit --nofile=1024:1024``). It is asked for 20,000 partitions: one CreateTopics of 20,000
is refused as Kafka refuses it (POLICY_VIOLATION, more than MAX_RECORDS_PER_USER_OP records in
one operation), so the partitions are created as Kafka allows, 9,999 with CreateTopics and the
rest with two CreatePartitions. The node serves a sample of them (produce, then fetch back),
never opens more than its descriptor limit and is never fenced; a CreateTopics of 1,000,000
partitions is refused at once while produce keeps working (librdkafka refuses more than
100,000 partitions itself, so it asks for 100,000 and the million goes over the wire). Then it
is SIGKILLed and starts again under the same limit on the data it wrote, and serves the same
partitions again.

The node's data lives on tmpfs (/dev/shm): what is under test is the use of file descriptors
and of the event loop, not the fsync speed of the machine's disk (on this machine's disk the
same run takes about 3.5 minutes, the broker still never fenced before the restart).
"""

from __future__ import annotations

import resource
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    NewPartitions,
    NewTopic,
)

from sparklog.client.connection import KafkaConnection
from sparklog.protocol.errors import ErrorCode
from tests.integration import node_harness
from tests.integration.cluster_harness import wait_until
from tests.integration.node_harness import Node

pytestmark = pytest.mark.integration

NOFILE = 1024
TOPIC = "wide"
TOTAL = 20_000
EXCESSIVE = "Unable to perform excessively large batch operation."
SAMPLE = (0, 1, 4_321, 9_998, 9_999, 15_000, 19_998, 19_999)
START_TIMEOUT_S = 150.0
# Descriptors the pool leaves to sockets and the rest (it keeps at most half the limit).
HEADROOM = 256


@pytest.fixture
def limited_nodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Node]]:
    """Start nodes whose process has RLIMIT_NOFILE = 1024 (soft and hard), data on tmpfs."""
    die_with_parent = node_harness._die_with_parent

    def limited() -> None:
        die_with_parent()
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))

    monkeypatch.setattr(node_harness, "_die_with_parent", limited)
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("needs tmpfs at /dev/shm: on a disk the 80,000 fsyncs take minutes")
    root = Path(tempfile.mkdtemp(prefix="sparklog-fds-", dir=shm))
    nodes: list[Node] = []

    def start(**overrides: object) -> Node:
        settings: dict[str, object] = {"log.retention.check.interval.ms": 600_000}
        settings.update({k.replace("_", "."): v for k, v in overrides.items()})
        node = Node(root / f"node{len(nodes)}", settings)
        nodes.append(node)
        node.start()
        return node

    try:
        yield start
    finally:
        for node in nodes:
            node.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def limited_node(limited_nodes: Callable[..., Node]) -> Node:
    return limited_nodes()


def _admin(node: Node) -> AdminClient:
    return AdminClient({"bootstrap.servers": node.bootstrap, "log_level": 0})


def _error_of(future: object) -> KafkaError:
    with pytest.raises(KafkaException) as raised:
        future.result(60)  # type: ignore[attr-defined]
    error = raised.value.args[0]
    assert isinstance(error, KafkaError)
    return error


def _produce(
    node: Node, partitions: tuple[int, ...], value: bytes, topic: str = TOPIC
) -> dict[int, int]:
    """One record to each partition; their offsets. Retries until every partition is led."""
    producer = Producer(
        {
            "bootstrap.servers": node.bootstrap,
            "message.timeout.ms": 120_000,
            "log_level": 0,
        }
    )
    offsets: dict[int, int] = {}
    errors: list[str] = []

    def delivered(err: KafkaError | None, msg: object) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            offsets[msg.partition()] = msg.offset()  # type: ignore[attr-defined]

    for partition in partitions:
        producer.produce(topic, value, partition=partition, on_delivery=delivered)
    remaining = producer.flush(130)
    assert remaining == 0 and not errors, (remaining, errors)
    return offsets


def _fetch(node: Node, offsets: dict[int, int]) -> dict[int, bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": f"fds-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, p, o) for p, o in offsets.items()])
        found: dict[int, bytes] = {}
        deadline = time.monotonic() + 60
        while len(found) < len(offsets) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error() is not None:
                continue
            partition, value = msg.partition(), msg.value()
            assert partition is not None and value is not None
            found.setdefault(partition, value)  # the record at the assigned offset
        return found
    finally:
        consumer.close()


def _broker_fenced(node: Node) -> bool:
    return "Fenced broker" in node.log_path.read_text(errors="replace")


def test_twenty_thousand_partitions_under_ulimit_1024_and_a_restart(limited_node: Node) -> None:
    node = limited_node
    admin = _admin(node)

    # One CreateTopics of 20,000: more than one bounded operation, refused as Kafka does.
    error = _error_of(admin.create_topics([NewTopic(TOPIC, TOTAL, 1)])[TOPIC])
    assert error.code() == KafkaError.POLICY_VIOLATION
    assert EXCESSIVE in error.str()
    assert "at most 10000" in error.str()

    # As Kafka allows it: 9,999 + 10,000 + 1.
    admin.create_topics([NewTopic(TOPIC, 9_999, 1)], operation_timeout=60)[TOPIC].result(90)
    admin.create_partitions([NewPartitions(TOPIC, 19_999)], operation_timeout=60)[TOPIC].result(
        90
    )
    admin.create_partitions([NewPartitions(TOPIC, TOTAL)])[TOPIC].result(90)
    assert len(admin.list_topics(TOPIC, timeout=30).topics[TOPIC].partitions) == TOTAL

    first = _produce(node, SAMPLE, b"before")
    assert set(first) == set(SAMPLE)
    wait_until(
        "every partition directory",
        lambda: len(list(node.log_dir.glob(f"{TOPIC}-*"))) == TOTAL,
        timeout_s=120,
        interval_s=1.0,
    )
    assert _fetch(node, first) == {p: b"before" for p in SAMPLE}
    assert node.fd_count() < NOFILE - HEADROOM
    assert not _broker_fenced(node), node.log_tail()

    # librdkafka sends at most 100,000 partitions (it refuses more itself); the node refuses
    # that with Kafka's error, and a million over the wire the same way, before anything is
    # placed. The broker stays unfenced and keeps serving.
    large = _error_of(admin.create_topics([NewTopic("large", 100_000, 1)])["large"])
    assert large.code() == KafkaError.POLICY_VIOLATION
    assert EXCESSIVE in large.str()
    with KafkaConnection.connect(node.bootstrap) as conn:
        response = conn.request(
            "CreateTopics",
            {
                "topics": [
                    {
                        "name": "huge",
                        "num_partitions": 1_000_000,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout_ms": 30_000,
                "validate_only": False,
            },
        )
    (huge,) = response["topics"]
    assert huge["error_code"] == ErrorCode.POLICY_VIOLATION
    assert huge["error_message"].startswith(EXCESSIVE)
    assert "at least 1000001 metadata records" in huge["error_message"]
    assert "huge" not in admin.list_topics(timeout=30).topics
    assert _produce(node, (3,), b"still") == {3: 0}
    assert not _broker_fenced(node)

    # SIGKILL, and back on the same data under the same limit.
    node.kill()
    node.start(ready_timeout_s=START_TIMEOUT_S)
    again = _produce(node, SAMPLE, b"after")
    assert again == {p: o + 1 for p, o in first.items()}
    assert _fetch(node, first) == {p: b"before" for p in SAMPLE}
    assert node.fd_count() < NOFILE - HEADROOM
    text = node.log_path.read_text(errors="replace")
    assert "Too many open files" not in text
    assert "Segment files are opened on demand, at most 512 at a time" in text


def test_a_pool_bound_above_the_limit_survives_running_out_of_descriptors(
    limited_nodes: Callable[..., Node],
) -> None:
    """With ``sparklog.log.open.files.max`` set far above RLIMIT_NOFILE, only EMFILE stops the
    pool: each time it closes its idle files, retries, and says so (a bounded number of
    warnings); produce, fetch and a restart on the data all keep working."""
    node = limited_nodes(sparklog_log_open_files_max=100_000)
    admin = _admin(node)
    admin.create_topics([NewTopic("many", 3_000, 1)])["many"].result(90)
    everything = tuple(range(3_000))
    assert set(_produce(node, everything, b"v", topic="many")) == set(everything)
    text = node.log_path.read_text(errors="replace")
    assert "Out of file descriptors opening" in text
    assert text.count("Out of file descriptors opening") <= 20  # 1st, 2nd, 4th, ... only
    assert "KAFKA_STORAGE_ERROR" not in text
    node.kill()
    node.start(ready_timeout_s=START_TIMEOUT_S)  # loading opens every segment: EMFILE again
    assert _produce(node, (0, 2_999), b"w", topic="many") == {0: 1, 2_999: 1}
