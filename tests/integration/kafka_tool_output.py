"""Kafka 4.x tools' output, as literal strings and patterns: what the CLI integration tests
(node and cluster) expect ``sparklog``'s tools to print for the same state. Each names the Kafka
tool method it copies; ``{...}`` fields are ``str.format`` holes."""

from __future__ import annotations

import re

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
