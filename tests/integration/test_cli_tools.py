"""The smaller Kafka tools against a real node, with the Kafka tools' output lines:
producer-perf-test, consumer-perf-test, delete-records, transactions, features, log-dirs,
reassign-partitions --generate, storage info."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.integration.cli_support import CliRun, assert_no_traceback, create_topic, sparklog
from tests.integration.cli_support import tool as cli_tool
from tests.integration.conftest import unique_topic
from tests.integration.node_harness import Node

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def node(module_node: Node) -> Node:
    return module_node


def tool(node: Node, *args: str, stdin: str | None = None) -> CliRun:
    return cli_tool(node.bootstrap, *args, stdin=stdin)


def created(node: Node, prefix: str, partitions: int = 1) -> str:
    return create_topic(node.bootstrap, prefix, partitions)


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


def test_delete_records(node: Node, tmp_path: Path) -> None:
    topic = created(node, "delrec", partitions=2)
    producer = ck.Producer({"bootstrap.servers": node.bootstrap})
    for i in range(10):
        producer.produce(topic, value=b"x", partition=i % 2)
    assert producer.flush(30) == 0
    spec = tmp_path / "offsets.json"
    spec.write_text(json.dumps({"partitions": [
        {"topic": topic, "partition": 0, "offset": 3},
        {"topic": topic, "partition": 1, "offset": -1},
    ], "version": 1}))  # fmt: skip
    run = tool(node, "delete-records", "--offset-json-file", str(spec))
    assert run.lines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: {topic}-0\tlow_watermark: 3",
        f"partition: {topic}-1\tlow_watermark: 5",
    ]
    assert tool(node, "get-offsets", "--topic", topic, "--time", "-2").lines() == [
        f"{topic}:0:3", f"{topic}:1:5"
    ]  # fmt: skip
    spec.write_text("{not json")
    bad = tool(node, "delete-records", "--offset-json-file", str(spec))
    assert bad.status == 1 and "is not valid JSON" in bad.err


def test_transactions_list_and_describe(node: Node) -> None:
    topic = created(node, "txn")
    txn_id = unique_topic("txid")
    producer = ck.Producer({"bootstrap.servers": node.bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"x")
    producer.flush(30)
    ongoing = tool(node, "transactions", "describe", "--transactional-id", txn_id)
    header, row = ongoing.lines()
    assert header.split("\t")[:-1] == [
        "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
        "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
        "TopicPartitions",
    ]  # fmt: skip
    cells = [cell.strip() for cell in row.split("\t")[:-1]]
    assert cells[0] == "1" and cells[1] == txn_id and cells[4] == "Ongoing"
    assert cells[8] == f"{topic}-0"
    producer.commit_transaction(30)
    listed = tool(node, "transactions", "list")
    assert listed.lines()[0].split() == [
        "TransactionalId", "Coordinator", "ProducerId", "TransactionState"
    ]  # fmt: skip
    mine = [line.split() for line in listed.lines() if line.startswith(txn_id)]
    assert len(mine) == 1 and mine[0][1] == "1" and mine[0][3] == "CompleteCommit"
    missing = tool(node, "transactions", "describe", "--transactional-id", "no-such-id")
    assert missing.status == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in missing.err


def test_log_dirs(node: Node) -> None:
    topic = created(node, "logdirs", partitions=2)
    run = tool(node, "log-dirs", "--describe", "--topic-list", topic)
    assert run.lines()[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 1",
    ]
    document = json.loads(run.lines()[2])
    assert document["version"] == 1
    (broker,) = document["brokers"]
    (log_dir,) = broker["logDirs"]
    assert broker["broker"] == 1 and log_dir["error"] is None
    assert log_dir["logDir"] == str(node.log_dir)
    assert sorted(p["partition"] for p in log_dir["partitions"]) == [f"{topic}-0", f"{topic}-1"]
    assert set(log_dir["partitions"][0]) == {"partition", "size", "offsetLag", "isFuture"}
    bad = tool(node, "log-dirs", "--describe", "--broker-list", "7")
    assert bad.status == 1 and "The given brokers do not exist from --broker-list: 7" in bad.err


def test_features_describe(node: Node) -> None:
    run = tool(node, "features", "describe")
    assert run.status == 0, run.err
    lines = {line.split("\t")[0]: line.split("\t")[1:] for line in run.lines()}
    assert set(lines) == {
        "Feature: eligible.leader.replicas.version",
        "Feature: metadata.version",
    }
    metadata = lines["Feature: metadata.version"]
    assert metadata[:3] == [
        "SupportedMinVersion: 3.3-IV3",
        "SupportedMaxVersion: 4.1-IV1",
        "FinalizedVersionLevel: 4.0-IV3",  # the harness formats with the default release
    ]
    assert re.fullmatch(r"Epoch: \d+", metadata[3])


def test_reassign_generate(node: Node, tmp_path: Path) -> None:
    topic = created(node, "gen", partitions=2)
    spec = tmp_path / "move.json"
    spec.write_text(json.dumps({"topics": [{"topic": topic}], "version": 1}))
    run = sparklog("reassign-partitions", "--bootstrap-server", node.bootstrap, "--generate",
                   "--topics-to-move-json-file", str(spec), "--broker-list", "1")  # fmt: skip
    assert_no_traceback(run)
    lines = run.lines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[2:4] == ["", "Proposed partition reassignment configuration"]
    expected = {"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": [1], "log_dirs": ["any"]} for p in (0, 1)
    ]}  # fmt: skip
    assert json.loads(lines[1]) == expected and json.loads(lines[4]) == expected
    unknown = sparklog("reassign-partitions", "--bootstrap-server", node.bootstrap,
                       "--generate", "--topics-to-move-json-file", str(spec),
                       "--broker-list", "1,9")  # fmt: skip
    assert unknown.status == 1 and "Unknown broker id(s): 9" in unknown.err


def test_storage_info(node: Node, tmp_path: Path) -> None:
    run = sparklog("storage", "info", "-c", str(node.properties_path))
    assert run.status == 0, run.err
    assert run.lines()[:3] == ["Found log directory:", f"  {node.log_dir}", ""]
    assert run.lines()[3].startswith(f"Found metadata: {{cluster.id={node.cluster_id}, ")
    assert run.lines()[3].endswith(", node.id=1, version=1}")
    elsewhere = tmp_path / "other.properties"
    elsewhere.write_text(
        node.properties_path.read_text().replace(str(node.log_dir), str(tmp_path / "nowhere"))
    )
    missing = sparklog("storage", "info", "-c", str(elsewhere))
    assert missing.status == 1
    assert missing.lines() == ["Found problem:", f"  {tmp_path / 'nowhere'} does not exist", ""]
