"""The operator tools against 3 controllers + 3 brokers: topics at a controller port,
consumer-groups lag/reset/resume with the coordinator on any broker, configs, get-offsets
across leaders, log-dirs of every broker, transactions list, features."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cli_support import CliRun, assert_no_traceback, sparklog
from tests.integration.cli_support import tool as cli_tool
from tests.integration.cluster_harness import Cluster, running_cluster, wait_until
from tests.integration.conftest import unique_topic

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("cli-cluster")
    with running_cluster(root, controllers=3, brokers=3, overrides={}) as cluster:
        yield cluster


def tool(cluster: Cluster, *args: str) -> CliRun:
    return cli_tool(cluster.bootstrap_servers, *args)


def test_topics_at_a_controller_port(cluster: Cluster) -> None:
    run = sparklog("topics", "--bootstrap-server", cluster.controllers[0].address, "--list")
    assert_no_traceback(run)
    assert run.status == 1 and "is a controller listener, not a broker's" in run.err


def test_groups_lag_reset_and_resume(cluster: Cluster) -> None:
    topic, group = unique_topic("cl-lag"), unique_topic("cl-group")
    created = tool(cluster, "topics", "--create", "--topic", topic, "--partitions", "3",
                   "--replication-factor", "3")  # fmt: skip
    assert created.status == 0, created.err
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(30):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    consumer = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 30 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            seen += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    assert seen == 30
    rows = wait_until(
        "the committed offsets show",
        lambda: [
            line.split()
            for line in tool(cluster, "consumer-groups", "--describe", "--group", group).lines()[2:]
        ],
    )
    assert [(r[2], r[3], r[4], r[5]) for r in rows] == [(str(p), "10", "10", "0") for p in range(3)]
    # Each broker lists only the groups it coordinates: the tool asks all of them.
    assert group in tool(cluster, "consumer-groups", "--list").lines()
    reset = tool(cluster, "consumer-groups", "--reset-offsets", "--group", group, "--topic",
                 f"{topic}:1", "--to-offset", "4", "--execute")  # fmt: skip
    assert [line.split() for line in reset.lines()[2:]] == [[group, topic, "1", "4"]]
    lag = wait_until(
        "the reset shows as lag",
        lambda: [
            line.split()[5]
            for line in tool(cluster, "consumer-groups", "--describe", "--group", group).lines()[2:]
        ],
    )
    assert lag == ["0", "6", "0"]
    resumed = tool(cluster, "console-consumer", "--topic", topic, "--group", group,
                   "--timeout-ms", "3000")  # fmt: skip
    # Partition 1 holds v1, v4, ..., v28; from offset 4 on: v13 ... v28.
    assert sorted(resumed.lines()) == sorted(f"v{1 + 3 * k}" for k in range(4, 10))


def test_configs_offsets_log_dirs_features(cluster: Cluster) -> None:
    topic = unique_topic("cl-cfg")
    assert tool(cluster, "topics", "--create", "--topic", topic, "--partitions", "3",
                "--replication-factor", "2").status == 0  # fmt: skip
    assert tool(cluster, "configs", "--alter", "--topic", topic, "--add-config",
                "retention.ms=5000000").status == 0  # fmt: skip
    described = wait_until(
        "the config reaches the broker asked",
        lambda: [
            line
            for line in tool(cluster, "configs", "--describe", "--topic", topic).lines()
            if "retention.ms=5000000" in line
        ],
    )
    assert described[0].startswith("  retention.ms=5000000 sensitive=false synonyms={")
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(9):
        producer.produce(topic, value=b"x", partition=i % 3)
    assert producer.flush(30) == 0
    offsets = tool(cluster, "get-offsets", "--topic", topic).lines()
    assert offsets == [f"{topic}:{p}:3" for p in range(3)]
    log_dirs = tool(cluster, "log-dirs", "--describe", "--topic-list", topic)
    assert log_dirs.lines()[1] == "Received log directory information from brokers 101,102,103"
    document = json.loads(log_dirs.lines()[2])
    replicas = [p["partition"] for b in document["brokers"] for d in b["logDirs"]
                for p in d["partitions"]]  # fmt: skip
    assert len(replicas) == 6  # 3 partitions x RF 2
    features = tool(cluster, "features", "describe").lines()
    assert any(line.startswith("Feature: metadata.version\t") for line in features)
    assert tool(cluster, "transactions", "list").lines()[0].split() == [
        "TransactionalId", "Coordinator", "ProducerId", "TransactionState"
    ]  # fmt: skip
