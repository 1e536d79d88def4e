"""Replicas in log directories on the controller (KIP-858): placement at creation,
AssignReplicasToDirs, and leadership leaving the partitions of a dir reported offline —
over a real metadata log."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from sparklog.controller.brokers import (
    BrokerHeartbeats,
    HeartbeatOutcome,
    assign_replicas_to_dirs,
    heartbeat,
)
from sparklog.controller.directories import (
    MIGRATING,
    UNASSIGNED,
    assignment_request,
    default_dir,
)
from sparklog.controller.partition_change_builder import Election
from sparklog.controller.replication_control import ReplicationContext
from sparklog.metadata.image import METADATA_VERSION_FEATURE, FeaturesImage, PartitionRegistration
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    BrokerHeartbeatRequest,
    CreateTopicsRequestTopicsAssignments,
)
from tests.unit.controller.test_broker_lifecycle import registration
from tests.unit.controller.test_quorum_controller import Node, create, topic

DIR_A, DIR_B = b"A" * 16, b"B" * 16
SINGLE = {2: b"2" * 16, 3: b"3" * 16}


class Cluster:
    """Broker 1 with two log dirs (A, B); brokers 2 and 3 with one each."""

    def __init__(self, tmp_path: Path) -> None:
        self.node = Node(tmp_path, brokers=0)
        self.controller = self.node.controller
        self.epochs: dict[int, int] = {}
        for broker_id, dirs in ((1, [DIR_A, DIR_B]), (2, [SINGLE[2]]), (3, [SINGLE[3]])):
            body = registration(broker_id, bytes([broker_id]) * 16)
            body["log_dirs"] = dirs
            response = self.controller.run(self.controller.broker_registration(body, "c", 0))
            self.epochs[broker_id] = response["broker_epoch"]
        for broker_id in self.epochs:
            assert not self.beat(broker_id, now=1)["is_fenced"]
        # Broker 1 leads p0..p3 (first replica), followed by 2 and 3.
        assignments: list[CreateTopicsRequestTopicsAssignments] = [
            {"partition_index": i, "broker_ids": [1, 2, 3]} for i in range(4)
        ]
        assert create(self.node, topic("t", assignments=assignments))[0]["error_code"] == 0

    def beat(self, broker_id: int, now: int, offline: list[bytes] | None = None) -> Any:
        body: BrokerHeartbeatRequest = {
            "broker_id": broker_id,
            "broker_epoch": self.epochs[broker_id],
            "current_metadata_offset": self.controller.image.provenance.last_offset,
            "want_fence": False,
            "want_shut_down": False,
            "offline_log_dirs": offline or [],
        }
        return self.controller.run(self.controller.broker_heartbeat(body, now))

    def assign(self, *triples: tuple[bytes, int], epoch: int | None = None) -> Any:
        topic_id = self.partitions()[0][0]
        body = assignment_request(
            1,
            self.epochs[1] if epoch is None else epoch,
            [(directory, topic_id, index) for directory, index in triples],
        )
        return self.controller.run(self.controller.assign_replicas_to_dirs(body))

    def partitions(self) -> list[tuple[bytes, PartitionRegistration]]:
        t = self.controller.image.topics.get_topic("t")
        assert t is not None
        return [(t.topic_id, t.partitions[i]) for i in sorted(t.partitions)]


def offline_a(cluster: Cluster, ctx: ReplicationContext) -> HeartbeatOutcome:
    """Broker 1's heartbeat reporting dir A offline, decided on ``ctx`` (not appended)."""
    body: BrokerHeartbeatRequest = {
        "broker_id": 1,
        "broker_epoch": cluster.epochs[1],
        "current_metadata_offset": ctx.image.provenance.last_offset,
        "want_fence": False,
        "want_shut_down": False,
        "offline_log_dirs": [DIR_A],
    }
    return heartbeat(ctx, BrokerHeartbeats(9000), body, 5)


@pytest.fixture
def cluster(tmp_path: Path) -> Cluster:
    return Cluster(tmp_path)


def test_a_new_replica_is_placed_in_the_only_dir_of_its_broker(cluster: Cluster) -> None:
    for _, partition in cluster.partitions():
        assert partition.directories == (UNASSIGNED, SINGLE[2], SINGLE[3])
        assert partition.leader == 1


def test_assign_replicas_to_dirs_records_each_directory_once(cluster: Cluster) -> None:
    epochs = [p.partition_epoch for _, p in cluster.partitions()]
    response = cluster.assign((DIR_A, 0), (DIR_A, 1), (DIR_B, 2), (DIR_B, 3))
    assert response["error_code"] == 0
    codes = [
        p["error_code"]
        for d in response["directories"]
        for t in d["topics"]
        for p in t["partitions"]
    ]
    assert codes == [0, 0, 0, 0]
    placed = [p.directories[0] for _, p in cluster.partitions()]
    assert placed == [DIR_A, DIR_A, DIR_B, DIR_B]
    assert [p.partition_epoch for _, p in cluster.partitions()] == [e + 1 for e in epochs]
    assert all(p.leader == 1 and p.isr == (1, 2, 3) for _, p in cluster.partitions())
    offset = cluster.controller.image.provenance.last_offset
    cluster.assign((DIR_A, 0))  # already there: nothing to write
    assert cluster.controller.image.provenance.last_offset == offset


def test_assign_replicas_to_dirs_errors(cluster: Cluster) -> None:
    stale = cluster.assign((DIR_A, 0), epoch=cluster.epochs[1] - 1)
    assert stale["error_code"] == ErrorCode.STALE_BROKER_EPOCH
    topic_id = cluster.partitions()[0][0]
    body = assignment_request(1, cluster.epochs[1], [(DIR_A, topic_id, 9), (DIR_A, b"x" * 16, 0)])
    response = cluster.controller.run(cluster.controller.assign_replicas_to_dirs(body))
    codes = {
        (t["topic_id"], p["partition_index"]): p["error_code"]
        for d in response["directories"]
        for t in d["topics"]
        for p in t["partitions"]
    }
    assert codes == {
        (topic_id, 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        (b"x" * 16, 0): ErrorCode.UNKNOWN_TOPIC_ID,
    }
    create(cluster.node, topic("other", assignments=[{"partition_index": 0, "broker_ids": [2]}]))
    other = cluster.controller.image.topics.get_topic("other")
    assert other is not None
    body = assignment_request(1, cluster.epochs[1], [(DIR_A, other.topic_id, 0)])
    response = cluster.controller.run(cluster.controller.assign_replicas_to_dirs(body))
    [[[not_replica]]] = [[t["partitions"] for t in d["topics"]] for d in response["directories"]]
    assert not_replica["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_an_offline_dir_moves_only_its_partitions(cluster: Cluster) -> None:
    cluster.assign((DIR_A, 0), (DIR_A, 1), (DIR_B, 2))  # p3 stays UNASSIGNED: online
    cluster.beat(1, now=2, offline=[DIR_A])
    parts = [p for _, p in cluster.partitions()]
    assert [(p.leader, p.isr) for p in parts[:2]] == [(2, (2, 3)), (2, (2, 3))]
    assert [(p.leader, p.isr) for p in parts[2:]] == [(1, (1, 2, 3)), (1, (1, 2, 3))]
    broker = cluster.controller.image.cluster.broker(1)
    assert broker is not None and broker.log_dirs == (DIR_B,) and not broker.fenced
    offset = cluster.controller.image.provenance.last_offset
    cluster.beat(1, now=3, offline=[DIR_A])  # reported again: already recorded
    assert cluster.controller.image.provenance.last_offset == offset
    # A partition placed in the offline dir afterwards leaves broker 1 in the same record.
    cluster.assign((DIR_A, 3))
    p3 = cluster.partitions()[3][1]
    assert (p3.leader, p3.isr, p3.directories[0]) == (2, (2, 3), DIR_A)
    assert cluster.controller.image.provenance.last_offset == offset + 1


def test_a_replica_in_an_offline_dir_is_never_elected(cluster: Cluster) -> None:
    cluster.assign((DIR_A, 0))
    cluster.beat(1, now=2, offline=[DIR_A])
    for broker_id in (2, 3):  # p0 is left leaderless
        cluster.controller.run(cluster.controller.unregister_broker({"broker_id": broker_id}))
    ctx = cluster.controller.replication
    t = ctx.image.topics.get_topic("t")
    assert t is not None
    # Broker 1 is live, yet even an unclean election may not pick it for p0: its replica is in
    # the offline dir A. p1's replica on 1 is UNASSIGNED (online): 1 still leads it.
    assert ctx.acceptable()(1)
    builder = ctx.builder(t, 0, t.partitions[0], ctx.acceptable(), Election.UNCLEAN)
    builder.build()
    assert builder.elected is None and t.partitions[0].leader == -1
    assert t.partitions[1].leader == 1


def test_the_heartbeat_that_reports_an_offline_dir_does_not_unfence(cluster: Cluster) -> None:
    cluster.assign((DIR_A, 0))
    ctx = cluster.controller.replication
    fenced = dataclasses.replace(ctx.image.cluster.brokers[1], fenced=True)
    brokers = {**ctx.image.cluster.brokers, 1: fenced}
    image = dataclasses.replace(
        ctx.image, cluster=dataclasses.replace(ctx.image.cluster, brokers=brokers)
    )
    outcome = offline_a(cluster, ReplicationContext(image, ctx.policy))
    assert outcome.response["is_fenced"]
    names = [r.name for r in outcome.records]
    assert names == ["PartitionChangeRecord", "BrokerRegistrationChangeRecord"]
    assert outcome.records[0].data["leader"] == 2
    assert outcome.records[-1].data["log_dirs"] == [DIR_B]


def test_before_3_7_iv2_directories_are_not_tracked(cluster: Cluster) -> None:
    ctx = cluster.controller.replication
    image = dataclasses.replace(ctx.image, features=FeaturesImage({METADATA_VERSION_FEATURE: 16}))
    old = ReplicationContext(image, ctx.policy)
    assert default_dir(image, 2) == MIGRATING
    topic_id = cluster.partitions()[0][0]
    body = assignment_request(1, cluster.epochs[1], [(DIR_A, topic_id, 0)])
    records, response = assign_replicas_to_dirs(old, body)
    assert response["error_code"] == ErrorCode.UNSUPPORTED_VERSION and not records
    outcome = offline_a(cluster, old)
    assert not outcome.records
