"""``sparklog configs`` and ``sparklog get-offsets`` against a real node, with
kafka-configs.sh's and kafka-get-offsets.sh's output lines."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integration.cli_support import node_tool as tool
from tests.integration.conftest import unique_topic
from tests.integration.node_harness import Node

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def node(module_node: Node) -> Node:
    return module_node


def test_configs_alter_and_describe_a_topic(node: Node) -> None:
    topic = unique_topic("cfg")
    assert tool(node, "topics", "--create", "--topic", topic, "--partitions", "1").status == 0
    empty = tool(node, "configs", "--describe", "--entity-type", "topics", "--entity-name", topic)
    assert empty.lines() == [f"Dynamic configs for topic {topic} are:"]
    done = tool(node, "configs", "--alter", "--topic", topic, "--add-config",
                "retention.ms=123456,cleanup.policy=[compact,delete]")  # fmt: skip
    assert done.out == f"Completed updating config for topic {topic}.\n"
    described = tool(node, "configs", "--describe", "--topic", topic)
    assert described.lines() == [
        f"Dynamic configs for topic {topic} are:",
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=123456 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms="
        "123456, DEFAULT_CONFIG:log.retention.ms=604800000}",
    ]
    tool(node, "configs", "--alter", "--topic", topic, "--delete-config", "retention.ms")
    after = tool(node, "configs", "--describe", "--topic", topic).lines()
    assert [line.split("=")[0].strip() for line in after[1:]] == ["cleanup.policy"]
    every = tool(node, "configs", "--describe", "--topic", topic, "--all").lines()
    assert every[0] == f"All configs for topic {topic} are:"
    assert any(line.startswith("  segment.bytes=") for line in every)


def test_configs_errors_are_messages(node: Node, tmp_path: Path) -> None:
    missing = tool(node, "configs", "--describe", "--topic", "no-such-topic")
    assert missing.status == 1
    assert missing.err.startswith("Error while executing config command with args '")
    assert "UNKNOWN_TOPIC_OR_PARTITION" in missing.err
    bad = tool(node, "configs", "--alter", "--topic", "x", "--add-config", "novalue")
    assert bad.status == 1 and 'must be in the format "key=val"' in bad.err
    secured = tmp_path / "client.properties"
    secured.write_text("security.protocol=SASL_SSL\n")
    refused = tool(node, "configs", "--describe", "--broker", "1", "--command-config",
                   str(secured))  # fmt: skip
    assert refused.status == 1 and "sasl.mechanism GSSAPI is not supported" in refused.err
    plain = tmp_path / "plain.properties"
    plain.write_text("client.id=ops\nrequest.timeout.ms=5000\n")
    ok = tool(node, "configs", "--describe", "--broker", "1", "--command-config", str(plain))
    assert ok.lines()[0] == "Dynamic configs for broker 1 are:"


def test_get_offsets_by_spec(node: Node) -> None:
    topic = unique_topic("offs")
    assert tool(node, "topics", "--create", "--topic", topic, "--partitions", "2").status == 0
    producer = ck.Producer({"bootstrap.servers": node.bootstrap})
    before_ms = int(time.time() * 1000)
    for i in range(6):
        producer.produce(topic, value=b"x", partition=i % 2)
    assert producer.flush(30) == 0
    assert tool(node, "get-offsets", "--topic", topic).lines() == [f"{topic}:0:3", f"{topic}:1:3"]
    assert tool(node, "get-offsets", "--topic", topic, "--time", "-2").lines() == [
        f"{topic}:0:0", f"{topic}:1:0"
    ]  # fmt: skip
    assert tool(node, "get-offsets", "--topic", topic, "--partitions", "1", "--time",
                "earliest-local").lines() == [f"{topic}:1:0"]  # fmt: skip
    assert tool(node, "get-offsets", "--topic-partitions", f"{topic}:1",
                "--time", str(before_ms - 1000)).lines() == [f"{topic}:1:0"]  # fmt: skip
    future = str(int(time.time() * 1000) + 3_600_000)
    assert tool(node, "get-offsets", "--topic", topic, "--time", future).lines() == [
        f"{topic}:0:", f"{topic}:1:"
    ]  # fmt: skip
    bad = tool(node, "get-offsets", "--topic", topic, "--time", "soon")
    assert bad.status == 1 and bad.err.startswith("Error occurred: Malformed time argument soon.")
