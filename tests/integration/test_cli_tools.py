"""The smaller Kafka tools against a real node, with the Kafka tools' output lines:
producer-perf-test, consumer-perf-test, delete-records, transactions (list, describe,
describe-producers, find-hanging, abort), features, log-dirs, reassign-partitions (--generate,
--execute, --verify), leader-election, metadata-quorum, topics --describe/--alter/--delete,
storage info. The Kafka formats are the literals of kafka_tool_output."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import pytest

from tests.integration import kafka_tool_output as kafka
from tests.integration.cli_support import (
    assert_no_traceback,
    cells,
    sparklog,
)
from tests.integration.cli_support import node_tool as tool
from tests.integration.cli_support import node_topic as created
from tests.integration.conftest import unique_topic
from tests.integration.node_harness import Node

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def node(module_node: Node) -> Node:
    return module_node


def test_perf_tools(node: Node) -> None:
    topic = created(node, "perf", partitions=2)
    produced = tool(node, "producer-perf-test", "--topic", topic, "--num-records", "3000",
                    "--record-size", "100", "--throughput", "-1")  # fmt: skip
    assert produced.status == 0, produced.err
    summary = kafka.PRODUCER_SUMMARY.match(produced.lines()[-1])
    assert summary is not None and summary.group(1) == "3000", produced.out
    consumed = tool(node, "consumer-perf-test", "--topic", topic, "--messages", "3000")
    assert consumed.status == 0, consumed.err
    assert consumed.lines()[0] == kafka.CONSUMER_PERF_HEADER
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
    assert all(kafka.FEATURE_LINE.fullmatch(line) for line in run.lines()), run.out
    assert set(lines) == {
        "Feature: eligible.leader.replicas.version",
        "Feature: metadata.version",
        "Feature: share.version",  # the module node enables share groups
        "Feature: transaction.version",
    }
    # FeatureCommand --bootstrap-controller: the controller advertises the same features.
    at_controller = sparklog("features", "--bootstrap-controller",
                             f"127.0.0.1:{node.controller_port}", "describe")  # fmt: skip
    assert [line.split("\t")[0] for line in at_controller.lines()] == sorted(lines)
    metadata = lines["Feature: metadata.version"]
    assert metadata[:3] == [
        "SupportedMinVersion: 3.3-IV3",
        "SupportedMaxVersion: 4.2-IV1",
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


def topic_line(topic: str, partitions: int, rf: int, configs: str = "") -> re.Pattern[str]:
    """kafka.TOPIC_LINE with any topic id (22 characters of URL-safe base64)."""
    line = kafka.TOPIC_LINE.format(
        topic=topic, topic_id="TOPICID", partitions=partitions, rf=rf, configs=configs
    )
    return re.compile(re.escape(line).replace("TOPICID", r"[\w-]{22}"))


def test_topics_describe_alter_delete(node: Node) -> None:
    topic = created(node, "tdesc", partitions=2)
    described = tool(node, "topics", "--describe", "--topic", topic).lines()
    assert topic_line(topic, 2, 1).fullmatch(described[0]), described[0]
    rows = [kafka.PARTITION_LINE.fullmatch(line) for line in described[1:]]
    assert [r.groupdict() if r else None for r in rows] == [
        {"topic": topic, "partition": str(p), "leader": "1", "replicas": "1", "isr": "1",
         "elr": "", "last_known_elr": ""} for p in (0, 1)
    ]  # fmt: skip
    tool(node, "configs", "--alter", "--topic", topic, "--add-config", "retention.ms=86400000")
    assert tool(node, "topics", "--alter", "--topic", topic, "--partitions", "3").out == ""
    again = tool(node, "topics", "--describe", "--topic", topic).lines()
    assert topic_line(topic, 3, 1, "retention.ms=86400000").fullmatch(again[0]), again[0]
    assert len(again) == 4
    # TopicCommand.DescribeOptions: a partition filter prints only the partitions it selects.
    only = ("topics", "--describe", "--topic", topic)
    assert tool(node, *only, "--under-replicated-partitions").out == ""
    assert tool(node, *only, "--unavailable-partitions").out == ""
    assert tool(node, *only, "--at-min-isr-partitions").lines() == again[1:]  # ISR 1 = min 1
    assert tool(node, *only, "--topics-with-overrides").lines() == again[:1]
    for action in ("--describe", "--delete"):
        quiet = tool(node, "topics", action, "--topic", "no-such-topic", "--if-exists")
        assert (quiet.status, quiet.out) == (0, "")
    assert tool(node, "topics", "--alter", "--topic", "no-such-topic", "--partitions", "2",
                "--if-exists").status == 0  # fmt: skip
    assert tool(node, "topics", "--delete", "--topic", topic).status == 0
    gone = tool(node, "topics", "--delete", "--topic", topic)
    assert gone.status == 1
    # TopicCommand.ensureTopicExists
    assert f"Error while executing topic command : Topic '{topic}' does not exist as expected" in (
        gone.err
    )


def test_leader_election_and_reassignment(node: Node, tmp_path: Path) -> None:
    topic = created(node, "elect")
    elected = tool(node, "leader-election", "--election-type", "PREFERRED", "--topic", topic,
                   "--partition", "0")  # fmt: skip
    assert elected.lines() == [kafka.ELECTION_NOT_NEEDED.format(partitions=f"{topic}-0")]
    # Kafka prints nothing when no partition of --all-topic-partitions needed an election.
    assert tool(node, "leader-election", "--election-type", "PREFERRED",
                "--all-topic-partitions").out == ""  # fmt: skip
    spec = tmp_path / "reassign.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [1]}]}))  # fmt: skip
    base = ("reassign-partitions", "--reassignment-json-file", str(spec))
    executed = tool(node, *base, "--execute").lines()
    current = {"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [1], "log_dirs": ["any"]}]}  # fmt: skip
    # ReassignPartitionsCommand.currentPartitionReplicaAssignmentToString, then the start line.
    assert executed[:2] == ["Current partition replica assignment", ""]
    assert json.loads(executed[2]) == current
    assert executed[3:] == [
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
        kafka.REASSIGN_STARTED.format(partition=f"{topic}-0"),
    ]
    assert tool(node, *base, "--verify").lines() == [
        kafka.REASSIGN_STATUS,
        kafka.REASSIGN_DONE.format(partition=f"{topic}-0"),
        kafka.REASSIGN_CLEARING[0].format(s="", brokers="1"),
        kafka.REASSIGN_CLEARING[1].format(topic=topic),
    ]


def test_metadata_quorum(node: Node) -> None:
    controller = f"127.0.0.1:{node.controller_port}"
    status = sparklog("metadata-quorum", "--bootstrap-controller", controller, "describe",
                      "--status")  # fmt: skip
    assert status.status == 0, status.err
    names = [line[:24] for line in status.lines()]
    assert names == [f"{name + ':':<24}" for name in kafka.QUORUM_STATUS_NAMES]
    fields = {line[:24].strip()[:-1]: line[24:] for line in status.lines()}
    assert fields["ClusterId"] == node.cluster_id
    (voter,) = json.loads(fields["CurrentVoters"])
    assert voter["id"] == 1 and voter["endpoints"] == [f"CONTROLLER://{controller}"]
    via_broker = tool(node, "metadata-quorum", "describe", "--status")
    assert via_broker.lines()[0] == status.lines()[0]
    replication = sparklog("metadata-quorum", "--bootstrap-controller", controller, "describe",
                           "--replication").lines()  # fmt: skip
    assert cells(replication[0]) == kafka.QUORUM_REPLICATION_HEADER
    assert [(row[0], row[6]) for row in map(cells, replication[1:])] == [("1", "Leader")]


def test_producers_hanging_and_abort(node: Node) -> None:
    topic = created(node, "hang")
    producer = ck.Producer({"bootstrap.servers": node.bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"x")
    producer.flush(30)
    try:
        producers = tool(node, "transactions", "describe-producers", "--topic", topic,
                         "--partition", "0").lines()  # fmt: skip
        assert cells(producers[0]) == kafka.PRODUCERS_HEADER
        (row,) = map(cells, producers[1:])
        assert row[3] == "0" and row[5] == "0"  # last sequence, the open transaction's start
        # The coordinator knows the transaction and this partition in it: not hanging.
        hanging = tool(node, "transactions", "find-hanging", "--topic", topic,
                       "--max-transaction-timeout", "0").lines()  # fmt: skip
        assert [cells(line) for line in hanging] == [kafka.HANGING_HEADER]
        scope = tool(node, "transactions", "find-hanging")
        assert scope.status == 1 and scope.err.strip() == (
            "The `find-hanging` command requires either --topic or --broker-id to limit the "
            "scope of the search"
        )
        wrong = tool(node, "transactions", "abort", "--topic", topic, "--partition", "0",
                     "--start-offset", "5")  # fmt: skip
        assert wrong.status == 1 and wrong.err.strip() == (
            f"Could not find any open transactions starting at offset 5 on partition {topic}-0"
        )
        aborted = tool(node, "transactions", "abort", "--topic", topic, "--partition", "0",
                       "--start-offset", "0")  # fmt: skip
        assert (aborted.status, aborted.out) == (0, "")
        after = tool(node, "transactions", "describe-producers", "--topic", topic,
                     "--partition", "0").lines()  # fmt: skip
        assert cells(after[1])[5] == "None"
    finally:
        with contextlib.suppress(Exception):
            producer.abort_transaction(5)
