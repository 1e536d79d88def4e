"""Leader elections and partition reassignment on a real cluster (3 controllers + 3 brokers),
driven through the ``sparklog leader-election`` and ``sparklog reassign-partitions`` CLIs.

The requests go to a broker, which forwards them to the active controller (ElectLeaders 43,
AlterPartitionReassignments 45, ListPartitionReassignments 46). What the CLIs print and their
exit status are what a user sees, so the tests assert on them. The reassignment that adds a
broker completes only when the broker data plane (follower fetch + ISR expansion through
AlterPartition) brings the new replica into the ISR.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparklog.client.connection import KafkaConnection
from tests.integration.cluster_harness import (
    FAST_FAILOVER,
    FAST_SESSION_TIMEOUT_MS,
    Cluster,
    ClusterNode,
    running_cluster,
    wait_until,
)
from tests.integration.node_harness import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SESSION_TIMEOUT_MS = FAST_SESSION_TIMEOUT_MS
OVERRIDES = FAST_FAILOVER


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("elections")
    with running_cluster(root, controllers=3, brokers=3, overrides=OVERRIDES) as cluster:
        yield cluster


def run_cli(*args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "sparklog.cli.main", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def live_broker(cluster: Cluster, *, other_than: int = -1) -> ClusterNode:
    return next(b for b in cluster.brokers if b.is_running() and b.node_id != other_than)


def create(cluster: Cluster, name: str, assignment: list[list[int]]) -> None:
    with KafkaConnection.connect(cluster.brokers[0].address) as conn:
        response = conn.request(
            "CreateTopics",
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": -1,
                        "replication_factor": -1,
                        "assignments": [
                            {"partition_index": i, "broker_ids": r}
                            for i, r in enumerate(assignment)
                        ],
                        "configs": [],
                    }
                ],
                "timeout_ms": 30000,
                "validate_only": False,
            },
        )
    assert response["topics"][0]["error_code"] == 0, response


def partitions(cluster: Cluster, name: str, via: int = -1) -> dict[int, dict[str, Any]]:
    broker = live_broker(cluster, other_than=via)
    with KafkaConnection.connect(broker.address) as conn:
        metadata = conn.request(
            "Metadata",
            {
                "topics": [{"name": name}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
    [topic] = metadata["topics"]
    if topic["error_code"]:
        return {}  # this broker has not replayed the topic's creation yet
    return {
        p["partition_index"]: {
            "leader": p["leader_id"],
            "replicas": list(p["replica_nodes"]),
            "isr": list(p["isr_nodes"]),
        }
        for p in topic["partitions"]
    }


def state(cluster: Cluster, name: str, via: int = -1) -> dict[str, Any]:
    """Partition 0 of ``name`` as a broker sees it ({} until it knows the topic)."""
    return partitions(cluster, name, via).get(0, {})


def wait_for(what: str, check: Any, timeout_s: float = 30.0) -> Any:
    return wait_until(what, check, timeout_s, interval_s=0.2)


def restart(node: ClusterNode) -> None:
    node.launch()
    node.wait_ready()


def test_leader_election_cli(cluster: Cluster) -> None:
    bootstrap = cluster.brokers[0].address
    create(cluster, "elect-preferred", [[102, 101], [101, 102]])
    wait_for("leaders", lambda: state(cluster, "elect-preferred").get("leader") == 102)
    rc, out, _ = run_cli(
        "leader-election",
        "--bootstrap-server",
        bootstrap,
        "--election-type",
        "PREFERRED",
        "--topic",
        "elect-preferred",
        "--partition",
        "0",
    )
    assert rc == 0 and "Valid replica already elected for partitions elect-preferred-0" in out

    # Usage errors and an unknown partition: what a user sees.
    rc, _, err = run_cli("leader-election", "--bootstrap-server", bootstrap, "--topic", "x")
    assert rc == 1 and "--election-type" in err
    rc, _, err = run_cli(
        "leader-election", "--bootstrap-server", bootstrap, "--election-type", "PREFERRED"
    )
    assert rc == 1 and "One and only one of the following options is required" in err
    rc, out, err = run_cli(
        "leader-election",
        "--bootstrap-server",
        bootstrap,
        "--election-type",
        "preferred",
        "--topic",
        "elect-preferred",
        "--partition",
        "9",
    )
    assert rc == 1 and "1 replica(s) could not be elected" in err
    # LeaderElectionCommand prints each failure on stdout.
    assert "Error completing leader election (PREFERRED) for partition: elect-preferred-9" in out
    assert "UNKNOWN_TOPIC_OR_PARTITION" in out

    # UNCLEAN with no live replica: ELIGIBLE_LEADERS_NOT_AVAILABLE; back once it returns.
    create(cluster, "elect-offline", [[103]])
    victim = cluster.brokers[2]
    victim.kill()
    wait_for("offline", lambda: state(cluster, "elect-offline", via=103).get("leader") == -1)
    rc, out, err = run_cli(
        "leader-election",
        "--bootstrap-server",
        bootstrap,
        "--election-type",
        "UNCLEAN",
        "--topic",
        "elect-offline",
        "--partition",
        "0",
    )
    assert rc == 1 and "ELIGIBLE_LEADERS_NOT_AVAILABLE" in out, (out, err)
    restart(victim)
    wait_for("leader back", lambda: state(cluster, "elect-offline").get("leader") == 103)


def test_preferred_leader_moves_back(cluster: Cluster) -> None:
    """Needs the data plane: broker 101 must rejoin the ISR after its restart."""
    bootstrap = cluster.brokers[1].address
    create(cluster, "elect-back", [[101, 102]])
    victim = cluster.brokers[0]
    victim.kill()
    wait_for("moved", lambda: state(cluster, "elect-back", via=101).get("leader") == 102)
    restart(victim)
    wait_for("back in sync", lambda: 101 in state(cluster, "elect-back").get("isr", []))
    rc, out, err = run_cli(
        "leader-election",
        "--bootstrap-server",
        bootstrap,
        "--election-type",
        "PREFERRED",
        "--all-topic-partitions",
    )
    assert rc == 0, err
    assert "Successfully completed leader election (PREFERRED) for partitions" in out
    assert "elect-back-0" in out
    assert state(cluster, "elect-back").get("leader") == 101


def test_reassignment_cli(cluster: Cluster, tmp_path: Path) -> None:
    bootstrap = cluster.brokers[0].address
    create(cluster, "reassign-cancel", [[101]])
    plan = tmp_path / "cancel.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": "reassign-cancel", "partition": 0, "replicas": [101, 103]}
                ],
            }
        )
    )
    # Broker 103 is down: the reassignment cannot complete, so it can be listed and cancelled.
    victim = cluster.brokers[2]
    victim.kill()
    try:
        rc, out, err = run_cli(
            "reassign-partitions",
            "--bootstrap-server",
            bootstrap,
            "--reassignment-json-file",
            str(plan),
            "--execute",
        )
        assert rc == 0, err
        assert "Current partition replica assignment" in out
        assert '"replicas":[101]' in out
        assert "Successfully started partition reassignment for reassign-cancel-0" in out
        rc, out, _ = run_cli("reassign-partitions", "--bootstrap-server", bootstrap, "--list")
        assert rc == 0
        assert "reassign-cancel-0: replicas: 101,103. adding: 103. removing: ." in out
        rc, _, err = run_cli(
            "reassign-partitions",
            "--bootstrap-server",
            bootstrap,
            "--reassignment-json-file",
            str(plan),
            "--execute",
        )
        assert rc == 1 and "existing partition assignment" in err
        rc, out, _ = run_cli(
            "reassign-partitions",
            "--bootstrap-server",
            bootstrap,
            "--reassignment-json-file",
            str(plan),
            "--verify",
        )
        assert "Reassignment of partition reassign-cancel-0 is still in progress." in out
        rc, out, err = run_cli(
            "reassign-partitions",
            "--bootstrap-server",
            bootstrap,
            "--reassignment-json-file",
            str(plan),
            "--cancel",
        )
        assert rc == 0, err
        assert "Successfully cancelled partition reassignment for: reassign-cancel-0" in out
        wait_for(
            "reverted",
            lambda: state(cluster, "reassign-cancel", via=103).get("replicas") == [101],
        )
        rc, _, err = run_cli(
            "reassign-partitions",
            "--bootstrap-server",
            bootstrap,
            "--reassignment-json-file",
            str(plan),
            "--cancel",
        )
        assert rc == 1 and "NO_REASSIGNMENT_IN_PROGRESS" in err
    finally:
        restart(victim)
    # A bad file: what the user sees.
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "partitions": []}')
    rc, _, err = run_cli(
        "reassign-partitions",
        "--bootstrap-server",
        bootstrap,
        "--reassignment-json-file",
        str(bad),
        "--execute",
    )
    assert rc == 1 and "Partition reassignment list cannot be empty" in err


def test_reassignment_adding_a_broker_completes(cluster: Cluster, tmp_path: Path) -> None:
    """Needs the data plane: broker 103 must catch up and join the ISR."""
    bootstrap = cluster.brokers[1].address
    create(cluster, "reassign-move", [[101, 102]])
    wait_for("created", lambda: state(cluster, "reassign-move").get("leader") == 101)
    plan = tmp_path / "move.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": "reassign-move", "partition": 0, "replicas": [102, 103]}],
            }
        )
    )
    args = ("reassign-partitions", "--bootstrap-server", bootstrap, "--reassignment-json-file")
    rc, out, err = run_cli(*args, str(plan), "--execute")
    assert rc == 0, err

    def completed() -> bool:
        _, verify_out, _ = run_cli(*args, str(plan), "--verify")
        return "Reassignment of partition reassign-move-0 is completed." in verify_out

    wait_for("the reassignment to complete", completed, timeout_s=60)
    moved = wait_for(
        "every broker to see it",
        lambda: (s := state(cluster, "reassign-move")).get("replicas") == [102, 103] and s,
    )
    # Broker 101 left; leadership moved off it to the first remaining replica.
    assert moved["replicas"] == [102, 103] and sorted(moved["isr"]) == [102, 103]
    assert moved["leader"] == 102
    rc, out, _ = run_cli("reassign-partitions", "--bootstrap-server", bootstrap, "--list")
    assert "No partition reassignments found." in out


def test_auto_leader_rebalance(tmp_path: Path) -> None:
    """``auto.leader.rebalance.enable``: the preferred leader leads again by itself once back
    in sync (needs the data plane to re-add it to the ISR)."""
    overrides = {**OVERRIDES, "leader.imbalance.check.interval.seconds": 1}
    with running_cluster(tmp_path, controllers=1, brokers=2, overrides=overrides) as cluster:
        create(cluster, "auto-balance", [[101, 102]])
        wait_for("leader", lambda: state(cluster, "auto-balance").get("leader") == 101)
        victim = cluster.brokers[0]
        victim.kill()
        wait_for("moved", lambda: state(cluster, "auto-balance", via=101).get("leader") == 102)
        controller = cluster.controllers[0]
        mbean = "kafka.controller:type=KafkaController,name=PreferredReplicaImbalanceCount"
        assert wait_for("imbalance", lambda: (controller.metric(mbean) or 0) >= 1)
        restart(victim)
        wait_for("rebalanced", lambda: state(cluster, "auto-balance").get("leader") == 101, 60)
        wait_for("balanced metric", lambda: controller.metric(mbean) == 0)


def test_real_admin_clients(cluster: Cluster) -> None:
    """confluent-kafka's elect_leaders and kafka-python's reassignment calls."""
    confluent_admin = pytest.importorskip("confluent_kafka.admin")
    confluent = pytest.importorskip("confluent_kafka")
    from kafka import TopicPartition as KafkaPythonPartition
    from kafka.admin import KafkaAdminClient

    create(cluster, "clients-elect", [[102, 101]])
    wait_for("leader", lambda: state(cluster, "clients-elect").get("leader") == 102)
    admin = confluent_admin.AdminClient(
        {"bootstrap.servers": cluster.brokers[0].address, "log_level": 0}
    )
    partition = confluent.TopicPartition("clients-elect", 0)
    future = admin.elect_leaders(confluent.ElectionType.PREFERRED, [partition])
    results = future.result(timeout=30)
    [(got, error)] = list(results.items())
    assert (got.topic, got.partition) == ("clients-elect", 0)
    assert error is not None and error.code() == confluent.KafkaError.ELECTION_NOT_NEEDED

    client = KafkaAdminClient(bootstrap_servers=cluster.brokers[1].address)
    try:
        tp = KafkaPythonPartition("clients-elect", 0)
        # Broker 103 is added: listed as adding until it is in sync (data plane), then done.
        assert client.alter_partition_reassignments({tp: [102, 101, 103]}) == {tp: None}
        listed = client.list_partition_reassignments()
        assert listed in (
            {},
            {tp: {"replicas": [102, 101, 103], "adding_replicas": [103], "removing_replicas": []}},
        )
        wait_for("completed", lambda: client.list_partition_reassignments() == {}, timeout_s=60)
        wait_for(
            "the brokers to see it",
            lambda: sorted(state(cluster, "clients-elect").get("isr", [])) == [101, 102, 103],
        )
    finally:
        client.close()
