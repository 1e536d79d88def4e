"""Small confluent-kafka helpers shared by the integration tests (admin, producer, consumer).

Every call is bounded in time; helpers raise AssertionError with the state seen when a bound
is hit, so a hung node shows up as a clear test failure.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.integration.dataset import Consumed, normalize_headers
from tests.integration.node_harness import Node

CLIENT_TIMEOUT_S = 30.0


def admin_for(node: Node) -> Any:
    return AdminClient({"bootstrap.servers": node.bootstrap})


def create_topic(
    node: Node, topic: str, partitions: int, config: dict[str, str] | None = None
) -> None:
    admin = admin_for(node)  # must outlive its futures: a destroyed handle fails them
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1, config=config or {})],
        operation_timeout=CLIENT_TIMEOUT_S,
    )
    futures[topic].result(timeout=CLIENT_TIMEOUT_S)
    wait_for_partitions(node, topic, partitions)


def wait_for_partitions(node: Node, topic: str, partitions: int) -> None:
    deadline = time.monotonic() + CLIENT_TIMEOUT_S
    admin = admin_for(node)
    while time.monotonic() < deadline:
        metadata = admin.list_topics(topic=topic, timeout=5)
        found = metadata.topics.get(topic)
        if (
            found is not None
            and found.error is None
            and len(found.partitions) == partitions
            and all(p.leader >= 0 for p in found.partitions.values())
        ):
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {topic} never showed {partitions} partitions with leaders")


def make_producer(node: Node, **extra: Any) -> Any:
    config = {
        "bootstrap.servers": node.bootstrap,
        "linger.ms": 5,
        "batch.num.messages": 10_000,
        "message.timeout.ms": 60_000,
        "enable.idempotence": False,
        "acks": 1,
    }
    config.update(extra)
    return Producer(config)


def transactional_producer(node: Node, id_prefix: str, transaction_timeout_ms: int) -> Any:
    """A producer with a fresh ``transactional.id`` whose init_transactions succeeded; a broker
    that cannot run transactions fails the calling test."""
    producer = Producer(
        {
            "bootstrap.servers": node.bootstrap,
            "transactional.id": f"{id_prefix}-{uuid.uuid4().hex[:8]}",
            "linger.ms": 20,
            "batch.num.messages": 10_000,
            "transaction.timeout.ms": transaction_timeout_ms,
        }
    )
    producer.init_transactions(20)
    return producer


def end_transaction(producer: Any, abort: bool) -> None:
    """Flushes, then aborts or commits. The flush comes first because abort_transaction purges
    what is still queued: an abort must leave its records in the log for readers to skip."""
    assert producer.flush(30) == 0
    if abort:
        producer.abort_transaction(30)
    else:
        producer.commit_transaction(30)


def make_consumer(node: Node, **extra: Any) -> Any:
    config = {
        "bootstrap.servers": node.bootstrap,
        "group.id": f"it-{uuid.uuid4().hex[:8]}",  # required by the client; no group is joined
        "enable.auto.commit": False,
        "auto.offset.reset": "error",
        "enable.partition.eof": False,
    }
    config.update(extra)
    return Consumer(config)


def consume_exactly(consumer: Any, count: int, deadline_s: float = 60.0) -> list[Consumed]:
    got: list[Consumed] = []
    deadline = time.monotonic() + deadline_s
    while len(got) < count and time.monotonic() < deadline:
        for msg in consumer.consume(num_messages=10_000, timeout=0.5):
            if msg.error() is not None:
                raise AssertionError(f"consumer error: {msg.error()}")
            got.append(
                Consumed(
                    msg.partition(),
                    msg.offset(),
                    msg.key(),
                    msg.value(),
                    normalize_headers(msg.headers()),
                )
            )
    assert len(got) >= count, f"consumed {len(got)} of {count} records in {deadline_s}s"
    # Nothing beyond what was produced may show up.
    for msg in consumer.consume(num_messages=100, timeout=0.5):
        raise AssertionError(f"unexpected extra record at offset {msg.offset()}: {msg.value()!r}")
    return got


def first_error(consumer: Any, deadline_s: float = 20.0) -> Any:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error() is not None:
            return msg.error()
        raise AssertionError(f"expected an error, got a record at offset {msg.offset()}")
    raise AssertionError(f"no error within {deadline_s}s")


def consume_error_code(
    config: dict[str, Any], topic: str, group: str, timeout_s: float
) -> int | None:
    """Subscribe to ``topic`` as ``group`` (earliest, no auto-commit): the code of the first
    error the consumer reports other than partition EOF, or None once it receives a record."""
    consumer = Consumer(
        {**config, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is None:
                return None
            if error.code() != KafkaError._PARTITION_EOF:
                return int(error.code())
        raise AssertionError(f"no record and no error from {topic} in {timeout_s}s")
    finally:
        consumer.close()


_ABANDONED_TRANSACTION = """
import sys, time
from confluent_kafka import Producer
bootstrap, topic, tid, count, partitions = sys.argv[1:6]
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
              "transaction.timeout.ms": 6000, "linger.ms": 0, "log_level": 0})
p.init_transactions(30)
p.begin_transaction()
for i in range(int(count)):
    p.produce(topic, value=b"hung-%d" % i, partition=i % int(partitions))
p.flush(30)
print("produced", flush=True)
time.sleep(600)
"""


def abandon_transaction(
    bootstrap: str, topic: str, transactional_id: str, count: int, partitions: int = 1
) -> float:
    """A producer process (``transaction.timeout.ms`` 6 s) writes ``count`` records round-robin
    over ``partitions`` in a transaction and is SIGKILLed with it open; the monotonic time its
    records were in the logs."""
    hung = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _ABANDONED_TRANSACTION,
            *(bootstrap, topic, transactional_id, str(count), str(partitions)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert hung.stdout is not None
        assert hung.stdout.readline().strip() == b"produced"
        produced_at = time.monotonic()
        hung.kill()
        hung.wait(10)
        return produced_at
    finally:
        if hung.poll() is None:
            hung.kill()
