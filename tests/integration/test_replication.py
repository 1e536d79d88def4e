"""Partition replication on a real cluster: 3 controllers + 3 brokers, each its own process.

One cluster for the module; the tests run in file order on a topic with replication factor 3
and ``min.insync.replicas=2``, produced to with confluent-kafka ``acks=all``:

1. Every acknowledged record reaches every replica: the three brokers' segment files end up
   byte for byte identical (followers append the leader's batches as they are), the ISR is the
   full assignment and no broker reports under-replicated partitions.
2. A SIGKILLed follower drops out of the ISR (the controller fences it or the leader shrinks the
   ISR after ``replica.lag.time.max.ms``), ``acks=all`` produce continues with the two others,
   and once restarted the follower catches up, rejoins the ISR (IsrExpandsPerSec on the leader
   counts it) and holds the same bytes again.
3. The leader is SIGKILLed right after acknowledging records: a new leader is elected from the
   ISR and every acknowledged record is read back from it; the old leader, restarted, truncates
   whatever it had that was not committed and converges on the new leader's log.
4. With two of three brokers down the ISR is under min ISR and ``acks=all`` fails with
   NOT_ENOUGH_REPLICAS (the error a client sees), while the data stays readable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster_harness import (
    FAST_REPLICATION,
    Cluster,
    ClusterNode,
    consume_values,
    create_topic,
    partition_metadata,
    running_cluster,
    wait_until,
)

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOPIC = "replicated"
SETTINGS = {
    **FAST_REPLICATION,
    "offsets.topic.replication.factor": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
}
WAIT_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("replication")
    with running_cluster(root, controllers=3, brokers=3, overrides=SETTINGS) as cluster:
        create_topic(cluster, TOPIC, config={"min.insync.replicas": "2"})
        yield cluster


def partition_info(cluster: Cluster) -> Any:
    return partition_metadata(cluster, TOPIC)


def wait_for(what: str, check: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    # A node restarting answers nothing for a moment: errors count as "not yet".
    wait_until(what, check, timeout_s, interval_s=0.25, tolerate=(Exception,))


def produce(cluster: Cluster, values: list[bytes]) -> list[tuple[bytes, Any]]:
    """Produce with acks=all; the (value, error or None) of every delivery report."""
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.running_bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "message.timeout.ms": 30000,
            "log_level": 0,
        }
    )
    reports: list[tuple[bytes, Any]] = []

    def report(err: Any, msg: Any) -> None:
        reports.append((msg.value(), err))

    for value in values:
        producer.produce(TOPIC, value, partition=0, on_delivery=report)
        producer.poll(0)
    producer.flush(60)
    return reports


def consume_all(cluster: Cluster, expected: int) -> list[bytes]:
    return consume_values(cluster.running_bootstrap_servers, TOPIC, 0, expected, WAIT_S)


def log_bytes(node: ClusterNode) -> bytes:
    """The partition's records as stored by ``node``: its segment files, concatenated."""
    directory = node.workdir / "data" / f"{TOPIC}-0"
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))


def replicas_identical(cluster: Cluster, size_at_least: int = 1) -> bool:
    stored = [log_bytes(b) for b in cluster.brokers]
    return len(stored[0]) >= size_at_least and all(s == stored[0] for s in stored)


def counter(node: ClusterNode, name: str) -> int:
    value = node.metric(f"kafka.server:type=ReplicaManager,name={name}", "Count")
    return int(value or 0)


def gauge(node: ClusterNode, name: str) -> int:
    value = node.metric(f"kafka.server:type=ReplicaManager,name={name}")
    return int(value or 0)


def test_acks_all_reaches_every_replica(cluster: Cluster) -> None:
    values = [f"first-{i}".encode() for i in range(300)]
    reports = produce(cluster, values)
    assert [err for _, err in reports if err is not None] == []
    info = partition_info(cluster)
    assert sorted(info.replicas) == sorted(b.node_id for b in cluster.brokers)
    wait_for("the ISR to hold all 3 replicas", lambda: len(partition_info(cluster).isrs) == 3)
    wait_for("identical segment files on the 3 brokers", lambda: replicas_identical(cluster))
    leader = cluster.broker(info.leader)
    wait_for(
        "no under-replicated partition", lambda: gauge(leader, "UnderReplicatedPartitions") == 0
    )
    assert gauge(leader, "LeaderCount") >= 1
    # The two followers fetch in KIP-227 sessions: the leader serves incremental fetches.
    sessions = "kafka.server:type=FetchSessionCache,name=NumIncrementalFetchSessions"
    assert int(leader.metric(sessions) or 0) >= 2
    assert int(leader.metric("sparklog:type=fetch-sessions", "incremental-fetches") or 0) > 0
    assert consume_all(cluster, len(values)) == values


def test_restarted_follower_catches_up_and_rejoins_isr(cluster: Cluster) -> None:
    info = partition_info(cluster)
    leader = cluster.broker(info.leader)
    follower = cluster.broker(next(r for r in info.replicas if r != info.leader))
    expands_before = counter(leader, "IsrExpandsPerSec")
    follower.kill()
    wait_for(
        f"broker {follower.node_id} to leave the ISR",
        lambda: follower.node_id not in partition_info(cluster).isrs,
    )
    values = [f"while-down-{i}".encode() for i in range(200)]
    reports = produce(cluster, values)
    assert [err for _, err in reports if err is not None] == []
    follower.launch()
    follower.wait_ready()
    wait_for(
        f"broker {follower.node_id} to rejoin the ISR",
        lambda: follower.node_id in partition_info(cluster).isrs,
    )
    wait_for("identical segment files after the catch-up", lambda: replicas_identical(cluster))
    assert counter(leader, "IsrExpandsPerSec") > expands_before
    assert consume_all(cluster, 500)[300:] == values


def test_acknowledged_records_survive_leader_kill(cluster: Cluster) -> None:
    wait_for("a full ISR", lambda: len(partition_info(cluster).isrs) == 3)
    before = len(consume_all(cluster, 500))
    values = [f"before-kill-{i}".encode() for i in range(300)]
    reports = produce(cluster, values)
    acked = [value for value, err in reports if err is None]
    assert acked == values
    old = cluster.broker(partition_info(cluster).leader)
    old.kill()
    wait_for(
        "a new leader",
        lambda: partition_info(cluster).leader not in (-1, old.node_id),
    )
    read = consume_all(cluster, before + len(acked))
    assert read[before:] == acked
    more = [f"after-kill-{i}".encode() for i in range(50)]
    assert [err for _, err in produce(cluster, more) if err is not None] == []
    old.launch()
    old.wait_ready()
    wait_for(
        f"broker {old.node_id} back in the ISR",
        lambda: old.node_id in partition_info(cluster).isrs,
    )
    wait_for("identical segment files after failover", lambda: replicas_identical(cluster))
    assert consume_all(cluster, before + len(acked) + len(more))[before:] == acked + more


def test_under_min_isr_refuses_acks_all(cluster: Cluster) -> None:
    wait_for("a full ISR", lambda: len(partition_info(cluster).isrs) == 3)
    info = partition_info(cluster)
    down = [cluster.broker(r) for r in info.replicas if r != info.leader]
    for node in down:
        node.kill()
    try:
        wait_for("the ISR to shrink to the leader", lambda: len(partition_info(cluster).isrs) == 1)
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": cluster.running_bootstrap_servers,
                "acks": "all",
                "message.timeout.ms": 3000,
                "retries": 0,
                "log_level": 0,
            }
        )
        errors: list[Any] = []
        producer.produce(TOPIC, b"refused", partition=0, on_delivery=lambda e, m: errors.append(e))
        producer.flush(30)
        assert len(errors) == 1 and errors[0] is not None
        assert errors[0].code() == confluent_kafka.KafkaError.NOT_ENOUGH_REPLICAS
    finally:
        for node in down:
            node.launch()
        for node in down:
            node.wait_ready()
    wait_for("the ISR to be full again", lambda: len(partition_info(cluster).isrs) == 3)
    wait_for("identical segment files at the end", lambda: replicas_identical(cluster))
