"""Metadata images to and from KRaft snapshots.

A metadata snapshot holds exactly :meth:`~sparklog.metadata.image.MetadataImage.to_records` of
the image at its end offset (each record encoded as a ``__cluster_metadata`` record value).
Loading one is a full reset (Kafka's ``MetadataLoader.handleLoadSnapshot``):

- :func:`image_from_snapshot` replays the records onto an empty image; its provenance is the
  snapshot's last contained offset, epoch and timestamp.
- :func:`snapshot_delta` builds the delta from the image a reader had before to the snapshot's
  image, so publishers learn what changed: everything the old image has and the snapshot does
  not (topics, brokers, config keys, features) is removed first, then the snapshot's records
  are replayed (Kafka's ``MetadataDelta.finishSnapshot``). Applying it gives the same image as
  :func:`image_from_snapshot` (same :meth:`~MetadataImage.digest`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import METADATA_VERSION_FEATURE, MetadataImage, Provenance
from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.raft.client import LoadedSnapshot


def snapshot_values(image: MetadataImage) -> list[bytes]:
    """The record values a snapshot of ``image`` holds."""
    return [record.encode() for record in image.to_records()]


def snapshot_provenance(snapshot: LoadedSnapshot[MetadataRecord]) -> Provenance:
    return Provenance(
        snapshot.last_contained_offset, snapshot.epoch, snapshot.last_contained_timestamp
    )


def image_from_snapshot(
    snapshot: LoadedSnapshot[MetadataRecord], cluster_id: str | None = None
) -> MetadataImage:
    delta = MetadataDelta(MetadataImage(cluster_id=cluster_id))
    for record in snapshot.records:
        delta.replay(record)
    return delta.apply(snapshot_provenance(snapshot))


def _removals(before: MetadataImage, after: MetadataImage) -> Iterable[MetadataRecord]:
    for topic_id in sorted(before.topics.by_id):
        if topic_id not in after.topics.by_id:
            yield make_record("RemoveTopicRecord", {"topic_id": topic_id})
    for broker_id, broker in sorted(before.cluster.brokers.items()):
        if broker_id not in after.cluster.brokers:
            yield make_record(
                "UnregisterBrokerRecord", {"broker_id": broker_id, "broker_epoch": broker.epoch}
            )
    for key, configs in sorted(before.configs.resources.items()):
        kept = after.configs.resources.get(key, {})
        for name in sorted(configs):
            if name not in kept:
                yield make_record(
                    "ConfigRecord",
                    {"resource_type": key[0], "resource_name": key[1], "name": name, "value": None},
                )
    for name in sorted(before.features.levels):
        if name not in after.features.levels and name != METADATA_VERSION_FEATURE:
            yield make_record("FeatureLevelRecord", {"name": name, "feature_level": 0})


def snapshot_delta(
    before: MetadataImage, records: Sequence[MetadataRecord]
) -> tuple[MetadataDelta, MetadataImage]:
    """The delta from ``before`` to the snapshot's content, and the snapshot's image."""
    target = MetadataDelta(MetadataImage(cluster_id=before.cluster_id))
    for record in records:
        target.replay(record)
    after = target.apply()
    delta = MetadataDelta(before)
    for removal in _removals(before, after):
        delta.replay(removal)
    for record in records:
        delta.replay(record)
    return delta, after
