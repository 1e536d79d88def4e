"""Metadata snapshots in a real cluster: 3 controllers + 1 broker, each a process from the CLI.

Every node runs with a tiny ``metadata.log.max.record.bytes.between.snapshots`` and short
metadata segments, so creating a few topics makes every node write snapshots and move its
metadata log start offset past them. Read through each node's metrics listener
(``sparklog:type=metadata-snapshots`` / ``sparklog:type=metadata-image``):

1. A standby controller SIGKILLed and restarted loads its latest snapshot, replays the log
   above it, and reaches the same image digest as every other node.
2. A controller that was down while the leader's log start moved past its log end ("started
   late") catches up through FetchSnapshot (it loads a second snapshot, the leader's) and
   reaches the same digest.
3. A broker whose metadata log was wiped (``__cluster_metadata-0`` deleted) downloads the
   snapshot, reaches the same digest, and serves every topic again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster_harness import Cluster, ClusterNode, running_cluster

admin_module = pytest.importorskip("confluent_kafka.admin")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SNAPSHOTS = "sparklog:type=metadata-snapshots"
IMAGE = "sparklog:type=metadata-image"
RAFT = "kafka.server:type=raft-metrics"
SETTINGS = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "broker.session.timeout.ms": 3000,
    "broker.heartbeat.interval.ms": 500,
    "metadata.log.max.record.bytes.between.snapshots": 2048,
    "metadata.log.segment.ms": 500,
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("snapshots")
    with running_cluster(root, controllers=3, brokers=1, overrides=SETTINGS) as cluster:
        yield cluster


def create_topics(cluster: Cluster, names: list[str]) -> None:
    client = admin_module.AdminClient(
        {"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0}
    )
    futures = client.create_topics(
        [admin_module.NewTopic(n, 3, 1) for n in names], operation_timeout=30
    )
    for future in futures.values():
        future.result(timeout=60)


def listed_topics(cluster: Cluster) -> set[str]:
    client = admin_module.AdminClient(
        {"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0}
    )
    return {t for t in client.list_topics(timeout=10).topics if not t.startswith("__")}


def metrics_of(node: ClusterNode) -> dict[str, dict[str, Any]]:
    try:
        return node.metrics()
    except Exception:  # restarting: not listening yet
        return {}


def wait_same_digest(cluster: Cluster, timeout_s: float = 60) -> str:
    """Until every node's loader image (and every controller's image) has one digest."""
    deadline = time.monotonic() + timeout_s
    while True:
        digests: dict[str, Any] = {}
        for node in cluster.nodes:
            image = metrics_of(node).get(IMAGE, {})
            digests[node.name] = image.get("digest")
            if node.role == "controller":
                digests[node.name + "/controller"] = image.get("controller-digest")
        values = set(digests.values())
        if len(values) == 1 and None not in values:
            return str(values.pop())
        assert time.monotonic() < deadline, digests
        time.sleep(0.3)


def snapshot_metrics(node: ClusterNode) -> dict[str, Any]:
    return metrics_of(node).get(SNAPSHOTS, {})


def test_every_node_snapshots_and_moves_its_log_start(cluster: Cluster) -> None:
    create_topics(cluster, [f"snap-{i}" for i in range(8)])
    deadline = time.monotonic() + 60
    while True:
        stats = {n.name: snapshot_metrics(n) for n in cluster.nodes}
        if all(
            s.get("snapshots-emitted", 0) >= 1 and s.get("log-start-offset", 0) > 0
            for s in stats.values()
        ):
            break
        assert time.monotonic() < deadline, stats
        time.sleep(0.3)
    print(f"snapshots: {stats}")
    wait_same_digest(cluster)


def test_restarted_controller_loads_its_snapshot_then_the_log(cluster: Cluster) -> None:
    leader_id = cluster.leader_id()
    standby = next(c for c in cluster.controllers if c.node_id != leader_id)
    before = snapshot_metrics(standby)["latest-snapshot-end-offset"]
    assert before > 0
    standby.kill()
    standby.launch()
    standby.wait_ready()
    image = metrics_of(standby).get(IMAGE, {})
    assert image.get("snapshots-loaded", 0) >= 1, image
    digest = wait_same_digest(cluster)
    create_topics(cluster, ["snap-after-restart"])
    assert wait_same_digest(cluster) != digest


def test_late_controller_catches_up_through_fetch_snapshot(cluster: Cluster) -> None:
    leader = cluster.controller(cluster.leader_id())
    late = next(c for c in cluster.controllers if c is not leader)
    late_end = metrics_of(late)[RAFT]["log-end-offset"]
    late.kill()
    batch = 0
    deadline = time.monotonic() + 90
    # The leader's log start must pass the late controller's log end: it cannot fetch the log.
    while snapshot_metrics(leader).get("log-start-offset", 0) <= late_end:
        assert time.monotonic() < deadline, snapshot_metrics(leader)
        create_topics(cluster, [f"late-{batch}-{i}" for i in range(4)])
        batch += 1
        time.sleep(0.5)
    late.launch()
    late.wait_ready()
    wait_same_digest(cluster)
    loaded = metrics_of(late)[IMAGE]["snapshots-loaded"]
    # Its own snapshot on start, then the leader's, downloaded with FetchSnapshot.
    assert loaded >= 2, metrics_of(late)
    assert metrics_of(late)[RAFT]["current-state"] == "follower"


def test_wiped_broker_catches_up_through_fetch_snapshot(cluster: Cluster) -> None:
    broker = cluster.brokers[0]
    topics = listed_topics(cluster)
    assert {"snap-0", "snap-after-restart"} <= topics
    broker.kill()
    broker.wipe_metadata_log()
    broker.launch()
    broker.wait_ready()
    assert metrics_of(broker)[IMAGE]["snapshots-loaded"] >= 1
    wait_same_digest(cluster)
    assert listed_topics(cluster) == topics
    lag = metrics_of(broker)[IMAGE]["offset-lag"]
    assert lag < 1000, lag
