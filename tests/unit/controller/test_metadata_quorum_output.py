"""``sparklog metadata-quorum describe``: --status and --replication text, as Kafka prints it."""

from __future__ import annotations

from sparklog.cli.metadata_quorum_tool import replication_lines, status_lines
from sparklog.protocol.kafka_uuid import uuid_from_str
from sparklog.protocol.message_types import (
    DescribeQuorumResponseTopicsPartitions,
    DescribeQuorumResponseTopicsPartitionsCurrentVoters,
)

DIR = "YuW8IfIj3i9_Pip1xMwppA"


def replica(
    node_id: int, end: int, caught_up: int
) -> DescribeQuorumResponseTopicsPartitionsCurrentVoters:
    return {
        "replica_id": node_id,
        "replica_directory_id": uuid_from_str(DIR),
        "log_end_offset": end,
        "last_fetch_timestamp": caught_up,
        "last_caught_up_timestamp": caught_up,
    }


PARTITION: DescribeQuorumResponseTopicsPartitions = {
    "leader_id": 2,
    "leader_epoch": 7,
    "high_watermark": 100,
    "current_voters": [replica(1, 95, 1000), replica(2, 100, 1500), replica(3, 100, 1400)],
    "observers": [replica(101, 90, 900)],
}


def test_status_lines() -> None:
    lines = status_lines(PARTITION, {2: ["CONTROLLER://h:9093"]}, "ARM-IBlytDe2oEeL54zUgQ")
    fields = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in lines}
    # MetadataQuorumCommand.handleDescribeStatus: ClusterId first, each name padded to 24.
    assert lines[0] == "ClusterId:              ARM-IBlytDe2oEeL54zUgQ"
    assert fields["LeaderId"] == "2" and fields["LeaderEpoch"] == "7"
    assert fields["HighWatermark"] == "100"
    assert fields["MaxFollowerLag"] == "5"
    # the max-lag follower is voter 1 (smallest log end offset): 1500 - 1000
    assert fields["MaxFollowerLagTimeMs"] == "500"
    assert (
        '{"id": 2, "directoryId": "' + DIR + '", "endpoints": ["CONTROLLER://h:9093"]}'
        in (fields["CurrentVoters"])
    )
    assert fields["CurrentObservers"] == '[{"id": 101, "directoryId": "' + DIR + '"}]'
    assert all(line[24:25] != " " for line in lines)  # values start in one column


def test_replication_lines() -> None:
    lines = replication_lines(PARTITION)
    # ToolsUtils.prettyPrintTable: each cell padded to its column's width, then a tab.
    assert lines[0] == (
        "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\t"
        "LastCaughtUpTimestamp\tStatus  \t"
    )
    assert lines[0].split() == [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    rows = [line.split() for line in lines[1:]]
    assert [(r[0], r[3], r[6]) for r in rows] == [
        ("2", "0", "Leader"),
        ("1", "5", "Follower"),
        ("3", "0", "Follower"),
        ("101", "10", "Observer"),
    ]
