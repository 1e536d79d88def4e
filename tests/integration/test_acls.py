"""ACLs on a real node, through clients we did not write (confluent-kafka, kafka-python).

The node runs the StandardAuthorizer with ``allow.everyone.if.no.acl.found=true``; every client
here is ``User:ANONYMOUS`` (PLAINTEXT). Each test binds ACLs on resources of its own (unique
names) for ``User:ANONYMOUS`` or ``User:*`` and asserts the code the client sees: produce,
consume, Metadata filtering, groups, transactional ids, topic admin, cluster configs, literal
and prefixed patterns, deny over allow, hosts, and a super user whom a DENY does not stop.
Without an authorizer the ACL APIs answer SECURITY_DISABLED.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")
pytest.importorskip("kafka")
from confluent_kafka import KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    NewPartitions,
    NewTopic,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KafkaResourceType
from kafka.errors import SecurityDisabledError, TopicAuthorizationFailedError

from tests.integration.ck_helpers import consume_error_code, create_topic
from tests.integration.cli_support import sparklog, tool
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node

pytestmark = pytest.mark.integration

TIMEOUT_S = 30.0
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANON = "User:ANONYMOUS"
LITERAL = ResourcePatternType.LITERAL
PREFIXED = ResourcePatternType.PREFIXED
ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY


@pytest.fixture(scope="module")
def acl_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    factory = NodeFactory(tmp_path_factory.mktemp("acls"))
    try:
        yield factory.create(
            {
                "authorizer.class.name": AUTHORIZER,
                "allow.everyone.if.no.acl.found": "true",
                "auto.create.topics.enable": "false",
            }
        )
    finally:
        factory.close()


def binding(
    rtype: ResourceType,
    name: str,
    op: AclOperation,
    permission: AclPermissionType = ALLOW,
    pattern: ResourcePatternType = LITERAL,
    principal: str = ANON,
    host: str = "*",
) -> Any:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def create_acls(node: Node, *bindings: Any) -> None:
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    for future in admin.create_acls(list(bindings), request_timeout=TIMEOUT_S).values():
        assert future.result(timeout=TIMEOUT_S) is None


def delete_acls(node: Node, *bindings: Any) -> list[Any]:
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    filters = [
        AclBindingFilter(
            b.restype,
            b.name,
            b.resource_pattern_type,
            b.principal,
            b.host,
            b.operation,
            b.permission_type,
        )
        for b in bindings
    ]
    deleted = []
    for future in admin.delete_acls(filters, request_timeout=TIMEOUT_S).values():
        deleted += future.result(timeout=TIMEOUT_S)
    return deleted


def allow_all_and_deny(node: Node, topic: str, op: AclOperation, **deny: Any) -> None:
    """ALLOW ALL on the topic for everyone, and one DENY: the topic has ACLs now, so the
    allow-everyone default no longer applies to it."""
    create_acls(
        node,
        binding(ResourceType.TOPIC, topic, AclOperation.ALL, principal="User:*"),
        binding(ResourceType.TOPIC, deny.pop("name", topic), op, DENY, **deny),
    )


def produce_error(node: Node, topic: str, **extra: Any) -> int | None:
    producer = Producer(
        {"bootstrap.servers": node.bootstrap, "message.timeout.ms": 20_000, "acks": 1, **extra}
    )
    errors: list[Any] = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(TIMEOUT_S) == 0
    return None if errors[0] is None else errors[0].code()


def consume_error(node: Node, topic: str, group: str) -> int | None:
    """The first error the consumer reports, or None once it received a record."""
    return consume_error_code({"bootstrap.servers": node.bootstrap}, topic, group, TIMEOUT_S)


def test_acl_apis_round_trip(acl_node: Node) -> None:
    topic = unique_topic("acl-rt")
    mine = [
        binding(ResourceType.TOPIC, topic, AclOperation.READ),
        binding(ResourceType.TOPIC, topic[:6], AclOperation.WRITE, DENY, PREFIXED, host="10.1.1.1"),
    ]
    create_acls(acl_node, *mine)
    admin = AdminClient({"bootstrap.servers": acl_node.bootstrap})
    match = AclBindingFilter(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.MATCH,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    found = admin.describe_acls(match, request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    assert sorted(map(str, found)) == sorted(map(str, mine))
    assert sorted(map(str, delete_acls(acl_node, *mine))) == sorted(map(str, mine))
    assert admin.describe_acls(match, request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S) == []
    # an invalid binding: INVALID_REQUEST from the controller, as Kafka
    bad = AclBinding(ResourceType.TOPIC, "", LITERAL, ANON, "*", AclOperation.READ, ALLOW)
    future = admin.create_acls([bad], request_timeout=TIMEOUT_S)[bad]
    with pytest.raises(KafkaException) as failure:
        future.result(timeout=TIMEOUT_S)
    assert failure.value.args[0].code() == KafkaError.INVALID_REQUEST


def test_produce_denied_literal_and_deny_wins_over_allow(acl_node: Node) -> None:
    topic = unique_topic("acl-write")
    create_topic(acl_node, topic, 1)
    assert produce_error(acl_node, topic) is None
    allow_all_and_deny(acl_node, topic, AclOperation.WRITE)
    assert produce_error(acl_node, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # DENY WRITE leaves READ (allowed by the ALLOW ALL) alone
    assert consume_error(acl_node, topic, f"g-{uuid.uuid4().hex[:6]}") is None


def test_consume_denied_by_prefix_and_other_host_does_not_match(acl_node: Node) -> None:
    prefix = f"acl-pre-{uuid.uuid4().hex[:6]}"
    topic = f"{prefix}-orders"
    create_topic(acl_node, topic, 1)
    assert produce_error(acl_node, topic) is None
    create_acls(
        acl_node,
        binding(ResourceType.TOPIC, prefix, AclOperation.ALL, pattern=PREFIXED, principal="User:*"),
        binding(ResourceType.TOPIC, prefix, AclOperation.READ, DENY, PREFIXED, host="10.9.9.9"),
    )
    assert consume_error(acl_node, topic, f"g-{uuid.uuid4().hex[:6]}") is None
    create_acls(acl_node, binding(ResourceType.TOPIC, prefix, AclOperation.READ, DENY, PREFIXED))
    code = consume_error(acl_node, topic, f"g-{uuid.uuid4().hex[:6]}")
    assert code == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_metadata_hides_topics_without_describe(acl_node: Node) -> None:
    hidden, shown = unique_topic("acl-hidden"), unique_topic("acl-shown")
    create_topic(acl_node, hidden, 1)
    create_topic(acl_node, shown, 1)
    admin = AdminClient({"bootstrap.servers": acl_node.bootstrap})
    assert hidden in admin.list_topics(timeout=TIMEOUT_S).topics
    allow_all_and_deny(acl_node, hidden, AclOperation.DESCRIBE)
    listed = admin.list_topics(timeout=TIMEOUT_S).topics
    assert hidden not in listed and shown in listed
    named = admin.list_topics(topic=hidden, timeout=TIMEOUT_S).topics[hidden]
    assert named.error is not None
    assert named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_authorized_operations(acl_node: Node) -> None:
    topic = unique_topic("acl-ops")
    create_topic(acl_node, topic, 1)
    allow_all_and_deny(acl_node, topic, AclOperation.WRITE)
    admin = AdminClient({"bootstrap.servers": acl_node.bootstrap})
    futures = admin.describe_topics(
        TopicCollection([topic]), include_authorized_operations=True, request_timeout=TIMEOUT_S
    )
    described = futures[topic].result(timeout=TIMEOUT_S)
    operations = {op.name for op in described.authorized_operations}
    assert "WRITE" not in operations
    assert {"READ", "DESCRIBE", "DELETE", "ALTER", "CREATE"} <= operations


def test_group_read_denied(acl_node: Node) -> None:
    topic, group = unique_topic("acl-group"), f"acl-g-{uuid.uuid4().hex[:6]}"
    create_topic(acl_node, topic, 1)
    assert produce_error(acl_node, topic) is None
    create_acls(acl_node, binding(ResourceType.GROUP, group, AclOperation.READ, DENY))
    assert consume_error(acl_node, topic, group) == KafkaError.GROUP_AUTHORIZATION_FAILED
    # the same consumer in another group reads
    assert consume_error(acl_node, topic, group + "-other") is None


def test_transactional_id_write_denied(acl_node: Node) -> None:
    txn = f"acl-txn-{uuid.uuid4().hex[:6]}"
    create_acls(acl_node, binding(ResourceType.TRANSACTIONAL_ID, txn, AclOperation.WRITE, DENY))
    producer = Producer({"bootstrap.servers": acl_node.bootstrap, "transactional.id": txn})
    with pytest.raises(KafkaException) as failure:
        producer.init_transactions(TIMEOUT_S)
    assert failure.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    allowed = Producer({"bootstrap.servers": acl_node.bootstrap, "transactional.id": txn + "-ok"})
    allowed.init_transactions(TIMEOUT_S)


def test_topic_admin_operations(acl_node: Node) -> None:
    prefix = f"acl-adm-{uuid.uuid4().hex[:6]}"
    create_acls(
        acl_node,
        binding(ResourceType.TOPIC, prefix, AclOperation.ALL, pattern=PREFIXED, principal="User:*"),
        binding(ResourceType.TOPIC, prefix + "-keep", AclOperation.DELETE, DENY),
        binding(ResourceType.TOPIC, prefix + "-keep", AclOperation.ALTER, DENY),
    )
    admin = KafkaAdminClient(bootstrap_servers=acl_node.bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(prefix + "-keep", 1, 1)])
        with pytest.raises(TopicAuthorizationFailedError):
            admin.create_partitions({prefix + "-keep": NewPartitions(2)})
        with pytest.raises(TopicAuthorizationFailedError):
            admin.delete_topics([prefix + "-keep"])
        # CREATE: the cluster has no ACL, so allow.everyone.if.no.acl.found lets anyone create
        # (Kafka checks CREATE on the cluster first, then on the topic)
        admin.create_topics([NewTopic(prefix + "-other", 1, 1)])
    finally:
        admin.close()


def test_cluster_alter_configs_denied(acl_node: Node) -> None:
    mine = [
        binding(ResourceType.BROKER, "kafka-cluster", AclOperation.ALL, principal="User:*"),
        binding(ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER_CONFIGS, DENY),
    ]
    create_acls(acl_node, *mine)
    try:
        admin = AdminClient({"bootstrap.servers": acl_node.bootstrap})
        resource = ConfigResource("broker", "1")
        resource.add_incremental_config(
            ConfigEntry("log.cleaner.threads", "2", incremental_operation=AlterConfigOpType.SET)
        )
        future = admin.incremental_alter_configs([resource])[resource]
        with pytest.raises(KafkaException) as failure:
            future.result(timeout=TIMEOUT_S)
        assert failure.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    finally:
        assert len(delete_acls(acl_node, *mine)) == 2


def test_super_user_is_never_denied(node_factory: NodeFactory) -> None:
    node = node_factory.create(
        {"authorizer.class.name": AUTHORIZER, "super.users": "User:ANONYMOUS;User:admin"}
    )
    topic = unique_topic("acl-super")
    create_topic(node, topic, 1)
    create_acls(node, binding(ResourceType.TOPIC, "*", AclOperation.ALL, DENY, principal="User:*"))
    assert produce_error(node, topic) is None


def test_acl_apis_without_authorizer(module_node: Node) -> None:
    admin = KafkaAdminClient(bootstrap_servers=module_node.bootstrap, request_timeout_ms=30_000)
    try:
        with pytest.raises(SecurityDisabledError):
            admin.describe_acls(
                ACLFilter(
                    principal=None,
                    host="*",
                    operation=ACLOperation.ANY,
                    permission_type=ACLPermissionType.ANY,
                    resource_pattern=ResourcePatternFilter(
                        KafkaResourceType.ANY, None, ACLResourcePatternType.ANY
                    ),
                )
            )
    finally:
        admin.close()


def test_acls_tool_add_list_remove(acl_node: Node) -> None:
    topic = unique_topic("acl-cli")
    added = tool(
        acl_node.bootstrap,
        "acls",
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--operation",
        "Describe",
        "--topic",
        topic,
    )
    pattern = f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)"
    assert added.out.startswith(f"Adding ACLs for resource `{pattern}`: \n")
    assert "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in added.out
    prefixed = tool(
        acl_node.bootstrap,
        "acls",
        "--add",
        "--deny-principal",
        "User:bob",
        "--topic",
        topic[:8],
        "--resource-pattern-type",
        "prefixed",
    )
    assert "operation=ALL, permissionType=DENY" in prefixed.out
    listed = tool(
        acl_node.bootstrap, "acls", "--list", "--topic", topic, "--resource-pattern-type", "match"
    )
    assert f"Current ACLs for resource `{pattern}`: \n" in listed.out
    assert "name=" + topic[:8] + ", patternType=PREFIXED" in listed.out
    assert listed.out.count("principal=") == 3
    alice = tool(
        acl_node.bootstrap, "acls", "--list", "--principal", "User:bob", "--topic", topic[:8]
    )
    assert alice.out.startswith("ACLs for principal `User:bob`\n")
    assert "User:alice" not in alice.out
    tool(acl_node.bootstrap, "acls", "--remove", "--force", "--topic", topic)
    tool(
        acl_node.bootstrap,
        "acls",
        "--remove",
        "--topic",
        topic[:8],
        "--resource-pattern-type",
        "PREFIXED",
        stdin="y\n",
    )
    empty = tool(
        acl_node.bootstrap, "acls", "--list", "--topic", topic, "--resource-pattern-type", "match"
    )
    assert empty.out == ""


def test_acls_tool_errors(acl_node: Node, module_node: Node) -> None:
    missing = sparklog("acls", "--bootstrap-server", acl_node.bootstrap, "--add", "--topic", "t")
    assert missing.status == 1
    assert "--allow-principal, --deny-principal" in missing.err
    disabled = sparklog("acls", "--bootstrap-server", module_node.bootstrap, "--list")
    assert disabled.status == 1
    assert "SECURITY_DISABLED" in disabled.err
    assert "Traceback" not in disabled.err


def test_hot_read_service_checks_read(acl_node: Node) -> None:
    import grpc

    from sparklog.connector import hot
    from sparklog.connector.hot import read_service_address
    from sparklog.readservice_wire import hot_read_pb2 as pb
    from sparklog.readservice_wire import hot_read_pb2_grpc as pb_grpc

    denied, allowed = unique_topic("acl-hot-no"), unique_topic("acl-hot-ok")
    for topic in (denied, allowed):
        create_topic(acl_node, topic, 1)
        assert produce_error(acl_node, topic) is None
    allow_all_and_deny(acl_node, denied, AclOperation.READ)
    hot._addresses.clear()
    address = read_service_address(acl_node.bootstrap)
    assert address is not None
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.HotReadStub(channel)  # type: ignore[no-untyped-call]

        def read(topic: str) -> list[Any]:
            request = pb.ReadRangeRequest(topic=topic, partition=0, start_offset=0, end_offset=1)
            return list(stub.ReadRange(request, timeout=TIMEOUT_S))

        assert len(read(allowed)) == 1
        with pytest.raises(grpc.RpcError) as failure:
            read(denied)
    assert failure.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert failure.value.details().startswith("TOPIC_AUTHORIZATION_FAILED")
