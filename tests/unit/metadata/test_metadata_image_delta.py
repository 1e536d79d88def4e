"""MetadataDelta replay onto images, snapshot-style round trips, and the loader's publishing."""

from __future__ import annotations

from typing import Any

import pytest

from sparklog.metadata.delta import MetadataDelta, MetadataReplayError
from sparklog.metadata.image import RESOURCE_TOPIC, MetadataImage, Provenance
from sparklog.metadata.loader import MetadataLoader
from sparklog.metadata.records import MetadataRecord, decode_record, make_record
from sparklog.raft.client import CommittedBatch, LeaderAndEpoch

T1 = b"\x01" * 16
T2 = b"\x02" * 16


def rec(record_name: str, /, **data: Any) -> MetadataRecord:
    """A record as replay sees it: encoded and decoded, so every field has its value."""
    return decode_record(make_record(record_name, data).encode())


def broker(broker_id: int, epoch: int, fenced: bool = True) -> MetadataRecord:
    return rec(
        "RegisterBrokerRecord",
        broker_id=broker_id,
        incarnation_id=bytes([broker_id]) * 16,
        broker_epoch=epoch,
        end_points=[{"name": "PLAINTEXT", "host": "h", "port": 9092, "security_protocol": 0}],
        features=[
            {"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 25}
        ],
        rack=None,
        fenced=fenced,
    )


def partition(topic_id: bytes, partition_id: int, replicas: list[int]) -> MetadataRecord:
    return rec(
        "PartitionRecord",
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=replicas,
        isr=replicas,
        leader=replicas[0],
        leader_epoch=0,
        partition_epoch=0,
    )


def replay(image: MetadataImage, records: list[MetadataRecord], offset: int = 0) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(Provenance(offset, 1, 0))


BASE_RECORDS = [
    rec("FeatureLevelRecord", name="metadata.version", feature_level=25),
    broker(1, 10),
    rec("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=-1),
    broker(2, 11),
    rec("UnfenceBrokerRecord", id=2, epoch=11),
    rec("TopicRecord", name="orders", topic_id=T1),
    partition(T1, 0, [1, 2]),
    partition(T1, 1, [2, 1]),
    rec(
        "ConfigRecord",
        resource_type=RESOURCE_TOPIC,
        resource_name="orders",
        name="retention.ms",
        value="100",
    ),
]


def test_create_topic_partitions_configs_and_brokers() -> None:
    image = replay(MetadataImage(), BASE_RECORDS, offset=8)
    assert image.features.metadata_version == 25
    assert [b.broker_id for b in image.cluster.unfenced_brokers()] == [1, 2]
    topic = image.topics.get_topic("orders")
    assert topic is not None and topic.topic_id == T1
    assert image.topics.get_topic_by_id(T1) is topic
    assert topic.partitions[1].replicas == (2, 1) and topic.partitions[1].leader == 2
    assert image.configs.topic_config("orders") == {"retention.ms": "100"}
    assert image.provenance.last_offset == 8
    assert image.cluster.brokers[1].endpoint("PLAINTEXT") is not None


def test_partition_change_bumps_epochs() -> None:
    image = replay(MetadataImage(), BASE_RECORDS)
    image = replay(image, [rec("PartitionChangeRecord", partition_id=0, topic_id=T1, isr=[1])])
    p0 = image.topics.get_partition(T1, 0)
    assert p0 is not None
    assert (p0.isr, p0.leader, p0.leader_epoch, p0.partition_epoch) == ((1,), 1, 0, 1)
    image = replay(
        image, [rec("PartitionChangeRecord", partition_id=0, topic_id=T1, leader=2, isr=[2])]
    )
    p0 = image.topics.get_partition(T1, 0)
    assert p0 is not None
    assert (p0.isr, p0.leader, p0.leader_epoch, p0.partition_epoch) == ((2,), 2, 1, 2)


def test_delete_topic_removes_partitions_and_configs_and_base_image_is_untouched() -> None:
    before = replay(MetadataImage(), BASE_RECORDS)
    delta = MetadataDelta(before)
    delta.replay(rec("RemoveTopicRecord", topic_id=T1))
    after = delta.apply()
    assert after.topics.get_topic("orders") is None
    assert after.configs.topic_config("orders") == {}
    assert before.topics.get_topic("orders") is not None
    changes = delta.local_changes(1)
    assert changes.deletes == {(T1, "orders", 0), (T1, "orders", 1)}


def test_config_delete_and_features_removal() -> None:
    image = replay(MetadataImage(), BASE_RECORDS)
    image = replay(
        image,
        [
            rec(
                "ConfigRecord",
                resource_type=RESOURCE_TOPIC,
                resource_name="orders",
                name="retention.ms",
                value=None,
            ),
            rec(
                "ConfigRecord",
                resource_type=4,
                resource_name="",
                name="log.retention.ms",
                value="5",
            ),
            rec("FeatureLevelRecord", name="group.version", feature_level=1),
        ],
    )
    assert image.configs.topic_config("orders") == {}
    assert image.configs.get(4, "") == {"log.retention.ms": "5"}
    assert image.features.levels["group.version"] == 1
    image = replay(image, [rec("FeatureLevelRecord", name="group.version", feature_level=0)])
    assert "group.version" not in image.features.levels


def test_fence_and_unregister() -> None:
    image = replay(MetadataImage(), BASE_RECORDS)
    image = replay(image, [rec("FenceBrokerRecord", id=2, epoch=11)])
    assert image.cluster.brokers[2].fenced
    image = replay(image, [rec("UnregisterBrokerRecord", broker_id=2, broker_epoch=11)])
    assert 2 not in image.cluster.brokers


@pytest.mark.parametrize(
    "record",
    [
        rec("PartitionRecord", partition_id=0, topic_id=T2, replicas=[1], isr=[1], leader=1),
        rec("PartitionChangeRecord", partition_id=9, topic_id=T1, leader=1),
        rec("FenceBrokerRecord", id=1, epoch=999),
        rec("RemoveTopicRecord", topic_id=T2),
    ],
)
def test_contradicting_records_are_replay_errors(record: MetadataRecord) -> None:
    image = replay(MetadataImage(), BASE_RECORDS)
    with pytest.raises(MetadataReplayError):
        replay(image, [record])


def test_to_records_rebuilds_an_equal_image() -> None:
    image = replay(MetadataImage(), BASE_RECORDS)
    image = replay(image, [rec("PartitionChangeRecord", partition_id=0, topic_id=T1, leader=2)])
    image = replay(
        image, [rec("ProducerIdsRecord", broker_id=1, broker_epoch=10, next_producer_id=2000)]
    )
    rebuilt = replay(MetadataImage(), image.to_records())
    assert rebuilt.topics == image.topics
    assert rebuilt.cluster == image.cluster
    assert rebuilt.configs == image.configs
    assert rebuilt.features == image.features
    assert rebuilt.producer_ids == image.producer_ids
    assert image.to_records()[0].name == "FeatureLevelRecord"


def test_local_changes_for_leaders_and_followers() -> None:
    delta = MetadataDelta(MetadataImage())
    for record in BASE_RECORDS:
        delta.replay(record)
    changes = delta.local_changes(1)
    assert set(changes.leaders) == {(T1, "orders", 0)}
    assert set(changes.followers) == {(T1, "orders", 1)}
    assert [d.name for d in delta.created_topics()] == ["orders"]


class Publisher:
    def __init__(self) -> None:
        self.calls: list[tuple[MetadataDelta, MetadataImage]] = []

    def publish(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.calls.append((delta, image))


def test_loader_publishes_in_order_and_catches_up_late_publishers() -> None:
    loader = MetadataLoader(cluster_id="abc")
    first = Publisher()
    loader.install_publisher(first)
    assert first.calls == []
    loader.handle_commit(CommittedBatch(0, 0, 1, 5, (), ("leader change",)))
    assert first.calls == []  # control batch: nothing to publish
    assert loader.image.provenance == Provenance(0, 1, 5)
    loader.handle_commit(CommittedBatch(1, 9, 1, 6, tuple(BASE_RECORDS)))
    assert len(first.calls) == 1
    delta, image = first.calls[0]
    assert image is loader.image and image.cluster_id == "abc"
    assert image.provenance.last_offset == 9
    assert [d.name for d in delta.created_topics()] == ["orders"]
    late = Publisher()
    loader.install_publisher(late)
    assert len(late.calls) == 1
    catch_up, image = late.calls[0]
    assert image is loader.image
    assert [d.name for d in catch_up.created_topics()] == ["orders"]
    loader.handle_leader_change(LeaderAndEpoch(1, 1))
    assert loader.leader_and_epoch == LeaderAndEpoch(1, 1)
