"""MetadataDelta: the changes a run of committed records makes to an image.

``MetadataDelta(image)`` starts empty; :meth:`MetadataDelta.replay` folds records in log order;
:meth:`MetadataDelta.apply` builds the next immutable :class:`MetadataImage`. The base image is
never modified. Publishers receive the delta next to the new image so they can act on what
changed (``created_topics``, ``deleted_topics``, ``changed_partitions``, ``local_changes``)
without diffing whole images.

Replay rules follow Kafka's ``*Delta.replay``: a PartitionChangeRecord merges into the current
registration (new leader => leader epoch + 1; always partition epoch + 1); RemoveTopicRecord
drops the topic, its partitions and its topic configs; a ConfigRecord with a null value deletes
the key; a FeatureLevelRecord with level 0 removes a feature (except metadata.version);
fence/unfence records must name the registered broker epoch; ACL and client-quota records
fold into the image's ``acls`` / ``client_quotas`` (:mod:`sparklog.metadata.security_image`).
A record that contradicts the image (a partition of an unknown topic, fencing a broker epoch
that is not registered) is a corrupt log or a controller bug: :class:`MetadataReplayError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sparklog.metadata.image import (
    METADATA_VERSION_FEATURE,
    RESOURCE_TOPIC,
    BrokerRegistration,
    ClusterImage,
    ConfigsImage,
    FeaturesImage,
    MetadataImage,
    PartitionRegistration,
    ProducerIdsImage,
    Provenance,
    TopicImage,
    TopicsImage,
    frozen,
)
from sparklog.metadata.records import MetadataRecord
from sparklog.metadata.scram_image import ScramDelta
from sparklog.metadata.security_image import SecurityDelta


class MetadataReplayError(Exception):
    """A committed record that cannot be applied to the image it follows."""


@dataclass(slots=True)
class TopicDelta:
    """Changes to one topic: ``is_new`` when its TopicRecord is in this delta."""

    name: str
    topic_id: bytes
    is_new: bool
    base: dict[int, PartitionRegistration]
    changed: dict[int, PartitionRegistration] = field(default_factory=dict)

    def partition(self, partition_id: int) -> PartitionRegistration | None:
        if partition_id in self.changed:
            return self.changed[partition_id]
        return self.base.get(partition_id)


@dataclass(frozen=True, slots=True)
class LocalReplicaChanges:
    """What one broker must do: ``deletes`` (topic id, name, partition) to remove, and the
    partitions it now leads or follows, keyed by (topic id, name, partition)."""

    deletes: frozenset[tuple[bytes, str, int]]
    leaders: dict[tuple[bytes, str, int], PartitionRegistration]
    followers: dict[tuple[bytes, str, int], PartitionRegistration]


class MetadataDelta:
    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.features: dict[str, int | None] = {}
        self.brokers: dict[int, BrokerRegistration | None] = {}
        self.topics: dict[bytes, TopicDelta] = {}
        self.deleted_topics: dict[bytes, TopicImage] = {}
        self.configs: dict[tuple[int, str], dict[str, str | None]] = {}
        self.next_producer_id: int | None = None
        self.security = SecurityDelta(image.acls, image.client_quotas)
        self.scram = ScramDelta(image.scram)
        self.record_count = 0

    # -- replay ------------------------------------------------------------------------------

    def replay(self, record: MetadataRecord) -> None:
        handler = _HANDLERS.get(record.name)
        if handler is not None:
            handler(self, record.data)
        self.record_count += 1

    def _broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self.brokers:
            return self.brokers[broker_id]
        return self.image.cluster.brokers.get(broker_id)

    def _broker_with_epoch(self, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        broker = self._broker(broker_id)
        if broker is None or broker.epoch != epoch:
            raise MetadataReplayError(
                f"cannot {action} broker {broker_id} epoch {epoch}: registered as "
                f"{None if broker is None else broker.epoch}"
            )
        return broker

    def _topic(self, topic_id: bytes, action: str) -> TopicDelta:
        delta = self.topics.get(topic_id)
        if delta is not None:
            return delta
        topic = None if topic_id in self.deleted_topics else self.image.topics.by_id.get(topic_id)
        if topic is None:
            raise MetadataReplayError(f"cannot {action}: unknown topic id {topic_id.hex()}")
        delta = TopicDelta(topic.name, topic_id, False, dict(topic.partitions))
        self.topics[topic_id] = delta
        return delta

    def _replay_register_broker(self, data: Mapping[str, Any]) -> None:
        self.brokers[data["broker_id"]] = BrokerRegistration.from_record(data)

    def _replay_unregister_broker(self, data: Mapping[str, Any]) -> None:
        self._broker_with_epoch(data["broker_id"], data["broker_epoch"], "unregister")
        self.brokers[data["broker_id"]] = None

    def _replay_fence(self, data: Mapping[str, Any]) -> None:
        broker = self._broker_with_epoch(data["id"], data["epoch"], "fence")
        self.brokers[data["id"]] = replace(broker, fenced=True)

    def _replay_unfence(self, data: Mapping[str, Any]) -> None:
        broker = self._broker_with_epoch(data["id"], data["epoch"], "unfence")
        self.brokers[data["id"]] = replace(broker, fenced=False)

    def _replay_registration_change(self, data: Mapping[str, Any]) -> None:
        broker = self._broker_with_epoch(data["broker_id"], data["broker_epoch"], "change")
        fenced = {-1: False, 1: True}.get(data["fenced"], broker.fenced)
        shutdown = broker.in_controlled_shutdown or data["in_controlled_shutdown"] == 1
        log_dirs = tuple(bytes(d) for d in data["log_dirs"]) or broker.log_dirs
        self.brokers[data["broker_id"]] = replace(
            broker, fenced=fenced, in_controlled_shutdown=shutdown, log_dirs=log_dirs
        )

    def _replay_topic(self, data: Mapping[str, Any]) -> None:
        topic_id = bytes(data["topic_id"])
        self.topics[topic_id] = TopicDelta(data["name"], topic_id, True, {})

    def _replay_partition(self, data: Mapping[str, Any]) -> None:
        delta = self._topic(bytes(data["topic_id"]), "add a partition")
        delta.changed[data["partition_id"]] = PartitionRegistration.from_record(data)

    def _replay_partition_change(self, data: Mapping[str, Any]) -> None:
        delta = self._topic(bytes(data["topic_id"]), "change a partition")
        current = delta.partition(data["partition_id"])
        if current is None:
            raise MetadataReplayError(
                f"cannot change unknown partition {data['partition_id']} of topic {delta.name}"
            )
        delta.changed[data["partition_id"]] = current.merge(data)

    def _replay_remove_topic(self, data: Mapping[str, Any]) -> None:
        topic_id = bytes(data["topic_id"])
        delta = self._topic(topic_id, "remove a topic")
        del self.topics[topic_id]
        if not delta.is_new:
            self.deleted_topics[topic_id] = self.image.topics.by_id[topic_id]
        key = (RESOURCE_TOPIC, delta.name)
        self.configs[key] = {name: None for name in self._current_configs(key)}

    def _current_configs(self, key: tuple[int, str]) -> dict[str, str]:
        current = dict(self.image.configs.resources.get(key, {}))
        for name, value in self.configs.get(key, {}).items():
            if value is None:
                current.pop(name, None)
            else:
                current[name] = value
        return current

    def _replay_config(self, data: Mapping[str, Any]) -> None:
        key = (data["resource_type"], data["resource_name"])
        self.configs.setdefault(key, {})[data["name"]] = data["value"]

    def _replay_feature_level(self, data: Mapping[str, Any]) -> None:
        level = data["feature_level"]
        removed = level == 0 and data["name"] != METADATA_VERSION_FEATURE
        self.features[data["name"]] = None if removed else level

    def _replay_producer_ids(self, data: Mapping[str, Any]) -> None:
        self.next_producer_id = data["next_producer_id"]

    def _replay_acl(self, data: Mapping[str, Any]) -> None:
        self.security.replay_acl(data)

    def _replay_remove_acl(self, data: Mapping[str, Any]) -> None:
        error = self.security.replay_remove_acl(data)
        if error is not None:
            raise MetadataReplayError(str(error))

    def _replay_client_quota(self, data: Mapping[str, Any]) -> None:
        self.security.replay_quota(data)

    def _replay_scram_credential(self, data: Mapping[str, Any]) -> None:
        try:
            self.scram.replay_credential(data)
        except ValueError as exc:
            raise MetadataReplayError(str(exc)) from None

    def _replay_remove_scram_credential(self, data: Mapping[str, Any]) -> None:
        try:
            error = self.scram.replay_remove(data)
        except ValueError as exc:
            raise MetadataReplayError(str(exc)) from None
        if error is not None:
            raise MetadataReplayError(error)

    # -- views for publishers ----------------------------------------------------------------

    def created_topics(self) -> list[TopicDelta]:
        return [d for d in self.topics.values() if d.is_new]

    def changed_partitions(self) -> list[tuple[TopicDelta, int, PartitionRegistration]]:
        return [
            (delta, partition_id, registration)
            for delta in self.topics.values()
            for partition_id, registration in sorted(delta.changed.items())
        ]

    def local_changes(self, broker_id: int) -> LocalReplicaChanges:
        """The replicas ``broker_id`` must create, delete or change role for (Kafka's
        ``TopicsDelta.localChanges``)."""
        deletes: set[tuple[bytes, str, int]] = set()
        for topic_id, topic in self.deleted_topics.items():
            for partition_id, registration in topic.partitions.items():
                if broker_id in registration.replicas:
                    deletes.add((topic_id, topic.name, partition_id))
        leaders: dict[tuple[bytes, str, int], PartitionRegistration] = {}
        followers: dict[tuple[bytes, str, int], PartitionRegistration] = {}
        for delta, partition_id, registration in self.changed_partitions():
            key = (delta.topic_id, delta.name, partition_id)
            if broker_id not in registration.replicas:
                previous = delta.base.get(partition_id)
                if previous is not None and broker_id in previous.replicas:
                    deletes.add(key)
            elif registration.leader == broker_id:
                leaders[key] = registration
            else:
                followers[key] = registration
        return LocalReplicaChanges(frozenset(deletes), leaders, followers)

    # -- apply -------------------------------------------------------------------------------

    def apply(self, provenance: Provenance | None = None) -> MetadataImage:
        image = self.image
        features = image.features
        if self.features:
            levels = dict(features.levels)
            for name, level in self.features.items():
                if level is None:
                    levels.pop(name, None)
                else:
                    levels[name] = level
            features = FeaturesImage(frozen(levels))
        cluster = image.cluster
        if self.brokers:
            brokers = dict(cluster.brokers)
            for broker_id, registration in self.brokers.items():
                if registration is None:
                    brokers.pop(broker_id, None)
                else:
                    brokers[broker_id] = registration
            cluster = ClusterImage(frozen(brokers))
        topics = image.topics
        if self.topics or self.deleted_topics:
            by_id = dict(topics.by_id)
            for topic_id in self.deleted_topics:
                by_id.pop(topic_id, None)
            for topic_id, delta in self.topics.items():
                partitions = dict(delta.base)
                partitions.update(delta.changed)
                by_id[topic_id] = TopicImage(delta.name, topic_id, frozen(partitions))
            by_name = {topic.name: topic for topic in by_id.values()}
            topics = TopicsImage(frozen(by_id), frozen(by_name))
        configs = image.configs
        if self.configs:
            resources = dict(configs.resources)
            for key in self.configs:
                current = self._current_configs(key)
                if current:
                    resources[key] = frozen(current)
                else:
                    resources.pop(key, None)
            configs = ConfigsImage(frozen(resources))
        producer_ids = image.producer_ids
        if self.next_producer_id is not None:
            producer_ids = ProducerIdsImage(self.next_producer_id)
        return MetadataImage(
            provenance=provenance if provenance is not None else image.provenance,
            features=features,
            cluster=cluster,
            topics=topics,
            configs=configs,
            producer_ids=producer_ids,
            cluster_id=image.cluster_id,
            acls=self.security.apply_acls(),
            client_quotas=self.security.apply_quotas(),
            scram=self.scram.apply(),
        )


_HANDLERS = {
    "RegisterBrokerRecord": MetadataDelta._replay_register_broker,
    "UnregisterBrokerRecord": MetadataDelta._replay_unregister_broker,
    "FenceBrokerRecord": MetadataDelta._replay_fence,
    "UnfenceBrokerRecord": MetadataDelta._replay_unfence,
    "BrokerRegistrationChangeRecord": MetadataDelta._replay_registration_change,
    "TopicRecord": MetadataDelta._replay_topic,
    "PartitionRecord": MetadataDelta._replay_partition,
    "PartitionChangeRecord": MetadataDelta._replay_partition_change,
    "RemoveTopicRecord": MetadataDelta._replay_remove_topic,
    "ConfigRecord": MetadataDelta._replay_config,
    "FeatureLevelRecord": MetadataDelta._replay_feature_level,
    "ProducerIdsRecord": MetadataDelta._replay_producer_ids,
    "AccessControlEntryRecord": MetadataDelta._replay_acl,
    "RemoveAccessControlEntryRecord": MetadataDelta._replay_remove_acl,
    "ClientQuotaRecord": MetadataDelta._replay_client_quota,
    "UserScramCredentialRecord": MetadataDelta._replay_scram_credential,
    "RemoveUserScramCredentialRecord": MetadataDelta._replay_remove_scram_credential,
}
