"""MetadataLoader: folds committed metadata batches into images and hands them to publishers.

The loader is a :class:`~sparklog.raft.client.RaftListener`. For every committed batch it
replays the batch's records onto the current image through a
:class:`~sparklog.metadata.delta.MetadataDelta`, builds the next image (provenance = the batch's
last offset, epoch and append time) and calls every publisher's ``publish(delta, image)``, in
installation order, before it looks at the next batch. Control batches and batches of only
``NoOpRecord`` records move the provenance without calling publishers (nothing changed).

A publisher installed after some batches were loaded first receives one catch-up delta that
takes it from the empty image to the current one, so every publisher sees every change once.
If a publisher raises, the exception propagates to the caller driving the raft client: the
image has already advanced, and the failing publisher is not retried (Kafka's loader reports
it through a fault handler; here the node decides).

Snapshots: ``handle_load_snapshot`` replaces the whole image with the snapshot's (a full
reset, see :mod:`sparklog.metadata.snapshot_image`) and publishes the delta from the old image.
An installed :class:`~sparklog.metadata.snapshot_generator.SnapshotGenerator` hears of every
committed batch (data and control, with its size) after the publishers, and of every loaded
snapshot, and decides when to write a new snapshot.
"""

from __future__ import annotations

from typing import Protocol

from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import MetadataImage, Provenance
from sparklog.metadata.records import MetadataRecord
from sparklog.metadata.snapshot_generator import SnapshotGenerator
from sparklog.metadata.snapshot_image import snapshot_delta, snapshot_provenance
from sparklog.raft.client import CommittedBatch, LeaderAndEpoch, LoadedSnapshot


class MetadataPublisher(Protocol):
    def publish(self, delta: MetadataDelta, image: MetadataImage) -> None: ...


class MetadataLoader:
    def __init__(self, cluster_id: str | None = None) -> None:
        self._image = MetadataImage(cluster_id=cluster_id)
        self._publishers: list[MetadataPublisher] = []
        self._leader = LeaderAndEpoch(-1, 0)
        self._snapshot_generator: SnapshotGenerator | None = None
        self.snapshots_loaded = 0

    @property
    def image(self) -> MetadataImage:
        return self._image

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return self._leader

    def install_publisher(self, publisher: MetadataPublisher) -> None:
        self._publishers.append(publisher)
        if not self._image.is_empty:
            delta = MetadataDelta(MetadataImage(cluster_id=self._image.cluster_id))
            for record in self._image.to_records():
                delta.replay(record)
            publisher.publish(delta, self._image)

    def install_snapshot_generator(self, generator: SnapshotGenerator | None) -> None:
        self._snapshot_generator = generator

    def remove_publisher(self, publisher: MetadataPublisher) -> None:
        self._publishers = [p for p in self._publishers if p is not publisher]

    # -- RaftListener ------------------------------------------------------------------------

    def handle_commit(self, batch: CommittedBatch[MetadataRecord]) -> None:
        provenance = Provenance(batch.last_offset, batch.epoch, batch.append_timestamp)
        delta = MetadataDelta(self._image)
        changes = 0
        for record in batch.records:
            delta.replay(record)
            # The leader's idle NoOpRecords (metadata.max.idle.interval.ms) change nothing.
            changes += record.name != "NoOpRecord"
        self._image = delta.apply(provenance)
        if changes:
            for publisher in list(self._publishers):
                publisher.publish(delta, self._image)
        if self._snapshot_generator is not None:
            self._snapshot_generator.publish_log_delta(self._image, batch.size_in_bytes)

    def handle_load_snapshot(self, snapshot: LoadedSnapshot[MetadataRecord]) -> None:
        delta, _ = snapshot_delta(self._image, snapshot.records)
        self._image = delta.apply(snapshot_provenance(snapshot))
        self.snapshots_loaded += 1
        for publisher in list(self._publishers):
            publisher.publish(delta, self._image)
        if self._snapshot_generator is not None:
            self._snapshot_generator.publish_snapshot(self._image)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self._leader = leader
