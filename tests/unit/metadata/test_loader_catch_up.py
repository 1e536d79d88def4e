"""MetadataLoader catching up (issue 16): nothing is published before the loader replayed up to
the raft high watermark, then one delta from the empty image to the caught-up image."""

from __future__ import annotations

from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import MetadataImage
from sparklog.metadata.loader import MetadataLoader
from sparklog.metadata.records import MetadataRecord
from sparklog.raft.client import CommittedBatch, LoadedSnapshot
from tests.unit.metadata.test_metadata_image_delta import BASE_RECORDS, T1, rec


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[MetadataDelta, MetadataImage]] = []

    def publish(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.calls.append((delta, image))


def leader_change(leader: int) -> MetadataRecord:
    return rec("PartitionChangeRecord", partition_id=0, topic_id=T1, leader=leader)


def batch(offset: int, *records: MetadataRecord) -> CommittedBatch[MetadataRecord]:
    return CommittedBatch(offset, offset + len(records) - 1, 1, 0, records)


def leaders_seen(recorder: Recorder) -> list[tuple[int, int]]:
    """(leader, leader epoch) of orders-0 in every image published."""
    seen = []
    for _, image in recorder.calls:
        topic = image.topics.by_name["orders"]
        seen.append((topic.partitions[0].leader, topic.partitions[0].leader_epoch))
    return seen


def test_replayed_history_is_published_as_one_delta_once_caught_up() -> None:
    hw = [0]
    loader = MetadataLoader(cluster_id="c", high_watermark=lambda: hw[0])
    publisher = Recorder()
    loader.install_publisher(publisher)
    assert loader.catching_up and loader.published_offset == -1
    # The restarting broker replays its own log: broker 1 led orders-0, then 2, then 1 again.
    hw[0] = 13  # offsets 0..12 are committed
    loader.handle_commit(batch(0, *BASE_RECORDS))  # offsets 0..8, orders-0 led by 1, epoch 0
    loader.handle_commit(batch(9, leader_change(2)))  # epoch 1
    loader.handle_commit(batch(10, leader_change(1)))  # epoch 2
    assert publisher.calls == []  # history: never published one state at a time
    assert loader.image.provenance.last_offset == 10
    assert loader.catching_up and loader.published_offset == -1
    loader.handle_commit(batch(11, leader_change(2), leader_change(1)))  # epochs 3, 4; ends at 12
    assert not loader.catching_up and loader.published_offset == 12
    assert len(publisher.calls) == 1
    delta, image = publisher.calls[0]
    assert image is loader.image
    assert delta.image.is_empty  # from the empty image
    assert [d.name for d in delta.created_topics()] == ["orders"]
    assert leaders_seen(publisher) == [(1, 4)]
    # Caught up: every later batch is published as it comes, as before.
    hw[0] = 14
    loader.handle_commit(batch(13, leader_change(2)))
    assert leaders_seen(publisher) == [(1, 4), (2, 5)]
    assert loader.published_offset == 13
    late = Recorder()
    loader.install_publisher(late)
    assert leaders_seen(late) == [(2, 5)]


def test_unknown_high_watermark_keeps_catching_up() -> None:
    loader = MetadataLoader(cluster_id="c", high_watermark=lambda: 0)
    publisher = Recorder()
    loader.install_publisher(publisher)
    loader.handle_commit(batch(0, *BASE_RECORDS))
    assert publisher.calls == [] and loader.catching_up


def test_publisher_installed_while_catching_up_waits_and_snapshot_counts() -> None:
    hw = [100]
    loader = MetadataLoader(cluster_id="c", high_watermark=lambda: hw[0])
    loader.handle_commit(batch(0, *BASE_RECORDS))
    publisher = Recorder()
    loader.install_publisher(publisher)  # still catching up: nothing yet
    assert publisher.calls == []
    snapshot = LoadedSnapshot(100, 3, 0, (*BASE_RECORDS, leader_change(2)), 0)
    loader.handle_load_snapshot(snapshot)  # reaches the HW: ends catching up
    assert leaders_seen(publisher) == [(2, 1)]
    assert loader.published_offset == 99


def test_without_a_high_watermark_supplier_every_batch_is_published() -> None:
    loader = MetadataLoader(cluster_id="c")
    publisher = Recorder()
    loader.install_publisher(publisher)
    loader.handle_commit(batch(0, *BASE_RECORDS))
    loader.handle_commit(batch(9, leader_change(2)))
    assert leaders_seen(publisher) == [(1, 0), (2, 1)]
    assert loader.published_offset == 9
