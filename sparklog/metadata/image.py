"""The metadata image: an immutable snapshot of cluster metadata at one log offset.

An image is what every reader (broker request handlers, the controller, publishers) consults;
it is only ever replaced, never changed: :class:`~sparklog.metadata.delta.MetadataDelta` folds
records onto an image and produces the next one. Mappings inside an image are read-only views
(``MappingProxyType``) over dicts that no one else holds, so sharing an image between threads
or keeping an old one around is safe.

Sub-images follow Kafka's ``MetadataImage``: features, cluster (broker registrations), topics
(by id and by name, each with its partition registrations), configs (per resource), producer
ids, plus the provenance (last committed offset/epoch/timestamp folded in) and the cluster id.

:meth:`MetadataImage.to_records` writes an image back as the minimal record list that rebuilds
it (what a snapshot holds); replaying that list onto an empty image gives an equal image.
:meth:`MetadataImage.digest` is a SHA-256 over those records' encodings: two images with the
same content have the same digest whatever log offsets, batches or snapshots led to them
(provenance and cluster id are not part of it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.metadata.scram_image import ScramImage
from sparklog.metadata.security_image import AclsImage, ClientQuotasImage

NO_LEADER: Final = -1
METADATA_VERSION_FEATURE: Final = "metadata.version"
# KIP-890: level 2 turns on transactions version 2 (an epoch bump per transaction).
TRANSACTION_VERSION_FEATURE: Final = "transaction.version"
# KIP-932: level 1 turns on share groups.
SHARE_VERSION_FEATURE: Final = "share.version"

# ConfigResource.Type (Kafka's wire codes)
RESOURCE_TOPIC: Final = 2
RESOURCE_GROUP: Final = 32
RESOURCE_BROKER: Final = 4
RESOURCE_BROKER_LOGGER: Final = 8

_EMPTY: Final[Mapping[Any, Any]] = MappingProxyType({})


def _empty_map() -> Mapping[Any, Any]:
    return _EMPTY


def frozen(mapping: Mapping[Any, Any]) -> Mapping[Any, Any]:
    """A read-only view over a private copy."""
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A listener a broker advertises; ``security_protocol`` is Kafka's code (PLAINTEXT = 0)."""

    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    epoch: int
    incarnation_id: bytes
    endpoints: tuple[Endpoint, ...]
    supported_features: Mapping[str, tuple[int, int]] = field(default_factory=_empty_map)
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    log_dirs: tuple[bytes, ...] = ()

    def endpoint(self, listener_name: str) -> Endpoint | None:
        for candidate in self.endpoints:
            if candidate.name == listener_name:
                return candidate
        return None

    @staticmethod
    def from_record(data: Mapping[str, Any]) -> BrokerRegistration:
        return BrokerRegistration(
            broker_id=data["broker_id"],
            epoch=data["broker_epoch"],
            incarnation_id=bytes(data["incarnation_id"]),
            endpoints=tuple(
                Endpoint(e["name"], e["host"], e["port"], e["security_protocol"])
                for e in data["end_points"]
            ),
            supported_features=frozen(
                {
                    f["name"]: (f["min_supported_version"], f["max_supported_version"])
                    for f in data["features"]
                }
            ),
            rack=data["rack"],
            fenced=data["fenced"],
            in_controlled_shutdown=data["in_controlled_shutdown"],
            log_dirs=tuple(bytes(d) for d in data.get("log_dirs") or ()),
        )

    def to_record(self) -> MetadataRecord:
        return make_record(
            "RegisterBrokerRecord",
            {
                "broker_id": self.broker_id,
                "incarnation_id": self.incarnation_id,
                "broker_epoch": self.epoch,
                "end_points": [
                    {
                        "name": e.name,
                        "host": e.host,
                        "port": e.port,
                        "security_protocol": e.security_protocol,
                    }
                    for e in self.endpoints
                ],
                "features": [
                    {"name": n, "min_supported_version": lo, "max_supported_version": hi}
                    for n, (lo, hi) in sorted(self.supported_features.items())
                ],
                "rack": self.rack,
                "fenced": self.fenced,
                "in_controlled_shutdown": self.in_controlled_shutdown,
                "log_dirs": list(self.log_dirs),
            },
        )


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """One partition's replica assignment and leadership (Kafka's PartitionRegistration)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    directories: tuple[bytes, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = 0
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    @staticmethod
    def from_record(data: Mapping[str, Any]) -> PartitionRegistration:
        return PartitionRegistration(
            replicas=tuple(data["replicas"]),
            isr=tuple(data["isr"]),
            leader=data["leader"],
            leader_epoch=data["leader_epoch"],
            partition_epoch=data["partition_epoch"],
            directories=tuple(bytes(d) for d in data.get("directories") or ()),
            removing_replicas=tuple(data["removing_replicas"]),
            adding_replicas=tuple(data["adding_replicas"]),
            leader_recovery_state=data.get("leader_recovery_state", 0),
            elr=tuple(data.get("eligible_leader_replicas") or ()),
            last_known_elr=tuple(data.get("last_known_elr") or ()),
        )

    def merge(self, change: Mapping[str, Any]) -> PartitionRegistration:
        """Apply a PartitionChangeRecord: a new leader bumps the leader epoch; any change
        bumps the partition epoch (Kafka's PartitionRegistration.merge)."""

        def pick(name: str, current: tuple[Any, ...]) -> tuple[Any, ...]:
            value = change.get(name)
            return current if value is None else tuple(value)

        leader = change.get("leader", -2)
        new_leader, new_leader_epoch = self.leader, self.leader_epoch
        if leader != -2:
            new_leader, new_leader_epoch = leader, self.leader_epoch + 1
        recovery = change.get("leader_recovery_state", -1)
        return PartitionRegistration(
            replicas=pick("replicas", self.replicas),
            isr=pick("isr", self.isr),
            leader=new_leader,
            leader_epoch=new_leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            directories=tuple(bytes(d) for d in pick("directories", self.directories)),
            removing_replicas=pick("removing_replicas", self.removing_replicas),
            adding_replicas=pick("adding_replicas", self.adding_replicas),
            leader_recovery_state=self.leader_recovery_state if recovery == -1 else recovery,
            elr=pick("eligible_leader_replicas", self.elr),
            last_known_elr=pick("last_known_elr", self.last_known_elr),
        )

    def to_record(self, topic_id: bytes, partition_id: int) -> MetadataRecord:
        return make_record(
            "PartitionRecord",
            {
                "partition_id": partition_id,
                "topic_id": topic_id,
                "replicas": list(self.replicas),
                "isr": list(self.isr),
                "removing_replicas": list(self.removing_replicas),
                "adding_replicas": list(self.adding_replicas),
                "leader": self.leader,
                "leader_recovery_state": self.leader_recovery_state,
                "leader_epoch": self.leader_epoch,
                "partition_epoch": self.partition_epoch,
                "directories": list(self.directories),
                "eligible_leader_replicas": list(self.elr) if self.elr else None,
                "last_known_elr": list(self.last_known_elr) if self.last_known_elr else None,
            },
        )


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: bytes
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=_empty_map)


@dataclass(frozen=True, slots=True)
class TopicsImage:
    by_id: Mapping[bytes, TopicImage] = field(default_factory=_empty_map)
    by_name: Mapping[str, TopicImage] = field(default_factory=_empty_map)

    def get_topic(self, name: str) -> TopicImage | None:
        return self.by_name.get(name)

    def get_topic_by_id(self, topic_id: bytes) -> TopicImage | None:
        return self.by_id.get(topic_id)

    def get_partition(self, topic_id: bytes, partition: int) -> PartitionRegistration | None:
        topic = self.by_id.get(topic_id)
        return None if topic is None else topic.partitions.get(partition)


@dataclass(frozen=True, slots=True)
class ClusterImage:
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=_empty_map)

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def unfenced_brokers(self) -> list[BrokerRegistration]:
        return [b for _, b in sorted(self.brokers.items()) if not b.fenced]


@dataclass(frozen=True, slots=True)
class FeaturesImage:
    levels: Mapping[str, int] = field(default_factory=_empty_map)

    @property
    def metadata_version(self) -> int:
        """The finalized metadata.version level, 0 when not bootstrapped yet."""
        return self.levels.get(METADATA_VERSION_FEATURE, 0)

    @property
    def transaction_version(self) -> int:
        """The finalized transaction.version level, 0 when not finalized."""
        return self.levels.get(TRANSACTION_VERSION_FEATURE, 0)


@dataclass(frozen=True, slots=True)
class ConfigsImage:
    """Explicitly set configs per resource ``(resource type, name)``; broker name "" is the
    cluster-wide default."""

    resources: Mapping[tuple[int, str], Mapping[str, str]] = field(default_factory=_empty_map)

    def get(self, resource_type: int, name: str) -> Mapping[str, str]:
        return self.resources.get((resource_type, name), _EMPTY)

    def topic_config(self, topic: str) -> Mapping[str, str]:
        return self.get(RESOURCE_TOPIC, topic)

    def group_config(self, group_id: str) -> Mapping[str, str]:
        """A group's dynamic overrides (``kafka-configs --entity-type groups``), validated by
        the controller when they were set."""
        return self.get(RESOURCE_GROUP, group_id)


@dataclass(frozen=True, slots=True)
class ProducerIdsImage:
    next_producer_id: int = -1


@dataclass(frozen=True, slots=True)
class Provenance:
    """The last committed batch folded into the image."""

    last_offset: int = -1
    last_epoch: int = -1
    last_append_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class MetadataImage:
    provenance: Provenance = field(default_factory=Provenance)
    features: FeaturesImage = field(default_factory=FeaturesImage)
    cluster: ClusterImage = field(default_factory=ClusterImage)
    topics: TopicsImage = field(default_factory=TopicsImage)
    configs: ConfigsImage = field(default_factory=ConfigsImage)
    producer_ids: ProducerIdsImage = field(default_factory=ProducerIdsImage)
    cluster_id: str | None = None
    acls: AclsImage = field(default_factory=AclsImage)
    client_quotas: ClientQuotasImage = field(default_factory=ClientQuotasImage)
    scram: ScramImage = field(default_factory=ScramImage)

    @property
    def is_empty(self) -> bool:
        return (
            not self.features.levels
            and not self.cluster.brokers
            and not self.topics.by_id
            and not self.configs.resources
            and self.producer_ids.next_producer_id < 0
            and not self.acls.acls
            and not self.client_quotas.entities
            and not self.scram.credentials
        )

    def digest(self) -> str:
        """Hex SHA-256 of the image's content (see the module docstring)."""
        hasher = hashlib.sha256()
        for record in self.to_records():
            encoded = record.encode()
            hasher.update(len(encoded).to_bytes(4, "big"))
            hasher.update(encoded)
        return hasher.hexdigest()

    def to_records(self) -> list[MetadataRecord]:
        """The records that rebuild this image from empty (features first, as Kafka does)."""
        records: list[MetadataRecord] = []
        if METADATA_VERSION_FEATURE in self.features.levels:
            records.append(_feature(METADATA_VERSION_FEATURE, self.features.metadata_version))
        for name, level in sorted(self.features.levels.items()):
            if name != METADATA_VERSION_FEATURE:
                records.append(_feature(name, level))
        for _, broker in sorted(self.cluster.brokers.items()):
            records.append(broker.to_record())
        for topic in sorted(self.topics.by_id.values(), key=lambda t: t.name):
            records.append(
                make_record("TopicRecord", {"name": topic.name, "topic_id": topic.topic_id})
            )
            for partition_id, registration in sorted(topic.partitions.items()):
                records.append(registration.to_record(topic.topic_id, partition_id))
        for (resource_type, resource_name), configs in sorted(self.configs.resources.items()):
            for key, value in sorted(configs.items()):
                records.append(
                    make_record(
                        "ConfigRecord",
                        {
                            "resource_type": resource_type,
                            "resource_name": resource_name,
                            "name": key,
                            "value": value,
                        },
                    )
                )
        if self.producer_ids.next_producer_id >= 0:
            records.append(
                make_record(
                    "ProducerIdsRecord",
                    {
                        "broker_id": -1,
                        "broker_epoch": -1,
                        "next_producer_id": self.producer_ids.next_producer_id,
                    },
                )
            )
        records.extend(self.client_quotas.to_records())
        records.extend(self.acls.to_records())
        records.extend(self.scram.to_records())
        return records


def _feature(name: str, level: int) -> MetadataRecord:
    return make_record("FeatureLevelRecord", {"name": name, "feature_level": level})
