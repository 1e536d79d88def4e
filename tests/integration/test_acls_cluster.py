"""ACLs on a 3 controllers + 3 brokers cluster with every listener on SASL_SSL (the cluster of
``test_security_cluster``) and the StandardAuthorizer on every node.

``User:admin`` (the brokers' inter-broker login) and ``User:controller`` (the controllers') are
the super users: replication (replica fetches need CLUSTER_ACTION) and the quorum keep working.
A SCRAM user created with AlterUserScramCredentials is refused by every broker until an ACL
created through one broker reaches the others' images, then allowed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster_harness import ClusterNode, wait_until
from tests.integration.security_support import (
    ADMIN_PASSWORD,
    SecureCluster,
    running_secure_cluster,
)

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import KafkaError, Producer  # noqa: E402
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # noqa: E402
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from confluent_kafka.cimpl import NewTopic  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CAROL_PASSWORD = "carol-S3cret-Pw"


class AclCluster(SecureCluster):
    def _properties(self, node: ClusterNode) -> dict[str, str]:
        props = super()._properties(node)
        props["authorizer.class.name"] = AUTHORIZER
        props["super.users"] = "User:admin;User:controller"
        return props


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[AclCluster]:
    with running_secure_cluster(tmp_path, None, (CAROL_PASSWORD,), AclCluster) as secured:
        assert isinstance(secured, AclCluster)
        yield secured


def _on(cluster: AclCluster, broker: int, user: str, password: str) -> dict[str, Any]:
    """A client of ``user`` that bootstraps on one broker only."""
    address = next(b.address for b in cluster.brokers if b.node_id == broker)
    return {
        **cluster.client(),
        "bootstrap.servers": address,
        "sasl.username": user,
        "sasl.password": password,
    }


def _produce_code(config: dict[str, Any], topic: str) -> int | None:
    producer = Producer({**config, "acks": "all", "message.timeout.ms": 20_000})
    errors: list[Any] = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(60) == 0
    return None if errors[0] is None else int(errors[0].code())


def test_acls_apply_on_every_broker_and_replication_runs(cluster: AclCluster) -> None:
    from confluent_kafka.admin._scram import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(cluster.client())
    topic = "acl-replicated"
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(60)

    def isr_full() -> bool:
        partition = admin.list_topics(topic, timeout=10).topics[topic].partitions.get(0)
        return partition is not None and len(partition.isrs) == 3

    # replica fetchers log in as admin, a super user: CLUSTER_ACTION passes
    wait_until("all three replicas in the ISR", isr_full, timeout_s=90, tolerate=(Exception,))
    carol = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), CAROL_PASSWORD.encode()
    )
    for future in admin.alter_user_scram_credentials([carol]).values():
        future.result(60)
    refused = None
    deadline = time.monotonic() + 60
    while refused is None and time.monotonic() < deadline:
        try:
            refused = _produce_code(_on(cluster, 103, "carol", CAROL_PASSWORD), topic)
        except AssertionError:
            time.sleep(0.5)  # carol's credential not on broker 103 yet
    assert refused == KafkaError.TOPIC_AUTHORIZATION_FAILED

    # the ACL goes in through broker 101; broker 103 applies it from its metadata image
    grant = AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:carol",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    via_101 = AdminClient(_on(cluster, 101, "admin", ADMIN_PASSWORD))
    for future in via_101.create_acls([grant]).values():
        future.result(60)
    wait_until(
        "carol allowed to write through broker 103",
        lambda: _produce_code(_on(cluster, 103, "carol", CAROL_PASSWORD), topic) is None,
        timeout_s=60,
        tolerate=(AssertionError,),
    )
    assert isr_full()
