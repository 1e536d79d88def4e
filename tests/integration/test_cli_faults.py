"""The operator-facing faults of issue 19, each checked by the message a user sees.

- a broker formatted with another cluster id logs why it cannot join;
- ``sparklog topics`` pointed at a controller port says so (no traceback);
- ``topics --list --topic X`` filters (X is a regex, as in kafka-topics.sh);
- the ``storage format -r`` error lists every accepted version (4.1 included);
- a 5,000-partition create shows progress;
plus ``topics --alter`` and ``--if-exists`` / ``--if-not-exists``.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from tests.integration.cli_support import assert_no_traceback, sparklog
from tests.integration.cluster_harness import Cluster, cli
from tests.integration.conftest import unique_topic
from tests.integration.node_harness import Node

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def node(module_node: Node) -> Node:
    return module_node


def test_topics_at_a_controller_port_says_so(node: Node) -> None:
    run = sparklog("topics", "--bootstrap-server", f"127.0.0.1:{node.controller_port}", "--list")
    assert_no_traceback(run)
    assert run.status == 1
    assert "is a controller listener, not a broker's" in run.err
    assert "Point --bootstrap-server at a broker's client listener" in run.err


def test_topics_at_a_closed_port_says_so() -> None:
    run = sparklog("topics", "--bootstrap-server", "127.0.0.1:1", "--list")
    assert_no_traceback(run)
    assert run.status == 1
    assert run.err.startswith("Error while executing topic command : cannot reach 127.0.0.1:1")


def test_list_honours_the_topic_filter(node: Node) -> None:
    a, b = unique_topic("filt-a"), unique_topic("filt-b")
    for name in (a, b):
        assert (
            sparklog(
                "topics",
                "--bootstrap-server",
                node.bootstrap,
                "--create",
                "--topic",
                name,
                "--partitions",
                "1",
            ).out
            == f"Created topic {name}.\n"
        )
    assert sparklog(
        "topics", "--bootstrap-server", node.bootstrap, "--list", "--topic", a
    ).lines() == [a]
    listed = sparklog(
        "topics", "--bootstrap-server", node.bootstrap, "--list", "--topic", "filt-.*"
    ).lines()
    assert sorted(listed) == sorted([a, b])


def test_alter_and_if_exists(node: Node) -> None:
    topic = unique_topic("alter")
    base = ("topics", "--bootstrap-server", node.bootstrap)
    assert sparklog(*base, "--create", "--topic", topic, "--partitions", "2").status == 0
    assert sparklog(*base, "--alter", "--topic", topic, "--partitions", "5").status == 0
    described = sparklog(*base, "--describe", "--topic", topic).lines()
    assert "PartitionCount: 5" in described[0]
    shrink = sparklog(*base, "--alter", "--topic", topic, "--partitions", "3")
    assert shrink.status == 1 and "would not be an increase" in shrink.err
    missing = sparklog(*base, "--alter", "--topic", "no-such-topic", "--partitions", "3")
    assert missing.err.strip() == (
        "Error while executing topic command : Topic 'no-such-topic' does not exist as expected"
    )
    quiet = sparklog(*base, "--delete", "--topic", "no-such-topic", "--if-exists")
    assert (quiet.status, quiet.out, quiet.err) == (0, "", "")
    again = sparklog(*base, "--create", "--topic", topic, "--if-not-exists")
    assert (again.status, again.out) == (0, "")
    exists = sparklog(*base, "--create", "--topic", topic)
    assert exists.err.strip() == (
        f"Error while executing topic command : Topic '{topic}' already exists."
    )


def test_large_create_shows_progress(node: Node) -> None:
    topic = unique_topic("big")
    run = sparklog(
        "topics",
        "--bootstrap-server",
        node.bootstrap,
        "--create",
        "--topic",
        topic,
        "--partitions",
        "5000",
        timeout_s=300,
    )
    assert run.status == 0, run.err
    assert run.out == f"Created topic {topic}.\n"  # stdout stays kafka-topics.sh's
    assert f"Creating topic {topic} with 5000 partitions..." in run.err
    assert "5000/5000 partitions have a leader" in run.err
    sparklog("topics", "--bootstrap-server", node.bootstrap, "--delete", "--topic", topic)


def test_format_error_lists_accepted_versions(tmp_path: Path) -> None:
    node = Node(tmp_path / "fmt")
    run = sparklog(
        "storage",
        "format",
        "-t",
        "MkU3OEVBNTcwNTJENDM2Qg",
        "-c",
        str(node.properties_path),
        "--standalone",
        "-r",
        "9.9",
    )
    assert_no_traceback(run)
    assert run.status == 1
    assert "Supported versions are: 3.3-IV3 to 4.2-IV1" in run.err
    accepted = sparklog(
        "storage",
        "format",
        "-t",
        "MkU3OEVBNTcwNTJENDM2Qg",
        "-c",
        str(node.properties_path),
        "--standalone",
        "-r",
        "4.1",
    )
    assert accepted.status == 0, accepted.err


def test_broker_with_another_cluster_id_says_why(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, controllers=1, brokers=1)
    try:
        cluster.format()
        broker = cluster.brokers[0]
        shutil.rmtree(broker.workdir / "data")
        other = cli("storage", "random-uuid").splitlines()[-1]
        cli(
            "storage",
            "format",
            "--cluster-id",
            other,
            "--config",
            str(broker.properties_path),
            "--no-initial-controllers",
        )
        for member in cluster.nodes:
            member.launch()
        deadline = time.monotonic() + 60
        wanted = f"rejects node {broker.node_id}'s cluster id {other} (INCONSISTENT_CLUSTER_ID)"
        while wanted not in broker.log_tail() and time.monotonic() < deadline:
            time.sleep(0.5)
        tail = broker.log_tail()
        assert wanted in tail, tail
        assert "formatted for another cluster" in tail
    finally:
        cluster.close()
