"""MetadataLoader: folds committed metadata batches into images and hands them to publishers.

The loader is a :class:`~sparklog.raft.client.RaftListener`. For every committed batch it
replays the batch's records onto the current image through a
:class:`~sparklog.metadata.delta.MetadataDelta`, builds the next image (provenance = the batch's
last offset, epoch and append time) and calls every publisher's ``publish(delta, image)``, in
installation order, before it looks at the next batch. Control batches and batches of only
``NoOpRecord`` records move the provenance without calling publishers (nothing changed).

Catching up (Kafka's ``MetadataLoader.stillNeedToCatchUp``): given a ``high_watermark``
supplier (the raft client's), the loader starts *catching up* and publishes nothing while the
last offset it loaded is below ``high_watermark() - 1`` (a high watermark of 0 or less is not
known yet). Batches and snapshots loaded meanwhile only advance the image. The first load that
reaches the high watermark ends catching up for good and hands every installed publisher one
delta from the empty image to the caught-up image: a restarting broker never sees the
historical partition states of its own metadata log one by one (replayed, they would make it
lead epochs long gone). ``published_offset`` is the last offset publishers saw (-1 before),
what a broker reports to the controller as its metadata offset: the controller does not
unfence it before it caught up. Without a supplier the loader is caught up from the start.

A publisher installed after catching up first receives one catch-up delta that takes it from
the empty image to the current one, so every publisher sees every change once.
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

import logging
from collections.abc import Callable
from typing import Protocol

from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import MetadataImage, Provenance
from sparklog.metadata.records import MetadataRecord
from sparklog.metadata.snapshot_generator import SnapshotGenerator
from sparklog.metadata.snapshot_image import snapshot_delta, snapshot_provenance
from sparklog.raft.client import CommittedBatch, LeaderAndEpoch, LoadedSnapshot

_log = logging.getLogger(__name__)


class MetadataPublisher(Protocol):
    def publish(self, delta: MetadataDelta, image: MetadataImage) -> None: ...


class MetadataLoader:
    def __init__(
        self,
        cluster_id: str | None = None,
        *,
        high_watermark: Callable[[], int] | None = None,
    ) -> None:
        self._image = MetadataImage(cluster_id=cluster_id)
        self._publishers: list[MetadataPublisher] = []
        self._high_watermark = high_watermark
        self._catching_up = high_watermark is not None
        self._published_offset = -1
        self._leader = LeaderAndEpoch(-1, 0)
        self._snapshot_generator: SnapshotGenerator | None = None
        self.snapshots_loaded = 0

    @property
    def image(self) -> MetadataImage:
        return self._image

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return self._leader

    @property
    def catching_up(self) -> bool:
        """True until the loaded image reached the raft high watermark once."""
        return self._catching_up

    @property
    def published_offset(self) -> int:
        """The last metadata offset publishers were given (-1 while catching up)."""
        return self._published_offset

    def install_publisher(self, publisher: MetadataPublisher) -> None:
        self._publishers.append(publisher)
        if not self._catching_up and not self._image.is_empty:
            self._publish_full_image([publisher])

    def _publish_full_image(self, publishers: list[MetadataPublisher]) -> None:
        """One delta from the empty image to the current one, to each of ``publishers``."""
        delta = MetadataDelta(MetadataImage(cluster_id=self._image.cluster_id))
        for record in self._image.to_records():
            delta.replay(record)
        self._published_offset = self._image.provenance.last_offset
        for publisher in publishers:
            publisher.publish(delta, self._image)

    def _still_catching_up(self) -> bool:
        """Kafka's ``stillNeedToCatchUp``: end catching up once the image reaches the HW."""
        if not self._catching_up:
            return False
        assert self._high_watermark is not None
        high_watermark = self._high_watermark()
        offset = self._image.provenance.last_offset
        if high_watermark <= 0 or offset < high_watermark - 1:
            return True
        self._catching_up = False
        _log.info(
            "The metadata loader finished catching up to the high watermark %d (offset %d): "
            "publishing the image to %d publishers",
            high_watermark,
            offset,
            len(self._publishers),
        )
        if not self._image.is_empty:
            self._publish_full_image(list(self._publishers))
        return False

    def install_snapshot_generator(self, generator: SnapshotGenerator | None) -> None:
        self._snapshot_generator = generator

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
        if self._catching_up:
            self._still_catching_up()  # publishes the whole image once caught up
        elif changes:
            self._published_offset = provenance.last_offset
            for publisher in list(self._publishers):
                publisher.publish(delta, self._image)
        else:
            self._published_offset = provenance.last_offset
        if self._snapshot_generator is not None:
            self._snapshot_generator.publish_log_delta(self._image, batch.size_in_bytes)

    def handle_load_snapshot(self, snapshot: LoadedSnapshot[MetadataRecord]) -> None:
        delta, _ = snapshot_delta(self._image, snapshot.records)
        self._image = delta.apply(snapshot_provenance(snapshot))
        self.snapshots_loaded += 1
        if self._catching_up:
            self._still_catching_up()
        else:
            self._published_offset = self._image.provenance.last_offset
            for publisher in list(self._publishers):
                publisher.publish(delta, self._image)
        if self._snapshot_generator is not None:
            self._snapshot_generator.publish_snapshot(self._image)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self._leader = leader
