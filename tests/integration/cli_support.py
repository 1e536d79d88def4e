"""Running ``sparklog`` as a subprocess in the CLI tests, as a user does.

``sparklog(*args, stdin=...)`` returns a :class:`CliRun` (status, stdout, stderr); every run is
bounded. ``assert_no_traceback`` is the check every CLI error test makes: a user sees a
message, never a Python traceback. ``tool(bootstrap, command, *args)`` runs a command with
``--bootstrap-server`` and makes that check; ``create_topic`` makes a uniquely named topic.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass

from tests.integration.conftest import unique_topic
from tests.integration.node_harness import REPO_ROOT, Node


@dataclass(frozen=True)
class CliRun:
    status: int
    out: str
    err: str

    def lines(self) -> list[str]:
        return self.out.splitlines()


def sparklog(*args: str, stdin: str | None = None, timeout_s: float = 120.0) -> CliRun:
    done = subprocess.run(
        [sys.executable, "-m", "sparklog.cli.main", *args],
        cwd=REPO_ROOT,
        input=None if stdin is None else stdin.encode(),
        capture_output=True,
        timeout=timeout_s,
        check=False,
    )
    return CliRun(done.returncode, done.stdout.decode(), done.stderr.decode())


def assert_no_traceback(run: CliRun) -> None:
    assert "Traceback" not in run.err and "Traceback" not in run.out, run.err


def tool(bootstrap: str, command: str, *args: str, stdin: str | None = None) -> CliRun:
    run = sparklog(command, "--bootstrap-server", bootstrap, *args, stdin=stdin)
    assert_no_traceback(run)
    return run


def create_topic(bootstrap: str, prefix: str, partitions: int = 1, replicas: int = -1) -> str:
    topic = unique_topic(prefix)
    run = tool(bootstrap, "topics", "--create", "--topic", topic, "--partitions", str(partitions),
               "--replication-factor", str(replicas))  # fmt: skip
    assert run.status == 0, run.err
    return topic


# Kafka 4.x tools' output, as literal strings/patterns (shared by the node and cluster tests).

# TopicCommand.TopicDescription.printDescription (Configs: the non-default topic configs).
TOPIC_LINE = (
    "Topic: {topic}\tTopicId: {topic_id}\tPartitionCount: {partitions}"
    "\tReplicationFactor: {rf}\tConfigs: {configs}"
)
# TopicCommand.PartitionDescription.printDescription (Elr/LastKnownElr from
# DescribeTopicPartitions, empty lists on a 4.x cluster without ELR).
PARTITION_LINE = re.compile(
    r"\tTopic: (?P<topic>[^\t]+)\tPartition: (?P<partition>\d+)\tLeader: (?P<leader>\d+|none)"
    r"\tReplicas: (?P<replicas>[\d,]+)\tIsr: (?P<isr>[\d,]*)\tElr: (?P<elr>[\d,]*)"
    r"\tLastKnownElr: (?P<last_known_elr>[\d,]*)"
)
# MetadataQuorumCommand.handleDescribeStatus: each name and colon padded to 24 characters.
QUORUM_STATUS_NAMES = [
    "ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag",
    "MaxFollowerLagTimeMs", "CurrentVoters", "CurrentObservers",
]  # fmt: skip
# MetadataQuorumCommand.handleDescribeReplication through ToolsUtils.prettyPrintTable.
QUORUM_REPLICATION_HEADER = [
    "NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
    "LastCaughtUpTimestamp", "Status",
]  # fmt: skip
# FeatureCommand.handleDescribe.
FEATURE_LINE = re.compile(
    r"Feature: (?P<name>[a-z.]+)\tSupportedMinVersion: [\w.-]+\tSupportedMaxVersion: [\w.-]+"
    r"\tFinalizedVersionLevel: [\w.-]+\tEpoch: \d+"
)
# LeaderElectionCommand.electLeaders.
ELECTION_DONE = "Successfully completed leader election (PREFERRED) for partitions {partitions}"
ELECTION_NOT_NEEDED = "Valid replica already elected for partitions {partitions}"
# ReassignPartitionsCommand: executeAssignment, verifyAssignment, clearAllThrottles.
REASSIGN_STARTED = "Successfully started partition reassignment for {partition}"
REASSIGN_STATUS = "Status of partition reassignment:"
REASSIGN_DONE = "Reassignment of partition {partition} is completed."
REASSIGN_CLEARING = [
    "Clearing broker-level throttles on broker{s} {brokers}",  # "broker" for one broker
    "Clearing topic-level throttles on topic {topic}",
]
# TransactionsCommand.DescribeProducersCommand / FindHangingTransactionsCommand headers
# (prettyPrintTable: tab-separated).
PRODUCERS_HEADER = [
    "ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
    "CurrentTransactionStartOffset",
]  # fmt: skip
HANGING_HEADER = [
    "Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
    "LastTimestamp", "Duration(min)",
]  # fmt: skip
# ProducerPerformance.Stats.printTotal.
PRODUCER_SUMMARY = re.compile(
    r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$"
)
# ConsumerPerformance.printHeader (without --show-detailed-stats).
CONSUMER_PERF_HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)


def cells(line: str) -> list[str]:
    """A prettyPrintTable row's cells (each padded, then a tab)."""
    assert line.endswith("\t"), repr(line)
    return [cell.rstrip() for cell in line.split("\t")[:-1]]


def node_tool(node: Node, *args: str, stdin: str | None = None) -> CliRun:
    """:func:`tool` against ``node``'s client listener."""
    return tool(node.bootstrap, *args, stdin=stdin)


def node_topic(node: Node, prefix: str, partitions: int = 1) -> str:
    """:func:`create_topic` on ``node``: a new topic named after ``prefix``."""
    return create_topic(node.bootstrap, prefix, partitions)
