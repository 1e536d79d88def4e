"""Real clients against secured listeners: SASL_SSL with SCRAM-SHA-512/256 and PLAIN, SSL mTLS.

Each client library produces, consumes in a consumer group and runs a transaction through a
secured listener; a wrong password gets SASL_AUTHENTICATION_FAILED and nothing else; the node's
log never contains a password.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli_support import tool
from tests.integration.conftest import unique_topic
from tests.integration.security_support import (
    ADMIN_PASSWORD,
    ALICE_PASSWORD,
    PLAIN_PASSWORD,
    SECRETS,
    SecureNode,
)

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from confluent_kafka.cimpl import NewTopic  # noqa: E402

pytestmark = pytest.mark.integration
TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def secure_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureNode]:
    node = SecureNode(tmp_path_factory.mktemp("secure"))
    node.start()
    try:
        yield node
        # Metrics and logs never hold a password (the node served every test below by now).
        url = f"http://127.0.0.1:{node.metrics_port}"
        for path in ("/metrics", "/metrics.json"):
            with urllib.request.urlopen(url + path, timeout=30) as response:
                metrics = response.read().decode(errors="replace")
            assert "kafka_server" in metrics or "kafka.server" in metrics
            for secret in SECRETS:
                assert secret not in metrics, f"a password is in {path}"
    finally:
        node.stop()
    text = node.log_path.read_text(errors="replace")
    for secret in SECRETS:
        assert secret not in text, "a password reached the node's log"


def create(config: dict[str, Any], topic: str, partitions: int = 2) -> None:
    admin = AdminClient(config)
    futures = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=30)
    futures[topic].result(TIMEOUT_S)


def produce_txn(config: dict[str, Any], topic: str, count: int) -> None:
    producer = Producer({**config, "transactional.id": f"txn-{uuid.uuid4()}"})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    for index in range(count):
        producer.produce(topic, key=str(index).encode(), value=f"v{index}".encode())
    producer.commit_transaction(TIMEOUT_S)


def consume_group(config: dict[str, Any], topic: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {
            **config,
            "group.id": f"g-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error():
                raise KafkaException(message.error())
            value = message.value()
            assert value is not None
            values.append(value)
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


@pytest.mark.parametrize(
    "mechanism",
    ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"],
)
def test_confluent_sasl_ssl(secure_node: SecureNode, mechanism: str) -> None:
    user, password = (
        ("plainuser", PLAIN_PASSWORD)
        if mechanism == "PLAIN"
        else (
            "alice",
            ALICE_PASSWORD,
        )
    )
    config = secure_node.confluent_sasl(user, password, mechanism)
    topic = unique_topic("sasl")
    create(config, topic)
    produce_txn(config, topic, 20)
    assert sorted(consume_group(config, topic, 20)) == sorted(f"v{i}".encode() for i in range(20))


def test_confluent_mtls(secure_node: SecureNode) -> None:
    config = secure_node.confluent_mtls()
    topic = unique_topic("mtls")
    create(config, topic)
    produce_txn(config, topic, 10)
    assert len(consume_group(config, topic, 10)) == 10


def test_confluent_wrong_password(secure_node: SecureNode) -> None:
    errors: list[Any] = []
    config = {
        **secure_node.confluent_sasl("alice", "not-the-password"),
        "error_cb": errors.append,
    }
    admin = AdminClient(config)
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=10)
    deadline = time.monotonic() + TIMEOUT_S
    while not errors and time.monotonic() < deadline:
        admin.poll(0.5)
    assert errors, "no authentication error reported"
    text = str(errors[0])
    assert (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-512" in text
    ), text


def command_config(node: SecureNode, path: Path, password: str = ALICE_PASSWORD) -> str:
    path.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="alice" password="{password}";\n'
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={node.tls.ca_pem}\n"
    )
    return str(path)


def test_cli_command_config_over_sasl_ssl(secure_node: SecureNode, tmp_path: Path) -> None:
    config = command_config(secure_node, tmp_path / "client.properties")
    bootstrap = secure_node.sasl_bootstrap
    topic = unique_topic("cli-sasl")
    created = tool(bootstrap, "topics", "--create", "--topic", topic, "--command-config", config)
    assert created.status == 0, created.err
    listed = tool(bootstrap, "topics", "--list", "--command-config", config)
    assert topic in listed.lines()
    produced = tool(
        bootstrap, "console-producer", "--topic", topic, "--command-config", config,
        stdin="one\ntwo\n",
    )  # fmt: skip
    assert produced.status == 0, produced.err
    consumed = tool(
        bootstrap, "console-consumer", "--topic", topic, "--from-beginning",
        "--max-messages", "2", "--command-config", config,
    )  # fmt: skip
    assert consumed.lines() == ["one", "two"], consumed.err
    listing = tool(bootstrap, "reassign-partitions", "--list", "--command-config", config)
    assert listing.status == 0, listing.err
    elected = tool(bootstrap, "leader-election", "--election-type", "PREFERRED",
                   "--topic", topic, "--partition", "0", "--command-config", config)  # fmt: skip
    assert "SASL" not in elected.err and "cannot reach" not in elected.err, elected.err
    wrong = command_config(secure_node, tmp_path / "wrong.properties", "not-it")
    refused = tool(bootstrap, "topics", "--list", "--command-config", wrong)
    assert refused.status == 1
    assert "SASL authentication failed" in refused.err and "not-it" not in refused.err
    assert ALICE_PASSWORD not in created.err + listed.err + consumed.err


# -- kafka-python -----------------------------------------------------------------------------


def kafka_python_options(node: SecureNode, mtls: bool) -> dict[str, Any]:
    if mtls:
        return {
            "bootstrap_servers": node.ssl_bootstrap,
            "security_protocol": "SSL",
            "ssl_cafile": str(node.tls.ca_pem),
            "ssl_certfile": str(node.tls.client_cert),
            "ssl_keyfile": str(node.tls.client_key),
        }
    return {
        "bootstrap_servers": node.sasl_bootstrap,
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": ALICE_PASSWORD,
        "ssl_cafile": str(node.tls.ca_pem),
    }


@pytest.mark.parametrize("mtls", [False, True], ids=["sasl_ssl_scram512", "ssl_mtls"])
def test_kafka_python(secure_node: SecureNode, mtls: bool) -> None:
    kafka = pytest.importorskip("kafka")
    options = kafka_python_options(secure_node, mtls)
    topic = unique_topic("kp-sec")
    create(secure_node.confluent_mtls(), topic)
    producer = kafka.KafkaProducer(**options, transactional_id=f"kp-{uuid.uuid4()}")
    producer.init_transactions()
    producer.begin_transaction()
    for index in range(10):
        producer.send(topic, value=f"v{index}".encode())
    producer.commit_transaction()
    producer.close()
    consumer = kafka.KafkaConsumer(
        topic,
        **options,
        group_id=f"kp-{uuid.uuid4()}",
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        consumer_timeout_ms=int(TIMEOUT_S * 1000),
    )
    values = []
    for message in consumer:
        values.append(message.value)
        if len(values) == 10:
            break
    consumer.commit()
    consumer.close()
    assert sorted(values) == sorted(f"v{i}".encode() for i in range(10))


def test_kafka_python_wrong_password(
    secure_node: SecureNode, caplog: pytest.LogCaptureFixture
) -> None:
    kafka = pytest.importorskip("kafka")
    options = {**kafka_python_options(secure_node, False), "sasl_plain_password": "nope"}
    with pytest.raises(kafka.errors.KafkaError):
        kafka.KafkaProducer(**options, request_timeout_ms=5000, max_block_ms=5000)
    # The client saw Kafka's code and message (it then keeps retrying the bootstrap).
    assert "[Error 58] SaslAuthenticationFailedError" in caplog.text
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in caplog.text


# -- aiokafka ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mtls", [False, True], ids=["sasl_ssl_scram512", "ssl_mtls"])
def test_aiokafka(secure_node: SecureNode, mtls: bool) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    from aiokafka.helpers import create_ssl_context

    topic = unique_topic("aio-sec")
    create(secure_node.confluent_mtls(), topic)
    if mtls:
        context = create_ssl_context(
            cafile=str(secure_node.tls.ca_pem),
            certfile=str(secure_node.tls.client_cert),
            keyfile=str(secure_node.tls.client_key),
        )
        options: dict[str, Any] = {
            "bootstrap_servers": secure_node.ssl_bootstrap,
            "security_protocol": "SSL",
            "ssl_context": context,
        }
    else:
        options = {
            "bootstrap_servers": secure_node.sasl_bootstrap,
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": "alice",
            "sasl_plain_password": ALICE_PASSWORD,
            "ssl_context": create_ssl_context(cafile=str(secure_node.tls.ca_pem)),
        }

    async def scenario() -> list[bytes]:
        producer = aiokafka.AIOKafkaProducer(**options, transactional_id=f"aio-{uuid.uuid4()}")
        await producer.start()
        try:
            async with producer.transaction():
                for index in range(10):
                    await producer.send(topic, f"v{index}".encode())
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(
            topic,
            **options,
            group_id=f"aio-{uuid.uuid4()}",
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            enable_auto_commit=False,
        )
        await consumer.start()
        values: list[bytes] = []
        try:
            async with asyncio.timeout(TIMEOUT_S):
                while len(values) < 10:
                    batch = await consumer.getmany(timeout_ms=1000)
                    for records in batch.values():
                        values.extend(r.value for r in records)
            await consumer.commit()
        finally:
            await consumer.stop()
        return values

    values = asyncio.run(scenario())
    assert sorted(values) == sorted(f"v{i}".encode() for i in range(10))


# -- kcat -------------------------------------------------------------------------------------


def kcat(node: SecureNode, mtls: bool, *args: str, stdin: bytes | None = None) -> bytes:
    path = shutil.which("kcat")
    if path is None:
        pytest.skip("kcat is not installed")
    if mtls:
        security = [
            "-b", node.ssl_bootstrap, "-X", "security.protocol=SSL",
            "-X", f"ssl.ca.location={node.tls.ca_pem}",
            "-X", f"ssl.certificate.location={node.tls.client_cert}",
            "-X", f"ssl.key.location={node.tls.client_key}",
        ]  # fmt: skip
    else:
        security = [
            "-b", node.sasl_bootstrap, "-X", "security.protocol=SASL_SSL",
            "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice",
            "-X", f"sasl.password={ALICE_PASSWORD}",
            "-X", f"ssl.ca.location={node.tls.ca_pem}",
        ]  # fmt: skip
    done = subprocess.run(
        [path, *security, *args], input=stdin, capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout


@pytest.mark.parametrize("mtls", [False, True], ids=["sasl_ssl_scram512", "ssl_mtls"])
def test_kcat(secure_node: SecureNode, mtls: bool) -> None:
    topic = unique_topic("kcat-sec")
    create(secure_node.confluent_mtls(), topic, partitions=1)
    kcat(secure_node, mtls, "-P", "-t", topic, stdin=b"a\nb\nc\n")
    out = kcat(secure_node, mtls, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
    assert out.split() == [b"a", b"b", b"c"]
    group = kcat(
        secure_node, mtls, "-G", f"kcat-{uuid.uuid4()}", "-o", "beginning", "-e", "-q", topic
    )
    assert sorted(group.split()) == [b"a", b"b", b"c"]
    listing = kcat(secure_node, mtls, "-L", "-t", topic)
    assert topic.encode() in listing


def test_scram_users_managed_with_kip554_apis(secure_node: SecureNode) -> None:
    from confluent_kafka.admin._scram import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(secure_node.confluent_sasl("admin", ADMIN_PASSWORD))
    bob_password = "bob-S3cret-Pw"
    upsert = UserScramCredentialUpsertion(
        "bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), bob_password.encode()
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(TIMEOUT_S)
    futures: Any = admin.describe_user_scram_credentials(["bob"])
    described = futures["bob"].result(TIMEOUT_S)
    infos = described.scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_256, 8192)]

    def can_log_in() -> bool:
        probe = AdminClient(secure_node.confluent_sasl("bob", bob_password, "SCRAM-SHA-256"))
        try:
            probe.list_topics(timeout=10)
            return True
        except KafkaException:
            return False

    deadline = time.monotonic() + TIMEOUT_S
    while not can_log_in():  # the broker applies the record a moment after the controller
        assert time.monotonic() < deadline, "bob cannot log in after AlterUserScramCredentials"
        time.sleep(0.2)
    deletion = UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_256)
    for future in admin.alter_user_scram_credentials([deletion]).values():
        future.result(TIMEOUT_S)
    deadline = time.monotonic() + TIMEOUT_S
    while can_log_in():
        assert time.monotonic() < deadline, "bob still logs in after his credential was deleted"
        time.sleep(0.2)
    with pytest.raises(KafkaException) as info:
        again: Any = admin.describe_user_scram_credentials(["bob"])
        again["bob"].result(TIMEOUT_S)
    assert "RESOURCE_NOT_FOUND" in str(info.value) or "does not exist" in str(info.value)


def test_hot_read_service_uses_the_listener_security(secure_node: SecureNode) -> None:
    """The gRPC read service of a node with a SASL_SSL listener is TLS + the same logins."""
    import grpc

    from sparklog.connector import hot
    from sparklog.connector.planning import HotPiece
    from sparklog.connector.security import security_params
    from sparklog.readservice_wire import hot_read_pb2 as pb

    config = secure_node.confluent_sasl()
    topic = unique_topic("hot-sec")
    create(config, topic, partitions=1)
    producer = Producer(config)
    for index in range(100):
        producer.produce(topic, value=f"v{index}".encode(), partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    params = security_params(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
            f'required username="alice" password="{ALICE_PASSWORD}";',
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(secure_node.tls.ca_pem),
        }
    )
    piece = HotPiece(topic, 0, 0, 100, secure_node.sasl_bootstrap, security=params)
    assert ALICE_PASSWORD not in repr(piece)
    address = hot.read_service_address(secure_node.sasl_bootstrap, params)
    assert address is not None
    rows = sum(batch.num_rows for batch in hot.read_hot(piece, "grpc"))
    assert rows == 100

    request = pb.ReadRangeRequest(topic=topic, partition=0, start_offset=0, end_offset=100)
    method = "/sparklog.readservice.HotRead/ReadRange"
    # Plaintext gRPC to the TLS port fails; TLS without credentials is UNAUTHENTICATED.
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_stream(
            method, request_serializer=pb.ReadRangeRequest.SerializeToString
        )
        with pytest.raises(grpc.RpcError) as plain:
            list(call(request, timeout=30))
    assert plain.value.code() == grpc.StatusCode.UNAVAILABLE
    credentials = grpc.ssl_channel_credentials(secure_node.tls.ca_pem.read_bytes())
    for metadata in (None, [("authorization", "Basic " + base64.b64encode(b"alice:no").decode())]):
        with grpc.secure_channel(address, credentials) as channel:
            call = channel.unary_stream(
                method, request_serializer=pb.ReadRangeRequest.SerializeToString
            )
            with pytest.raises(grpc.RpcError) as refused:
                list(call(request, timeout=30, metadata=metadata))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_fuzz_malformed_tls_and_sasl_leaves_the_node_serving(secure_node: SecureNode) -> None:
    import random
    import socket
    import ssl

    from sparklog.protocol.headers import encode_request
    from sparklog.protocol.messages import API_BY_NAME
    from sparklog.protocol.types import join_chunks

    rng = random.Random(17)
    context = ssl.create_default_context(cafile=str(secure_node.tls.ca_pem))

    def drain(sock: socket.socket) -> None:
        sock.settimeout(10)
        try:
            while sock.recv(65536):
                pass
        except OSError:
            pass

    def frame(api: str, version: int, body: dict[str, Any]) -> bytes:
        return join_chunks(encode_request(API_BY_NAME[api], version, 1, "fuzz", body))

    for _ in range(30):  # garbage instead of a TLS ClientHello, on both TLS listeners
        port = rng.choice([secure_node.sasl_port, secure_node.ssl_port])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            raw.sendall(rng.randbytes(rng.randrange(1, 2048)))
            drain(raw)
    tokens = [
        b"",
        b"n,,n=alice,r=" + rng.randbytes(40),
        b"n,,n=" + b"=" * 300 + b",r=abc",
        b"y,a=bob,n=alice,r=abc,tokenauth=true",
        b"\x00" * 3,
        b"\x00alice\x00",
        rng.randbytes(5000),
    ]
    for index in range(60):  # valid TLS, then malformed SASL or an unauthenticated request
        with (
            socket.create_connection(("127.0.0.1", secure_node.sasl_port), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as sock,
        ):
            choice = index % 4
            if choice == 0:
                sock.sendall(frame("Metadata", 12, {"topics": None}))
            elif choice == 1:
                sock.sendall(rng.randbytes(rng.randrange(1, 512)))
            else:
                mechanism = rng.choice(["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN", "X" * 200])
                sock.sendall(frame("SaslHandshake", 1, {"mechanism": mechanism}))
                for token in rng.sample(tokens, 2):
                    sock.sendall(frame("SaslAuthenticate", rng.choice([0, 1, 2]),
                                       {"auth_bytes": token}))  # fmt: skip
            drain(sock)
    assert secure_node.is_running()
    log_text = secure_node.log_path.read_text(errors="replace")
    assert "internal error" not in log_text and "Traceback" not in log_text
    # Still serving: a real client produces and consumes over both secured listeners.
    for config in (secure_node.confluent_sasl(), secure_node.confluent_mtls()):
        topic = unique_topic("after-fuzz")
        create(config, topic, partitions=1)
        produce_txn(config, topic, 3)
        assert len(consume_group(config, topic, 3)) == 3


def test_librdkafka_reauthenticates_kip368(tmp_path: Path) -> None:
    """With connections.max.reauth.ms the broker ends sessions; librdkafka re-authenticates on
    the same connection (KIP-368) and keeps producing past several session lifetimes."""
    node = SecureNode(tmp_path / "reauth", {"connections.max.reauth.ms": "3000"})
    node.start()
    try:
        config = node.confluent_sasl()
        topic = unique_topic("reauth")
        create(config, topic, partitions=1)
        producer = Producer(config)
        errors: list[Any] = []
        sent = 0
        deadline = time.monotonic() + 10.0  # more than three session lifetimes
        while time.monotonic() < deadline:
            producer.produce(
                topic,
                value=f"r{sent}".encode(),
                on_delivery=lambda error, _m: errors.append(error) if error else None,
            )
            sent += 1
            producer.flush(30)
            time.sleep(0.05)
        assert not errors and producer.flush(30) == 0
        assert len(consume_group(config, topic, sent)) == sent
        # Without re-authentication every lifetime would end in a close; a loaded machine may
        # delay one re-authentication past its deadline.
        log_text = node.log_path.read_text(errors="replace")
        assert log_text.count("SASL session expired") <= 1
    finally:
        node.stop()
