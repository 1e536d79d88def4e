"""TypedDicts of the metadata and KRaft control records (GENERATED: do not edit).

Written by ``python -m sparklog.metadata.gen_record_types`` from
:mod:`sparklog.metadata.records` and :mod:`sparklog.raft.control_records`; every
record is ``total=False`` (see :mod:`sparklog.metadata.gen_record_types`).
"""

from __future__ import annotations

from typing import TypedDict


class RegisterBrokerRecordEndPoints(TypedDict, total=False):
    """``RegisterBrokerRecord.end_points``."""

    name: str
    host: str
    port: int
    security_protocol: int


class RegisterBrokerRecordFeatures(TypedDict, total=False):
    """``RegisterBrokerRecord.features``."""

    name: str
    min_supported_version: int
    max_supported_version: int


class RegisterBrokerRecord(TypedDict, total=False):
    """``RegisterBrokerRecord`` v0-3 (built: missing keys take defaults)."""

    broker_id: int
    is_migrating_zk_broker: bool
    incarnation_id: bytes
    broker_epoch: int
    end_points: list[RegisterBrokerRecordEndPoints]
    features: list[RegisterBrokerRecordFeatures]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    log_dirs: list[bytes]


class UnregisterBrokerRecord(TypedDict, total=False):
    """``UnregisterBrokerRecord`` v0-0 (built: missing keys take defaults)."""

    broker_id: int
    broker_epoch: int


class TopicRecord(TypedDict, total=False):
    """``TopicRecord`` v0-0 (built: missing keys take defaults)."""

    name: str
    topic_id: bytes


class PartitionRecord(TypedDict, total=False):
    """``PartitionRecord`` v0-2 (built: missing keys take defaults)."""

    partition_id: int
    topic_id: bytes
    replicas: list[int]
    isr: list[int]
    removing_replicas: list[int]
    adding_replicas: list[int]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    directories: list[bytes]
    eligible_leader_replicas: list[int] | None
    last_known_elr: list[int] | None


class ConfigRecord(TypedDict, total=False):
    """``ConfigRecord`` v0-0 (built: missing keys take defaults)."""

    resource_type: int
    resource_name: str
    name: str
    value: str | None


class PartitionChangeRecord(TypedDict, total=False):
    """``PartitionChangeRecord`` v0-2 (built: missing keys take defaults)."""

    partition_id: int
    topic_id: bytes
    isr: list[int] | None
    leader: int
    replicas: list[int] | None
    removing_replicas: list[int] | None
    adding_replicas: list[int] | None
    leader_recovery_state: int
    directories: list[bytes] | None
    eligible_leader_replicas: list[int] | None
    last_known_elr: list[int] | None


class FenceBrokerRecord(TypedDict, total=False):
    """``FenceBrokerRecord`` v0-0 (built: missing keys take defaults)."""

    id: int
    epoch: int


class UnfenceBrokerRecord(TypedDict, total=False):
    """``UnfenceBrokerRecord`` v0-0 (built: missing keys take defaults)."""

    id: int
    epoch: int


class RemoveTopicRecord(TypedDict, total=False):
    """``RemoveTopicRecord`` v0-0 (built: missing keys take defaults)."""

    topic_id: bytes


class UserScramCredentialRecord(TypedDict, total=False):
    """``UserScramCredentialRecord`` v0-0 (built: missing keys take defaults)."""

    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class FeatureLevelRecord(TypedDict, total=False):
    """``FeatureLevelRecord`` v0-0 (built: missing keys take defaults)."""

    name: str
    feature_level: int


class ClientQuotaRecordEntity(TypedDict, total=False):
    """``ClientQuotaRecord.entity``."""

    entity_type: str
    entity_name: str | None


class ClientQuotaRecord(TypedDict, total=False):
    """``ClientQuotaRecord`` v0-0 (built: missing keys take defaults)."""

    entity: list[ClientQuotaRecordEntity]
    key: str
    value: float
    remove: bool


class ProducerIdsRecord(TypedDict, total=False):
    """``ProducerIdsRecord`` v0-0 (built: missing keys take defaults)."""

    broker_id: int
    broker_epoch: int
    next_producer_id: int


class BrokerRegistrationChangeRecord(TypedDict, total=False):
    """``BrokerRegistrationChangeRecord`` v0-2 (built: missing keys take defaults)."""

    broker_id: int
    broker_epoch: int
    fenced: int
    in_controlled_shutdown: int
    log_dirs: list[bytes]


class AccessControlEntryRecord(TypedDict, total=False):
    """``AccessControlEntryRecord`` v0-0 (built: missing keys take defaults)."""

    id: bytes
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


class RemoveAccessControlEntryRecord(TypedDict, total=False):
    """``RemoveAccessControlEntryRecord`` v0-0 (built: missing keys take defaults)."""

    id: bytes


class NoOpRecord(TypedDict, total=False):
    """``NoOpRecord`` v0-0 (built: missing keys take defaults)."""


class RemoveUserScramCredentialRecord(TypedDict, total=False):
    """``RemoveUserScramCredentialRecord`` v0-0 (built: missing keys take defaults)."""

    name: str
    mechanism: int


class RegisterControllerRecordEndPoints(TypedDict, total=False):
    """``RegisterControllerRecord.end_points``."""

    name: str
    host: str
    port: int
    security_protocol: int


class RegisterControllerRecordFeatures(TypedDict, total=False):
    """``RegisterControllerRecord.features``."""

    name: str
    min_supported_version: int
    max_supported_version: int


class RegisterControllerRecord(TypedDict, total=False):
    """``RegisterControllerRecord`` v0-0 (built: missing keys take defaults)."""

    controller_id: int
    incarnation_id: bytes
    zk_migration_ready: bool
    end_points: list[RegisterControllerRecordEndPoints]
    features: list[RegisterControllerRecordFeatures]


class LeaderChangeMessageVoters(TypedDict, total=False):
    """``LeaderChangeMessage.voters``."""

    voter_id: int
    voter_directory_id: bytes


class LeaderChangeMessageGrantingVoters(TypedDict, total=False):
    """``LeaderChangeMessage.granting_voters``."""

    voter_id: int
    voter_directory_id: bytes


class LeaderChangeMessage(TypedDict, total=False):
    """``LeaderChangeMessage`` v0-1 (built: missing keys take defaults)."""

    version: int
    leader_id: int
    voters: list[LeaderChangeMessageVoters]
    granting_voters: list[LeaderChangeMessageGrantingVoters]


class SnapshotHeaderRecord(TypedDict, total=False):
    """``SnapshotHeaderRecord`` v0-0 (built: missing keys take defaults)."""

    version: int
    last_contained_log_timestamp: int


class SnapshotFooterRecord(TypedDict, total=False):
    """``SnapshotFooterRecord`` v0-0 (built: missing keys take defaults)."""

    version: int


class KRaftVersionRecord(TypedDict, total=False):
    """``KRaftVersionRecord`` v0-0 (built: missing keys take defaults)."""

    version: int
    kraft_version: int


class VotersRecordVotersEndpoints(TypedDict, total=False):
    """``VotersRecordVoters.endpoints``."""

    name: str
    host: str
    port: int


class VotersRecordVotersKraftVersionFeature(TypedDict, total=False):
    """``VotersRecordVoters.kraft_version_feature``."""

    min_supported_version: int
    max_supported_version: int


class VotersRecordVoters(TypedDict, total=False):
    """``VotersRecord.voters``."""

    voter_id: int
    voter_directory_id: bytes
    endpoints: list[VotersRecordVotersEndpoints]
    kraft_version_feature: VotersRecordVotersKraftVersionFeature


class VotersRecord(TypedDict, total=False):
    """``VotersRecord`` v0-0 (built: missing keys take defaults)."""

    version: int
    voters: list[VotersRecordVoters]


__all__ = [
    "AccessControlEntryRecord",
    "BrokerRegistrationChangeRecord",
    "ClientQuotaRecord",
    "ConfigRecord",
    "FeatureLevelRecord",
    "FenceBrokerRecord",
    "KRaftVersionRecord",
    "LeaderChangeMessage",
    "NoOpRecord",
    "PartitionChangeRecord",
    "PartitionRecord",
    "ProducerIdsRecord",
    "RegisterBrokerRecord",
    "RegisterControllerRecord",
    "RemoveAccessControlEntryRecord",
    "RemoveTopicRecord",
    "RemoveUserScramCredentialRecord",
    "SnapshotFooterRecord",
    "SnapshotHeaderRecord",
    "TopicRecord",
    "UnfenceBrokerRecord",
    "UnregisterBrokerRecord",
    "UserScramCredentialRecord",
    "VotersRecord",
]
