"""TypedDicts of the coordinators' records (GENERATED: do not edit).

Written by ``python -m sparklog.coordinator.gen_record_types`` from the record
declarations of the group, share-group, transaction and share-state coordinators;
every record is ``total=False`` (see :mod:`sparklog.coordinator.gen_record_types`).
"""

from __future__ import annotations

from typing import TypedDict


class OffsetCommitKey(TypedDict, total=False):
    """``OffsetCommitKey`` v0-1 (built: missing keys take defaults)."""

    group: str
    topic: str
    partition: int


class OffsetCommitValue(TypedDict, total=False):
    """``OffsetCommitValue`` v0-4 (built: missing keys take defaults)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int
    topic_id: bytes


class GroupMetadataKey(TypedDict, total=False):
    """``GroupMetadataKey`` v2-2 (built: missing keys take defaults)."""

    group: str


class GroupMetadataValueMembers(TypedDict, total=False):
    """``GroupMetadataValue.members``."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


class GroupMetadataValue(TypedDict, total=False):
    """``GroupMetadataValue`` v0-4 (built: missing keys take defaults)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: list[GroupMetadataValueMembers]


class ConsumerGroupKey(TypedDict, total=False):
    """``ConsumerGroupKey`` v0+ (built: missing keys take defaults)."""

    group_id: str


class ConsumerGroupMemberKey(TypedDict, total=False):
    """``ConsumerGroupMemberKey`` v0+ (built: missing keys take defaults)."""

    group_id: str
    member_id: str


class ConsumerGroupMetadataValue(TypedDict, total=False):
    """``ConsumerGroupMetadataValue`` v0-0 (built: missing keys take defaults)."""

    epoch: int
    metadata_hash: int


class ConsumerGroupMemberMetadataValueClassicMemberMetadataSupportedProtocols(
    TypedDict, total=False
):
    """``ConsumerGroupMemberMetadataValueClassicMemberMetadata.supported_protocols``."""

    name: str
    metadata: bytes


class ConsumerGroupMemberMetadataValueClassicMemberMetadata(TypedDict, total=False):
    """``ConsumerGroupMemberMetadataValue.classic_member_metadata``."""

    session_timeout_ms: int
    supported_protocols: list[
        ConsumerGroupMemberMetadataValueClassicMemberMetadataSupportedProtocols
    ]


class ConsumerGroupMemberMetadataValue(TypedDict, total=False):
    """``ConsumerGroupMemberMetadataValue`` v0-0 (built: missing keys take defaults)."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic_member_metadata: ConsumerGroupMemberMetadataValueClassicMemberMetadata | None


class ConsumerGroupTargetAssignmentMetadataValue(TypedDict, total=False):
    """``ConsumerGroupTargetAssignmentMetadataValue`` v0-0 (built: missing keys take defaults)."""

    assignment_epoch: int


class ConsumerGroupTargetAssignmentMemberValueTopicPartitions(TypedDict, total=False):
    """``ConsumerGroupTargetAssignmentMemberValue.topic_partitions``."""

    topic_id: bytes
    partitions: list[int]


class ConsumerGroupTargetAssignmentMemberValue(TypedDict, total=False):
    """``ConsumerGroupTargetAssignmentMemberValue`` v0-0 (built: missing keys take defaults)."""

    topic_partitions: list[ConsumerGroupTargetAssignmentMemberValueTopicPartitions]


class ConsumerGroupCurrentMemberAssignmentValueAssignedPartitions(TypedDict, total=False):
    """``ConsumerGroupCurrentMemberAssignmentValue.assigned_partitions``."""

    topic_id: bytes
    partitions: list[int]


class ConsumerGroupCurrentMemberAssignmentValuePartitionsPendingRevocation(TypedDict, total=False):
    """``ConsumerGroupCurrentMemberAssignmentValue.partitions_pending_revocation``."""

    topic_id: bytes
    partitions: list[int]


class ConsumerGroupCurrentMemberAssignmentValue(TypedDict, total=False):
    """``ConsumerGroupCurrentMemberAssignmentValue`` v0-0 (built: missing keys take defaults)."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: list[ConsumerGroupCurrentMemberAssignmentValueAssignedPartitions]
    partitions_pending_revocation: list[
        ConsumerGroupCurrentMemberAssignmentValuePartitionsPendingRevocation
    ]


class ShareGroupMemberMetadataValue(TypedDict, total=False):
    """``ShareGroupMemberMetadataValue`` v0-0 (built: missing keys take defaults)."""

    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]


class ShareGroupMetadataValue(TypedDict, total=False):
    """``ShareGroupMetadataValue`` v0-0 (built: missing keys take defaults)."""

    epoch: int
    metadata_hash: int


class ShareGroupCurrentMemberAssignmentValueAssignedPartitions(TypedDict, total=False):
    """``ShareGroupCurrentMemberAssignmentValue.assigned_partitions``."""

    topic_id: bytes
    partitions: list[int]


class ShareGroupCurrentMemberAssignmentValue(TypedDict, total=False):
    """``ShareGroupCurrentMemberAssignmentValue`` v0-0 (built: missing keys take defaults)."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: list[ShareGroupCurrentMemberAssignmentValueAssignedPartitions]


class ShareGroupStatePartitionMetadataValueInitializingTopics(TypedDict, total=False):
    """``ShareGroupStatePartitionMetadataValue.initializing_topics``."""

    topic_id: bytes
    topic_name: str
    partitions: list[int]


class ShareGroupStatePartitionMetadataValueInitializedTopics(TypedDict, total=False):
    """``ShareGroupStatePartitionMetadataValue.initialized_topics``."""

    topic_id: bytes
    topic_name: str
    partitions: list[int]


class ShareGroupStatePartitionMetadataValueDeletingTopics(TypedDict, total=False):
    """``ShareGroupStatePartitionMetadataValue.deleting_topics``."""

    topic_id: bytes
    topic_name: str


class ShareGroupStatePartitionMetadataValue(TypedDict, total=False):
    """``ShareGroupStatePartitionMetadataValue`` v0-0 (built: missing keys take defaults)."""

    initializing_topics: list[ShareGroupStatePartitionMetadataValueInitializingTopics]
    initialized_topics: list[ShareGroupStatePartitionMetadataValueInitializedTopics]
    deleting_topics: list[ShareGroupStatePartitionMetadataValueDeletingTopics]


class TransactionLogKey(TypedDict, total=False):
    """``TransactionLogKey`` v0-0 (built: missing keys take defaults)."""

    transactional_id: str


class TransactionLogValueTransactionPartitions(TypedDict, total=False):
    """``TransactionLogValue.transaction_partitions``."""

    topic: str
    partition_ids: list[int]


class TransactionLogValue(TypedDict, total=False):
    """``TransactionLogValue`` v0-1 (built: missing keys take defaults)."""

    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: int
    transaction_partitions: list[TransactionLogValueTransactionPartitions] | None
    transaction_last_update_timestamp_ms: int
    transaction_start_timestamp_ms: int
    client_transaction_version: int


class ShareStateKey(TypedDict, total=False):
    """``ShareStateKey`` v0-1 (built: missing keys take defaults)."""

    group_id: str
    topic_id: bytes
    partition: int


class ShareSnapshotValueStateBatches(TypedDict, total=False):
    """``ShareSnapshotValue.state_batches``."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


class ShareSnapshotValue(TypedDict, total=False):
    """``ShareSnapshotValue`` v0-0 (built: missing keys take defaults)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    create_timestamp: int
    write_timestamp: int
    state_batches: list[ShareSnapshotValueStateBatches]


class ShareUpdateValueStateBatches(TypedDict, total=False):
    """``ShareUpdateValue.state_batches``."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


class ShareUpdateValue(TypedDict, total=False):
    """``ShareUpdateValue`` v0-0 (built: missing keys take defaults)."""

    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: list[ShareUpdateValueStateBatches]


__all__ = [
    "ConsumerGroupCurrentMemberAssignmentValue",
    "ConsumerGroupKey",
    "ConsumerGroupMemberKey",
    "ConsumerGroupMemberMetadataValue",
    "ConsumerGroupMetadataValue",
    "ConsumerGroupTargetAssignmentMemberValue",
    "ConsumerGroupTargetAssignmentMetadataValue",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "ShareGroupCurrentMemberAssignmentValue",
    "ShareGroupMemberMetadataValue",
    "ShareGroupMetadataValue",
    "ShareGroupStatePartitionMetadataValue",
    "ShareSnapshotValue",
    "ShareStateKey",
    "ShareUpdateValue",
    "TransactionLogKey",
    "TransactionLogValue",
]
