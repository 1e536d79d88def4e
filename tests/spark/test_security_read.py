"""A Spark read of a SASL_SSL node with Spark's ``kafka.security.protocol`` / ``kafka.sasl.*`` /
``kafka.ssl.*`` options: the hot path over gRPC (TLS + SCRAM login) and over Kafka Fetch give
every record; a wrong password fails the query with Kafka's message and no password in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.integration.security_support import ALICE_PASSWORD, SecureNode
from tests.spark.support import SPARK_MARKS, batch_reader, spark_session

pytestmark = SPARK_MARKS
TOPIC = "secured-spark"
RECORDS = 2_000


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SecureNode, Any]]:
    node = SecureNode(tmp_path_factory.mktemp("secure-spark"))
    node.start()
    try:
        from confluent_kafka.admin import AdminClient
        from confluent_kafka.cimpl import NewTopic

        config = node.confluent_sasl()
        admin = AdminClient(config)
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(60)
        producer = Producer(config)
        for index in range(RECORDS):
            producer.produce(TOPIC, value=f"v{index}".encode(), partition=index % 2)
        assert producer.flush(60) == 0
        with spark_session("sparklog-security") as spark:
            yield node, spark
    finally:
        node.stop()


def options(node: SecureNode, password: str = ALICE_PASSWORD, **extra: str) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": node.sasl_bootstrap,
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
        f'required username="alice" password="{password}";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(node.tls.ca_pem),
        "subscribe": TOPIC,
        "sparklog.read.from": "brokers",
        **extra,
    }


@pytest.mark.parametrize("protocol", ["grpc", "kafka"])
def test_spark_reads_a_sasl_ssl_node(env: tuple[SecureNode, Any], protocol: str) -> None:
    node, spark = env
    df = batch_reader(spark, options(node, **{"sparklog.hot.protocol": protocol})).load()
    values = sorted(bytes(r["value"]).decode() for r in df.select("value").collect())
    assert values == sorted(f"v{i}" for i in range(RECORDS))


def test_spark_wrong_password_fails_without_leaking_it(env: tuple[SecureNode, Any]) -> None:
    node, spark = env
    with pytest.raises(Exception) as info:
        batch_reader(spark, options(node, password="Wr0ng-Pass")).load().count()
    text = str(info.value)
    assert "SASL authentication failed" in text or "invalid credentials" in text, text[-2000:]
    assert "Wr0ng-Pass" not in text
    assert ALICE_PASSWORD not in node.log_path.read_text(errors="replace")
