"""``sparklog console-producer`` / ``console-consumer`` against a real node: keys and headers
parsed as kafka-console-producer.sh does, DefaultMessageFormatter's lines, partition/offset
starts, --group offsets, read_committed skipping an aborted transaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.cli_support import node_tool as tool
from tests.integration.cli_support import node_topic as created
from tests.integration.conftest import unique_topic
from tests.integration.node_harness import Node

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def node(module_node: Node) -> Node:
    return module_node


def test_keys_headers_and_formatter(node: Node) -> None:
    topic = created(node, "con")
    lines = "h1:a,h2:b\tk1\tv1\nNO_HEADERS\tk2\tv2\n\tk3\tnull\n"
    produced = tool(node, "console-producer", "--topic", topic, "--property", "parse.key=true",
                    "--property", "parse.headers=true", "--property", "null.marker=null",
                    stdin=lines)  # fmt: skip
    assert (produced.status, produced.out, produced.err) == (0, "", "")
    run = tool(node, "console-consumer", "--topic", topic, "--from-beginning", "--max-messages",
               "3", "--property", "print.key=true", "--property", "print.headers=true",
               "--property", "print.offset=true", "--property", "print.partition=true",
               "--property", "print.timestamp=true")  # fmt: skip
    assert run.err.strip() == "Processed a total of 3 messages"
    rows = [line.split("\t") for line in run.lines()]
    assert [row[0].split(":")[0] for row in rows] == ["CreateTime"] * 3
    assert [row[1:] for row in rows] == [
        ["Partition:0", "Offset:0", "h1:a,h2:b", "k1", "v1"],
        ["Partition:0", "Offset:1", "NO_HEADERS", "k2", "v2"],
        ["Partition:0", "Offset:2", "NO_HEADERS", "k3", "null"],
    ]
    plain = tool(node, "console-consumer", "--topic", topic, "--partition", "0", "--offset", "1",
                 "--timeout-ms", "1500")  # fmt: skip
    assert plain.lines() == ["v2", "null"]
    bad = tool(node, "console-producer", "--topic", topic, "--property", "parse.key=true",
               stdin="no separator\n")  # fmt: skip
    assert bad.status == 1 and "No key separator found on line number 1" in bad.err


def test_file_input_and_group_offsets(node: Node, tmp_path: Path) -> None:
    topic = created(node, "grp", partitions=2)
    source = tmp_path / "lines.txt"
    source.write_text("".join(f"k{i}:v{i}\n" for i in range(10)))
    assert tool(node, "console-producer", "--topic", topic, "--file", str(source), "--property",
                "parse.key=true", "--property", "key.separator=:").status == 0  # fmt: skip
    group = unique_topic("console-group")
    first = tool(node, "console-consumer", "--topic", topic, "--from-beginning", "--group", group,
                 "--max-messages", "4")  # fmt: skip
    second = tool(node, "console-consumer", "--topic", topic, "--from-beginning", "--group",
                  group, "--timeout-ms", "1500")  # fmt: skip
    assert len(first.lines()) == 4 and len(second.lines()) == 6
    assert sorted(first.lines() + second.lines()) == sorted(f"v{i}" for i in range(10))
    lag = tool(node, "consumer-groups", "--describe", "--group", group)
    assert [line.split()[5] for line in lag.lines()[2:]] == ["0", "0"]


def test_read_committed_skips_an_aborted_transaction(node: Node) -> None:
    topic = created(node, "txn")
    producer = ck.Producer({"bootstrap.servers": node.bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    for outcome, value in (("abort", b"aborted"), ("commit", b"committed")):
        producer.begin_transaction()
        producer.produce(topic, value=value)
        producer.flush(30)
        if outcome == "abort":
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
    base = ("console-consumer", "--topic", topic, "--from-beginning", "--timeout-ms", "1500")
    assert tool(node, *base, "--isolation-level", "read_committed").lines() == ["committed"]
    assert tool(node, *base).lines() == ["aborted", "committed"]
