"""Leader elections, ELR, unclean election, ElectLeaders, rebalancing and reassignment, driven
through the real QuorumController over a real metadata log."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from sparklog.controller.configs import TopicConfigPolicy
from sparklog.controller.quorum_controller import QuorumController
from sparklog.controller.topics import TopicDefaults
from sparklog.metadata.bootstrap import BootstrapMetadata
from sparklog.metadata.image import PartitionRegistration
from sparklog.metadata.records import MetadataRecord, decode_record
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionRequest,
    BrokerRegistrationRequest,
    CreateTopicsRequest,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
)
from sparklog.raft.quorum_state import QuorumStateStore
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from tests.unit.controller.test_broker_lifecycle import beat, register
from tests.unit.raft.single_voter import SingleVoterRaft

NOW = 1_700_000_000_000


class Cluster:
    """A controller on a real metadata log with brokers 1..n registered and unfenced."""

    def __init__(
        self,
        directory: Path,
        brokers: int = 3,
        *,
        release: str = "4.1",
        broker_defaults: dict[str, str] | None = None,
    ) -> None:
        self.log = Log.open(str(directory / "__cluster_metadata-0"), LogConfig(), lambda: NOW)
        store = QuorumStateStore(directory / "__cluster_metadata-0" / "quorum-state")
        self.raft: SingleVoterRaft[MetadataRecord] = SingleVoterRaft(
            self.log, 1, store, decode_record, clock_ms=lambda: NOW
        )
        defaults = TopicDefaults(
            config_policy=TopicConfigPolicy(LogConfig.from_props(broker_defaults or {}))
        )
        self.controller = QuorumController(
            self.raft,
            defaults=defaults,
            rng=random.Random(3),
            bootstrap=BootstrapMetadata.from_release_version(release, "test"),
        )
        self.raft.start()
        self.controller.activate()
        self.epochs = {b: register(self, b, 0) for b in range(1, brokers + 1)}  # type: ignore[arg-type]
        for b, epoch in self.epochs.items():
            beat(self, b, epoch, now=1)  # type: ignore[arg-type]

    def close(self) -> None:
        self.log.close()

    def create(self, name: str, replicas: list[list[int]], **configs: str) -> None:
        request: CreateTopicsRequest = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [
                        {"partition_index": i, "broker_ids": r} for i, r in enumerate(replicas)
                    ],
                    "configs": [
                        {"name": k.replace("_", "."), "value": v} for k, v in configs.items()
                    ],
                }
            ],
            "timeout_ms": 1000,
            "validate_only": False,
        }
        response = self.controller.run(self.controller.create_topics(request, 7))
        assert response["topics"][0]["error_code"] == 0, response

    def partition(self, name: str, index: int = 0) -> PartitionRegistration:
        topic = self.controller.image.topics.get_topic(name)
        assert topic is not None
        return topic.partitions[index]

    def fence(self, broker_id: int) -> None:
        beat(self, broker_id, self.epochs[broker_id], now=2, want_fence=True)  # type: ignore[arg-type]

    def unfence(self, broker_id: int) -> None:
        response = beat(self, broker_id, self.epochs[broker_id], now=3)  # type: ignore[arg-type]
        assert not response["is_fenced"]

    def alter_isr(self, name: str, isr: list[int], index: int = 0) -> dict[str, Any]:
        topic = self.controller.image.topics.get_topic(name)
        assert topic is not None
        p = topic.partitions[index]
        body: AlterPartitionRequest = {
            "broker_id": p.leader,
            "broker_epoch": self.epochs[p.leader],
            "topics": [
                {
                    "topic_name": "",
                    "topic_id": topic.topic_id,
                    "partitions": [
                        {
                            "partition_index": index,
                            "leader_epoch": p.leader_epoch,
                            "new_isr": [],
                            "new_isr_with_epochs": [
                                {"broker_id": b, "broker_epoch": self.epochs[b]} for b in isr
                            ],
                            "leader_recovery_state": 0,
                            "partition_epoch": p.partition_epoch,
                        }
                    ],
                }
            ],
        }
        response = self.controller.run(self.controller.alter_partition(body, 3))
        return {**response["topics"][0]["partitions"][0]}

    def elect(self, election_type: int, partitions: dict[str, list[int]] | None) -> dict[str, Any]:
        request: ElectLeadersRequest = {
            "election_type": election_type,
            "topic_partitions": (
                None
                if partitions is None
                else [{"topic": t, "partitions": ps} for t, ps in partitions.items()]
            ),
            "timeout_ms": 1000,
        }
        response = self.controller.run(self.controller.elect_leaders(request, 2))
        return {**response}

    def reassign(self, name: str, replicas: list[int] | None, index: int = 0) -> dict[str, Any]:
        request: AlterPartitionReassignmentsRequest = {
            "timeout_ms": 1000,
            "allow_replication_factor_change": True,
            "topics": [
                {"name": name, "partitions": [{"partition_index": index, "replicas": replicas}]}
            ],
        }
        response = self.controller.run(self.controller.alter_partition_reassignments(request, 0))
        return {**response["responses"][0]["partitions"][0]}


@pytest.fixture
def cluster(tmp_path: Path) -> Cluster:
    return Cluster(tmp_path)


def codes(response: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {
        (t["topic"], p["partition_id"]): p["error_code"]
        for t in response["replica_election_results"]
        for p in t["partition_result"]
    }


# -- ELR (KIP-966) ------------------------------------------------------------------------------


def test_elr_on_by_default_from_4_1_and_off_for_4_0(tmp_path: Path) -> None:
    on = Cluster(tmp_path / "a", release="4.1")
    off = Cluster(tmp_path / "b", release="4.0")
    assert on.controller.image.features.levels["eligible.leader.replicas.version"] == 1
    assert "eligible.leader.replicas.version" not in off.controller.image.features.levels


def test_fencing_below_min_isr_keeps_safe_choices_and_elects_from_elr(cluster: Cluster) -> None:
    cluster.create("t", [[1, 2, 3]], min_insync_replicas="2")
    cluster.fence(3)
    p = cluster.partition("t")
    assert p.isr == (1, 2) and p.elr == () and p.leader == 1
    cluster.fence(1)
    p = cluster.partition("t")
    # ISR fell below min.insync.replicas: the fenced members that were in sync become ELR.
    assert p.leader == 2 and p.isr == (2,) and p.elr == (1,)
    cluster.fence(2)
    p = cluster.partition("t")
    assert p.leader == -1 and p.isr == () and p.elr == (1, 2)
    # Broker 3 fell out of sync before the ISR shrank below min ISR: never a safe choice.
    cluster.unfence(3)
    assert cluster.partition("t").leader == -1
    before = cluster.controller.elections_from_elr
    cluster.unfence(1)
    p = cluster.partition("t")
    assert p.leader == 1 and p.isr == (1,) and p.elr == (2,)
    assert cluster.controller.elections_from_elr == before + 1


def test_alter_partition_shrink_below_min_isr_fills_elr(cluster: Cluster) -> None:
    cluster.create("t", [[1, 2, 3]], min_insync_replicas="3")
    result = cluster.alter_isr("t", [1, 2])
    assert result["error_code"] == 0
    assert cluster.partition("t").elr == (3,)
    assert cluster.alter_isr("t", [1, 2, 3])["error_code"] == 0
    assert cluster.partition("t").elr == ()


def test_unclean_shutdown_leaves_elr(cluster: Cluster) -> None:
    cluster.create("t", [[1, 2, 3]], min_insync_replicas="3")
    cluster.fence(2)
    assert cluster.partition("t").elr == (2,)
    body: BrokerRegistrationRequest = {
        "broker_id": 2,
        "cluster_id": "c",
        "incarnation_id": b"\x77" * 16,
        "listeners": [{"name": "PLAINTEXT", "host": "h", "port": 1, "security_protocol": 0}],
        "features": [],
        "rack": None,
        "is_migrating_zk_broker": False,
        "log_dirs": [],
        "previous_broker_epoch": -1,
    }
    response = cluster.controller.run(cluster.controller.broker_registration(body, "c", 100_000))
    assert response["error_code"] == 0
    p = cluster.partition("t")
    assert 2 not in p.elr and 2 not in p.isr


# -- unclean.leader.election.enable -------------------------------------------------------------


def test_offline_without_unclean_until_an_isr_member_returns(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, release="4.0")
    cluster.create("t", [[1, 2]])
    cluster.alter_isr("t", [1])
    cluster.fence(1)
    p = cluster.partition("t")
    assert p.leader == -1 and p.isr == (1,)
    # Broker 2 is live but was out of sync: nothing changes, even on the periodic pass.
    assert cluster.controller.run(cluster.controller.elect_offline_partitions()) == 0
    assert cluster.partition("t").leader == -1
    cluster.unfence(1)
    assert cluster.partition("t").leader == 1


def test_unclean_topic_override_elects_any_live_replica(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, release="4.0")
    cluster.create("t", [[1, 2]], unclean_leader_election_enable="true")
    cluster.alter_isr("t", [1])
    cluster.fence(1)
    p = cluster.partition("t")
    assert p.leader == 2 and p.isr == (2,) and p.leader_recovery_state == 1
    assert cluster.controller.unclean_elections == 1


def test_unclean_broker_default_and_periodic_pass(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, release="4.0")
    cluster.create("t", [[1, 2]])
    cluster.alter_isr("t", [1])
    cluster.fence(1)
    assert cluster.partition("t").leader == -1
    request: IncrementalAlterConfigsRequest = {
        "resources": [
            {
                "resource_type": 2,
                "resource_name": "t",
                "configs": [
                    {
                        "name": "unclean.leader.election.enable",
                        "config_operation": 0,
                        "value": "true",
                    }
                ],
            }
        ],
        "validate_only": False,
    }
    cluster.controller.run(cluster.controller.incremental_alter_configs(request, 1))
    assert cluster.controller.run(cluster.controller.elect_offline_partitions()) == 1
    assert cluster.partition("t").leader == 2
    default_on = Cluster(
        tmp_path / "d", release="4.0", broker_defaults={"unclean.leader.election.enable": "true"}
    )
    default_on.create("u", [[1, 2]])
    default_on.alter_isr("u", [1])
    default_on.fence(1)
    assert default_on.partition("u").leader == 2


# -- ElectLeaders -------------------------------------------------------------------------------


def test_elect_preferred_leaders(cluster: Cluster) -> None:
    cluster.create("t", [[1, 2], [2, 1], [3, 1]])
    cluster.fence(1)
    cluster.unfence(1)
    assert cluster.partition("t", 0).leader == 2
    # Back in sync (the new leader's AlterPartition): a valid preferred leader again.
    cluster.alter_isr("t", [2, 1], 0)
    response = cluster.elect(0, {"t": [0, 1, 7], "nope": [0]})
    assert response["error_code"] == 0
    assert codes(response) == {
        ("t", 0): ErrorCode.NONE,
        ("t", 1): ErrorCode.ELECTION_NOT_NEEDED,
        ("t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert cluster.partition("t", 0).leader == 1
    # Preferred replica fenced: not available.
    cluster.fence(3)
    assert codes(cluster.elect(0, {"t": [2]})) == {
        ("t", 2): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    }


def test_elect_all_partitions_omits_not_needed(cluster: Cluster) -> None:
    cluster.create("t", [[1, 2], [2, 1]])
    assert cluster.elect(0, None)["replica_election_results"] == []
    cluster.fence(1)
    cluster.unfence(1)
    cluster.alter_isr("t", [2, 1], 0)
    assert codes(cluster.elect(0, None)) == {("t", 0): ErrorCode.NONE}


def test_elect_unclean(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, release="4.0")
    cluster.create("t", [[1, 2], [2, 3]])
    cluster.alter_isr("t", [1])
    cluster.fence(1)
    cluster.fence(3)
    cluster.fence(2)
    assert codes(cluster.elect(1, {"t": [0]})) == {
        ("t", 0): ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    }
    cluster.unfence(2)
    assert codes(cluster.elect(1, {"t": [0, 1]})) == {
        ("t", 0): ErrorCode.NONE,
        ("t", 1): ErrorCode.ELECTION_NOT_NEEDED,
    }
    p = cluster.partition("t")
    assert p.leader == 2 and p.isr == (2,) and p.leader_recovery_state == 1


def test_elect_bad_election_type(cluster: Cluster) -> None:
    assert cluster.elect(5, None)["error_code"] == ErrorCode.INVALID_REQUEST


# -- automatic preferred leader rebalancing -----------------------------------------------------


def test_rebalance_only_above_imbalance_percentage(cluster: Cluster) -> None:
    replicas = [[1, 2]] * 10 + [[2, 1]] * 10
    cluster.create("t", replicas)
    cluster.fence(1)
    cluster.unfence(1)
    controller = cluster.controller
    # Before broker 1 is back in the ISRs, nothing can move.
    assert controller.run(controller.balance_partition_leaders()) == 0
    for i in range(10):
        cluster.alter_isr("t", [2, 1], i)
    # Broker 1 should lead 10 partitions and leads none: 100% > 10%.
    assert controller.run(controller.balance_partition_leaders()) == 10
    assert all(cluster.partition("t", i).leader == replicas[i][0] for i in range(len(replicas)))
    assert controller.run(controller.balance_partition_leaders()) == 0
    # One partition of ten off its preferred leader: 10% is not above 10%; 9% is.
    cluster.fence(1)
    cluster.unfence(1)
    for i in range(10):
        cluster.alter_isr("t", [2, 1], i)
    cluster.elect(0, {"t": list(range(1, 10))})
    assert cluster.partition("t", 0).leader == 2
    assert controller.run(controller.balance_partition_leaders()) == 0
    controller.imbalance_percentage = 9
    assert controller.run(controller.balance_partition_leaders()) == 1
    assert cluster.partition("t", 0).leader == 1


# -- reassignment (KIP-455) ---------------------------------------------------------------------


def test_reassignment_completes_through_alter_partition(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, brokers=4)
    cluster.create("t", [[1, 2, 3]])
    assert cluster.reassign("t", [2, 3, 4])["error_code"] == 0
    p = cluster.partition("t")
    assert p.replicas == (2, 3, 4, 1) and p.adding_replicas == (4,) and p.removing_replicas == (1,)
    assert p.leader == 1
    listed = cluster.controller.run(
        cluster.controller.list_partition_reassignments({"timeout_ms": 1000, "topics": None}, 0)
    )
    assert listed["topics"] == [
        {
            "name": "t",
            "partitions": [
                {
                    "partition_index": 0,
                    "replicas": [2, 3, 4, 1],
                    "adding_replicas": [4],
                    "removing_replicas": [1],
                }
            ],
        }
    ]
    # The leader adds broker 4 to the ISR: the reassignment completes, leadership moves.
    result = cluster.alter_isr("t", [1, 2, 3, 4])
    assert result["error_code"] == ErrorCode.NEW_LEADER_ELECTED
    p = cluster.partition("t")
    assert p.replicas == (2, 3, 4) and p.isr == (2, 3, 4) and p.leader == 2
    assert p.adding_replicas == () and p.removing_replicas == ()
    listed = cluster.controller.run(
        cluster.controller.list_partition_reassignments({"timeout_ms": 1000, "topics": None}, 0)
    )
    assert listed["topics"] == []


def test_reassignment_cancel_and_errors(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, brokers=4)
    cluster.create("t", [[1, 2, 3]])
    assert cluster.reassign("t", None)["error_code"] == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert cluster.reassign("t", [])["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert cluster.reassign("t", [1, 1])["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert cluster.reassign("t", [1, 9])["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert cluster.reassign("t", [1], index=3)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert cluster.reassign("x", [1])["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert cluster.reassign("t", [1, 2, 4])["error_code"] == 0
    assert cluster.partition("t").adding_replicas == (4,)
    assert cluster.reassign("t", None)["error_code"] == 0
    p = cluster.partition("t")
    assert p.replicas == (1, 2, 3) and p.isr == (1, 2, 3)
    assert p.adding_replicas == () and p.removing_replicas == ()


def test_shrinking_reassignment_completes_at_once_and_moves_leader(cluster: Cluster) -> None:
    cluster.create("t", [[1, 2, 3]])
    assert cluster.reassign("t", [3, 2])["error_code"] == 0
    p = cluster.partition("t")
    # The leader left: the first remaining replica in the new order leads.
    assert p.replicas == (3, 2) and p.isr == (2, 3) and p.leader == 3


def test_decisions_survive_restart(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, brokers=4)
    cluster.create("t", [[1, 2, 3]], min_insync_replicas="3")
    cluster.reassign("t", [2, 3, 4])
    cluster.fence(3)
    image = cluster.controller.image
    cluster.close()
    again = Cluster.__new__(Cluster)
    again.log = Log.open(str(tmp_path / "__cluster_metadata-0"), LogConfig(), lambda: NOW)
    store = QuorumStateStore(tmp_path / "__cluster_metadata-0" / "quorum-state")
    again.raft = SingleVoterRaft(again.log, 1, store, decode_record, clock_ms=lambda: NOW)
    again.controller = QuorumController(again.raft)
    again.raft.start()
    assert again.controller.image.digest() == image.digest()
    assert again.partition("t").elr == (3,)


def test_reassignment_replication_factor_change_refused_when_not_allowed(cluster: Cluster) -> None:
    cluster.create("t", [[1, 2]])
    request: AlterPartitionReassignmentsRequest = {
        "timeout_ms": 1000,
        "allow_replication_factor_change": False,
        "topics": [
            {
                "name": "t",
                "partitions": [{"partition_index": 0, "replicas": [1, 2, 3]}],
            }
        ],
    }
    controller = cluster.controller
    response = controller.run(controller.alter_partition_reassignments(request, 1))
    assert response["allow_replication_factor_change"] is False
    [partition] = response["responses"][0]["partitions"]
    assert partition["error_code"] == ErrorCode.INVALID_REPLICATION_FACTOR
    request["topics"][0]["partitions"][0]["replicas"] = [2, 3]
    response = controller.run(controller.alter_partition_reassignments(request, 1))
    assert response["responses"][0]["partitions"][0]["error_code"] == 0
    assert cluster.partition("t").adding_replicas == (3,)
