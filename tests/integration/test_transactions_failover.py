"""Every transaction finishes while leaders and the coordinator's broker fail: 3 controllers +
3 brokers, RF 3, min.insync.replicas 2.

One transactional confluent-kafka producer (the chaos workload's settings: 15 s transaction
timeout, 14 s message timeout) runs transactions back to back, each writing to all six
partitions (led by all three brokers) and then committing or aborting, while a seeded fault
thread SIGKILLs (and restarts) or SIGSTOPs (short, and past the broker session timeout) the
coordinator's broker or a partition leader, or SIGSTOPs both other brokers past
replica.lag.time.max.ms (the transaction log and the markers wait on the ISR), one
fault at a time, waiting for a full ISR in between. The producer handles errors as an
application must: a retriable commit is retried, an abortable error is followed by
``abort_transaction``. Asserted:

- no fatal error (the symptom was INVALID_TXN_STATE on ``abort_transaction`` during a
  failover), and every transaction ended committed or aborted;
- afterwards no transaction is left open anywhere and the LSO reaches the HW everywhere;
- read_committed sees exactly the committed records, in order per partition, and the same
  producer still commits.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest

from tests.integration.cluster_harness import Cluster, ClusterNode, running_cluster, wait_until
from tests.integration.test_transactions_cluster import (
    PARTITIONS,
    SETTINGS,
    create_topic,
    find_coordinator,
    full_isr_leaders,
    read_all,
    wait_settled,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

SEED = int(os.environ.get("SPARKLOG_TXN_FAILOVER_SEED", "16"))
FAULTS = int(os.environ.get("SPARKLOG_TXN_FAILOVER_FAULTS", "8"))
FAILOVER_SETTINGS = {
    **SETTINGS,
    "broker.session.timeout.ms": 6000,
    "replica.lag.time.max.ms": 4000,
    "transaction.state.log.num.partitions": 3,
}
TID = "failover-tid"
TOPIC = "failover"
API_TIMEOUT_S = 30.0


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_cluster(tmp_path, controllers=3, brokers=3, overrides=FAILOVER_SETTINGS) as c:
        yield c


class Nemesis(threading.Thread):
    """One fault at a time against the coordinator's broker or a partition leader.

    The brokers it restarts are its children with PR_SET_PDEATHSIG, which the kernel ties to
    the thread that forked them: the thread stays alive (``finished`` set) until ``release``,
    or every restarted broker would die with it."""

    def __init__(self, cluster: Cluster, rng: random.Random, faults: int) -> None:
        super().__init__(name="nemesis", daemon=True)
        self.cluster = cluster
        self.rng = rng
        self.faults = faults
        self.done: list[str] = []
        self.error: BaseException | None = None
        self.finished = threading.Event()
        self.release = threading.Event()

    def run(self) -> None:
        try:
            for _ in range(self.faults):
                if self.release.wait(self.rng.uniform(2.0, 4.0)):
                    break
                self.one()
                wait_until("a full ISR", lambda: full_isr_leaders(self.cluster, TOPIC), 120)
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            for broker in self.cluster.brokers:
                if not broker.is_running():
                    broker.launch()
                    broker.wait_ready()
            self.finished.set()
        self.release.wait()

    def target(self, kind: str) -> ClusterNode:
        if kind.endswith("coordinator"):
            return self.cluster.broker(find_coordinator(self.cluster, TID))
        leaders = wait_until("leaders", lambda: full_isr_leaders(self.cluster, TOPIC), 120)
        coordinator = find_coordinator(self.cluster, TID)
        others = sorted({b for b in leaders.values() if b != coordinator}) or [coordinator]
        return self.cluster.broker(self.rng.choice(others))

    def stop_followers(self) -> None:
        """Both brokers but the coordinator's paused past replica.lag.time.max.ms: appends to
        ``__transaction_state`` and markers wait on the ISR, or fail with NOT_ENOUGH_REPLICAS
        once it shrank, until they are back (kept under the message timeout:
        a transaction whose partitions cannot be added before its records time out ends
        INVALID_TXN_STATE after a commit, in Kafka too)."""
        coordinator = find_coordinator(self.cluster, TID)
        paused = [b for b in self.cluster.brokers if b.node_id != coordinator]
        for node in paused:
            assert node.process is not None
            os.kill(node.process.pid, signal.SIGSTOP)
        try:
            time.sleep(6.5)
        finally:
            for node in paused:
                assert node.process is not None
                os.kill(node.process.pid, signal.SIGCONT)
        what = f"stop_followers {[b.node_id for b in paused]} for 6.5s"
        print(f"{stamp()} fault: {what}")
        self.done.append(what)

    def one(self) -> None:
        print(f"{stamp()} starting a fault")
        kind = self.rng.choice(
            ["kill_coordinator", "kill_leader", "stop_coordinator", "stop_leader", "stop_followers"]
        )
        if kind == "stop_followers":
            self.stop_followers()
            return
        node = self.target(kind)
        if kind.startswith("kill"):
            node.kill()
            time.sleep(self.rng.uniform(1.0, 4.0))
            node.launch()
            node.wait_ready()
            what = f"{kind} {node.node_id}"
        else:
            pause_s = self.rng.choice([2.0, 9.0])  # under and past broker.session.timeout.ms
            assert node.process is not None
            os.kill(node.process.pid, signal.SIGSTOP)
            try:
                time.sleep(pause_s)
            finally:
                os.kill(node.process.pid, signal.SIGCONT)
            what = f"{kind} {node.node_id} for {pause_s:.0f}s"
        print(f"{stamp()} fault: {what}")
        self.done.append(what)


def stamp() -> str:
    return time.strftime("%H:%M:%S")


def producer_for(cluster: Cluster) -> Any:
    """The chaos workload's transactional producer; its EOS debug log (coordinator lookups,
    AddPartitionsToTxn, EndTxn, epoch bumps) goes to ``librdkafka-eos.log`` by the nodes'."""
    logger = logging.getLogger(f"librdkafka.{TID}")
    handler = logging.FileHandler(cluster.root / "librdkafka-eos.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "transactional.id": TID,
            "transaction.timeout.ms": 15_000,
            "message.timeout.ms": 14_000,
            # librdkafka keeps the coordinator it was told of and reconnects to it with a
            # backoff growing to 10 s; a coordinator killed and restarted (no longer the
            # coordinator) is then retried too late. Its partitions never added within the
            # message timeout, the transaction's EndTxn(abort) finds the previous one
            # CompleteCommit: INVALID_TXN_STATE, fatal, as with Apache Kafka.
            "reconnect.backoff.max.ms": 1000,
            "linger.ms": 5,
            "debug": "eos",
        },
        logger=logger,
    )
    producer.init_transactions(60)
    return producer


class Workload:
    """Transactions over every partition; what ended how."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.committed: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
        self.aborted = 0
        self.abortable: list[str] = []
        self.fatal: list[str] = []

    def one(self, producer: Any, number: int) -> None:
        values = {p: f"t{number}:p{p}" for p in range(PARTITIONS)}
        abort = self.rng.random() < 0.3
        try:
            producer.begin_transaction()
            for partition, value in values.items():
                producer.produce(TOPIC, value=value.encode(), partition=partition)
            if producer.flush(API_TIMEOUT_S) != 0:
                raise confluent_kafka.KafkaException(
                    confluent_kafka.KafkaError(
                        confluent_kafka.KafkaError._TIMED_OUT,
                        "flush timed out",
                        txn_requires_abort=True,
                    )
                )
            if abort:
                self.abort(producer)
                return
            self.commit(producer)
            for partition, value in values.items():
                self.committed[partition].append(value)
        except confluent_kafka.KafkaException as exc:
            err = exc.args[0]
            if not err.txn_requires_abort():
                self.fatal.append(f"transaction {number}: {err}")
                raise
            self.abortable.append(f"{stamp()} transaction {number}: {err}")
            self.abort(producer)

    @staticmethod
    def resumable(err: Any) -> bool:
        """librdkafka: a commit or abort that timed out is resumed by calling it again."""
        return bool(err.retriable()) or err.code() == confluent_kafka.KafkaError._TIMED_OUT

    def commit(self, producer: Any) -> None:
        deadline = time.monotonic() + 120
        while True:
            try:
                producer.commit_transaction(API_TIMEOUT_S)
                return
            except confluent_kafka.KafkaException as exc:
                err = exc.args[0]
                print(f"{stamp()} commit: {err}")
                if err.txn_requires_abort() or not self.resumable(err):
                    raise
                if time.monotonic() > deadline:
                    self.fatal.append(f"commit not finished in 120 s: {err}")
                    raise

    def abort(self, producer: Any) -> None:
        deadline = time.monotonic() + 120
        while True:
            try:
                producer.abort_transaction(API_TIMEOUT_S)
                self.aborted += 1
                return
            except confluent_kafka.KafkaException as exc:
                err = exc.args[0]
                print(f"{stamp()} abort: {err}")
                if not self.resumable(err) or time.monotonic() > deadline:
                    self.fatal.append(f"abort: {err}")
                    raise


def test_every_transaction_finishes_through_failovers(cluster: Cluster) -> None:
    leaders = create_topic(cluster, TOPIC)
    assert set(leaders.values()) == {b.node_id for b in cluster.brokers}, leaders
    rng = random.Random(SEED)
    print(f"seed {SEED}; coordinator of {TID}: {find_coordinator(cluster, TID)}; {leaders}")
    producer = producer_for(cluster)
    workload = Workload(rng)
    nemesis = Nemesis(cluster, random.Random(SEED + 1), FAULTS)
    nemesis.start()
    try:
        run_and_check(cluster, producer, workload, nemesis)
    finally:
        nemesis.release.set()
        nemesis.join(timeout=60)


def run_and_check(cluster: Cluster, producer: Any, workload: Workload, nemesis: Nemesis) -> None:
    number = 0
    try:
        while not nemesis.finished.is_set():
            number += 1
            workload.one(producer, number)
    except confluent_kafka.KafkaException:
        pass  # recorded in workload.fatal, asserted below once the faults stopped
    finally:
        for broker in cluster.brokers:
            if broker.process is not None and broker.process.poll() is None:
                os.kill(broker.process.pid, signal.SIGCONT)
        nemesis.finished.wait(600)
    print(
        f"{number} transactions: {sum(map(len, workload.committed.values())) // PARTITIONS} "
        f"committed, {workload.aborted} aborted ({len(workload.abortable)} after an abortable "
        f"error); faults: {nemesis.done}"
    )
    for line in workload.abortable:
        print(f"abortable: {line}")
    assert nemesis.error is None, f"the fault thread failed: {nemesis.error!r}"
    assert not workload.fatal, f"fatal producer errors: {workload.fatal}"
    assert len(nemesis.done) == FAULTS

    wait_until("a full ISR", lambda: full_isr_leaders(cluster, TOPIC), 120)
    # the same producer is not stuck
    workload.one(producer, number + 1)
    assert not workload.fatal, workload.fatal
    wait_settled(cluster, TOPIC, TID)
    committed_count = sum(map(len, workload.committed.values()))
    seen = read_all(cluster, TOPIC, "read_committed", committed_count, timeout_s=120)
    assert seen == workload.committed, "read_committed: exactly the committed, in order"
    producer.flush(API_TIMEOUT_S)
