"""ACLs for real users: SCRAM-SHA-512 logins over SASL_SSL and an mTLS certificate (CN=alice)
on a node running the StandardAuthorizer with ``allow.everyone.if.no.acl.found=false``.

``User:admin`` is a super user (and ``User:ANONYMOUS``, which the PLAINTEXT listener the node's
own channels and the harness use); ``User:alice`` starts with no right at all and gets them
through ``sparklog acls --command-config`` run as admin. Each step asserts the code alice's
client sees: TOPIC_AUTHORIZATION_FAILED, a Metadata without the topic,
GROUP_AUTHORIZATION_FAILED, and success once allowed; the certificate's principal is the same
``User:alice`` on the SSL listener.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient

from tests.integration.ck_helpers import consume_error_code
from tests.integration.cli_support import tool
from tests.integration.conftest import unique_topic
from tests.integration.security_support import ADMIN_PASSWORD, SecureNode

pytestmark = pytest.mark.integration

TIMEOUT_S = 60.0
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureNode]:
    secure = SecureNode(
        tmp_path_factory.mktemp("acl-sasl"),
        {"authorizer.class.name": AUTHORIZER, "super.users": "User:admin;User:ANONYMOUS"},
    )
    secure.start()
    try:
        yield secure
    finally:
        secure.stop()


@pytest.fixture(scope="module")
def admin_config(node: SecureNode, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("acl-admin") / "admin.properties"
    path.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="admin" password="{ADMIN_PASSWORD}";\n'
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={node.tls.ca_pem}\n"
    )
    return str(path)


def acls(node: SecureNode, admin_config: str, *args: str) -> None:
    run = tool(node.sasl_bootstrap, "acls", "--command-config", admin_config, *args)
    assert run.status == 0, run.err


def produce_code(config: dict[str, Any], topic: str) -> int | None:
    producer = Producer({**config, "message.timeout.ms": 20_000, "acks": 1})
    errors: list[Any] = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(TIMEOUT_S) == 0
    return None if errors[0] is None else int(errors[0].code())


def consume_code(config: dict[str, Any], topic: str, group: str) -> int | None:
    return consume_error_code(config, topic, group, TIMEOUT_S)


def test_a_user_without_acls_is_refused_then_allowed(
    node: SecureNode, admin_config: str, tmp_path: Path
) -> None:
    topic = unique_topic("acl-alice")
    admin = AdminClient(node.confluent_sasl("admin", ADMIN_PASSWORD))
    admin.create_topics([_new_topic(topic)])[topic].result(TIMEOUT_S)
    alice = node.confluent_sasl()
    assert produce_code(alice, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    listed = AdminClient(alice).list_topics(timeout=TIMEOUT_S).topics
    assert topic not in listed
    assert topic in admin.list_topics(timeout=TIMEOUT_S).topics

    acls(node, admin_config, "--add", "--allow-principal", "User:alice", "--producer",
         "--topic", topic[:9], "--resource-pattern-type", "prefixed")  # fmt: skip
    assert produce_code(alice, topic) is None
    assert topic in AdminClient(alice).list_topics(timeout=TIMEOUT_S).topics

    group = f"alice-{uuid.uuid4().hex[:6]}"
    code = consume_code(alice, topic, group)
    assert code in (KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED)
    acls(node, admin_config, "--add", "--allow-principal", "User:alice", "--consumer",
         "--topic", topic, "--group", group)  # fmt: skip
    assert consume_code(alice, topic, group) is None
    # the certificate's principal is the same User:alice on the mTLS listener
    assert consume_code(node.confluent_mtls(), topic, group) is None
    denied = consume_code(node.confluent_mtls(), topic, group + "-other")
    assert denied == KafkaError.GROUP_AUTHORIZATION_FAILED


def _new_topic(name: str) -> Any:
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    return NewTopic(name, 1, 1)
