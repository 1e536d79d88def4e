"""A KRaft cluster with every listener on SASL_SSL: 3 controllers + 3 brokers, then a broker
with a wrong password that must not join.

Controller listener: SASL_SSL with PLAIN (KRaft controllers cannot use SCRAM among themselves:
the credentials live in the log they replicate, as in Kafka). Broker listener: SASL_SSL with
SCRAM-SHA-512, also between brokers (replica fetchers, transaction markers). A topic with
replication factor 3 fills its ISR only if the replica fetchers authenticated; the controllers'
quorum (Vote, Fetch) runs over SASL_SSL too.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparklog.client.connection import KafkaConnection
from sparklog.security.server_config import SslSettings
from sparklog.security.tls import client_context
from tests.integration.cluster_harness import HOST, Cluster, ClusterNode, cli, wait_until
from tests.integration.node_harness import NodeError, assert_no_lost_task, free_port
from tests.integration.security_support import ADMIN_PASSWORD, KEY_PASSWORD, SECRETS, make_tls

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from confluent_kafka.cimpl import NewTopic  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]
CONTROLLER_PASSWORD = "ctrl-S3cret-Pw"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


class SecureCluster(Cluster):
    def __init__(self, root: Path, controllers: int = 3, brokers: int = 3) -> None:
        self.tls = make_tls(root / "tls")
        super().__init__(root, controllers=controllers, brokers=brokers)

    def _properties(self, node: ClusterNode) -> dict[str, str]:
        props = super()._properties(node)
        tls = self.tls
        common = {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(tls.server_pem),
            "ssl.key.password": KEY_PASSWORD,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls.ca_pem),
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": (
                f'{PLAIN} required username="controller" password="{CONTROLLER_PASSWORD}" '
                f'user_controller="{CONTROLLER_PASSWORD}";'
            ),
        }
        props.update(common)
        if node.role == "controller":
            props["listener.security.protocol.map"] = "CONTROLLER:SASL_SSL"
        else:
            props.update(
                {
                    "listeners": f"BROKER://{node.address}",
                    "advertised.listeners": f"BROKER://{node.address}",
                    "listener.security.protocol.map": "BROKER:SASL_SSL,CONTROLLER:SASL_SSL",
                    "inter.broker.listener.name": "BROKER",
                    "listener.name.broker.sasl.enabled.mechanisms": "SCRAM-SHA-512",
                    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
                    "listener.name.broker.scram-sha-512.sasl.jaas.config": (
                        f'{SCRAM} required username="admin" password="{ADMIN_PASSWORD}";'
                    ),
                    "offsets.topic.replication.factor": "2",
                    "transaction.state.log.replication.factor": "2",
                }
            )
        return props

    def format(self) -> None:
        self.cluster_id = cli("storage", "random-uuid").splitlines()[-1]
        for controller in self.controllers:
            controller.directory_id = cli("storage", "random-uuid").splitlines()[-1]
        initial = ",".join(f"{c.node_id}@{c.address}:{c.directory_id}" for c in self.controllers)
        scram = f"SCRAM-SHA-512=[name=admin,password={ADMIN_PASSWORD}]"
        for controller in self.controllers:
            self._format(controller, "--initial-controllers", initial, "--add-scram", scram)
        for broker in self.brokers:
            self._format(broker, "--no-initial-controllers")

    def tls_ready(self, node: ClusterNode, timeout_s: float = 60.0) -> None:
        context = client_context(SslSettings(truststore_location=str(self.tls.ca_pem)))
        deadline = time.monotonic() + timeout_s
        while True:
            if node.process is None or node.process.poll() is not None:
                raise NodeError(f"{node.name} exited during start-up:\n{node.log_tail()}")
            try:
                with KafkaConnection(HOST, node.port, ssl_context=context, timeout_s=5):
                    return
            except (OSError, ConnectionError, ssl.SSLError):
                if time.monotonic() > deadline:
                    raise NodeError(f"{node.name} not ready:\n{node.log_tail()}") from None
                time.sleep(0.2)

    def start(self) -> None:
        if self.cluster_id is None:
            self.format()
        for node in self.nodes:
            if not node.is_running():
                node.launch()
        for node in self.nodes:
            self.tls_ready(node)

    def client(self) -> dict[str, Any]:
        return {
            "bootstrap.servers": ",".join(b.address for b in self.brokers),
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "admin",
            "sasl.password": ADMIN_PASSWORD,
            "ssl.ca.location": str(self.tls.ca_pem),
        }


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SecureCluster]:
    secure = SecureCluster(tmp_path)
    try:
        secure.start()
        yield secure
    except Exception:
        for node in secure.nodes:
            print(f"----- {node.name} -----\n{node.log_tail()}")
        raise
    finally:
        secure.close()
    for node in secure.nodes:
        assert_no_lost_task(node.log_path)
        text = node.log_path.read_text(errors="replace")
        for secret in (*SECRETS, CONTROLLER_PASSWORD, "wrong-password"):
            assert secret not in text, f"a password reached {node.name}'s log"


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
    wrong = ClusterNode(199, "broker", cluster.root / "broker-199", free_port())
    wrong.props = cluster._properties(wrong)
    wrong.props["listener.name.controller.plain.sasl.jaas.config"] = (
        f'{PLAIN} required username="controller" password="wrong-password";'
    )
    wrong.write_properties()
    cluster._format(wrong, "--no-initial-controllers")
    cluster.brokers.append(wrong)
    wrong.launch()
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
    fetcher = ClusterNode(198, "broker", cluster.root / "broker-198", free_port())
    fetcher.props = cluster._properties(fetcher)
    fetcher.props["listener.name.broker.scram-sha-512.sasl.jaas.config"] = (
        f'{SCRAM} required username="admin" password="wrong-password";'
    )
    fetcher.write_properties()
    cluster._format(fetcher, "--no-initial-controllers")
    cluster.brokers.append(fetcher)
    fetcher.launch()
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
