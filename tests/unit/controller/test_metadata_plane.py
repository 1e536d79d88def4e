"""MetadataPlane: format -> start -> create a topic -> restart gives the same image."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparklog.cli.storage_tool import check_formatted, format_storage
from sparklog.config import ServerConfig
from sparklog.controller.metadata_plane import MetadataPlane, MetadataPlaneError
from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import MetadataImage

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def config_for(tmp_path: Path, **extra: str) -> ServerConfig:
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.bootstrap.servers": "localhost:9093",
        "advertised.listeners": "PLAINTEXT://localhost:9092",
        "log.dirs": str(tmp_path / "logs"),
    }
    props.update(extra)
    return ServerConfig.from_props(props)


class Recorder:
    def __init__(self) -> None:
        self.created: list[str] = []

    def publish(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.created += [t.name for t in delta.created_topics()]


def test_start_create_restart(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    format_storage(config, CLUSTER_ID, standalone=True, release_version="3.9")
    cluster_id, dir_ids = check_formatted(config)
    plane = MetadataPlane.start(config, cluster_id, directory_ids=dir_ids)
    image = plane.loader.image
    assert image.cluster_id == CLUSTER_ID
    assert image.features.metadata_version == 21  # from bootstrap.checkpoint
    broker = image.cluster.brokers[1]
    assert not broker.fenced and broker.epoch == plane.broker_epoch
    assert broker.endpoint("PLAINTEXT") is not None
    assert broker.endpoint("PLAINTEXT").host == "localhost"  # type: ignore[union-attr]
    assert broker.endpoint("CONTROLLER") is None
    recorder = Recorder()
    plane.loader.install_publisher(recorder)
    response = plane.controller.run(
        plane.controller.create_topics({"topics": [{"name": "t", "num_partitions": 2}]}, 7)
    )
    assert response["topics"][0]["error_code"] == 0
    assert recorder.created == ["t"]
    topics_before = plane.loader.image.topics
    plane.close()

    again = MetadataPlane.start(config, cluster_id)
    after = again.loader.image.topics
    assert set(after.by_id) == set(topics_before.by_id)
    for topic_id, topic in topics_before.by_id.items():
        for partition_id, before in topic.partitions.items():
            now = after.by_id[topic_id].partitions[partition_id]
            # The new broker incarnation re-elects itself: same replicas, next leader epoch.
            assert (now.replicas, now.isr, now.leader) == (before.replicas, before.isr, 1)
            assert now.leader_epoch == before.leader_epoch + 1
    assert again.broker_epoch > plane.broker_epoch
    assert again.raft.leader_and_epoch.epoch == 2
    again.close()


def test_unsupported_roles(tmp_path: Path) -> None:
    broker_only = config_for(
        tmp_path, **{"process.roles": "broker", "listeners": "PLAINTEXT://:9092"}
    )
    with pytest.raises(MetadataPlaneError, match="combined nodes only"):
        MetadataPlane.start(broker_only, CLUSTER_ID)
    multi = config_for(
        tmp_path,
        **{"controller.quorum.voters": "1@localhost:9093,2@localhost:9094"},
    )
    with pytest.raises(MetadataPlaneError, match="single-voter quorum only"):
        MetadataPlane.start(multi, CLUSTER_ID)
