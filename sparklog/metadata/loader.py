"""MetadataLoader: folds committed metadata batches into images and hands them to publishers.

The loader is a :class:`~sparklog.raft.client.RaftListener`. For every committed batch it
replays the batch's records onto the current image through a
:class:`~sparklog.metadata.delta.MetadataDelta`, builds the next image (provenance = the batch's
last offset, epoch and append time) and calls every publisher's ``publish(delta, image)``, in
installation order, before it looks at the next batch. Control batches move the provenance
without calling publishers (nothing in the image changed).

A publisher installed after some batches were loaded first receives one catch-up delta that
takes it from the empty image to the current one, so every publisher sees every change once.
If a publisher raises, the exception propagates to the caller driving the raft client: the
image has already advanced, and the failing publisher is not retried (Kafka's loader reports
it through a fault handler; here the node decides).
"""

from __future__ import annotations

from typing import Protocol

from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import MetadataImage, Provenance
from sparklog.metadata.records import MetadataRecord
from sparklog.raft.client import CommittedBatch, LeaderAndEpoch


class MetadataPublisher(Protocol):
    def publish(self, delta: MetadataDelta, image: MetadataImage) -> None: ...


class MetadataLoader:
    def __init__(self, cluster_id: str | None = None) -> None:
        self._image = MetadataImage(cluster_id=cluster_id)
        self._publishers: list[MetadataPublisher] = []
        self._leader = LeaderAndEpoch(-1, 0)

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

    def remove_publisher(self, publisher: MetadataPublisher) -> None:
        self._publishers = [p for p in self._publishers if p is not publisher]

    # -- RaftListener ------------------------------------------------------------------------

    def handle_commit(self, batch: CommittedBatch[MetadataRecord]) -> None:
        provenance = Provenance(batch.last_offset, batch.epoch, batch.append_timestamp)
        delta = MetadataDelta(self._image)
        for record in batch.records:
            delta.replay(record)
        self._image = delta.apply(provenance)
        if delta.record_count:
            for publisher in list(self._publishers):
                publisher.publish(delta, self._image)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self._leader = leader
