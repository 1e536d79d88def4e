"""A KRaft cluster with every listener on SASL_SSL: 3 controllers + 3 brokers, then a broker
with a wrong password that must not join.

Controller listener: SASL_SSL with PLAIN (KRaft controllers cannot use SCRAM among themselves:
the credentials live in the log they replicate, as in Kafka). Broker listener: SASL_SSL with
SCRAM-SHA-512, also between brokers (replica fetchers, transaction markers). A topic with
replication factor 3 fills its ISR only if the replica fetchers authenticated; the controllers'
quorum (Vote, Fetch) runs over SASL_SSL too.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster_harness import ClusterNode, wait_until
from tests.integration.node_harness import free_port
from tests.integration.security_support import (
    PLAIN,
    SCRAM,
    SecureCluster,
    running_secure_cluster,
)

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from confluent_kafka.cimpl import NewTopic  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SecureCluster]:
    with running_secure_cluster(tmp_path, extra_secrets=("wrong-password",)) as secure:
        yield secure


def launch_broker(cluster: SecureCluster, node_id: int, key: str, value: str) -> ClusterNode:
    """Add and start broker ``node_id`` with the cluster's properties but ``key=value``."""
    node = ClusterNode(node_id, "broker", cluster.root / f"broker-{node_id}", free_port())
    node.props = cluster._properties(node)
    node.props[key] = value
    node.write_properties()
    cluster._format(node, "--no-initial-controllers")
    cluster.brokers.append(node)
    node.launch()
    return node


def test_sasl_ssl_cluster_replicates_and_refuses_a_wrong_password(
    cluster: SecureCluster,
) -> None:
    config = cluster.client()
    admin = AdminClient(config)
    topic = "secured-replicated"
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(60)

    def isr_full() -> bool:
        metadata = admin.list_topics(topic, timeout=10)
        partition = metadata.topics[topic].partitions.get(0)
        return partition is not None and len(partition.isrs) == 3

    wait_until("all three replicas in the ISR", isr_full, timeout_s=90, tolerate=(Exception,))
    producer = Producer({**config, "acks": "all", "enable.idempotence": True})
    errors: list[Any] = []

    def on_delivery(error: Any, _message: Any) -> None:
        if error is not None:
            errors.append(error)

    for index in range(50):
        producer.produce(topic, value=f"v{index}".encode(), on_delivery=on_delivery)
    assert producer.flush(60) == 0 and not errors
    assert isr_full()

    # A broker whose controller password is wrong never registers: it is not in the cluster.
    wrong = launch_broker(
        cluster,
        199,
        "listener.name.controller.plain.sasl.jaas.config",
        f'{PLAIN} required username="controller" password="wrong-password";',
    )
    wait_until(
        "the refused login in the broker's log",
        lambda: "SASL authentication" in wrong.log_path.read_text(errors="replace"),
        timeout_s=60,
    )
    time.sleep(3)
    brokers = {b.id for b in admin.list_topics(timeout=10).brokers.values()}
    assert brokers == {101, 102, 103}

    # A broker with the right controller password but a wrong inter-broker (SCRAM) password
    # registers, as in Kafka, but cannot replicate: its fetcher's logins are refused and it
    # never joins the ISR of a partition it hosts.
    fetcher = launch_broker(
        cluster,
        198,
        "listener.name.broker.scram-sha-512.sasl.jaas.config",
        f'{SCRAM} required username="admin" password="wrong-password";',
    )
    wait_until(
        "broker 198 registered",
        lambda: 198 in {b.id for b in admin.list_topics(timeout=10).brokers.values()},
        timeout_s=90,
        tolerate=(Exception,),
    )
    lonely = "secured-wrong-fetcher"
    admin.create_topics([NewTopic(lonely, 1, replica_assignment=[[101, 198]])])[lonely].result(60)
    for index in range(20):
        producer.produce(lonely, value=f"w{index}".encode(), on_delivery=on_delivery)
    assert producer.flush(60) == 0 and not errors
    wait_until(
        "broker 198's refused inter-broker login in its log",
        lambda: "SASL authentication to" in fetcher.log_path.read_text(errors="replace"),
        timeout_s=60,
    )
    time.sleep(3)
    partition = admin.list_topics(lonely, timeout=10).topics[lonely].partitions[0]
    assert list(partition.isrs) == [101]
