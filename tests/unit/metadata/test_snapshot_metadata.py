"""Metadata snapshots: image digests, loading a snapshot (full reset), generation policy, and
restart / late-joining broker = the same image as a replica that replayed everything."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparklog.config import ServerConfig
from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import RESOURCE_TOPIC, MetadataImage
from sparklog.metadata.loader import MetadataLoader
from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.metadata.snapshot_generator import (
    DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS,
    DEFAULT_MAX_SNAPSHOT_INTERVAL_MS,
    SnapshotGenerator,
    raft_snapshot_emitter,
)
from sparklog.metadata.snapshot_image import image_from_snapshot, snapshot_delta
from sparklog.protocol.message_types import DeleteTopicsRequest
from sparklog.raft.client import LoadedSnapshot
from sparklog.raft.snapshots import SnapshotId
from tests.unit.metadata.snapshot_harness import PLAINTEXT, MetaCluster


def _topic(name: str, topic_id: bytes, partitions: int = 1) -> list[MetadataRecord]:
    out = [make_record("TopicRecord", {"name": name, "topic_id": topic_id})]
    for p in range(partitions):
        out.append(
            make_record(
                "PartitionRecord",
                {
                    "partition_id": p,
                    "topic_id": topic_id,
                    "replicas": [1],
                    "isr": [1],
                    "removing_replicas": [],
                    "adding_replicas": [],
                    "leader": 1,
                    "leader_epoch": 0,
                    "partition_epoch": 0,
                    "directories": [],
                },
            )
        )
    return out


def _config(topic: str, key: str, value: str | None) -> MetadataRecord:
    return make_record(
        "ConfigRecord",
        {"resource_type": RESOURCE_TOPIC, "resource_name": topic, "name": key, "value": value},
    )


def _image(records: list[MetadataRecord]) -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    for record in records:
        delta.replay(record)
    return delta.apply()


A, B, C = bytes([1]) * 16, bytes([2]) * 16, bytes([3]) * 16
FEATURE = make_record("FeatureLevelRecord", {"name": "metadata.version", "feature_level": 25})


def test_digest_depends_on_content_only() -> None:
    one = _image([FEATURE, *_topic("a", A, 2), *_topic("b", B), _config("a", "k", "v")])
    # Same content reached another way: b first, a config set twice, a topic created+removed.
    other = _image(
        [
            FEATURE,
            *_topic("b", B),
            *_topic("c", C),
            make_record("RemoveTopicRecord", {"topic_id": C}),
            *_topic("a", A, 2),
            _config("a", "k", "old"),
            _config("a", "k", "v"),
        ]
    )
    assert one.digest() == other.digest()
    assert _image(one.to_records()).digest() == one.digest()
    assert _image([FEATURE, *_topic("a", A, 1), *_topic("b", B)]).digest() != one.digest()
    assert _image([FEATURE, *_topic("a", A, 2), *_topic("b", B)]).digest() != one.digest()


class _Publisher:
    def __init__(self) -> None:
        self.deltas: list[tuple[MetadataDelta, MetadataImage]] = []

    def publish(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.deltas.append((delta, image))


def test_loading_a_snapshot_replaces_the_whole_image() -> None:
    loader = MetadataLoader(cluster_id="c")
    publisher = _Publisher()
    loader.install_publisher(publisher)
    before = _image([FEATURE, *_topic("a", A), *_topic("b", B), _config("b", "x", "1")])
    # Feed ``before`` through a snapshot first, then a second snapshot that drops a and b's
    # config and adds c: a full reset, not a merge.
    first = LoadedSnapshot(10, 1, 5, tuple(before.to_records()))
    loader.handle_load_snapshot(first)
    assert loader.image.digest() == before.digest()
    assert loader.image.provenance.last_offset == 9
    after_records = [FEATURE, *_topic("b", B), *_topic("c", C, 3)]
    second = LoadedSnapshot(20, 2, 7, tuple(after_records))
    loader.handle_load_snapshot(second)
    expected = image_from_snapshot(second, "c")
    assert loader.image.digest() == expected.digest() == _image(after_records).digest()
    assert loader.image.topics.get_topic("a") is None
    assert loader.image.configs.topic_config("b") == {}
    assert (loader.image.provenance.last_offset, loader.image.provenance.last_epoch) == (19, 2)
    delta, image = publisher.deltas[-1]
    assert A in delta.deleted_topics and image is loader.image
    assert loader.snapshots_loaded == 2


def test_snapshot_delta_removes_brokers_and_features_missing_from_the_snapshot() -> None:
    broker = make_record(
        "RegisterBrokerRecord",
        {
            "broker_id": 4,
            "incarnation_id": bytes(16),
            "broker_epoch": 3,
            "end_points": [],
            "features": [],
            "rack": None,
            "fenced": False,
            "in_controlled_shutdown": False,
        },
    )
    feature = make_record("FeatureLevelRecord", {"name": "x.version", "feature_level": 2})
    before = _image([FEATURE, broker, feature])
    delta, after = snapshot_delta(before, [FEATURE])
    assert delta.apply().digest() == after.digest() == _image([FEATURE]).digest()


class _Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def test_generator_emits_after_bytes_or_interval() -> None:
    clock = _Clock()
    emitted: list[int] = []
    image = MetadataImage()
    generator = SnapshotGenerator(
        lambda i: emitted.append(clock.now),
        max_bytes_between_snapshots=1000,
        max_interval_ms=60_000,
        clock_ms=clock,
    )
    assert not generator.publish_log_delta(image, 600)
    assert generator.publish_log_delta(image, 600)  # 1200 >= 1000
    assert generator.bytes_since_last_snapshot == 0
    clock.now = 59_999
    assert not generator.publish_log_delta(image, 10)
    clock.now = 60_000
    assert generator.publish_log_delta(image, 10)
    generator.publish_snapshot(image)  # loading a snapshot resets the counters
    clock.now = 100_000
    assert not generator.publish_log_delta(image, 999)
    assert emitted == [0, 60_000]


def test_generator_disabled_interval_and_failures() -> None:
    clock = _Clock()
    errors: list[Exception] = []

    def broken(image: MetadataImage) -> None:
        raise OSError("disk full")

    generator = SnapshotGenerator(
        broken, max_bytes_between_snapshots=10, max_interval_ms=0, clock_ms=clock,
        on_error=errors.append,
    )  # fmt: skip
    clock.now = 10**12
    assert not generator.publish_log_delta(MetadataImage(), 5)  # interval 0 = never by time
    assert not generator.publish_log_delta(MetadataImage(), 5)  # the emitter failed
    assert [str(e) for e in errors] == ["disk full"]
    assert generator.bytes_since_last_snapshot == 0
    disabled = SnapshotGenerator(
        lambda i: pytest.fail("must not emit"), max_bytes_between_snapshots=1,
        disabled_reason="tests",
    )  # fmt: skip
    assert not disabled.publish_log_delta(MetadataImage(), 100)


def test_generator_reads_kafka_config_keys() -> None:
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": "1@localhost:9093",
        "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": "/tmp/unused",
    }
    config = ServerConfig.from_props(props)
    generator = SnapshotGenerator.from_config(config, lambda i: None)
    assert generator.max_bytes_between_snapshots == DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS
    assert generator.max_interval_ms == DEFAULT_MAX_SNAPSHOT_INTERVAL_MS
    custom = ServerConfig.from_props(
        {**props, "metadata.log.max.record.bytes.between.snapshots": "4096"}
    )
    assert SnapshotGenerator.from_config(custom, lambda i: None).max_bytes_between_snapshots == 4096


def _segment_bases(directory: str) -> list[int]:
    return sorted(int(n.split(".")[0]) for n in os.listdir(directory) if n.endswith(".log"))


def test_restart_from_snapshot_and_log_gives_the_image_of_a_full_replay(tmp_path: Path) -> None:
    cluster = MetaCluster(tmp_path, voters=1, segment_bytes=16384)
    cluster.bootstrap(brokers=3)
    for batch in range(5):  # ~7 KiB per batch: several 16 KiB segments
        cluster.create_topics([f"t{batch}-{i}" for i in range(20)], partitions=3, rf=2)
    leader = cluster.leader()
    # The generator writes the snapshot as soon as enough bytes were committed.
    generator = SnapshotGenerator(
        raft_snapshot_emitter(leader.replica), max_bytes_between_snapshots=2000
    )
    leader.loader.install_snapshot_generator(generator)
    cluster.create_topics([f"u{i}" for i in range(20)], partitions=2, rf=3)
    assert generator.emitted >= 1
    snapshot_id = leader.replica.latest_snapshot_id
    assert snapshot_id is not None
    leader.loader.install_snapshot_generator(None)
    # More changes after the snapshot, replayed from the log on restart.
    controller = leader.controller
    assert controller is not None
    request: DeleteTopicsRequest = {"topic_names": ["t1-3"], "topics": [], "timeout_ms": 1}
    cluster.run(controller.delete_topics(request, 5))
    cluster.create_topics(["late"], partitions=4, rf=1)
    cluster.run(controller.register_broker(4, bytes([4]) * 16, PLAINTEXT))
    full_replay = leader.loader.image
    assert leader.loader.snapshots_loaded == 0  # it replayed every record
    assert full_replay.topics.get_topic("t1-3") is None and full_replay.topics.get_topic("late")
    directory = leader.log.directory
    log_start = leader.replica.log.log_start_offset
    assert log_start == snapshot_id.end_offset > 0
    bases = _segment_bases(directory)
    # Segments wholly below the snapshot are gone; the first one left holds the log start.
    assert bases[0] > 0 and bases[0] <= log_start and all(b > log_start for b in bases[1:])
    name = f"{snapshot_id.end_offset:020d}-{snapshot_id.epoch:010d}.checkpoint"
    assert snapshot_id.file_name() == name and os.path.exists(os.path.join(directory, name))

    cluster.stop(1)
    restarted = cluster.start(1)
    assert restarted.loader.snapshots_loaded == 1
    assert restarted.replica.high_watermark >= snapshot_id.end_offset
    cluster.settle()
    assert restarted.loader.image.digest() == full_replay.digest()
    assert restarted.controller is not None
    assert restarted.controller.image.digest() == full_replay.digest()
    # And it keeps working: new metadata on top of snapshot + log.
    cluster.create_topics(["after-restart"], partitions=1, rf=1)
    assert restarted.loader.image.topics.get_topic("after-restart") is not None
    cluster.close()


def test_a_broker_joining_late_loads_the_leaders_snapshot(tmp_path: Path) -> None:
    cluster = MetaCluster(tmp_path, voters=3, observers=1, segment_bytes=16384)
    cluster.stop(4)
    cluster.bootstrap(brokers=3)
    cluster.create_topics([f"t{i}" for i in range(30)], partitions=2, rf=3)
    snapshot_ids: set[SnapshotId] = set()
    for node in cluster.nodes.values():
        emit = raft_snapshot_emitter(node.replica)
        emit(node.loader.image)
        assert node.replica.latest_snapshot_id is not None
        snapshot_ids.add(node.replica.latest_snapshot_id)
    assert len(snapshot_ids) == 1
    cluster.create_topics(["after-snapshot"], partitions=1, rf=1)
    broker = cluster.start(4)
    cluster.settle()
    leader = cluster.leader()
    assert broker.loader.snapshots_loaded == 1
    assert broker.replica.latest_snapshot_id in snapshot_ids  # downloaded with FetchSnapshot
    assert broker.replica.log.log_start_offset == next(iter(snapshot_ids)).end_offset
    assert broker.loader.image.digest() == leader.loader.image.digest()
    assert broker.loader.image.topics.get_topic("after-snapshot") is not None
    cluster.close()
