"""QuorumController over a real metadata log: operations, Kafka error codes, restart = replay."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from sparklog.controller.quorum_controller import QuorumController
from sparklog.controller.topics import TopicDefaults
from sparklog.metadata.image import RESOURCE_BROKER, RESOURCE_TOPIC, Endpoint, MetadataImage
from sparklog.metadata.loader import MetadataLoader
from sparklog.metadata.records import MetadataRecord, decode_record
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.kafka_uuid import ZERO_UUID
from sparklog.protocol.message_types import (
    AlterConfigsRequest,
    AlterConfigsRequestResources,
    AlterConfigsRequestResourcesConfigs,
    CreatePartitionsRequest,
    CreatePartitionsRequestTopics,
    CreatePartitionsResponseResults,
    CreateTopicsRequest,
    CreateTopicsRequestTopics,
    CreateTopicsRequestTopicsAssignments,
    CreateTopicsRequestTopicsConfigs,
    DeleteTopicsRequest,
    DeleteTopicsRequestTopics,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestResources,
    IncrementalAlterConfigsRequestResourcesConfigs,
)
from sparklog.raft.quorum_state import QuorumStateStore
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from tests.unit.raft.single_voter import SingleVoterRaft

PLAINTEXT = [Endpoint("PLAINTEXT", "localhost", 9092, 0)]


class Node:
    """One combined node's metadata plane, opened on ``directory``."""

    def __init__(
        self, directory: Path, brokers: int = 1, defaults: TopicDefaults | None = None
    ) -> None:
        self.log = Log.open(
            str(directory / "__cluster_metadata-0"), LogConfig(), lambda: 1_700_000_000_000
        )
        store = QuorumStateStore(directory / "__cluster_metadata-0" / "quorum-state")
        self.raft: SingleVoterRaft[MetadataRecord] = SingleVoterRaft(
            self.log, 1, store, decode_record, clock_ms=lambda: 1_700_000_000_000
        )
        self.controller = QuorumController(self.raft, defaults=defaults, rng=random.Random(7))
        self.loader = MetadataLoader(cluster_id="c")
        self.raft.register_listener(self.loader)
        self.raft.start()
        self.controller.activate()
        self.epochs = [
            self.controller.run(self.controller.register_broker(b, bytes([b]) * 16, PLAINTEXT))
            for b in range(1, brokers + 1)
        ]

    def close(self) -> None:
        self.log.close()


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


def topic(
    name: str,
    partitions: int = -1,
    rf: int = -1,
    *,
    assignments: list[CreateTopicsRequestTopicsAssignments] | None = None,
    configs: list[CreateTopicsRequestTopicsConfigs] | None = None,
) -> CreateTopicsRequestTopics:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": assignments or [],
        "configs": configs or [],
    }


def create_request(
    *topics: CreateTopicsRequestTopics, validate_only: bool = False
) -> CreateTopicsRequest:
    """A CreateTopics request as the controller decodes it (every key present)."""
    return {"topics": list(topics), "timeout_ms": 1000, "validate_only": validate_only}


def delete_request(
    names: list[str] | None = None, topics: list[DeleteTopicsRequestTopics] | None = None
) -> DeleteTopicsRequest:
    """A DeleteTopics request as the controller decodes it: ``names`` (v0-5) or ``topics``."""
    return {"topics": topics or [], "topic_names": names or [], "timeout_ms": 1000}


def create(
    node: Node, *topics: CreateTopicsRequestTopics, validate_only: bool = False
) -> list[dict[str, Any]]:
    """Each topic's CreateTopics result (as a plain dict: the tests read any key)."""
    request = create_request(*topics, validate_only=validate_only)
    response = node.controller.run(node.controller.create_topics(request, 7))
    return [{**result} for result in response["topics"]]


def test_bootstrap_and_registration(node: Node) -> None:
    image = node.controller.image
    assert image.features.metadata_version == 25
    broker = image.cluster.brokers[1]
    assert not broker.fenced and broker.epoch == node.epochs[0]
    assert broker.endpoint("PLAINTEXT") == PLAINTEXT[0]
    assert node.loader.image.cluster == image.cluster


def test_create_topics_success_and_response_fields(node: Node) -> None:
    [result] = create(node, topic("orders", 3, configs=[{"name": "retention.ms", "value": "1000"}]))
    assert result["error_code"] == 0 and result["error_message"] is None
    assert result["topic_id"] != ZERO_UUID
    assert result["num_partitions"] == 3 and result["replication_factor"] == 1
    configs = {c["name"]: c for c in result["configs"]}
    assert (
        configs["retention.ms"]["value"] == "1000" and configs["retention.ms"]["config_source"] == 1
    )
    assert configs["segment.bytes"]["config_source"] == 5
    image = node.loader.image
    created = image.topics.get_topic("orders")
    assert created is not None and created.topic_id == result["topic_id"]
    assert sorted(created.partitions) == [0, 1, 2]
    p0 = created.partitions[0]
    assert (p0.replicas, p0.isr, p0.leader, p0.leader_epoch) == ((1,), (1,), 1, 0)
    assert image.configs.topic_config("orders") == {"retention.ms": "1000"}


def test_create_topics_defaults_and_validate_only(node: Node) -> None:
    before = node.log.log_end_offset
    [result] = create(node, topic("dry"), validate_only=True)
    assert result["error_code"] == 0 and result["num_partitions"] == 1
    assert node.log.log_end_offset == before
    assert node.controller.image.topics.get_topic("dry") is None


@pytest.mark.parametrize(
    ("spec", "code", "message"),
    [
        (topic(""), ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty"),
        (topic(".."), ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."'),
        (
            topic("a" * 250),
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            "can't be longer than 249 characters",
        ),
        (
            topic("bad name"),
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            "contains a character other than ASCII alphanumerics",
        ),
        (
            topic("t", 0),
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        ),
        (
            topic("t", 1, 0),
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0",
        ),
        (
            topic("t", 1, 2),
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "The target replication factor of 2 cannot be reached because only 1 broker(s) "
            "are registered.",
        ),
        (
            topic("t", configs=[{"name": "retention.ms", "value": "abc"}]),
            ErrorCode.INVALID_CONFIG,
            "retention.ms",
        ),
        (
            topic("t", configs=[{"name": "no.such.key", "value": "1"}]),
            ErrorCode.INVALID_CONFIG,
            "no.such.key",
        ),
        (
            topic("t", configs=[{"name": "retention.ms", "value": None}]),
            ErrorCode.INVALID_CONFIG,
            "Null value not supported",
        ),
        (
            topic("t", 2, assignments=[{"partition_index": 0, "broker_ids": [1]}]),
            ErrorCode.INVALID_REQUEST,
            "numPartitions was not set to -1",
        ),
        (
            topic("t", assignments=[{"partition_index": 1, "broker_ids": [1]}]),
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "consecutive 0-based",
        ),
        (
            topic("t", assignments=[{"partition_index": 0, "broker_ids": [7]}]),
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "includes broker 7, but no such broker is registered",
        ),
        (
            topic("t", assignments=[{"partition_index": 0, "broker_ids": [1, 1]}]),
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "more than once",
        ),
    ],
)
def test_create_topics_errors(
    node: Node, spec: CreateTopicsRequestTopics, code: ErrorCode, message: str
) -> None:
    before = node.log.log_end_offset
    [result] = create(node, spec)
    assert result["error_code"] == code
    assert message in result["error_message"]
    assert node.log.log_end_offset == before


def test_create_topics_exists_duplicates_and_collisions(node: Node) -> None:
    create(node, topic("a.b"))
    results = create(node, topic("a.b"), topic("a_b"), topic("dup"), topic("dup"), topic("ok"))
    assert [r["error_code"] for r in results] == [
        ErrorCode.TOPIC_ALREADY_EXISTS,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
        0,
    ]
    assert results[0]["error_message"] == "Topic 'a.b' already exists."
    assert results[1]["error_message"] == "Topic 'a_b' collides with existing topic: a.b"
    assert results[2]["error_message"] == "Duplicate topic name."


def test_manual_assignment_and_placement_over_brokers(tmp_path: Path) -> None:
    node = Node(tmp_path, brokers=3)
    [result] = create(node, topic("spread", 6, 2))
    assert result["error_code"] == 0
    spread = node.controller.image.topics.get_topic("spread")
    assert spread is not None
    leaders = [spread.partitions[p].leader for p in range(6)]
    assert sorted(set(leaders)) == [1, 2, 3]
    assert all(len(set(p.replicas)) == 2 for p in spread.partitions.values())
    [manual] = create(
        node,
        topic(
            "manual",
            assignments=[
                {"partition_index": 0, "broker_ids": [3, 1]},
                {"partition_index": 1, "broker_ids": [2, 3]},
            ],
        ),
    )
    assert manual["error_code"] == 0 and manual["replication_factor"] == 2
    m = node.controller.image.topics.get_topic("manual")
    assert m is not None and m.partitions[0].leader == 3 and m.partitions[1].replicas == (2, 3)
    node.close()


def test_delete_topics_by_name_and_id(node: Node) -> None:
    [a] = create(node, topic("a"))
    [b] = create(node, topic("b"))
    request = delete_request(
        topics=[
            {"name": "a", "topic_id": ZERO_UUID},
            {"name": None, "topic_id": b["topic_id"]},
            {"name": "zz", "topic_id": ZERO_UUID},
            {"name": None, "topic_id": b"\x09" * 16},
        ]
    )
    response = node.controller.run(node.controller.delete_topics(request, 6))
    codes = [(r["name"], r["error_code"]) for r in response["responses"]]
    assert codes == [
        ("a", 0),
        ("b", 0),
        ("zz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (None, ErrorCode.UNKNOWN_TOPIC_ID),
    ]
    assert response["responses"][0]["topic_id"] == a["topic_id"]
    assert node.loader.image.topics.by_id == {}
    old = node.controller.run(node.controller.delete_topics(delete_request(["gone"]), 5))
    assert old["responses"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    both = node.controller.run(
        node.controller.delete_topics(
            delete_request(topics=[{"name": "x", "topic_id": b"\x01" * 16}]), 6
        )
    )
    assert both["responses"][0]["error_code"] == ErrorCode.INVALID_REQUEST


def test_delete_disabled(tmp_path: Path) -> None:
    node = Node(tmp_path, defaults=TopicDefaults(delete_topic_enable=False))
    create(node, topic("keep"))
    response = node.controller.run(node.controller.delete_topics(delete_request(["keep"]), 5))
    assert response["responses"][0]["error_code"] == ErrorCode.TOPIC_DELETION_DISABLED
    node.close()


def test_create_partitions(node: Node) -> None:
    create(node, topic("grow", 2))

    def run(
        entries: list[CreatePartitionsRequestTopics], validate_only: bool = False
    ) -> list[CreatePartitionsResponseResults]:
        req: CreatePartitionsRequest = {
            "topics": entries,
            "timeout_ms": 1,
            "validate_only": validate_only,
        }
        return node.controller.run(node.controller.create_partitions(req, 3))["results"]

    assert (
        run([{"name": "grow", "count": 4, "assignments": None}], validate_only=True)[0][
            "error_code"
        ]
        == 0
    )
    assert len(node.controller.image.topics.get_topic("grow").partitions) == 2  # type: ignore[union-attr]
    assert run([{"name": "grow", "count": 4, "assignments": None}])[0]["error_code"] == 0
    assert sorted(node.loader.image.topics.get_topic("grow").partitions) == [0, 1, 2, 3]  # type: ignore[union-attr]
    results = run(
        [
            {"name": "grow", "count": 3, "assignments": None},
            {"name": "nope", "count": 3, "assignments": None},
        ]
    )
    assert results[0]["error_code"] == ErrorCode.INVALID_PARTITIONS
    assert (
        results[0]["error_message"]
        == "The topic grow currently has 4 partition(s); 3 would not be an increase."
    )
    assert results[1]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    same = run([{"name": "grow", "count": 4, "assignments": None}])[0]
    assert same["error_message"] == "Topic already has 4 partition(s)."
    short = run([{"name": "grow", "count": 6, "assignments": [{"broker_ids": [1]}]}])[0]
    assert short["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert (
        short["error_message"]
        == "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."
    )


def alter(
    node: Node, resources: list[IncrementalAlterConfigsRequestResources]
) -> list[dict[str, Any]]:
    request: IncrementalAlterConfigsRequest = {"resources": resources, "validate_only": False}
    response = node.controller.run(node.controller.incremental_alter_configs(request, 1))
    return [{**r} for r in response["responses"]]


def op(
    name: str, operation: int, value: str | None = None
) -> IncrementalAlterConfigsRequestResourcesConfigs:
    return {"name": name, "config_operation": operation, "value": value}


def test_incremental_alter_configs(node: Node) -> None:
    create(node, topic("cfg"))
    [ok] = alter(
        node,
        [
            {
                "resource_type": RESOURCE_TOPIC,
                "resource_name": "cfg",
                "configs": [op("retention.ms", 0, "5000"), op("cleanup.policy", 2, "compact")],
            }
        ],
    )
    assert ok["error_code"] == 0
    assert node.loader.image.configs.topic_config("cfg") == {
        "retention.ms": "5000",
        "cleanup.policy": "delete,compact",
    }
    alter(
        node,
        [
            {
                "resource_type": RESOURCE_TOPIC,
                "resource_name": "cfg",
                "configs": [op("retention.ms", 1), op("cleanup.policy", 3, "delete")],
            }
        ],
    )
    assert node.loader.image.configs.topic_config("cfg") == {"cleanup.policy": "compact"}
    [broker] = alter(
        node,
        [
            {
                "resource_type": RESOURCE_BROKER,
                "resource_name": "",
                "configs": [op("log.retention.ms", 0, "100")],
            }
        ],
    )
    assert broker["error_code"] == 0
    assert node.loader.image.configs.get(RESOURCE_BROKER, "") == {"log.retention.ms": "100"}
    offset = node.log.log_end_offset
    [same] = alter(
        node,
        [
            {
                "resource_type": RESOURCE_BROKER,
                "resource_name": "",
                "configs": [op("log.retention.ms", 0, "100")],
            }
        ],
    )
    assert (
        same["error_code"] == 0 and node.log.log_end_offset == offset
    )  # nothing changed, nothing written


def assert_refused(
    node: Node,
    send: Callable[[Node, list[_Resource]], list[dict[str, Any]]],
    resource: _Resource,
    code: ErrorCode,
    message: str,
) -> None:
    """``send`` (alter or replace) of ``resource`` answers ``code`` with ``message`` in its
    error message and writes nothing."""
    create(node, topic("cfg"))
    offset = node.log.log_end_offset
    [result] = send(node, [resource])
    assert result["error_code"] == code
    assert message in result["error_message"]
    assert node.log.log_end_offset == offset


_Resource = TypeVar(
    "_Resource", IncrementalAlterConfigsRequestResources, AlterConfigsRequestResources
)


def resource(
    resource_type: int, name: str, *configs: IncrementalAlterConfigsRequestResourcesConfigs
) -> IncrementalAlterConfigsRequestResources:
    """An IncrementalAlterConfigs resource entry."""
    return {"resource_type": resource_type, "resource_name": name, "configs": list(configs)}


def whole(
    resource_type: int, name: str, *configs: AlterConfigsRequestResourcesConfigs
) -> AlterConfigsRequestResources:
    """An AlterConfigs resource entry (its configs replace the resource's overrides)."""
    return {"resource_type": resource_type, "resource_name": name, "configs": list(configs)}


@pytest.mark.parametrize(
    ("resource", "code", "message"),
    [
        (
            resource(RESOURCE_TOPIC, "missing", op("retention.ms", 0, "1")),
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "The topic 'missing' does not exist.",
        ),
        (
            resource(RESOURCE_TOPIC, "cfg", op("retention.ms", 0, "x")),
            ErrorCode.INVALID_CONFIG,
            "retention.ms",
        ),
        (
            resource(RESOURCE_TOPIC, "cfg", op("retention.ms", 2, "1")),
            ErrorCode.INVALID_CONFIG,
            "Config value append is not allowed for config key: retention.ms",
        ),
        (
            resource(RESOURCE_TOPIC, "cfg", op("retention.ms", 9, "1")),
            ErrorCode.INVALID_REQUEST,
            "Unknown operation type 9",
        ),
        (
            resource(RESOURCE_TOPIC, "cfg", op("retention.ms", 0)),
            ErrorCode.INVALID_REQUEST,
            "Null value not supported",
        ),
        (
            resource(RESOURCE_TOPIC, "cfg", op("retention.ms", 0, "1"), op("retention.ms", 1)),
            ErrorCode.INVALID_REQUEST,
            "duplicate config keys",
        ),
        (
            resource(RESOURCE_BROKER, "abc"),
            ErrorCode.INVALID_REQUEST,
            "Illegal non-integral BROKER resource type name: abc",
        ),
        (
            resource(RESOURCE_BROKER, "1", op("no.such", 0, "1")),
            ErrorCode.INVALID_CONFIG,
            "Unknown broker config: no.such",
        ),
        (
            resource(RESOURCE_BROKER, "1", op("num.io.threads", 0, "many")),
            ErrorCode.INVALID_CONFIG,
            "num.io.threads",
        ),
        (
            resource(8, "1"),
            ErrorCode.INVALID_REQUEST,
            "Unsupported resource type BROKER_LOGGER",
        ),
    ],
)
def test_incremental_alter_configs_errors(
    node: Node, resource: IncrementalAlterConfigsRequestResources, code: ErrorCode, message: str
) -> None:
    assert_refused(node, alter, resource, code, message)


def test_auto_create_and_producer_ids(node: Node) -> None:
    result = node.controller.run(node.controller.auto_create_topic("auto"))
    assert result["error_code"] == 0
    again = node.controller.run(node.controller.auto_create_topic("auto"))
    assert again["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
    first = node.controller.run(node.controller.allocate_producer_ids(1, node.epochs[0]))
    second = node.controller.run(node.controller.allocate_producer_ids(1, node.epochs[0]))
    assert first == (0, 1000) and second == (1000, 1000)
    with pytest.raises(KafkaApiError) as info:
        node.controller.allocate_producer_ids(1, 12345)
    assert info.value.code == ErrorCode.STALE_BROKER_EPOCH


def test_register_broker_unsupported_metadata_version(node: Node) -> None:
    with pytest.raises(KafkaApiError) as info:
        node.controller.register_broker(
            5, b"\x05" * 16, PLAINTEXT, features={"metadata.version": (1, 3)}
        )
    assert info.value.code == ErrorCode.UNSUPPORTED_VERSION
    assert "does not support finalized version 25 of metadata.version" in str(info.value)


def test_stale_result_is_refused(node: Node) -> None:
    stale = node.controller.create_topics(create_request(topic("x")), 7)
    create(node, topic("y"))
    with pytest.raises(RuntimeError, match="computed on image at offset"):
        node.controller.run(stale)


def comparable(image: MetadataImage) -> tuple[Any, ...]:
    return (image.features, image.cluster, image.topics, image.configs, image.producer_ids)


def test_restart_replays_to_an_identical_image(tmp_path: Path) -> None:
    node = Node(tmp_path)
    create(
        node,
        topic("one", 2, configs=[{"name": "cleanup.policy", "value": "compact"}]),
        topic("two", 1),
    )
    node.controller.run(node.controller.delete_topics(delete_request(["two"]), 5))
    alter(
        node,
        [
            {
                "resource_type": RESOURCE_TOPIC,
                "resource_name": "one",
                "configs": [op("retention.ms", 0, "42")],
            }
        ],
    )
    node.controller.run(node.controller.allocate_producer_ids(1, node.epochs[0]))
    before = node.controller.image
    assert comparable(node.loader.image) == comparable(before)
    node.close()

    log = Log.open(str(tmp_path / "__cluster_metadata-0"), LogConfig(), lambda: 1_700_000_000_000)
    raft: SingleVoterRaft[MetadataRecord] = SingleVoterRaft(
        log,
        1,
        QuorumStateStore(tmp_path / "__cluster_metadata-0" / "quorum-state"),
        decode_record,
        clock_ms=lambda: 1_700_000_000_000,
    )
    controller = QuorumController(raft)
    loader = MetadataLoader()
    raft.register_listener(loader)
    assert raft.start().epoch == 2
    controller.activate()  # already bootstrapped: writes nothing
    assert comparable(controller.image) == comparable(before)
    assert comparable(loader.image) == comparable(before)
    # The broker's new incarnation bumps the leader epoch of the partitions it leads.
    new_epoch = controller.run(controller.register_broker(1, b"\x77" * 16, PLAINTEXT))
    assert new_epoch > node.epochs[0]
    one = controller.image.topics.get_topic("one")
    assert one is not None and all(
        p.leader_epoch == 1 and p.leader == 1 for p in one.partitions.values()
    )
    log.close()


def test_inactive_controller_refuses(tmp_path: Path) -> None:
    log = Log.open(str(tmp_path / "m"), LogConfig(), lambda: 1)
    raft: SingleVoterRaft[MetadataRecord] = SingleVoterRaft(
        log, 1, QuorumStateStore(tmp_path / "qs"), decode_record
    )
    controller = QuorumController(raft)
    with pytest.raises(KafkaApiError) as info:
        controller.run(controller.create_topics(create_request(), 7))
    assert info.value.code == ErrorCode.NOT_CONTROLLER
    log.close()


def replace(
    node: Node, resources: list[AlterConfigsRequestResources], validate_only: bool = False
) -> list[dict[str, Any]]:
    request: AlterConfigsRequest = {"resources": resources, "validate_only": validate_only}
    response = node.controller.run(node.controller.alter_configs(request, 2))
    return [{**r} for r in response["responses"]]


def test_alter_configs_replaces_the_whole_resource(node: Node) -> None:
    create(node, topic("legacy", configs=[{"name": "retention.ms", "value": "5000"}]))
    create(node, topic("other", configs=[{"name": "retention.ms", "value": "7000"}]))
    assert node.loader.image.configs.topic_config("legacy") == {"retention.ms": "5000"}
    [ok] = replace(
        node,
        [
            {
                "resource_type": RESOURCE_TOPIC,
                "resource_name": "legacy",
                "configs": [{"name": "cleanup.policy", "value": "compact"}],
            }
        ],
    )
    assert ok["error_code"] == 0 and ok["error_message"] is None
    # retention.ms was not listed: reset to its default (the override is gone).
    assert node.loader.image.configs.topic_config("legacy") == {"cleanup.policy": "compact"}
    assert node.loader.image.configs.topic_config("other") == {"retention.ms": "7000"}
    # A null value removes that override too; validate_only writes nothing.
    offset = node.log.log_end_offset
    [checked] = replace(
        node,
        [{"resource_type": RESOURCE_TOPIC, "resource_name": "legacy", "configs": []}],
        validate_only=True,
    )
    assert checked["error_code"] == 0
    assert node.log.log_end_offset == offset
    replace(
        node,
        [
            {
                "resource_type": RESOURCE_TOPIC,
                "resource_name": "legacy",
                "configs": [{"name": "cleanup.policy", "value": None}],
            }
        ],
    )
    assert node.loader.image.configs.topic_config("legacy") == {}


@pytest.mark.parametrize(
    ("resource", "code", "message"),
    [
        (
            whole(RESOURCE_TOPIC, "nope"),
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "does not exist",
        ),
        (
            whole(RESOURCE_TOPIC, "cfg", {"name": "retention.ms", "value": "abc"}),
            ErrorCode.INVALID_CONFIG,
            "retention.ms",
        ),
        (
            whole(
                RESOURCE_TOPIC,
                "cfg",
                {"name": "retention.ms", "value": "1"},
                {"name": "retention.ms", "value": "2"},
            ),
            ErrorCode.INVALID_REQUEST,
            "duplicate config keys",
        ),
        (
            whole(8, "1"),
            ErrorCode.INVALID_REQUEST,
            "for AlterConfigs",
        ),
        (
            whole(RESOURCE_BROKER, "", {"name": "no.such.key", "value": "1"}),
            ErrorCode.INVALID_CONFIG,
            "no.such.key",
        ),
    ],
)
def test_alter_configs_errors(
    node: Node, resource: AlterConfigsRequestResources, code: ErrorCode, message: str
) -> None:
    assert_refused(node, replace, resource, code, message)
