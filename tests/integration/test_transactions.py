"""Transactions with confluent-kafka against a real node (issue 5).

- A transactional producer commits and aborts transactions at random across 3 partitions while
  read_committed and read_uncommitted consumers read: read_committed never sees an aborted
  record, sees every committed one, in order per partition; read_uncommitted sees both.
- A read-process-write loop with ``send_offsets_to_transaction`` is exactly-once across a
  SIGKILL of the node: the output holds each input record exactly once.
- A hung transaction (its producer process is SIGKILLed mid-transaction) holds the last stable
  offset (ListOffsets under read_committed, read_committed consumers) until
  ``transaction.timeout.ms`` aborts it; then the records after it become visible and the hung
  ones never do.
- Admin: DescribeTransactions and ListTransactions show the coordinator's state.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    IsolationLevel,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec

from sparklog.client.connection import KafkaConnection
from tests.integration.ck_helpers import abandon_transaction, create_topic
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node

pytestmark = pytest.mark.integration

# Short timers so a hung transaction is aborted within seconds.
TXN_OVERRIDES = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}
CLIENT_TIMEOUT_S = 30.0


def describe_txn(node: Node, transactional_id: str) -> dict[str, Any]:
    """DescribeTransactions over the node's own client (confluent-kafka has no admin call)."""
    with KafkaConnection.connect(node.bootstrap) as conn:
        body = conn.request("DescribeTransactions", {"transactional_ids": [transactional_id]})
    [state] = body["transaction_states"]
    return dict(state)


def list_txns(node: Node, states: list[str] | None = None) -> list[dict[str, Any]]:
    with KafkaConnection.connect(node.bootstrap) as conn:
        body = conn.request(
            "ListTransactions",
            {"state_filters": states or [], "producer_id_filters": [], "duration_filter": -1},
        )
    assert body["error_code"] == 0
    return [dict(t) for t in body["transaction_states"]]


def txn_producer(node: Node, transactional_id: str, **extra: Any) -> Any:
    config = {
        "bootstrap.servers": node.bootstrap,
        "transactional.id": transactional_id,
        "linger.ms": 5,
        "message.timeout.ms": 60_000,
    }
    config.update(extra)
    producer = Producer(config)
    producer.init_transactions(CLIENT_TIMEOUT_S)
    return producer


def reader(node: Node, isolation: str, **extra: Any) -> Any:
    config = {
        "bootstrap.servers": node.bootstrap,
        "group.id": f"reader-{random.getrandbits(32):x}",
        "enable.auto.commit": False,
        "isolation.level": isolation,
        "enable.partition.eof": False,
        "fetch.wait.max.ms": 100,
    }
    config.update(extra)
    return Consumer(config)


class Collector(threading.Thread):
    """Reads assigned partitions from the beginning until told to stop (or until ``want``
    records arrived)."""

    def __init__(self, node: Node, topic: str, partitions: int, isolation: str) -> None:
        super().__init__(daemon=True)
        self.consumer = reader(node, isolation)
        self.consumer.assign(
            [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
        )
        self.records: list[tuple[int, int, str]] = []  # partition, offset, value
        self.want: int | None = None
        self.stop_at = time.monotonic() + 120
        self.error: str | None = None

    def run(self) -> None:
        try:
            while time.monotonic() < self.stop_at:
                if self.want is not None and len(self.records) >= self.want:
                    # keep reading briefly: anything extra is a bug the test must see
                    self.stop_at = min(self.stop_at, time.monotonic() + 1.0)
                msg = self.consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    self.error = str(msg.error())
                    continue
                self.records.append((msg.partition(), msg.offset(), msg.value().decode()))
        finally:
            self.consumer.close()


def test_random_commits_and_aborts_are_isolated(node_factory: NodeFactory) -> None:
    node = node_factory.create(TXN_OVERRIDES)
    topic = unique_topic("txn")
    create_topic(node, topic, 3)
    committed_reader = Collector(node, topic, 3, "read_committed")
    uncommitted_reader = Collector(node, topic, 3, "read_uncommitted")
    committed_reader.start()
    uncommitted_reader.start()

    rng = random.Random(5)
    producer = txn_producer(node, unique_topic("tid"))
    committed: dict[int, list[str]] = {0: [], 1: [], 2: []}
    aborted: set[str] = set()
    for txn in range(30):
        producer.begin_transaction()
        sent: dict[int, list[str]] = {0: [], 1: [], 2: []}
        for seq in range(rng.randint(1, 12)):
            partition = rng.randrange(3)
            value = f"{txn}:{seq}"
            producer.produce(topic, value=value.encode(), partition=partition)
            sent[partition].append(value)
        if rng.random() < 0.5:
            producer.commit_transaction(CLIENT_TIMEOUT_S)
            for partition, values in sent.items():
                committed[partition].extend(values)
        else:
            producer.flush(CLIENT_TIMEOUT_S)  # so the aborted records really reach the log
            producer.abort_transaction(CLIENT_TIMEOUT_S)
            aborted |= {v for values in sent.values() for v in values}
    producer.flush(CLIENT_TIMEOUT_S)
    total_committed = sum(len(v) for v in committed.values())
    assert total_committed and aborted, "the seed must produce both outcomes"
    committed_reader.want = total_committed
    uncommitted_reader.want = total_committed + len(aborted)
    committed_reader.join(150)
    uncommitted_reader.join(150)

    assert committed_reader.error is None and uncommitted_reader.error is None
    seen: dict[int, list[str]] = {0: [], 1: [], 2: []}
    for partition, _, value in committed_reader.records:
        seen[partition].append(value)
    assert not aborted & {v for values in seen.values() for v in values}, "saw aborted records"
    assert seen == committed, "read_committed must see every committed record, in order"
    uncommitted = {value for _, _, value in uncommitted_reader.records}
    assert uncommitted == set().union(*committed.values()) | aborted
    assert len(uncommitted_reader.records) == total_committed + len(aborted)


def _process(
    node: Node, source: str, sink: str, group: str, transactional_id: str, stop_after: int | None
) -> int:
    """One read-process-write worker: returns how many input records it committed; with
    ``stop_after`` it returns mid-transaction (its client abandoned, as in a crash)."""
    consumer = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "session.timeout.ms": 6000,
        }
    )
    consumer.subscribe([source])
    producer = txn_producer(node, transactional_id)
    done = 0
    idle_since = time.monotonic()
    try:
        while time.monotonic() - idle_since < 8:
            batch = consumer.consume(50, 0.5)
            batch = [m for m in batch if not m.error()]
            if not batch:
                continue
            idle_since = time.monotonic()
            producer.begin_transaction()
            for msg in batch:
                producer.produce(sink, key=msg.key(), value=(msg.value() or b"").upper())
            if stop_after is not None and done + len(batch) > stop_after:
                producer.flush(CLIENT_TIMEOUT_S)
                return done  # crash: the transaction stays open
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()),
                consumer.consumer_group_metadata(),
                CLIENT_TIMEOUT_S,
            )
            producer.commit_transaction(CLIENT_TIMEOUT_S)
            done += len(batch)
        return done
    finally:
        if stop_after is None:
            consumer.close()


def test_read_process_write_is_exactly_once_across_a_node_kill(node_factory: NodeFactory) -> None:
    node = node_factory.create(TXN_OVERRIDES)
    source, sink = unique_topic("rpw-in"), unique_topic("rpw-out")
    create_topic(node, source, 2)
    create_topic(node, sink, 2)
    total = 600
    plain = Producer({"bootstrap.servers": node.bootstrap, "acks": "all"})
    for i in range(total):
        plain.produce(source, key=str(i).encode(), value=f"v{i}".encode(), partition=i % 2)
    plain.flush(CLIENT_TIMEOUT_S)
    group, tid = unique_topic("rpw-group"), unique_topic("rpw-tid")

    first = _process(node, source, sink, group, tid, stop_after=250)
    assert 0 < first <= 250
    node.restart(graceful=False)  # SIGKILL with a transaction open
    second = _process(node, source, sink, group, tid, stop_after=None)
    assert first + second == total

    out = reader(node, "read_committed")
    out.assign([TopicPartition(sink, p, OFFSET_BEGINNING) for p in range(2)])
    keys: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(keys) < total:
        msg = out.poll(0.5)
        if msg is not None and not msg.error():
            keys.append(int(msg.key()))
            assert msg.value() == f"V{int(msg.key())}".encode()
    end = time.monotonic() + 2
    while time.monotonic() < end:
        msg = out.poll(0.2)
        if msg is not None and not msg.error():
            keys.append(int(msg.key()))
    out.close()
    assert sorted(keys) == list(range(total)), "each input exactly once in the output"


def _lso(admin: Any, topic: str) -> int:
    tp = TopicPartition(topic, 0)
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    futures = admin.list_offsets(
        {tp: latest},
        isolation_level=IsolationLevel.READ_COMMITTED,
        request_timeout=CLIENT_TIMEOUT_S,
    )
    return int(futures[tp].result(timeout=CLIENT_TIMEOUT_S).offset)


def test_hung_transaction_holds_the_lso_until_its_timeout(node_factory: NodeFactory) -> None:
    node = node_factory.create(TXN_OVERRIDES)
    topic = unique_topic("hung")
    create_topic(node, topic, 1)
    plain = Producer({"bootstrap.servers": node.bootstrap, "acks": "all"})
    plain.produce(topic, value=b"before", partition=0)
    plain.flush(CLIENT_TIMEOUT_S)

    tid = unique_topic("hung-tid")
    started = abandon_transaction(node.bootstrap, topic, tid, 5)
    plain.produce(topic, value=b"after", partition=0)
    plain.flush(CLIENT_TIMEOUT_S)

    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    assert _lso(admin, topic) == 1, "the open transaction starts at offset 1"
    state = describe_txn(node, tid)
    assert state["error_code"] == 0 and state["transaction_state"] == "Ongoing"
    assert state["topics"] == [{"topic": topic, "partitions": [0]}]

    committed = reader(node, "read_committed")
    committed.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen: list[bytes] = []
    # until the timeout (6 s from the first record) the reader is stuck after "before"
    while time.monotonic() - started < 4:
        msg = committed.poll(0.2)
        if msg is not None and not msg.error():
            seen.append(msg.value())
    assert seen == [b"before"]
    assert _lso(admin, topic) == 1

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and b"after" not in seen:
        msg = committed.poll(0.2)
        if msg is not None and not msg.error():
            seen.append(msg.value())
    committed.close()
    assert seen == [b"before", b"after"], "aborted by timeout: hung records never visible"
    # 1 before + 5 hung + 1 abort marker + 1 after
    assert _lso(admin, topic) == 8
    state = describe_txn(node, tid)
    assert state["transaction_state"] == "CompleteAbort"
    assert state["producer_epoch"] == 1, "the timeout fenced the hung producer"


def test_fenced_producer_and_admin_views(node_factory: NodeFactory) -> None:
    node = node_factory.create(TXN_OVERRIDES)
    topic = unique_topic("fence")
    create_topic(node, topic, 1)
    tid = unique_topic("fence-tid")
    old = txn_producer(node, tid)
    old.begin_transaction()
    old.produce(topic, value=b"zombie", partition=0)
    old.flush(CLIENT_TIMEOUT_S)
    new = txn_producer(node, tid)  # aborts the old instance's transaction, bumps the epoch
    with pytest.raises(KafkaException) as fenced:
        old.commit_transaction(CLIENT_TIMEOUT_S)
    assert fenced.value.args[0].fatal()
    new.begin_transaction()
    new.produce(topic, value=b"live", partition=0)
    new.commit_transaction(CLIENT_TIMEOUT_S)

    assert tid in {t["transactional_id"] for t in list_txns(node, ["CompleteCommit"])}
    assert tid not in {t["transactional_id"] for t in list_txns(node, ["Ongoing"])}
    state = describe_txn(node, tid)
    assert state["transaction_state"] == "CompleteCommit" and state["producer_epoch"] == 2
    assert describe_txn(node, "no-such-id")["error_code"] == 105  # TRANSACTIONAL_ID_NOT_FOUND

    committed = reader(node, "read_committed")
    committed.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values: list[bytes] = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and b"live" not in values:
        msg = committed.poll(0.2)
        if msg is not None and not msg.error():
            values.append(msg.value())
    committed.close()
    assert values == [b"live"]
