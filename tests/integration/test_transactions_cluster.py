"""Transactions across brokers: 3 controllers + 3 brokers, RF 3, min.insync.replicas 2.

The transaction coordinator of a transactional id lives on one broker; the partitions of its
transactions are led by all three. COMMIT/ABORT markers reach the other leaders through the
coordinator's marker channel (WriteTxnMarkers over the inter-broker listener).

1. Committed and aborted transactions over a topic whose six partitions are led by all three
   brokers: read_committed sees exactly the committed records, in order per partition;
   read_uncommitted sees every record; LSO == HW on every partition at the end; the producer's
   next transaction completes.
2. SIGKILL in the window between EndTxn and CompleteCommit — of the coordinator's broker, and
   separately of a partition leader: the markers are resumed (by the new coordinator after the
   ``__transaction_state`` failover, or to the partition's new leader), no transaction is left
   in PrepareCommit or Ongoing, the LSO reaches the HW, read_committed sees exactly the
   committed records and the same producer completes a new transaction. A transaction whose
   producer died is aborted by ``transaction.timeout.ms`` on every leader alike.
3. Read-process-write with ``send_offsets_to_transaction`` across brokers, with the
   coordinator's broker SIGKILLed mid-way: the output holds each input record exactly once.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import confluent_kafka
import confluent_kafka.admin as admin_module
import pytest
from confluent_kafka.admin._listoffsets import OffsetSpec
from confluent_kafka.cimpl import NewTopic

from sparklog.client.connection import KafkaConnection
from tests.integration.ck_helpers import abandon_transaction
from tests.integration.cluster_harness import (
    REPLICATED_FAILOVER,
    Cluster,
    ClusterNode,
    running_cluster,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PARTITIONS = 6
CLIENT_TIMEOUT_S = 30.0
SETTINGS = {
    **REPLICATED_FAILOVER,
    "offsets.topic.num.partitions": 6,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "transaction.state.log.num.partitions": 6,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
}
OPEN_STATES = {"Ongoing", "PrepareCommit", "PrepareAbort"}

T = TypeVar("T")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_cluster(tmp_path, controllers=3, brokers=3, overrides=SETTINGS) as cluster:
        yield cluster


# -- cluster views ----------------------------------------------------------------------------
def admin(cluster: Cluster) -> Any:
    return admin_module.AdminClient(
        {"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0}
    )


def live_brokers(cluster: Cluster) -> list[ClusterNode]:
    return [b for b in cluster.brokers if b.is_running()]


def create_topic(cluster: Cluster, name: str) -> dict[int, int]:
    """A topic of PARTITIONS partitions, RF 3; partition -> leader once all have a full ISR."""
    client = admin(cluster)  # must outlive the future
    topic = NewTopic(name, PARTITIONS, 3)
    client.create_topics([topic], operation_timeout=30)[name].result(timeout=60)
    leaders: dict[int, int] = wait_until(
        f"{name} with a full ISR everywhere", lambda: full_isr_leaders(cluster, name)
    )
    return leaders


def full_isr_leaders(cluster: Cluster, topic: str) -> dict[int, int] | None:
    metadata = admin(cluster).list_topics(topic=topic, timeout=5)
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or len(found.partitions) != PARTITIONS:
        return None
    if any(p.leader < 0 or len(p.isrs) != 3 for p in found.partitions.values()):
        return None
    return {index: int(p.leader) for index, p in found.partitions.items()}


def request(node: ClusterNode, api: str, body: dict[str, Any], version: int | None = None) -> Any:
    with KafkaConnection.connect(node.address, timeout_s=10) as conn:
        return conn.request(api, body, version)


def find_coordinator(cluster: Cluster, key: str, key_type: int = 1) -> int:
    """The broker coordinating transactional id (key type 1) or group (0) ``key``."""

    def ask() -> int | None:
        for broker in live_brokers(cluster):
            try:
                body = request(broker, "FindCoordinator", {"key": key, "key_type": key_type}, 3)
            except OSError:
                continue
            if body["error_code"] == 0:
                return int(body["node_id"])
        return None

    return int(wait_until(f"the coordinator of {key}", ask, 60))


def describe_txn(cluster: Cluster, transactional_id: str) -> dict[str, Any]:
    broker = cluster.broker(find_coordinator(cluster, transactional_id))
    body = request(broker, "DescribeTransactions", {"transactional_ids": [transactional_id]})
    [state] = body["transaction_states"]
    assert state["error_code"] == 0, state
    return dict(state)


def open_transactions(cluster: Cluster) -> list[tuple[str, str]]:
    """(transactional id, state) of every transaction not complete, over the live brokers."""
    found = []
    for broker in live_brokers(cluster):
        body = request(
            broker,
            "ListTransactions",
            {"state_filters": [], "producer_id_filters": [], "duration_filter": -1},
        )
        assert body["error_code"] == 0, body
        found += [
            (t["transactional_id"], t["transaction_state"])
            for t in body["transaction_states"]
            if t["transaction_state"] in OPEN_STATES
        ]
    return found


def end_offsets(cluster: Cluster, topic: str, committed: bool) -> dict[int, int]:
    """ListOffsets(latest) per partition: the LSO for read_committed, the HW otherwise."""
    level = (
        confluent_kafka.IsolationLevel.READ_COMMITTED
        if committed
        else confluent_kafka.IsolationLevel.READ_UNCOMMITTED
    )
    client = admin(cluster)
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    wanted = {confluent_kafka.TopicPartition(topic, p): latest for p in range(PARTITIONS)}
    futures = client.list_offsets(wanted, isolation_level=level, request_timeout=10)
    return {tp.partition: int(f.result(timeout=15).offset) for tp, f in futures.items()}


def lso_reaches_hw(cluster: Cluster, topic: str) -> dict[int, int] | None:
    hw = end_offsets(cluster, topic, committed=False)
    return hw if end_offsets(cluster, topic, committed=True) == hw else None


def wait_settled(cluster: Cluster, topic: str, transactional_id: str) -> None:
    """No open transaction anywhere, the id's last one complete, LSO == HW on every partition."""
    wait_until(
        "no transaction left open",
        lambda: not open_transactions(cluster),
        60,
        tolerate=(OSError, ConnectionError),
    )
    state = wait_until(
        f"{transactional_id} complete",
        lambda: (
            (s := describe_txn(cluster, transactional_id))["transaction_state"]
            in ("CompleteCommit", "CompleteAbort")
            and s
        ),
        60,
        tolerate=(OSError, ConnectionError, AssertionError),
    )
    assert state["transaction_state"] in ("CompleteCommit", "CompleteAbort")
    wait_until(
        "LSO == HW on every partition",
        lambda: lso_reaches_hw(cluster, topic),
        60,
        tolerate=(confluent_kafka.KafkaException,),
    )


def read_all(
    cluster: Cluster, topic: str, isolation: str, count: int, timeout_s: float = 60.0
) -> dict[int, list[str]]:
    """Values per partition in offset order, read from the start until ``count`` arrived and
    one more second passed (so anything extra is seen too)."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"reader-{random.getrandbits(32):x}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 100,
            "log_level": 0,
        }
    )
    consumer.assign(
        [
            confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
            for p in range(PARTITIONS)
        ]
    )
    seen: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    got = 0
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if got >= count:
                deadline = min(deadline, time.monotonic() + 1.0)
            for msg in consumer.consume(1000, timeout=0.2):
                partition, value = msg.partition(), msg.value()
                if msg.error() is None and partition is not None and value is not None:
                    seen[partition].append(value.decode())
                    got += 1
    finally:
        consumer.close()
    return seen


# -- producing ----------------------------------------------------------------------------------
def txn_producer(cluster: Cluster, transactional_id: str) -> Any:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "transactional.id": transactional_id,
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
            "transaction.timeout.ms": 60_000,
            "log_level": 0,
        }
    )
    producer.init_transactions(CLIENT_TIMEOUT_S)
    return producer


def retrying(call: Callable[[], T], deadline_s: float = 90.0) -> T:
    """``call`` again while the client says its error is retriable (a coordinator or a leader
    is failing over)."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return call()
        except confluent_kafka.KafkaException as exc:
            if not exc.args[0].retriable() or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class Ledger:
    """What a test's transactions wrote: committed values per partition (in order) and the
    aborted ones."""

    def __init__(self) -> None:
        self.committed: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
        self.aborted: set[str] = set()

    @property
    def committed_count(self) -> int:
        return sum(len(v) for v in self.committed.values())

    def run(self, producer: Any, topic: str, name: str, commit: bool, rng: random.Random) -> None:
        """One transaction touching every partition (so every leader needs a marker)."""
        sent = self.send(producer, topic, name, rng)
        if commit:
            self.commit(producer, sent)
        else:
            assert producer.flush(CLIENT_TIMEOUT_S) == 0  # aborted records must reach the logs
            retrying(lambda: producer.abort_transaction(CLIENT_TIMEOUT_S))
            self.aborted |= {v for values in sent.values() for v in values}

    def send(
        self, producer: Any, topic: str, name: str, rng: random.Random
    ) -> dict[int, list[str]]:
        """Begin a transaction and write to every partition; the values per partition."""
        sent: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
        retrying(producer.begin_transaction)
        for seq in range(PARTITIONS + rng.randrange(8)):
            partition = seq if seq < PARTITIONS else rng.randrange(PARTITIONS)
            value = f"{name}:{seq}"
            producer.produce(topic, value=value.encode(), partition=partition)
            sent[partition].append(value)
        return sent

    def commit(self, producer: Any, sent: dict[int, list[str]]) -> None:
        retrying(lambda: producer.commit_transaction(CLIENT_TIMEOUT_S))
        for partition, values in sent.items():
            self.committed[partition] += values

    def check(self, cluster: Cluster, topic: str) -> None:
        committed = read_all(cluster, topic, "read_committed", self.committed_count)
        everything = read_all(
            cluster, topic, "read_uncommitted", self.committed_count + len(self.aborted)
        )
        assert committed == self.committed, "read_committed: exactly the committed, in order"
        assert sorted(v for values in everything.values() for v in values) == sorted(
            [v for values in self.committed.values() for v in values] + list(self.aborted)
        ), "read_uncommitted: every record once"


# -- 1 --------------------------------------------------------------------------------------------
def test_markers_reach_leaders_on_every_broker(cluster: Cluster) -> None:
    topic = "spread"
    leaders = create_topic(cluster, topic)
    assert set(leaders.values()) == {b.node_id for b in cluster.brokers}, leaders
    tid = "spread-tid"
    producer = txn_producer(cluster, tid)
    print(f"coordinator of {tid}: broker {find_coordinator(cluster, tid)}; leaders {leaders}")

    rng = random.Random(16)
    ledger = Ledger()
    outcomes = [True, False] * 4 + [rng.random() < 0.5 for _ in range(8)]
    started = time.monotonic()
    for number, commit in enumerate(outcomes):
        ledger.run(producer, topic, f"t{number}", commit, rng)
    elapsed = time.monotonic() - started
    print(f"{len(outcomes)} transactions over 3 leaders in {elapsed:.2f}s")
    wait_settled(cluster, topic, tid)
    ledger.check(cluster, topic)

    # Not stuck: the next transaction of the same producer completes.
    ledger.run(producer, topic, "next", True, rng)
    wait_settled(cluster, topic, tid)
    assert describe_txn(cluster, tid)["transaction_state"] == "CompleteCommit"
    ledger.check(cluster, topic)
    producer.flush(CLIENT_TIMEOUT_S)


# -- 2 --------------------------------------------------------------------------------------------
# The window between EndTxn and CompleteCommit is held open on purpose: one partition leader
# (the "blocker", never the coordinator) is SIGSTOPped after the transaction's records are
# acknowledged and before commit_transaction. EndTxn still answers (PrepareCommit is durable once
# the ISR of the __transaction_state partition has shrunk past the stopped broker), but the
# blocker cannot take its marker, so the transaction stays in PrepareCommit until the blocker is
# fenced: a session timeout far above replica.lag.time.max.ms keeps that window seconds wide,
# and the test asserts it saw PrepareCommit before the SIGKILL.
WINDOW_SETTINGS = {**SETTINGS, "broker.session.timeout.ms": 15000, "replica.lag.time.max.ms": 2000}


@pytest.fixture
def window_cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_cluster(tmp_path, controllers=3, brokers=3, overrides=WINDOW_SETTINGS) as cluster:
        yield cluster


def _signal(node: ClusterNode, signum: signal.Signals) -> None:
    assert node.process is not None and node.process.poll() is None, f"{node.node_id} not running"
    os.kill(node.process.pid, signum)


def _kill_in_commit_window(cluster: Cluster, kill_coordinator: bool) -> None:
    topic = "window"
    leaders = create_topic(cluster, topic)
    tid = "window-tid"
    producer = txn_producer(cluster, tid)
    coordinator = find_coordinator(cluster, tid)
    blocker = cluster.broker(next(b for b in leaders.values() if b != coordinator))
    victim = cluster.broker(coordinator) if kill_coordinator else blocker
    print(
        f"coordinator {coordinator}, leaders {leaders}, blocker {blocker.node_id}, "
        f"victim {victim.node_id}"
    )

    rng = random.Random(17)
    ledger = Ledger()
    for number, commit in enumerate([True, False, True]):
        ledger.run(producer, topic, f"before{number}", commit, rng)
    sent = ledger.send(producer, topic, "window", rng)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0
    _signal(blocker, signal.SIGSTOP)
    try:
        ledger.commit(producer, sent)  # EndTxn answered: PrepareCommit is durable
        # Asked of the coordinator itself: FindCoordinator could wait on the stopped blocker.
        body = request(
            cluster.broker(coordinator), "DescribeTransactions", {"transactional_ids": [tid]}
        )
        state = body["transaction_states"][0]["transaction_state"]
        assert state == "PrepareCommit", f"the window is not open: {state}"
        victim.kill()
        killed_at = time.monotonic()
    finally:
        if blocker.is_running():
            _signal(blocker, signal.SIGCONT)

    wait_settled(cluster, topic, tid)
    resumed = [
        b.node_id
        for b in live_brokers(cluster)
        if f"Resuming the markers of {tid}" in b.log_tail(1 << 20)
    ]
    print(
        f"settled {time.monotonic() - killed_at:.2f}s after the kill; markers resumed by a new "
        f"coordinator: {resumed or 'none'}"
    )
    if kill_coordinator:
        assert resumed, "a new coordinator must resume the markers from __transaction_state"
    assert describe_txn(cluster, tid)["transaction_state"] == "CompleteCommit"
    ledger.check(cluster, topic)

    # The same producer is not stuck: its next transaction completes on two brokers...
    ledger.run(producer, topic, "after", True, rng)
    wait_settled(cluster, topic, tid)
    # ...and with the victim back.
    victim.launch()
    victim.wait_ready()
    wait_until("a full ISR again", lambda: full_isr_leaders(cluster, topic), 90)
    ledger.run(producer, topic, "rejoined", False, rng)
    ledger.run(producer, topic, "rejoined", True, rng)
    wait_settled(cluster, topic, tid)
    ledger.check(cluster, topic)
    producer.flush(CLIENT_TIMEOUT_S)


def test_coordinator_killed_between_end_txn_and_complete_commit(window_cluster: Cluster) -> None:
    _kill_in_commit_window(window_cluster, kill_coordinator=True)


def test_partition_leader_killed_between_end_txn_and_complete_commit(
    window_cluster: Cluster,
) -> None:
    _kill_in_commit_window(window_cluster, kill_coordinator=False)


def test_timed_out_transaction_is_aborted_on_every_leader(cluster: Cluster) -> None:
    topic = "hung"
    create_topic(cluster, topic)
    plain = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "log_level": 0}
    )
    for p in range(PARTITIONS):
        plain.produce(topic, value=b"before", partition=p)
    assert plain.flush(CLIENT_TIMEOUT_S) == 0
    tid = "hung-tid"
    # 12 records over the six partitions, the producer killed with its transaction open
    abandon_transaction(cluster.bootstrap_servers, topic, tid, 2 * PARTITIONS, PARTITIONS)
    for p in range(PARTITIONS):
        plain.produce(topic, value=b"after", partition=p)
    assert plain.flush(CLIENT_TIMEOUT_S) == 0
    assert end_offsets(cluster, topic, committed=True) == dict.fromkeys(range(PARTITIONS), 1)

    wait_settled(cluster, topic, tid)
    state = describe_txn(cluster, tid)
    assert state["transaction_state"] == "CompleteAbort"
    assert state["producer_epoch"] == 1, "the timeout fenced the hung producer"
    # before, 2 hung, the ABORT marker, after
    assert end_offsets(cluster, topic, committed=True) == dict.fromkeys(range(PARTITIONS), 5)
    expected = {p: ["before", "after"] for p in range(PARTITIONS)}
    assert read_all(cluster, topic, "read_committed", 2 * PARTITIONS) == expected
    everything = read_all(cluster, topic, "read_uncommitted", 4 * PARTITIONS)
    assert sum(len(v) for v in everything.values()) == 4 * PARTITIONS


# -- 3 --------------------------------------------------------------------------------------------
def _rewind(consumer: Any) -> None:
    """Back to the group's committed offsets (the aborted transaction's input again)."""
    committed = retrying(lambda: consumer.committed(consumer.assignment(), timeout=10))
    for tp in committed:
        if tp.offset < 0:
            tp.offset = confluent_kafka.OFFSET_BEGINNING
        consumer.seek(tp)


def test_read_process_write_is_exactly_once_across_a_broker_kill(cluster: Cluster) -> None:
    source, sink = "rpw-in", "rpw-out"
    create_topic(cluster, source)
    create_topic(cluster, sink)
    total = 900
    plain = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "log_level": 0}
    )
    for i in range(total):
        plain.produce(source, key=str(i).encode(), value=f"v{i}".encode(), partition=i % 6)
    assert plain.flush(CLIENT_TIMEOUT_S) == 0

    tid, group = "rpw-tid", "rpw-group"
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "session.timeout.ms": 10_000,
            "log_level": 0,
        }
    )
    consumer.subscribe([source])
    producer = txn_producer(cluster, tid)
    # The transaction coordinator's broker, unless it also coordinates the group: librdkafka
    # 2.16's send_offsets_to_transaction hangs past its timeout when the group coordinator's
    # broker leaves the metadata (confluentinc/librdkafka#5511); then another broker.
    txn_coordinator = find_coordinator(cluster, tid)
    group_coordinator = find_coordinator(cluster, group, key_type=0)
    victim = cluster.broker(
        txn_coordinator
        if txn_coordinator != group_coordinator
        else next(b.node_id for b in cluster.brokers if b.node_id != group_coordinator)
    )
    print(f"transaction coordinator {txn_coordinator}, group coordinator {group_coordinator}")
    done: list[int] = []
    aborted = 0
    killed = False
    idle_since = time.monotonic()
    try:
        while len(set(done)) < total or time.monotonic() - idle_since < 2:
            assert time.monotonic() - idle_since < 60, f"no progress at {len(done)} of {total}"
            batch = [m for m in consumer.consume(50, 0.5) if m.error() is None]
            if not batch:
                continue
            if not killed and len(done) >= total // 3:
                print(f"killing broker {victim.node_id}")
                victim.kill()
                killed = True
            try:
                retrying(producer.begin_transaction)
                for msg in batch:
                    value = (msg.value() or b"").upper()
                    producer.produce(sink, key=msg.key(), value=value, partition=msg.partition())
                retrying(
                    lambda: producer.send_offsets_to_transaction(
                        consumer.position(consumer.assignment()),
                        consumer.consumer_group_metadata(),
                        CLIENT_TIMEOUT_S,
                    )
                )
                retrying(lambda: producer.commit_transaction(CLIENT_TIMEOUT_S))
            except confluent_kafka.KafkaException as exc:
                if not exc.args[0].txn_requires_abort():
                    raise
                print(f"aborting after {exc.args[0]}")
                retrying(lambda: producer.abort_transaction(CLIENT_TIMEOUT_S))
                _rewind(consumer)
                aborted += 1
                continue
            done += [int(m.key() or b"-1") for m in batch]
            idle_since = time.monotonic()
    finally:
        consumer.close()
    assert killed
    assert sorted(done) == list(range(total)), "the loop committed each input once"
    print(f"{total} records through {aborted} aborted transaction(s) and one broker kill")
    wait_settled(cluster, sink, tid)

    outputs = read_all(cluster, sink, "read_committed", total)
    values = [v for values in outputs.values() for v in values]
    assert sorted(values) == sorted(f"V{i}" for i in range(total)), "each input exactly once"
    producer.flush(CLIENT_TIMEOUT_S)
