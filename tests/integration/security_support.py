"""Real sparklog nodes and clusters with secured listeners, for the security tests.

Contract: :class:`SecureNode` is a :class:`Node` that also listens on SASL_SSL (SCRAM-SHA-512,
SCRAM-SHA-256 and PLAIN) and on SSL with ``ssl.client.auth=required`` (mTLS, principal mapped
to the certificate's CN), with certificates generated at test time under ``workdir/tls``.
Storage is formatted with ``--add-scram`` users (KIP-900). The PLAINTEXT listener stays for the
harness's readiness probe unless ``inter_broker`` names another listener. Passwords are
module constants so a test can grep the logs for them.

:class:`SecureCluster` is a KRaft :class:`Cluster` (3 controllers + 3 brokers by default) with
every listener on SASL_SSL: controllers among themselves and brokers to controllers with PLAIN
(KRaft controllers cannot use SCRAM among themselves: the credentials live in the log they
replicate, as in Kafka), brokers with SCRAM-SHA-512 only, also between brokers (replica
fetchers, transaction markers). ``overrides`` go to every node, below the security keys.
:func:`running_secure_cluster` starts one, prints the logs' tails when the body fails, always
closes it, and after a body that succeeded checks that no log lost a task or holds a password.
"""

from __future__ import annotations

import contextlib
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparklog.client.connection import KafkaConnection
from sparklog.protocol.kafka_uuid import random_uuid
from sparklog.security.server_config import SslSettings
from sparklog.security.tls import client_context
from tests.integration.cluster_harness import HOST, Cluster, ClusterNode
from tests.integration.node_harness import (
    REPO_ROOT,
    Node,
    NodeError,
    assert_no_lost_task,
    free_port,
)
from tests.unit.security.certs import TestCA

ADMIN_PASSWORD = "admin-S3cret-Pw"
ALICE_PASSWORD = "alice-S3cret-Pw"
PLAIN_PASSWORD = "plain-S3cret-Pw"
KEY_PASSWORD = "key-S3cret-Pw"
CONTROLLER_PASSWORD = "ctrl-S3cret-Pw"
SECRETS = (ADMIN_PASSWORD, ALICE_PASSWORD, PLAIN_PASSWORD, KEY_PASSWORD, CONTROLLER_PASSWORD)
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


@dataclass
class Tls:
    ca: TestCA
    ca_pem: Path
    server_pem: Path
    client_pem: Path  # CN=alice: key + certificate chain
    client_cert: Path
    client_key: Path


def make_tls(directory: Path) -> Tls:
    directory.mkdir(parents=True, exist_ok=True)
    ca = TestCA()
    server = ca.issue("localhost", server=True)
    client = ca.issue("alice", ou="clients")
    client_cert = directory / "alice.crt"
    client_cert.write_text(client.cert_pem() + ca.cert_pem())
    client_key = directory / "alice.key"
    client_key.write_text(client.key_pem())
    return Tls(
        ca=ca,
        ca_pem=ca.write_truststore_pem(directory / "ca.pem"),
        server_pem=ca.write_pem_keystore(server, directory / "server.pem", KEY_PASSWORD),
        client_pem=ca.write_pem_keystore(client, directory / "alice.pem"),
        client_cert=client_cert,
        client_key=client_key,
    )


class SecureNode(Node):
    def __init__(self, workdir: Path, overrides: dict[str, Any] | None = None) -> None:
        self.tls = make_tls(workdir / "tls")
        self.sasl_port = free_port()
        self.ssl_port = free_port()
        self.metrics_port = free_port()
        super().__init__(workdir, overrides)

    @property
    def sasl_bootstrap(self) -> str:
        return f"{self.host}:{self.sasl_port}"

    @property
    def ssl_bootstrap(self) -> str:
        return f"{self.host}:{self.ssl_port}"

    @property
    def properties(self) -> dict[str, str]:
        props = super().properties
        host = self.host
        props["listeners"] += f",SASL_SSL://{host}:{self.sasl_port},SSL://{host}:{self.ssl_port}"
        props["advertised.listeners"] += (
            f",SASL_SSL://{host}:{self.sasl_port},SSL://{host}:{self.ssl_port}"
        )
        props["listener.security.protocol.map"] += ",SASL_SSL:SASL_SSL,SSL:SSL"
        props.update(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(self.tls.server_pem),
                "ssl.key.password": KEY_PASSWORD,
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self.tls.ca_pem),
                "listener.name.ssl.ssl.client.auth": "required",
                "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/,DEFAULT",
                "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
                "sparklog.metrics.listener": f"{host}:{self.metrics_port}",
                "listener.name.sasl_ssl.plain.sasl.jaas.config": (
                    "org.apache.kafka.common.security.plain.PlainLoginModule required "
                    f'username="plainuser" password="{PLAIN_PASSWORD}" '
                    f'user_plainuser="{PLAIN_PASSWORD}";'
                ),
            }
        )
        props.update(self.overrides)
        return props

    def format(self) -> None:
        self.cluster_id = random_uuid()  # in-process, as Node.format does
        command = [
            sys.executable,
            "-m",
            "sparklog.cli.main",
            "storage",
            "format",
            "--cluster-id",
            self.cluster_id,
            "--config",
            str(self.properties_path),
            "--standalone",
            "--add-scram",
            f"SCRAM-SHA-512=[name=admin,password={ADMIN_PASSWORD}]",
            "--add-scram",
            f"SCRAM-SHA-512=[name=alice,password={ALICE_PASSWORD}]",
            "--add-scram",
            f"SCRAM-SHA-256=[name=alice,password={ALICE_PASSWORD}]",
        ]
        # Not through _cli: it copies the command line (with the passwords) into node.log.
        done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, timeout=120, check=False)
        output = (done.stdout + done.stderr).decode(errors="replace")
        with self.log_path.open("a") as log:
            log.write(f"=== $ sparklog storage format --add-scram ... (rc={done.returncode})\n")
            log.write(output)
        if done.returncode != 0:
            raise NodeError(f"storage format failed: {output}")

    def confluent_sasl(
        self, user: str = "alice", password: str = ALICE_PASSWORD, mechanism: str = "SCRAM-SHA-512"
    ) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.sasl_bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
            "ssl.ca.location": str(self.tls.ca_pem),
        }

    def confluent_mtls(self) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.ssl_bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(self.tls.ca_pem),
            "ssl.certificate.location": str(self.tls.client_cert),
            "ssl.key.location": str(self.tls.client_key),
        }


class SecureCluster(Cluster):
    def __init__(
        self,
        root: Path,
        controllers: int = 3,
        brokers: int = 3,
        overrides: Mapping[str, object] | None = None,
    ) -> None:
        self.tls = make_tls(root / "tls")
        super().__init__(root, controllers=controllers, brokers=brokers, overrides=overrides)

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

    def controller_format_flags(self) -> tuple[str, ...]:
        return ("--add-scram", f"SCRAM-SHA-512=[name=admin,password={ADMIN_PASSWORD}]")

    def node_ready(self, node: ClusterNode) -> None:
        """Every listener is TLS: the harness's plaintext probe would never succeed."""
        context = client_context(SslSettings(truststore_location=str(self.tls.ca_pem)))
        deadline = time.monotonic() + 60.0
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

    def client(self) -> dict[str, Any]:
        """confluent-kafka settings: SCRAM-SHA-512 login as admin over SASL_SSL."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "admin",
            "sasl.password": ADMIN_PASSWORD,
            "ssl.ca.location": str(self.tls.ca_pem),
        }


@contextlib.contextmanager
def running_secure_cluster(
    root: Path,
    overrides: Mapping[str, object] | None = None,
    extra_secrets: tuple[str, ...] = (),
    cluster_class: type[SecureCluster] = SecureCluster,
) -> Iterator[SecureCluster]:
    """A started ``cluster_class`` (a :class:`SecureCluster`); after a body that succeeded, no
    node's log lost a task or holds one of :data:`SECRETS` or ``extra_secrets``."""
    secure = cluster_class(root, overrides=overrides)
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
        for secret in (*SECRETS, *extra_secrets):
            assert secret not in text, f"a password reached {node.name}'s log"
