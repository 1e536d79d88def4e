"""The smaller Kafka tools against a real node, with the Kafka tools' output lines:
producer-perf-test, consumer-perf-test, delete-records, transactions, features, log-dirs,
reassign-partitions --generate, storage info."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.integration.cli_support import CliRun, assert_no_traceback, sparklog
from tests.integration.conftest import unique_topic
from tests.integration.node_harness import Node

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    node = Node(tmp_path_factory.mktemp("cli-tools"))
    node.start()
    try:
        yield node
    finally:
        node.close()


def tool(node: Node, *args: str, stdin: str | None = None) -> CliRun:
    run = sparklog(*args[:1], "--bootstrap-server", node.bootstrap, *args[1:], stdin=stdin)
    assert_no_traceback(run)
    return run


def created(node: Node, prefix: str, partitions: int = 1) -> str:
    topic = unique_topic(prefix)
    assert tool(node, "topics", "--create", "--topic", topic, "--partitions",
                str(partitions)).status == 0  # fmt: skip
    return topic


PRODUCER_SUMMARY = re.compile(
    r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$"
)
CONSUMER_HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)


def test_perf_tools(node: Node) -> None:
    topic = created(node, "perf", partitions=2)
    produced = tool(node, "producer-perf-test", "--topic", topic, "--num-records", "3000",
                    "--record-size", "100", "--throughput", "-1")  # fmt: skip
    assert produced.status == 0, produced.err
    summary = PRODUCER_SUMMARY.match(produced.lines()[-1])
    assert summary is not None and summary.group(1) == "3000", produced.out
    consumed = tool(node, "consumer-perf-test", "--topic", topic, "--messages", "3000")
    assert consumed.status == 0, consumed.err
    assert consumed.lines()[0] == CONSUMER_HEADER
    fields = consumed.lines()[1].split(", ")
    assert len(fields) == 10 and fields[4] == "3000"
    assert abs(float(fields[2]) - 3000 * 100 / 1024 / 1024) < 0.001  # MB of values
    short = tool(node, "consumer-perf-test", "--topic", topic, "--messages", "5000",
                 "--timeout", "1000")  # fmt: skip
    assert short.lines()[1].split(", ")[4] == "3000"
    assert "WARNING: Exiting before consuming the expected number of messages" in short.err
