"""A real KRaft cluster: 3 dedicated controllers + 3 brokers, each a process started from the CLI.

The tests share one cluster (module fixture) and run in file order:

1. Topics are created through a broker; then the active controller is SIGKILLed five times in
   a row (restarted each time): a new leader is elected every time (kill -> new leader time is
   printed), every topic committed before stays, a new topic can be created, and the brokers
   keep serving produce and fetch (confluent-kafka).
2. Metrics (``sparklog.metrics.listener`` on every node): exactly one controller reports
   ActiveControllerCount=1, every node reports number-of-voters=3 and the same leader. A broker
   is SIGKILLed: after the (short) session timeout the controller fences it (FencedBrokerCount
   and TimedOutBrokerHeartbeatCount rise, OfflinePartitionsCount counts its RF=1 partitions);
   its RF=1 partitions go offline (leader -1, as Kafka does) and its RF=3 leaderships move to
   other brokers; restarted, it is unfenced (FencedBrokerCount back to 0) and leads its RF=1
   partitions again.
3. While a producer runs, a fourth controller (formatted with --no-initial-controllers) joins
   with ``metadata-quorum add-controller`` and a voter leaves with ``remove-controller``; the
   producer sees no error.
4. A fifth controller formatted with --no-initial-controllers and
   ``controller.quorum.auto.join.enable=true`` becomes a voter on its own (KIP-853 auto-join),
   without any metadata-quorum command.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster_harness import (
    FAST_FAILOVER,
    FAST_SESSION_TIMEOUT_MS,
    Cluster,
    ClusterNode,
    running_cluster,
)

confluent_kafka = pytest.importorskip("confluent_kafka")
admin_module = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SESSION_TIMEOUT_MS = FAST_SESSION_TIMEOUT_MS
TIMINGS = FAST_FAILOVER


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("kraft")
    with running_cluster(root, controllers=3, brokers=3, overrides=TIMINGS) as cluster:
        yield cluster


def admin(bootstrap: str) -> Any:
    return admin_module.AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def create_topic(cluster: Cluster, name: str, partitions: int, rf: int = 1) -> None:
    client = admin(cluster.brokers[0].address)  # must outlive the future
    futures = client.create_topics(
        [admin_module.NewTopic(name, partitions, rf)], operation_timeout=30
    )
    futures[name].result(timeout=60)


def partition_leaders(bootstrap: str, topic: str) -> dict[int, int]:
    metadata = admin(bootstrap).list_topics(topic=topic, timeout=10)
    return {p: info.leader for p, info in metadata.topics[topic].partitions.items()}


def produce_and_consume(cluster: Cluster, topic: str, count: int, tag: str) -> None:
    """Produce ``count`` records (acks=all) and read them back through every broker list."""
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "log_level": 0}
    )
    errors: list[Any] = []
    for i in range(count):
        producer.produce(
            topic,
            value=f"{tag}-{i}".encode(),
            on_delivery=lambda err, msg: errors.append(err) if err else None,
        )
    assert producer.flush(60) == 0
    assert errors == []
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"g-{tag}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    try:
        consumer.subscribe([topic])
        seen: set[bytes] = set()
        wanted = {f"{tag}-{i}".encode() for i in range(count)}
        deadline = time.monotonic() + 60
        while not wanted <= seen and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.add(message.value())
        assert wanted <= seen, f"missing {len(wanted - seen)} of {count} records"
    finally:
        consumer.close()


def wait_for_topics(bootstrap: str, topics: set[str], timeout_s: float = 15.0) -> None:
    """Brokers follow the metadata log asynchronously: wait until ``topics`` are all listed."""
    deadline = time.monotonic() + timeout_s
    while True:
        listed = set(admin(bootstrap).list_topics(timeout=10).topics)
        if topics <= listed:
            return
        assert time.monotonic() < deadline, (bootstrap, topics - listed)
        time.sleep(0.1)


def wait_caught_up(cluster: Cluster, node: ClusterNode, timeout_s: float = 30.0) -> None:
    """Until ``node`` is a voter whose log end offset reached the leader's high watermark."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = cluster.describe()
        if any(v["id"] == node.node_id for v in status["CurrentVoters"]):
            out = cluster.metadata_quorum("describe", "--replication")
            for line in out.splitlines()[1:]:
                cells = line.split()
                if int(cells[0]) == node.node_id and int(cells[3]) == 0:
                    return
        time.sleep(0.2)
    raise AssertionError(f"{node.name} did not catch up:\n{node.log_tail()}")


def test_active_controller_sigkill_five_times(cluster: Cluster) -> None:
    create_topic(cluster, "kraft-orders", 6)
    produce_and_consume(cluster, "kraft-orders", 30, "before")
    topics = {"kraft-orders"}
    times: list[float] = []
    for round_ in range(5):
        leader_id = cluster.leader_id()
        victim = cluster.controller(leader_id)
        victim.kill()
        killed_at = time.monotonic()
        new_leader = cluster.leader_id(other_than=leader_id, timeout_s=30)
        elapsed = time.monotonic() - killed_at
        times.append(elapsed)
        print(
            f"round {round_ + 1}: killed leader {leader_id}, new leader {new_leader} "
            f"elected in {elapsed * 1000:.0f} ms"
        )
        # Committed metadata survives on every broker, and the new controller writes.
        name = f"kraft-after-kill-{round_}"
        create_topic(cluster, name, 3)
        topics.add(name)
        for broker in cluster.brokers:
            wait_for_topics(broker.address, topics)
        produce_and_consume(cluster, "kraft-orders", 20, f"round-{round_}")
        victim.launch()
        victim.wait_ready()
        wait_caught_up(cluster, victim)
    print(
        "kill -> new leader (ms): "
        + ", ".join(f"{t * 1000:.0f}" for t in times)
        + f"; max {max(times) * 1000:.0f}"
    )


CONTROLLER_BEAN = "kafka.controller:type=KafkaController,name="
RAFT_BEAN = "kafka.server:type=raft-metrics"


def controller_metric(node: ClusterNode, name: str, attribute: str = "Value") -> Any:
    return node.metric(CONTROLLER_BEAN + name, attribute)


def wait_metric(
    node: ClusterNode, name: str, wanted: int, *, attribute: str = "Value", timeout_s: float = 30
) -> None:
    deadline = time.monotonic() + timeout_s
    while (value := controller_metric(node, name, attribute)) != wanted:
        assert time.monotonic() < deadline, f"{node.name} {name}={value}, wanted {wanted}"
        time.sleep(0.2)


def check_quorum_metrics(cluster: Cluster) -> ClusterNode:
    """Exactly one active controller, 3 voters and one leader seen by every node; the active."""
    deadline = time.monotonic() + 30
    while True:
        active = [c for c in cluster.controllers if controller_metric(c, "ActiveControllerCount")]
        counts = [controller_metric(c, "ActiveControllerCount") for c in cluster.controllers]
        raft = [node.metrics().get(RAFT_BEAN, {}) for node in cluster.nodes]
        leaders = {r.get("current-leader") for r in raft}
        if sum(counts) == 1 and len(leaders) == 1:
            break
        assert time.monotonic() < deadline, (counts, raft)
        time.sleep(0.2)
    assert all(r["number-of-voters"] == 3 for r in raft), raft
    assert all(r["number-unknown-voter-connections"] == 0 for r in raft), raft
    assert leaders == {active[0].node_id}
    states = sorted(r["current-state"] for r in raft)
    assert states == ["follower", "follower", "leader", "observer", "observer", "observer"]
    return active[0]


def test_killed_broker_is_fenced_and_its_leaderships_move(cluster: Cluster) -> None:
    active = check_quorum_metrics(cluster)
    wait_metric(active, "FencedBrokerCount", 0)
    wait_metric(active, "ActiveBrokerCount", len(cluster.brokers))
    assert controller_metric(active, "OfflinePartitionsCount") == 0
    timed_out = controller_metric(active, "TimedOutBrokerHeartbeatCount", "Count")
    victim = cluster.brokers[-1]
    survivor = cluster.brokers[0].address
    create_topic(cluster, "kraft-fence-rf1", 6)
    create_topic(cluster, "kraft-fence-rf3", 6, rf=3)
    rf1 = partition_leaders(survivor, "kraft-fence-rf1")
    rf3 = partition_leaders(survivor, "kraft-fence-rf3")
    victim_rf1 = {p for p, leader in rf1.items() if leader == victim.node_id}
    victim_rf3 = {p for p, leader in rf3.items() if leader == victim.node_id}
    assert victim_rf1 and victim_rf3, (rf1, rf3)

    victim.kill()
    killed_at = time.monotonic()
    deadline = killed_at + SESSION_TIMEOUT_MS / 1000 + 20
    while True:
        brokers = admin(survivor).list_topics(timeout=10).brokers
        rf1_now = partition_leaders(survivor, "kraft-fence-rf1")
        rf3_now = partition_leaders(survivor, "kraft-fence-rf3")
        fenced = victim.node_id not in brokers
        offline = all(rf1_now[p] == -1 for p in victim_rf1)
        moved = all(rf3_now[p] not in (-1, victim.node_id) for p in victim_rf3)
        if fenced and offline and moved:
            break
        assert time.monotonic() < deadline, (brokers, rf1_now, rf3_now)
        time.sleep(0.2)
    elapsed = time.monotonic() - killed_at
    print(
        f"broker {victim.node_id} fenced and its leaderships moved {elapsed * 1000:.0f} ms "
        f"after SIGKILL (session timeout {SESSION_TIMEOUT_MS} ms)"
    )
    # Fencing waits for the lease: not before the session timeout (minus one heartbeat).
    assert elapsed >= (SESSION_TIMEOUT_MS - 1000) / 1000
    # Untouched partitions keep serving.
    for p, leader in rf1_now.items():
        assert leader == rf1[p] or p in victim_rf1
    wait_metric(active, "FencedBrokerCount", 1)
    wait_metric(active, "ActiveBrokerCount", len(cluster.brokers) - 1)
    # Every RF=1 partition on the victim is offline (those of earlier topics too).
    assert controller_metric(active, "OfflinePartitionsCount") >= len(victim_rf1)
    assert controller_metric(active, "TimedOutBrokerHeartbeatCount", "Count") == timed_out + 1
    # Standby controllers replay the same log: they report the fencing too, but are not active.
    for standby in cluster.controllers:
        if standby is not active:
            wait_metric(standby, "FencedBrokerCount", 1)
            assert controller_metric(standby, "ActiveControllerCount") == 0

    victim.launch()
    victim.wait_ready()
    deadline = time.monotonic() + 30
    while any(
        partition_leaders(survivor, "kraft-fence-rf1")[p] != victim.node_id for p in victim_rf1
    ):
        assert time.monotonic() < deadline, "the restarted broker did not lead again"
        time.sleep(0.2)
    wait_metric(active, "FencedBrokerCount", 0)
    wait_metric(active, "OfflinePartitionsCount", 0)
    lag = victim.metric("kafka.server:type=broker-metadata-metrics", "last-applied-record-lag-ms")
    assert lag is not None and lag < 30_000


class BackgroundProducer(threading.Thread):
    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = confluent_kafka.Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0}
        )
        self.topic = topic
        self.stopping = threading.Event()
        self.acked = 0
        self.errors: list[Any] = []

    def _done(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(err)
        else:
            self.acked += 1

    def run(self) -> None:
        i = 0
        while not self.stopping.is_set():
            self.producer.produce(self.topic, value=str(i).encode(), on_delivery=self._done)
            self.producer.poll(0.01)
            i += 1
        self.producer.flush(60)


def test_add_and_remove_controller_while_producing(cluster: Cluster) -> None:
    create_topic(cluster, "kraft-voters", 3)
    producer = BackgroundProducer(cluster.bootstrap_servers, "kraft-voters")
    producer.start()
    try:
        new = cluster.add_controller(4)
        deadline = time.monotonic() + 30
        while not any(o["id"] == 4 for o in cluster.describe()["CurrentObservers"]):
            assert time.monotonic() < deadline, "the new controller never fetched"
            time.sleep(0.2)
        out = cluster.metadata_quorum(
            "add-controller", "--command-config", str(new.properties_path)
        )
        assert "Added controller 4" in out
        wait_caught_up(cluster, new)
        assert {v["id"] for v in cluster.describe()["CurrentVoters"]} == {1, 2, 3, 4}

        leaving = next(c for c in cluster.controllers if c.node_id != cluster.leader_id())
        assert leaving.directory_id is not None
        out = cluster.metadata_quorum(
            "remove-controller",
            "--controller-id",
            str(leaving.node_id),
            "--controller-directory-id",
            leaving.directory_id,
        )
        assert f"Removed KRaft controller {leaving.node_id}" in out
        deadline = time.monotonic() + 30
        while leaving.node_id in {v["id"] for v in cluster.describe()["CurrentVoters"]}:
            assert time.monotonic() < deadline, "the voter was not removed"
            time.sleep(0.2)
        voters = {v["id"] for v in cluster.describe()["CurrentVoters"]}
        assert voters == {1, 2, 3, 4} - {leaving.node_id}
        # The shrunk quorum still commits: a topic can be created.
        create_topic(cluster, "kraft-after-voter-change", 1)
        time.sleep(1.0)
    finally:
        producer.stopping.set()
        producer.join(timeout=90)
    assert producer.errors == []
    assert producer.acked > 0
    print(f"{producer.acked} records acknowledged during the voter changes")


def test_auto_join_controller_becomes_a_voter_by_itself(cluster: Cluster) -> None:
    voters_before = {v["id"] for v in cluster.describe()["CurrentVoters"]}
    joined_at = time.monotonic()
    new = cluster.add_controller(5, {"controller.quorum.auto.join.enable": "true"})
    deadline = time.monotonic() + 60
    while 5 not in {v["id"] for v in cluster.describe()["CurrentVoters"]}:
        assert time.monotonic() < deadline, f"controller 5 did not auto-join:\n{new.log_tail()}"
        time.sleep(0.3)
    print(f"controller 5 auto-joined {time.monotonic() - joined_at:.1f} s after start")
    wait_caught_up(cluster, new)
    voters = {v["id"] for v in cluster.describe()["CurrentVoters"]}
    assert voters == voters_before | {5}
    deadline = time.monotonic() + 30
    while new.metric(RAFT_BEAN, "number-of-voters") != len(voters):
        assert time.monotonic() < deadline, new.metrics().get(RAFT_BEAN)
        time.sleep(0.3)
    create_topic(cluster, "kraft-after-auto-join", 1)
