"""Replication under failures, with real processes: 3 controllers + 3 brokers, RF=3, min ISR 2.

The tests share one cluster (module fixture) and run in file order:

1. A confluent-kafka producer (acks=all, idempotent) writes a numbered sequence to a one-partition
   topic while the test SIGKILLs the partition's leader ten times, restarting it each time and
   waiting for it to rejoin the ISR before the next kill. Afterwards a consumer reads the
   partition back: every acknowledged record is at the offset it was acknowledged with (lost
   must be 0), no number appears twice, and the seconds without an acknowledgement after each
   kill are printed (``-s`` shows them).
2. A controlled shutdown (SIGTERM) of the leader while producing: leadership moves to another
   ISR member and no produce fails.
3. A follower stopped with SIGSTOP drops out of the ISR after ``replica.lag.time.max.ms`` (the
   leader's UnderReplicatedPartitions goes to 1) while acks=all produce keeps succeeding with
   two in-sync replicas; after SIGCONT it catches up and rejoins the ISR (metric back to 0).
"""

from __future__ import annotations

import functools
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster_harness import Cluster, running_cluster, wait_until

confluent_kafka = pytest.importorskip("confluent_kafka")
admin_module = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

KILLS = 10
LAG_TIME_MS = 1500
TIMINGS = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "broker.session.timeout.ms": 4000,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": LAG_TIME_MS,
    "default.replication.factor": 3,
    "min.insync.replicas": 2,
}
UNDER_REPLICATED = ("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("replication")
    with running_cluster(root, controllers=3, brokers=3, overrides=TIMINGS) as cluster:
        yield cluster


def admin(cluster: Cluster) -> Any:
    return admin_module.AdminClient(
        {"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0}
    )


def create_topic(cluster: Cluster, name: str) -> None:
    client = admin(cluster)  # must outlive the future
    topic = admin_module.NewTopic(name, 1, 3, config={"min.insync.replicas": "2"})
    client.create_topics([topic], operation_timeout=30)[name].result(timeout=60)


def partition_state(cluster: Cluster, topic: str) -> tuple[int, list[int]]:
    """(leader, ISR) of partition 0 as the brokers' metadata says, (-1, []) if unknown."""
    try:
        metadata = admin(cluster).list_topics(topic=topic, timeout=5)
    except confluent_kafka.KafkaException:
        return -1, []
    info = metadata.topics[topic].partitions.get(0)
    if info is None or info.leader < 0:
        return -1, []
    return int(info.leader), sorted(int(r) for r in info.isrs)


def has_new_leader(cluster: Cluster, topic: str, old: int) -> bool:
    return partition_state(cluster, topic)[0] not in (-1, old)


@dataclass
class SequenceProducer:
    """Produces 0, 1, 2, ... (acks=all, idempotent) on a thread; records what was acked."""

    cluster: Cluster
    topic: str
    acked: dict[int, int] = field(default_factory=dict)  # number -> offset
    ack_times: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sent: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": self.cluster.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 120_000,
                "log_level": 0,
            }
        )

        def delivered(err: Any, msg: Any) -> None:
            number = int(msg.value())
            with self._lock:
                if err is not None:
                    self.errors.append(f"{number}: {err}")
                else:
                    self.acked[number] = msg.offset()
                    self.ack_times.append(time.monotonic())

        while not self._stop.is_set():
            try:
                producer.produce(self.topic, value=str(self.sent).encode(), on_delivery=delivered)
                self.sent += 1
            except BufferError:
                producer.poll(0.05)
                continue
            producer.poll(0.002)
        remaining = producer.flush(120)
        if remaining:
            with self._lock:
                self.errors.append(f"{remaining} record(s) still undelivered at the end")

    def acks_after(self, t: float) -> int:
        with self._lock:
            return sum(1 for at in self.ack_times if at > t)

    def first_ack_after(self, t: float) -> float | None:
        with self._lock:
            return next((at for at in self.ack_times if at > t), None)

    def stop(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(180)
        assert not self._thread.is_alive(), "producer did not finish"


def read_back(cluster: Cluster, topic: str, end: int) -> dict[int, bytes]:
    """offset -> value of partition 0 up to ``end`` (exclusive)."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"readback-{topic}",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    records: dict[int, bytes] = {}
    deadline = time.monotonic() + 120
    try:
        while len(records) < end and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=1.0):
                if msg.error() is None and msg.offset() < end:
                    records[msg.offset()] = msg.value()
    finally:
        consumer.close()
    return records


def test_ten_leader_kills_lose_no_acknowledged_record(cluster: Cluster) -> None:
    topic = "chaos"
    create_topic(cluster, topic)
    wait_until("a full ISR", lambda: len(partition_state(cluster, topic)[1]) == 3)
    producer = SequenceProducer(cluster, topic)
    producer.start()
    unavailable: list[float] = []
    try:
        wait_until("first acks", lambda: producer.acks_after(0) > 100)
        for kill in range(1, KILLS + 1):
            leader, isr = partition_state(cluster, topic)
            assert leader in isr and len(isr) == 3, (leader, isr)
            victim = cluster.broker(leader)
            killed_at = time.monotonic()
            victim.kill()
            wait_until(
                f"a new leader after kill {kill}",
                functools.partial(has_new_leader, cluster, topic, victim.node_id),
            )
            first = wait_until(
                f"acks after kill {kill}",
                functools.partial(producer.first_ack_after, killed_at),
                120,
            )
            unavailable.append(first - killed_at)
            print(
                f"kill {kill}: broker {victim.node_id} was leader; "
                f"no ack for {first - killed_at:.2f}s"
            )
            victim.launch()
            victim.wait_ready()
            wait_until(
                f"broker {victim.node_id} back in the ISR",
                lambda: len(partition_state(cluster, topic)[1]) == 3,
                120,
            )
            rejoined_at = time.monotonic()
            wait_until(
                "acks with the full ISR", functools.partial(producer.acks_after, rejoined_at)
            )
    finally:
        producer.stop()
    assert not producer.errors, producer.errors[:10]
    end = max(producer.acked.values()) + 1
    records = read_back(cluster, topic, end)
    lost = [n for n, offset in producer.acked.items() if records.get(offset) != str(n).encode()]
    numbers = [int(v) for v in records.values()]
    duplicated = len(numbers) - len(set(numbers))
    print(
        f"acknowledged {len(producer.acked)} of {producer.sent} sent; lost {len(lost)}; "
        f"duplicated {duplicated}; unavailable per kill (s): "
        + " ".join(f"{s:.2f}" for s in unavailable)
    )
    assert lost == [], f"{len(lost)} acknowledged record(s) lost, e.g. {lost[:10]}"
    assert duplicated == 0
    assert len(unavailable) == KILLS


def test_controlled_shutdown_moves_leadership_without_failed_produce(cluster: Cluster) -> None:
    topic = "controlled"
    create_topic(cluster, topic)
    wait_until("a full ISR", lambda: len(partition_state(cluster, topic)[1]) == 3)
    producer = SequenceProducer(cluster, topic)
    producer.start()
    try:
        wait_until("first acks", lambda: producer.acks_after(0) > 100)
        leader, _ = partition_state(cluster, topic)
        victim = cluster.broker(leader)
        stopped_at = time.monotonic()
        victim.stop()
        new_leader, isr = wait_until(
            "a new leader",
            lambda: (s := partition_state(cluster, topic))[0] not in (-1, leader) and s,
        )
        assert leader not in isr
        wait_until("acks after the shutdown", lambda: producer.acks_after(stopped_at) > 100)
        print(f"controlled shutdown of broker {leader}: leadership moved to {new_leader}")
        victim.launch()
        victim.wait_ready()
        wait_until("a full ISR", lambda: len(partition_state(cluster, topic)[1]) == 3, 120)
    finally:
        producer.stop()
    assert not producer.errors, producer.errors[:10]


def test_stopped_follower_leaves_and_rejoins_the_isr(cluster: Cluster) -> None:
    topic = "sigstop"
    create_topic(cluster, topic)
    wait_until("a full ISR", lambda: len(partition_state(cluster, topic)[1]) == 3)
    leader_id, isr = partition_state(cluster, topic)
    leader = cluster.broker(leader_id)
    follower = cluster.broker(next(r for r in isr if r != leader_id))
    assert follower.process is not None
    producer = SequenceProducer(cluster, topic)
    producer.start()
    try:
        wait_until("first acks", lambda: producer.acks_after(0) > 100)
        follower.process.send_signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        try:
            wait_until(
                f"broker {follower.node_id} out of the ISR",
                lambda: follower.node_id not in partition_state(cluster, topic)[1],
                30,
            )
            print(f"SIGSTOP -> out of the ISR in {time.monotonic() - stopped_at:.2f}s")
            assert leader.metric(*UNDER_REPLICATED) == 1
            acked_at = time.monotonic()
            wait_until("acks with two in-sync replicas", lambda: producer.acks_after(acked_at))
        finally:
            follower.process.send_signal(signal.SIGCONT)
        resumed_at = time.monotonic()
        wait_until(
            f"broker {follower.node_id} back in the ISR",
            lambda: follower.node_id in partition_state(cluster, topic)[1],
            60,
        )
        print(f"SIGCONT -> back in the ISR in {time.monotonic() - resumed_at:.2f}s")
        wait_until(
            "UnderReplicatedPartitions back to 0", lambda: leader.metric(*UNDER_REPLICATED) == 0
        )
    finally:
        producer.stop()
    assert not producer.errors, producer.errors[:10]
