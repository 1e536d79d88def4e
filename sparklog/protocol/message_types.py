"""TypedDicts of every API request and response (GENERATED: do not edit).

Written by ``python -m sparklog.protocol.gen_types`` from the declarations in
:mod:`sparklog.protocol.messages`; see :mod:`sparklog.protocol.gen_types` for what the
types promise (requests: every key present; responses: ``total=False``).
"""

from __future__ import annotations

from enum import IntEnum
from typing import TypedDict

from sparklog.protocol.types import RecordsValue


class ApiKey(IntEnum):
    """Every API key this node declares, named as Kafka's ``ApiKeys``."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


class ProduceRequestTopicDataPartitionData(TypedDict):
    """``ProduceRequestTopicData.partition_data``."""

    index: int
    records: memoryview | None


class ProduceRequestTopicData(TypedDict):
    """``ProduceRequest.topic_data``."""

    name: str
    topic_id: bytes
    partition_data: list[ProduceRequestTopicDataPartitionData]


class ProduceRequest(TypedDict):
    """``ProduceRequest`` v3-13 (decoded: every key present)."""

    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: list[ProduceRequestTopicData]


class ProduceResponseResponsesPartitionResponsesRecordErrors(TypedDict, total=False):
    """``ProduceResponseResponsesPartitionResponses.record_errors``."""

    batch_index: int
    batch_index_error_message: str | None


class ProduceResponseResponsesPartitionResponsesCurrentLeader(TypedDict, total=False):
    """``ProduceResponseResponsesPartitionResponses.current_leader``."""

    leader_id: int
    leader_epoch: int


class ProduceResponseResponsesPartitionResponses(TypedDict, total=False):
    """``ProduceResponseResponses.partition_responses``."""

    index: int
    error_code: int
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int
    record_errors: list[ProduceResponseResponsesPartitionResponsesRecordErrors]
    error_message: str | None
    current_leader: ProduceResponseResponsesPartitionResponsesCurrentLeader | None


class ProduceResponseResponses(TypedDict, total=False):
    """``ProduceResponse.responses``."""

    name: str
    topic_id: bytes
    partition_responses: list[ProduceResponseResponsesPartitionResponses]


class ProduceResponseNodeEndpoints(TypedDict, total=False):
    """``ProduceResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int
    rack: str | None


class ProduceResponse(TypedDict, total=False):
    """``ProduceResponse`` v3-13 (built: missing keys take defaults)."""

    responses: list[ProduceResponseResponses]
    throttle_time_ms: int
    node_endpoints: list[ProduceResponseNodeEndpoints]


class FetchRequestReplicaState(TypedDict):
    """``FetchRequest.replica_state``."""

    replica_id: int
    replica_epoch: int


class FetchRequestTopicsPartitions(TypedDict):
    """``FetchRequestTopics.partitions``."""

    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int
    replica_directory_id: bytes
    high_watermark: int


class FetchRequestTopics(TypedDict):
    """``FetchRequest.topics``."""

    topic: str
    topic_id: bytes
    partitions: list[FetchRequestTopicsPartitions]


class FetchRequestForgottenTopicsData(TypedDict):
    """``FetchRequest.forgotten_topics_data``."""

    topic: str
    topic_id: bytes
    partitions: list[int]


class FetchRequest(TypedDict):
    """``FetchRequest`` v4-18 (decoded: every key present)."""

    cluster_id: str | None
    replica_id: int
    replica_state: FetchRequestReplicaState | None
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    session_id: int
    session_epoch: int
    topics: list[FetchRequestTopics]
    forgotten_topics_data: list[FetchRequestForgottenTopicsData]
    rack_id: str


class FetchResponseResponsesPartitionsDivergingEpoch(TypedDict, total=False):
    """``FetchResponseResponsesPartitions.diverging_epoch``."""

    epoch: int
    end_offset: int


class FetchResponseResponsesPartitionsCurrentLeader(TypedDict, total=False):
    """``FetchResponseResponsesPartitions.current_leader``."""

    leader_id: int
    leader_epoch: int


class FetchResponseResponsesPartitionsSnapshotId(TypedDict, total=False):
    """``FetchResponseResponsesPartitions.snapshot_id``."""

    end_offset: int
    epoch: int


class FetchResponseResponsesPartitionsAbortedTransactions(TypedDict, total=False):
    """``FetchResponseResponsesPartitions.aborted_transactions``."""

    producer_id: int
    first_offset: int


class FetchResponseResponsesPartitions(TypedDict, total=False):
    """``FetchResponseResponses.partitions``."""

    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    diverging_epoch: FetchResponseResponsesPartitionsDivergingEpoch | None
    current_leader: FetchResponseResponsesPartitionsCurrentLeader | None
    snapshot_id: FetchResponseResponsesPartitionsSnapshotId | None
    aborted_transactions: list[FetchResponseResponsesPartitionsAbortedTransactions] | None
    preferred_read_replica: int
    records: RecordsValue


class FetchResponseResponses(TypedDict, total=False):
    """``FetchResponse.responses``."""

    topic: str
    topic_id: bytes
    partitions: list[FetchResponseResponsesPartitions]


class FetchResponseNodeEndpoints(TypedDict, total=False):
    """``FetchResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int
    rack: str | None


class FetchResponse(TypedDict, total=False):
    """``FetchResponse`` v4-18 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    session_id: int
    responses: list[FetchResponseResponses]
    node_endpoints: list[FetchResponseNodeEndpoints]


class ListOffsetsRequestTopicsPartitions(TypedDict):
    """``ListOffsetsRequestTopics.partitions``."""

    partition_index: int
    current_leader_epoch: int
    timestamp: int


class ListOffsetsRequestTopics(TypedDict):
    """``ListOffsetsRequest.topics``."""

    name: str
    partitions: list[ListOffsetsRequestTopicsPartitions]


class ListOffsetsRequest(TypedDict):
    """``ListOffsetsRequest`` v1-11 (decoded: every key present)."""

    replica_id: int
    isolation_level: int
    topics: list[ListOffsetsRequestTopics]
    timeout_ms: int


class ListOffsetsResponseTopicsPartitions(TypedDict, total=False):
    """``ListOffsetsResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    timestamp: int
    offset: int
    leader_epoch: int


class ListOffsetsResponseTopics(TypedDict, total=False):
    """``ListOffsetsResponse.topics``."""

    name: str
    partitions: list[ListOffsetsResponseTopicsPartitions]


class ListOffsetsResponse(TypedDict, total=False):
    """``ListOffsetsResponse`` v1-11 (built: missing keys take defaults)."""

    throttle_time_ms: int
    topics: list[ListOffsetsResponseTopics]


class MetadataRequestTopics(TypedDict):
    """``MetadataRequest.topics``."""

    topic_id: bytes
    name: str | None


class MetadataRequest(TypedDict):
    """``MetadataRequest`` v0-13 (decoded: every key present)."""

    topics: list[MetadataRequestTopics] | None
    allow_auto_topic_creation: bool
    include_cluster_authorized_operations: bool
    include_topic_authorized_operations: bool


class MetadataResponseBrokers(TypedDict, total=False):
    """``MetadataResponse.brokers``."""

    node_id: int
    host: str
    port: int
    rack: str | None


class MetadataResponseTopicsPartitions(TypedDict, total=False):
    """``MetadataResponseTopics.partitions``."""

    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int
    replica_nodes: list[int]
    isr_nodes: list[int]
    offline_replicas: list[int]


class MetadataResponseTopics(TypedDict, total=False):
    """``MetadataResponse.topics``."""

    error_code: int
    name: str | None
    topic_id: bytes
    is_internal: bool
    partitions: list[MetadataResponseTopicsPartitions]
    topic_authorized_operations: int


class MetadataResponse(TypedDict, total=False):
    """``MetadataResponse`` v0-13 (built: missing keys take defaults)."""

    throttle_time_ms: int
    brokers: list[MetadataResponseBrokers]
    cluster_id: str | None
    controller_id: int
    topics: list[MetadataResponseTopics]
    cluster_authorized_operations: int
    error_code: int


class OffsetCommitRequestTopicsPartitions(TypedDict):
    """``OffsetCommitRequestTopics.partitions``."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    committed_metadata: str | None


class OffsetCommitRequestTopics(TypedDict):
    """``OffsetCommitRequest.topics``."""

    name: str
    topic_id: bytes
    partitions: list[OffsetCommitRequestTopicsPartitions]


class OffsetCommitRequest(TypedDict):
    """``OffsetCommitRequest`` v2-10 (decoded: every key present)."""

    group_id: str
    generation_id_or_member_epoch: int
    member_id: str
    group_instance_id: str | None
    retention_time_ms: int
    topics: list[OffsetCommitRequestTopics]


class OffsetCommitResponseTopicsPartitions(TypedDict, total=False):
    """``OffsetCommitResponseTopics.partitions``."""

    partition_index: int
    error_code: int


class OffsetCommitResponseTopics(TypedDict, total=False):
    """``OffsetCommitResponse.topics``."""

    name: str
    topic_id: bytes
    partitions: list[OffsetCommitResponseTopicsPartitions]


class OffsetCommitResponse(TypedDict, total=False):
    """``OffsetCommitResponse`` v2-10 (built: missing keys take defaults)."""

    throttle_time_ms: int
    topics: list[OffsetCommitResponseTopics]


class OffsetFetchRequestTopics(TypedDict):
    """``OffsetFetchRequest.topics``."""

    name: str
    partition_indexes: list[int]


class OffsetFetchRequestGroupsTopics(TypedDict):
    """``OffsetFetchRequestGroups.topics``."""

    name: str
    topic_id: bytes
    partition_indexes: list[int]


class OffsetFetchRequestGroups(TypedDict):
    """``OffsetFetchRequest.groups``."""

    group_id: str
    member_id: str | None
    member_epoch: int
    topics: list[OffsetFetchRequestGroupsTopics] | None


class OffsetFetchRequest(TypedDict):
    """``OffsetFetchRequest`` v1-10 (decoded: every key present)."""

    group_id: str
    topics: list[OffsetFetchRequestTopics] | None
    groups: list[OffsetFetchRequestGroups]
    require_stable: bool


class OffsetFetchResponseTopicsPartitions(TypedDict, total=False):
    """``OffsetFetchResponseTopics.partitions``."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    metadata: str | None
    error_code: int


class OffsetFetchResponseTopics(TypedDict, total=False):
    """``OffsetFetchResponse.topics``."""

    name: str
    partitions: list[OffsetFetchResponseTopicsPartitions]


class OffsetFetchResponseGroupsTopicsPartitions(TypedDict, total=False):
    """``OffsetFetchResponseGroupsTopics.partitions``."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    metadata: str | None
    error_code: int


class OffsetFetchResponseGroupsTopics(TypedDict, total=False):
    """``OffsetFetchResponseGroups.topics``."""

    name: str
    topic_id: bytes
    partitions: list[OffsetFetchResponseGroupsTopicsPartitions]


class OffsetFetchResponseGroups(TypedDict, total=False):
    """``OffsetFetchResponse.groups``."""

    group_id: str
    topics: list[OffsetFetchResponseGroupsTopics]
    error_code: int


class OffsetFetchResponse(TypedDict, total=False):
    """``OffsetFetchResponse`` v1-10 (built: missing keys take defaults)."""

    throttle_time_ms: int
    topics: list[OffsetFetchResponseTopics]
    error_code: int
    groups: list[OffsetFetchResponseGroups]


class FindCoordinatorRequest(TypedDict):
    """``FindCoordinatorRequest`` v0-6 (decoded: every key present)."""

    key: str
    key_type: int
    coordinator_keys: list[str]


class FindCoordinatorResponseCoordinators(TypedDict, total=False):
    """``FindCoordinatorResponse.coordinators``."""

    key: str
    node_id: int
    host: str
    port: int
    error_code: int
    error_message: str | None


class FindCoordinatorResponse(TypedDict, total=False):
    """``FindCoordinatorResponse`` v0-6 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    node_id: int
    host: str
    port: int
    coordinators: list[FindCoordinatorResponseCoordinators]


class JoinGroupRequestProtocols(TypedDict):
    """``JoinGroupRequest.protocols``."""

    name: str
    metadata: bytes


class JoinGroupRequest(TypedDict):
    """``JoinGroupRequest`` v0-9 (decoded: every key present)."""

    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: list[JoinGroupRequestProtocols]
    reason: str | None


class JoinGroupResponseMembers(TypedDict, total=False):
    """``JoinGroupResponse.members``."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


class JoinGroupResponse(TypedDict, total=False):
    """``JoinGroupResponse`` v0-9 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str
    skip_assignment: bool
    member_id: str
    members: list[JoinGroupResponseMembers]


class HeartbeatRequest(TypedDict):
    """``HeartbeatRequest`` v0-4 (decoded: every key present)."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


class HeartbeatResponse(TypedDict, total=False):
    """``HeartbeatResponse`` v0-4 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int


class LeaveGroupRequestMembers(TypedDict):
    """``LeaveGroupRequest.members``."""

    member_id: str
    group_instance_id: str | None
    reason: str | None


class LeaveGroupRequest(TypedDict):
    """``LeaveGroupRequest`` v0-5 (decoded: every key present)."""

    group_id: str
    member_id: str
    members: list[LeaveGroupRequestMembers]


class LeaveGroupResponseMembers(TypedDict, total=False):
    """``LeaveGroupResponse.members``."""

    member_id: str
    group_instance_id: str | None
    error_code: int


class LeaveGroupResponse(TypedDict, total=False):
    """``LeaveGroupResponse`` v0-5 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    members: list[LeaveGroupResponseMembers]


class SyncGroupRequestAssignments(TypedDict):
    """``SyncGroupRequest.assignments``."""

    member_id: str
    assignment: bytes


class SyncGroupRequest(TypedDict):
    """``SyncGroupRequest`` v0-5 (decoded: every key present)."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: list[SyncGroupRequestAssignments]


class SyncGroupResponse(TypedDict, total=False):
    """``SyncGroupResponse`` v0-5 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    protocol_type: str | None
    protocol_name: str | None
    assignment: bytes


class DescribeGroupsRequest(TypedDict):
    """``DescribeGroupsRequest`` v0-6 (decoded: every key present)."""

    groups: list[str]
    include_authorized_operations: bool


class DescribeGroupsResponseGroupsMembers(TypedDict, total=False):
    """``DescribeGroupsResponseGroups.members``."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


class DescribeGroupsResponseGroups(TypedDict, total=False):
    """``DescribeGroupsResponse.groups``."""

    error_code: int
    error_message: str | None
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: list[DescribeGroupsResponseGroupsMembers]
    authorized_operations: int


class DescribeGroupsResponse(TypedDict, total=False):
    """``DescribeGroupsResponse`` v0-6 (built: missing keys take defaults)."""

    throttle_time_ms: int
    groups: list[DescribeGroupsResponseGroups]


class ListGroupsRequest(TypedDict):
    """``ListGroupsRequest`` v0-5 (decoded: every key present)."""

    states_filter: list[str]
    types_filter: list[str]


class ListGroupsResponseGroups(TypedDict, total=False):
    """``ListGroupsResponse.groups``."""

    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


class ListGroupsResponse(TypedDict, total=False):
    """``ListGroupsResponse`` v0-5 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    groups: list[ListGroupsResponseGroups]


class SaslHandshakeRequest(TypedDict):
    """``SaslHandshakeRequest`` v0-1 (decoded: every key present)."""

    mechanism: str


class SaslHandshakeResponse(TypedDict, total=False):
    """``SaslHandshakeResponse`` v0-1 (built: missing keys take defaults)."""

    error_code: int
    mechanisms: list[str]


class ApiVersionsRequest(TypedDict):
    """``ApiVersionsRequest`` v0-4 (decoded: every key present)."""

    client_software_name: str
    client_software_version: str


class ApiVersionsResponseApiKeys(TypedDict, total=False):
    """``ApiVersionsResponse.api_keys``."""

    api_key: int
    min_version: int
    max_version: int


class ApiVersionsResponseSupportedFeatures(TypedDict, total=False):
    """``ApiVersionsResponse.supported_features``."""

    name: str
    min_version: int
    max_version: int


class ApiVersionsResponseFinalizedFeatures(TypedDict, total=False):
    """``ApiVersionsResponse.finalized_features``."""

    name: str
    max_version_level: int
    min_version_level: int


class ApiVersionsResponse(TypedDict, total=False):
    """``ApiVersionsResponse`` v0-4 (built: missing keys take defaults)."""

    error_code: int
    api_keys: list[ApiVersionsResponseApiKeys]
    throttle_time_ms: int
    supported_features: list[ApiVersionsResponseSupportedFeatures]
    finalized_features_epoch: int
    finalized_features: list[ApiVersionsResponseFinalizedFeatures]
    zk_migration_ready: bool


class CreateTopicsRequestTopicsAssignments(TypedDict):
    """``CreateTopicsRequestTopics.assignments``."""

    partition_index: int
    broker_ids: list[int]


class CreateTopicsRequestTopicsConfigs(TypedDict):
    """``CreateTopicsRequestTopics.configs``."""

    name: str
    value: str | None


class CreateTopicsRequestTopics(TypedDict):
    """``CreateTopicsRequest.topics``."""

    name: str
    num_partitions: int
    replication_factor: int
    assignments: list[CreateTopicsRequestTopicsAssignments]
    configs: list[CreateTopicsRequestTopicsConfigs]


class CreateTopicsRequest(TypedDict):
    """``CreateTopicsRequest`` v2-7 (decoded: every key present)."""

    topics: list[CreateTopicsRequestTopics]
    timeout_ms: int
    validate_only: bool


class CreateTopicsResponseTopicsConfigs(TypedDict, total=False):
    """``CreateTopicsResponseTopics.configs``."""

    name: str
    value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool


class CreateTopicsResponseTopics(TypedDict, total=False):
    """``CreateTopicsResponse.topics``."""

    name: str
    topic_id: bytes
    error_code: int
    error_message: str | None
    topic_config_error_code: int
    num_partitions: int
    replication_factor: int
    configs: list[CreateTopicsResponseTopicsConfigs] | None


class CreateTopicsResponse(TypedDict, total=False):
    """``CreateTopicsResponse`` v2-7 (built: missing keys take defaults)."""

    throttle_time_ms: int
    topics: list[CreateTopicsResponseTopics]


class DeleteTopicsRequestTopics(TypedDict):
    """``DeleteTopicsRequest.topics``."""

    name: str | None
    topic_id: bytes


class DeleteTopicsRequest(TypedDict):
    """``DeleteTopicsRequest`` v1-6 (decoded: every key present)."""

    topics: list[DeleteTopicsRequestTopics]
    topic_names: list[str]
    timeout_ms: int


class DeleteTopicsResponseResponses(TypedDict, total=False):
    """``DeleteTopicsResponse.responses``."""

    name: str | None
    topic_id: bytes
    error_code: int
    error_message: str | None


class DeleteTopicsResponse(TypedDict, total=False):
    """``DeleteTopicsResponse`` v1-6 (built: missing keys take defaults)."""

    throttle_time_ms: int
    responses: list[DeleteTopicsResponseResponses]


class DeleteRecordsRequestTopicsPartitions(TypedDict):
    """``DeleteRecordsRequestTopics.partitions``."""

    partition_index: int
    offset: int


class DeleteRecordsRequestTopics(TypedDict):
    """``DeleteRecordsRequest.topics``."""

    name: str
    partitions: list[DeleteRecordsRequestTopicsPartitions]


class DeleteRecordsRequest(TypedDict):
    """``DeleteRecordsRequest`` v0-2 (decoded: every key present)."""

    topics: list[DeleteRecordsRequestTopics]
    timeout_ms: int


class DeleteRecordsResponseTopicsPartitions(TypedDict, total=False):
    """``DeleteRecordsResponseTopics.partitions``."""

    partition_index: int
    low_watermark: int
    error_code: int


class DeleteRecordsResponseTopics(TypedDict, total=False):
    """``DeleteRecordsResponse.topics``."""

    name: str
    partitions: list[DeleteRecordsResponseTopicsPartitions]


class DeleteRecordsResponse(TypedDict, total=False):
    """``DeleteRecordsResponse`` v0-2 (built: missing keys take defaults)."""

    throttle_time_ms: int
    topics: list[DeleteRecordsResponseTopics]


class InitProducerIdRequest(TypedDict):
    """``InitProducerIdRequest`` v0-6 (decoded: every key present)."""

    transactional_id: str | None
    transaction_timeout_ms: int
    producer_id: int
    producer_epoch: int
    enable_2pc: bool
    keep_prepared_txn: bool


class InitProducerIdResponse(TypedDict, total=False):
    """``InitProducerIdResponse`` v0-6 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    producer_id: int
    producer_epoch: int
    ongoing_txn_producer_id: int
    ongoing_txn_producer_epoch: int


class OffsetForLeaderEpochRequestTopicsPartitions(TypedDict):
    """``OffsetForLeaderEpochRequestTopics.partitions``."""

    partition: int
    current_leader_epoch: int
    leader_epoch: int


class OffsetForLeaderEpochRequestTopics(TypedDict):
    """``OffsetForLeaderEpochRequest.topics``."""

    topic: str
    partitions: list[OffsetForLeaderEpochRequestTopicsPartitions]


class OffsetForLeaderEpochRequest(TypedDict):
    """``OffsetForLeaderEpochRequest`` v2-4 (decoded: every key present)."""

    replica_id: int
    topics: list[OffsetForLeaderEpochRequestTopics]


class OffsetForLeaderEpochResponseTopicsPartitions(TypedDict, total=False):
    """``OffsetForLeaderEpochResponseTopics.partitions``."""

    error_code: int
    partition: int
    leader_epoch: int
    end_offset: int


class OffsetForLeaderEpochResponseTopics(TypedDict, total=False):
    """``OffsetForLeaderEpochResponse.topics``."""

    topic: str
    partitions: list[OffsetForLeaderEpochResponseTopicsPartitions]


class OffsetForLeaderEpochResponse(TypedDict, total=False):
    """``OffsetForLeaderEpochResponse`` v2-4 (built: missing keys take defaults)."""

    throttle_time_ms: int
    topics: list[OffsetForLeaderEpochResponseTopics]


class AddPartitionsToTxnRequestTransactionsTopics(TypedDict):
    """``AddPartitionsToTxnRequestTransactions.topics``."""

    name: str
    partitions: list[int]


class AddPartitionsToTxnRequestTransactions(TypedDict):
    """``AddPartitionsToTxnRequest.transactions``."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    verify_only: bool
    topics: list[AddPartitionsToTxnRequestTransactionsTopics]


class AddPartitionsToTxnRequestV3AndBelowTopics(TypedDict):
    """``AddPartitionsToTxnRequest.v3_and_below_topics``."""

    name: str
    partitions: list[int]


class AddPartitionsToTxnRequest(TypedDict):
    """``AddPartitionsToTxnRequest`` v0-5 (decoded: every key present)."""

    transactions: list[AddPartitionsToTxnRequestTransactions]
    v3_and_below_transactional_id: str
    v3_and_below_producer_id: int
    v3_and_below_producer_epoch: int
    v3_and_below_topics: list[AddPartitionsToTxnRequestV3AndBelowTopics]


class AddPartitionsToTxnResponseResultsByTransactionTopicResultsResultsByPartition(
    TypedDict, total=False
):
    """``AddPartitionsToTxnResponseResultsByTransactionTopicResults.results_by_partition``."""

    partition_index: int
    partition_error_code: int


class AddPartitionsToTxnResponseResultsByTransactionTopicResults(TypedDict, total=False):
    """``AddPartitionsToTxnResponseResultsByTransaction.topic_results``."""

    name: str
    results_by_partition: list[
        AddPartitionsToTxnResponseResultsByTransactionTopicResultsResultsByPartition
    ]


class AddPartitionsToTxnResponseResultsByTransaction(TypedDict, total=False):
    """``AddPartitionsToTxnResponse.results_by_transaction``."""

    transactional_id: str
    topic_results: list[AddPartitionsToTxnResponseResultsByTransactionTopicResults]


class AddPartitionsToTxnResponseResultsByTopicV3AndBelowResultsByPartition(TypedDict, total=False):
    """``AddPartitionsToTxnResponseResultsByTopicV3AndBelow.results_by_partition``."""

    partition_index: int
    partition_error_code: int


class AddPartitionsToTxnResponseResultsByTopicV3AndBelow(TypedDict, total=False):
    """``AddPartitionsToTxnResponse.results_by_topic_v3_and_below``."""

    name: str
    results_by_partition: list[AddPartitionsToTxnResponseResultsByTopicV3AndBelowResultsByPartition]


class AddPartitionsToTxnResponse(TypedDict, total=False):
    """``AddPartitionsToTxnResponse`` v0-5 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    results_by_transaction: list[AddPartitionsToTxnResponseResultsByTransaction]
    results_by_topic_v3_and_below: list[AddPartitionsToTxnResponseResultsByTopicV3AndBelow]


class AddOffsetsToTxnRequest(TypedDict):
    """``AddOffsetsToTxnRequest`` v0-4 (decoded: every key present)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


class AddOffsetsToTxnResponse(TypedDict, total=False):
    """``AddOffsetsToTxnResponse`` v0-4 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int


class EndTxnRequest(TypedDict):
    """``EndTxnRequest`` v0-5 (decoded: every key present)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


class EndTxnResponse(TypedDict, total=False):
    """``EndTxnResponse`` v0-5 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    producer_id: int
    producer_epoch: int


class WriteTxnMarkersRequestMarkersTopics(TypedDict):
    """``WriteTxnMarkersRequestMarkers.topics``."""

    name: str
    partition_indexes: list[int]


class WriteTxnMarkersRequestMarkers(TypedDict):
    """``WriteTxnMarkersRequest.markers``."""

    producer_id: int
    producer_epoch: int
    transaction_result: bool
    topics: list[WriteTxnMarkersRequestMarkersTopics]
    coordinator_epoch: int
    transaction_version: int


class WriteTxnMarkersRequest(TypedDict):
    """``WriteTxnMarkersRequest`` v0-2 (decoded: every key present)."""

    markers: list[WriteTxnMarkersRequestMarkers]


class WriteTxnMarkersResponseMarkersTopicsPartitions(TypedDict, total=False):
    """``WriteTxnMarkersResponseMarkersTopics.partitions``."""

    partition_index: int
    error_code: int


class WriteTxnMarkersResponseMarkersTopics(TypedDict, total=False):
    """``WriteTxnMarkersResponseMarkers.topics``."""

    name: str
    partitions: list[WriteTxnMarkersResponseMarkersTopicsPartitions]


class WriteTxnMarkersResponseMarkers(TypedDict, total=False):
    """``WriteTxnMarkersResponse.markers``."""

    producer_id: int
    topics: list[WriteTxnMarkersResponseMarkersTopics]


class WriteTxnMarkersResponse(TypedDict, total=False):
    """``WriteTxnMarkersResponse`` v0-2 (built: missing keys take defaults)."""

    markers: list[WriteTxnMarkersResponseMarkers]


class TxnOffsetCommitRequestTopicsPartitions(TypedDict):
    """``TxnOffsetCommitRequestTopics.partitions``."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    committed_metadata: str | None


class TxnOffsetCommitRequestTopics(TypedDict):
    """``TxnOffsetCommitRequest.topics``."""

    name: str
    partitions: list[TxnOffsetCommitRequestTopicsPartitions]


class TxnOffsetCommitRequest(TypedDict):
    """``TxnOffsetCommitRequest`` v0-5 (decoded: every key present)."""

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int
    member_id: str
    group_instance_id: str | None
    topics: list[TxnOffsetCommitRequestTopics]


class TxnOffsetCommitResponseTopicsPartitions(TypedDict, total=False):
    """``TxnOffsetCommitResponseTopics.partitions``."""

    partition_index: int
    error_code: int


class TxnOffsetCommitResponseTopics(TypedDict, total=False):
    """``TxnOffsetCommitResponse.topics``."""

    name: str
    partitions: list[TxnOffsetCommitResponseTopicsPartitions]


class TxnOffsetCommitResponse(TypedDict, total=False):
    """``TxnOffsetCommitResponse`` v0-5 (built: missing keys take defaults)."""

    throttle_time_ms: int
    topics: list[TxnOffsetCommitResponseTopics]


class DescribeAclsRequest(TypedDict):
    """``DescribeAclsRequest`` v0-3 (decoded: every key present)."""

    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int


class DescribeAclsResponseResourcesAcls(TypedDict, total=False):
    """``DescribeAclsResponseResources.acls``."""

    principal: str
    host: str
    operation: int
    permission_type: int


class DescribeAclsResponseResources(TypedDict, total=False):
    """``DescribeAclsResponse.resources``."""

    resource_type: int
    resource_name: str
    pattern_type: int
    acls: list[DescribeAclsResponseResourcesAcls]


class DescribeAclsResponse(TypedDict, total=False):
    """``DescribeAclsResponse`` v0-3 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    resources: list[DescribeAclsResponseResources]


class CreateAclsRequestCreations(TypedDict):
    """``CreateAclsRequest.creations``."""

    resource_type: int
    resource_name: str
    resource_pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


class CreateAclsRequest(TypedDict):
    """``CreateAclsRequest`` v0-3 (decoded: every key present)."""

    creations: list[CreateAclsRequestCreations]


class CreateAclsResponseResults(TypedDict, total=False):
    """``CreateAclsResponse.results``."""

    error_code: int
    error_message: str | None


class CreateAclsResponse(TypedDict, total=False):
    """``CreateAclsResponse`` v0-3 (built: missing keys take defaults)."""

    throttle_time_ms: int
    results: list[CreateAclsResponseResults]


class DeleteAclsRequestFilters(TypedDict):
    """``DeleteAclsRequest.filters``."""

    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int


class DeleteAclsRequest(TypedDict):
    """``DeleteAclsRequest`` v0-3 (decoded: every key present)."""

    filters: list[DeleteAclsRequestFilters]


class DeleteAclsResponseFilterResultsMatchingAcls(TypedDict, total=False):
    """``DeleteAclsResponseFilterResults.matching_acls``."""

    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


class DeleteAclsResponseFilterResults(TypedDict, total=False):
    """``DeleteAclsResponse.filter_results``."""

    error_code: int
    error_message: str | None
    matching_acls: list[DeleteAclsResponseFilterResultsMatchingAcls]


class DeleteAclsResponse(TypedDict, total=False):
    """``DeleteAclsResponse`` v0-3 (built: missing keys take defaults)."""

    throttle_time_ms: int
    filter_results: list[DeleteAclsResponseFilterResults]


class DescribeConfigsRequestResources(TypedDict):
    """``DescribeConfigsRequest.resources``."""

    resource_type: int
    resource_name: str
    configuration_keys: list[str] | None


class DescribeConfigsRequest(TypedDict):
    """``DescribeConfigsRequest`` v1-4 (decoded: every key present)."""

    resources: list[DescribeConfigsRequestResources]
    include_synonyms: bool
    include_documentation: bool


class DescribeConfigsResponseResultsConfigsSynonyms(TypedDict, total=False):
    """``DescribeConfigsResponseResultsConfigs.synonyms``."""

    name: str
    value: str | None
    source: int


class DescribeConfigsResponseResultsConfigs(TypedDict, total=False):
    """``DescribeConfigsResponseResults.configs``."""

    name: str
    value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool
    synonyms: list[DescribeConfigsResponseResultsConfigsSynonyms]
    config_type: int
    documentation: str | None


class DescribeConfigsResponseResults(TypedDict, total=False):
    """``DescribeConfigsResponse.results``."""

    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    configs: list[DescribeConfigsResponseResultsConfigs]


class DescribeConfigsResponse(TypedDict, total=False):
    """``DescribeConfigsResponse`` v1-4 (built: missing keys take defaults)."""

    throttle_time_ms: int
    results: list[DescribeConfigsResponseResults]


class AlterConfigsRequestResourcesConfigs(TypedDict):
    """``AlterConfigsRequestResources.configs``."""

    name: str
    value: str | None


class AlterConfigsRequestResources(TypedDict):
    """``AlterConfigsRequest.resources``."""

    resource_type: int
    resource_name: str
    configs: list[AlterConfigsRequestResourcesConfigs]


class AlterConfigsRequest(TypedDict):
    """``AlterConfigsRequest`` v0-2 (decoded: every key present)."""

    resources: list[AlterConfigsRequestResources]
    validate_only: bool


class AlterConfigsResponseResponses(TypedDict, total=False):
    """``AlterConfigsResponse.responses``."""

    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str


class AlterConfigsResponse(TypedDict, total=False):
    """``AlterConfigsResponse`` v0-2 (built: missing keys take defaults)."""

    throttle_time_ms: int
    responses: list[AlterConfigsResponseResponses]


class DescribeLogDirsRequestTopics(TypedDict):
    """``DescribeLogDirsRequest.topics``."""

    topic: str
    partitions: list[int]


class DescribeLogDirsRequest(TypedDict):
    """``DescribeLogDirsRequest`` v1-4 (decoded: every key present)."""

    topics: list[DescribeLogDirsRequestTopics] | None


class DescribeLogDirsResponseResultsTopicsPartitions(TypedDict, total=False):
    """``DescribeLogDirsResponseResultsTopics.partitions``."""

    partition_index: int
    partition_size: int
    offset_lag: int
    is_future_key: bool


class DescribeLogDirsResponseResultsTopics(TypedDict, total=False):
    """``DescribeLogDirsResponseResults.topics``."""

    name: str
    partitions: list[DescribeLogDirsResponseResultsTopicsPartitions]


class DescribeLogDirsResponseResults(TypedDict, total=False):
    """``DescribeLogDirsResponse.results``."""

    error_code: int
    log_dir: str
    topics: list[DescribeLogDirsResponseResultsTopics]
    total_bytes: int
    usable_bytes: int


class DescribeLogDirsResponse(TypedDict, total=False):
    """``DescribeLogDirsResponse`` v1-4 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    results: list[DescribeLogDirsResponseResults]


class SaslAuthenticateRequest(TypedDict):
    """``SaslAuthenticateRequest`` v0-2 (decoded: every key present)."""

    auth_bytes: bytes


class SaslAuthenticateResponse(TypedDict, total=False):
    """``SaslAuthenticateResponse`` v0-2 (built: missing keys take defaults)."""

    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int


class CreatePartitionsRequestTopicsAssignments(TypedDict):
    """``CreatePartitionsRequestTopics.assignments``."""

    broker_ids: list[int]


class CreatePartitionsRequestTopics(TypedDict):
    """``CreatePartitionsRequest.topics``."""

    name: str
    count: int
    assignments: list[CreatePartitionsRequestTopicsAssignments] | None


class CreatePartitionsRequest(TypedDict):
    """``CreatePartitionsRequest`` v0-3 (decoded: every key present)."""

    topics: list[CreatePartitionsRequestTopics]
    timeout_ms: int
    validate_only: bool


class CreatePartitionsResponseResults(TypedDict, total=False):
    """``CreatePartitionsResponse.results``."""

    name: str
    error_code: int
    error_message: str | None


class CreatePartitionsResponse(TypedDict, total=False):
    """``CreatePartitionsResponse`` v0-3 (built: missing keys take defaults)."""

    throttle_time_ms: int
    results: list[CreatePartitionsResponseResults]


class DeleteGroupsRequest(TypedDict):
    """``DeleteGroupsRequest`` v0-2 (decoded: every key present)."""

    groups_names: list[str]


class DeleteGroupsResponseResults(TypedDict, total=False):
    """``DeleteGroupsResponse.results``."""

    group_id: str
    error_code: int


class DeleteGroupsResponse(TypedDict, total=False):
    """``DeleteGroupsResponse`` v0-2 (built: missing keys take defaults)."""

    throttle_time_ms: int
    results: list[DeleteGroupsResponseResults]


class ElectLeadersRequestTopicPartitions(TypedDict):
    """``ElectLeadersRequest.topic_partitions``."""

    topic: str
    partitions: list[int]


class ElectLeadersRequest(TypedDict):
    """``ElectLeadersRequest`` v0-2 (decoded: every key present)."""

    election_type: int
    topic_partitions: list[ElectLeadersRequestTopicPartitions] | None
    timeout_ms: int


class ElectLeadersResponseReplicaElectionResultsPartitionResult(TypedDict, total=False):
    """``ElectLeadersResponseReplicaElectionResults.partition_result``."""

    partition_id: int
    error_code: int
    error_message: str | None


class ElectLeadersResponseReplicaElectionResults(TypedDict, total=False):
    """``ElectLeadersResponse.replica_election_results``."""

    topic: str
    partition_result: list[ElectLeadersResponseReplicaElectionResultsPartitionResult]


class ElectLeadersResponse(TypedDict, total=False):
    """``ElectLeadersResponse`` v0-2 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    replica_election_results: list[ElectLeadersResponseReplicaElectionResults]


class IncrementalAlterConfigsRequestResourcesConfigs(TypedDict):
    """``IncrementalAlterConfigsRequestResources.configs``."""

    name: str
    config_operation: int
    value: str | None


class IncrementalAlterConfigsRequestResources(TypedDict):
    """``IncrementalAlterConfigsRequest.resources``."""

    resource_type: int
    resource_name: str
    configs: list[IncrementalAlterConfigsRequestResourcesConfigs]


class IncrementalAlterConfigsRequest(TypedDict):
    """``IncrementalAlterConfigsRequest`` v0-1 (decoded: every key present)."""

    resources: list[IncrementalAlterConfigsRequestResources]
    validate_only: bool


class IncrementalAlterConfigsResponseResponses(TypedDict, total=False):
    """``IncrementalAlterConfigsResponse.responses``."""

    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str


class IncrementalAlterConfigsResponse(TypedDict, total=False):
    """``IncrementalAlterConfigsResponse`` v0-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    responses: list[IncrementalAlterConfigsResponseResponses]


class AlterPartitionReassignmentsRequestTopicsPartitions(TypedDict):
    """``AlterPartitionReassignmentsRequestTopics.partitions``."""

    partition_index: int
    replicas: list[int] | None


class AlterPartitionReassignmentsRequestTopics(TypedDict):
    """``AlterPartitionReassignmentsRequest.topics``."""

    name: str
    partitions: list[AlterPartitionReassignmentsRequestTopicsPartitions]


class AlterPartitionReassignmentsRequest(TypedDict):
    """``AlterPartitionReassignmentsRequest`` v0-1 (decoded: every key present)."""

    timeout_ms: int
    allow_replication_factor_change: bool
    topics: list[AlterPartitionReassignmentsRequestTopics]


class AlterPartitionReassignmentsResponseResponsesPartitions(TypedDict, total=False):
    """``AlterPartitionReassignmentsResponseResponses.partitions``."""

    partition_index: int
    error_code: int
    error_message: str | None


class AlterPartitionReassignmentsResponseResponses(TypedDict, total=False):
    """``AlterPartitionReassignmentsResponse.responses``."""

    name: str
    partitions: list[AlterPartitionReassignmentsResponseResponsesPartitions]


class AlterPartitionReassignmentsResponse(TypedDict, total=False):
    """``AlterPartitionReassignmentsResponse`` v0-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    allow_replication_factor_change: bool
    error_code: int
    error_message: str | None
    responses: list[AlterPartitionReassignmentsResponseResponses]


class ListPartitionReassignmentsRequestTopics(TypedDict):
    """``ListPartitionReassignmentsRequest.topics``."""

    name: str
    partition_indexes: list[int]


class ListPartitionReassignmentsRequest(TypedDict):
    """``ListPartitionReassignmentsRequest`` v0-0 (decoded: every key present)."""

    timeout_ms: int
    topics: list[ListPartitionReassignmentsRequestTopics] | None


class ListPartitionReassignmentsResponseTopicsPartitions(TypedDict, total=False):
    """``ListPartitionReassignmentsResponseTopics.partitions``."""

    partition_index: int
    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


class ListPartitionReassignmentsResponseTopics(TypedDict, total=False):
    """``ListPartitionReassignmentsResponse.topics``."""

    name: str
    partitions: list[ListPartitionReassignmentsResponseTopicsPartitions]


class ListPartitionReassignmentsResponse(TypedDict, total=False):
    """``ListPartitionReassignmentsResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    topics: list[ListPartitionReassignmentsResponseTopics]


class OffsetDeleteRequestTopicsPartitions(TypedDict):
    """``OffsetDeleteRequestTopics.partitions``."""

    partition_index: int


class OffsetDeleteRequestTopics(TypedDict):
    """``OffsetDeleteRequest.topics``."""

    name: str
    partitions: list[OffsetDeleteRequestTopicsPartitions]


class OffsetDeleteRequest(TypedDict):
    """``OffsetDeleteRequest`` v0-0 (decoded: every key present)."""

    group_id: str
    topics: list[OffsetDeleteRequestTopics]


class OffsetDeleteResponseTopicsPartitions(TypedDict, total=False):
    """``OffsetDeleteResponseTopics.partitions``."""

    partition_index: int
    error_code: int


class OffsetDeleteResponseTopics(TypedDict, total=False):
    """``OffsetDeleteResponse.topics``."""

    name: str
    partitions: list[OffsetDeleteResponseTopicsPartitions]


class OffsetDeleteResponse(TypedDict, total=False):
    """``OffsetDeleteResponse`` v0-0 (built: missing keys take defaults)."""

    error_code: int
    throttle_time_ms: int
    topics: list[OffsetDeleteResponseTopics]


class DescribeClientQuotasRequestComponents(TypedDict):
    """``DescribeClientQuotasRequest.components``."""

    entity_type: str
    match_type: int
    match: str | None


class DescribeClientQuotasRequest(TypedDict):
    """``DescribeClientQuotasRequest`` v0-1 (decoded: every key present)."""

    components: list[DescribeClientQuotasRequestComponents]
    strict: bool


class DescribeClientQuotasResponseEntriesEntity(TypedDict, total=False):
    """``DescribeClientQuotasResponseEntries.entity``."""

    entity_type: str
    entity_name: str | None


class DescribeClientQuotasResponseEntriesValues(TypedDict, total=False):
    """``DescribeClientQuotasResponseEntries.values``."""

    key: str
    value: float


class DescribeClientQuotasResponseEntries(TypedDict, total=False):
    """``DescribeClientQuotasResponse.entries``."""

    entity: list[DescribeClientQuotasResponseEntriesEntity]
    values: list[DescribeClientQuotasResponseEntriesValues]


class DescribeClientQuotasResponse(TypedDict, total=False):
    """``DescribeClientQuotasResponse`` v0-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    entries: list[DescribeClientQuotasResponseEntries] | None


class AlterClientQuotasRequestEntriesEntity(TypedDict):
    """``AlterClientQuotasRequestEntries.entity``."""

    entity_type: str
    entity_name: str | None


class AlterClientQuotasRequestEntriesOps(TypedDict):
    """``AlterClientQuotasRequestEntries.ops``."""

    key: str
    value: float
    remove: bool


class AlterClientQuotasRequestEntries(TypedDict):
    """``AlterClientQuotasRequest.entries``."""

    entity: list[AlterClientQuotasRequestEntriesEntity]
    ops: list[AlterClientQuotasRequestEntriesOps]


class AlterClientQuotasRequest(TypedDict):
    """``AlterClientQuotasRequest`` v0-1 (decoded: every key present)."""

    entries: list[AlterClientQuotasRequestEntries]
    validate_only: bool


class AlterClientQuotasResponseEntriesEntity(TypedDict, total=False):
    """``AlterClientQuotasResponseEntries.entity``."""

    entity_type: str
    entity_name: str | None


class AlterClientQuotasResponseEntries(TypedDict, total=False):
    """``AlterClientQuotasResponse.entries``."""

    error_code: int
    error_message: str | None
    entity: list[AlterClientQuotasResponseEntriesEntity]


class AlterClientQuotasResponse(TypedDict, total=False):
    """``AlterClientQuotasResponse`` v0-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    entries: list[AlterClientQuotasResponseEntries]


class DescribeUserScramCredentialsRequestUsers(TypedDict):
    """``DescribeUserScramCredentialsRequest.users``."""

    name: str


class DescribeUserScramCredentialsRequest(TypedDict):
    """``DescribeUserScramCredentialsRequest`` v0-0 (decoded: every key present)."""

    users: list[DescribeUserScramCredentialsRequestUsers] | None


class DescribeUserScramCredentialsResponseResultsCredentialInfos(TypedDict, total=False):
    """``DescribeUserScramCredentialsResponseResults.credential_infos``."""

    mechanism: int
    iterations: int


class DescribeUserScramCredentialsResponseResults(TypedDict, total=False):
    """``DescribeUserScramCredentialsResponse.results``."""

    user: str
    error_code: int
    error_message: str | None
    credential_infos: list[DescribeUserScramCredentialsResponseResultsCredentialInfos]


class DescribeUserScramCredentialsResponse(TypedDict, total=False):
    """``DescribeUserScramCredentialsResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    results: list[DescribeUserScramCredentialsResponseResults]


class AlterUserScramCredentialsRequestDeletions(TypedDict):
    """``AlterUserScramCredentialsRequest.deletions``."""

    name: str
    mechanism: int


class AlterUserScramCredentialsRequestUpsertions(TypedDict):
    """``AlterUserScramCredentialsRequest.upsertions``."""

    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


class AlterUserScramCredentialsRequest(TypedDict):
    """``AlterUserScramCredentialsRequest`` v0-0 (decoded: every key present)."""

    deletions: list[AlterUserScramCredentialsRequestDeletions]
    upsertions: list[AlterUserScramCredentialsRequestUpsertions]


class AlterUserScramCredentialsResponseResults(TypedDict, total=False):
    """``AlterUserScramCredentialsResponse.results``."""

    user: str
    error_code: int
    error_message: str | None


class AlterUserScramCredentialsResponse(TypedDict, total=False):
    """``AlterUserScramCredentialsResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    results: list[AlterUserScramCredentialsResponseResults]


class VoteRequestTopicsPartitions(TypedDict):
    """``VoteRequestTopics.partitions``."""

    partition_index: int
    replica_epoch: int
    replica_id: int
    replica_directory_id: bytes
    voter_directory_id: bytes
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool


class VoteRequestTopics(TypedDict):
    """``VoteRequest.topics``."""

    topic_name: str
    partitions: list[VoteRequestTopicsPartitions]


class VoteRequest(TypedDict):
    """``VoteRequest`` v0-2 (decoded: every key present)."""

    cluster_id: str | None
    voter_id: int
    topics: list[VoteRequestTopics]


class VoteResponseTopicsPartitions(TypedDict, total=False):
    """``VoteResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    leader_id: int
    leader_epoch: int
    vote_granted: bool


class VoteResponseTopics(TypedDict, total=False):
    """``VoteResponse.topics``."""

    topic_name: str
    partitions: list[VoteResponseTopicsPartitions]


class VoteResponseNodeEndpoints(TypedDict, total=False):
    """``VoteResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int


class VoteResponse(TypedDict, total=False):
    """``VoteResponse`` v0-2 (built: missing keys take defaults)."""

    error_code: int
    topics: list[VoteResponseTopics]
    node_endpoints: list[VoteResponseNodeEndpoints]


class BeginQuorumEpochRequestTopicsPartitions(TypedDict):
    """``BeginQuorumEpochRequestTopics.partitions``."""

    partition_index: int
    voter_directory_id: bytes
    leader_id: int
    leader_epoch: int


class BeginQuorumEpochRequestTopics(TypedDict):
    """``BeginQuorumEpochRequest.topics``."""

    topic_name: str
    partitions: list[BeginQuorumEpochRequestTopicsPartitions]


class BeginQuorumEpochRequestLeaderEndpoints(TypedDict):
    """``BeginQuorumEpochRequest.leader_endpoints``."""

    name: str
    host: str
    port: int


class BeginQuorumEpochRequest(TypedDict):
    """``BeginQuorumEpochRequest`` v0-1 (decoded: every key present)."""

    cluster_id: str | None
    voter_id: int
    topics: list[BeginQuorumEpochRequestTopics]
    leader_endpoints: list[BeginQuorumEpochRequestLeaderEndpoints]


class BeginQuorumEpochResponseTopicsPartitions(TypedDict, total=False):
    """``BeginQuorumEpochResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    leader_id: int
    leader_epoch: int


class BeginQuorumEpochResponseTopics(TypedDict, total=False):
    """``BeginQuorumEpochResponse.topics``."""

    topic_name: str
    partitions: list[BeginQuorumEpochResponseTopicsPartitions]


class BeginQuorumEpochResponseNodeEndpoints(TypedDict, total=False):
    """``BeginQuorumEpochResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int


class BeginQuorumEpochResponse(TypedDict, total=False):
    """``BeginQuorumEpochResponse`` v0-1 (built: missing keys take defaults)."""

    error_code: int
    topics: list[BeginQuorumEpochResponseTopics]
    node_endpoints: list[BeginQuorumEpochResponseNodeEndpoints]


class EndQuorumEpochRequestTopicsPartitionsPreferredCandidates(TypedDict):
    """``EndQuorumEpochRequestTopicsPartitions.preferred_candidates``."""

    candidate_id: int
    candidate_directory_id: bytes


class EndQuorumEpochRequestTopicsPartitions(TypedDict):
    """``EndQuorumEpochRequestTopics.partitions``."""

    partition_index: int
    leader_id: int
    leader_epoch: int
    preferred_successors: list[int]
    preferred_candidates: list[EndQuorumEpochRequestTopicsPartitionsPreferredCandidates]


class EndQuorumEpochRequestTopics(TypedDict):
    """``EndQuorumEpochRequest.topics``."""

    topic_name: str
    partitions: list[EndQuorumEpochRequestTopicsPartitions]


class EndQuorumEpochRequestLeaderEndpoints(TypedDict):
    """``EndQuorumEpochRequest.leader_endpoints``."""

    name: str
    host: str
    port: int


class EndQuorumEpochRequest(TypedDict):
    """``EndQuorumEpochRequest`` v0-1 (decoded: every key present)."""

    cluster_id: str | None
    topics: list[EndQuorumEpochRequestTopics]
    leader_endpoints: list[EndQuorumEpochRequestLeaderEndpoints]


class EndQuorumEpochResponseTopicsPartitions(TypedDict, total=False):
    """``EndQuorumEpochResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    leader_id: int
    leader_epoch: int


class EndQuorumEpochResponseTopics(TypedDict, total=False):
    """``EndQuorumEpochResponse.topics``."""

    topic_name: str
    partitions: list[EndQuorumEpochResponseTopicsPartitions]


class EndQuorumEpochResponseNodeEndpoints(TypedDict, total=False):
    """``EndQuorumEpochResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int


class EndQuorumEpochResponse(TypedDict, total=False):
    """``EndQuorumEpochResponse`` v0-1 (built: missing keys take defaults)."""

    error_code: int
    topics: list[EndQuorumEpochResponseTopics]
    node_endpoints: list[EndQuorumEpochResponseNodeEndpoints]


class DescribeQuorumRequestTopicsPartitions(TypedDict):
    """``DescribeQuorumRequestTopics.partitions``."""

    partition_index: int


class DescribeQuorumRequestTopics(TypedDict):
    """``DescribeQuorumRequest.topics``."""

    topic_name: str
    partitions: list[DescribeQuorumRequestTopicsPartitions]


class DescribeQuorumRequest(TypedDict):
    """``DescribeQuorumRequest`` v0-2 (decoded: every key present)."""

    topics: list[DescribeQuorumRequestTopics]


class DescribeQuorumResponseTopicsPartitionsCurrentVoters(TypedDict, total=False):
    """``DescribeQuorumResponseTopicsPartitions.current_voters``."""

    replica_id: int
    replica_directory_id: bytes
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


class DescribeQuorumResponseTopicsPartitionsObservers(TypedDict, total=False):
    """``DescribeQuorumResponseTopicsPartitions.observers``."""

    replica_id: int
    replica_directory_id: bytes
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


class DescribeQuorumResponseTopicsPartitions(TypedDict, total=False):
    """``DescribeQuorumResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    error_message: str | None
    leader_id: int
    leader_epoch: int
    high_watermark: int
    current_voters: list[DescribeQuorumResponseTopicsPartitionsCurrentVoters]
    observers: list[DescribeQuorumResponseTopicsPartitionsObservers]


class DescribeQuorumResponseTopics(TypedDict, total=False):
    """``DescribeQuorumResponse.topics``."""

    topic_name: str
    partitions: list[DescribeQuorumResponseTopicsPartitions]


class DescribeQuorumResponseNodesListeners(TypedDict, total=False):
    """``DescribeQuorumResponseNodes.listeners``."""

    name: str
    host: str
    port: int


class DescribeQuorumResponseNodes(TypedDict, total=False):
    """``DescribeQuorumResponse.nodes``."""

    node_id: int
    listeners: list[DescribeQuorumResponseNodesListeners]


class DescribeQuorumResponse(TypedDict, total=False):
    """``DescribeQuorumResponse`` v0-2 (built: missing keys take defaults)."""

    error_code: int
    error_message: str | None
    topics: list[DescribeQuorumResponseTopics]
    nodes: list[DescribeQuorumResponseNodes]


class AlterPartitionRequestTopicsPartitionsNewIsrWithEpochs(TypedDict):
    """``AlterPartitionRequestTopicsPartitions.new_isr_with_epochs``."""

    broker_id: int
    broker_epoch: int


class AlterPartitionRequestTopicsPartitions(TypedDict):
    """``AlterPartitionRequestTopics.partitions``."""

    partition_index: int
    leader_epoch: int
    new_isr: list[int]
    new_isr_with_epochs: list[AlterPartitionRequestTopicsPartitionsNewIsrWithEpochs]
    leader_recovery_state: int
    partition_epoch: int


class AlterPartitionRequestTopics(TypedDict):
    """``AlterPartitionRequest.topics``."""

    topic_name: str
    topic_id: bytes
    partitions: list[AlterPartitionRequestTopicsPartitions]


class AlterPartitionRequest(TypedDict):
    """``AlterPartitionRequest`` v0-3 (decoded: every key present)."""

    broker_id: int
    broker_epoch: int
    topics: list[AlterPartitionRequestTopics]


class AlterPartitionResponseTopicsPartitions(TypedDict, total=False):
    """``AlterPartitionResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    leader_id: int
    leader_epoch: int
    isr: list[int]
    leader_recovery_state: int
    partition_epoch: int


class AlterPartitionResponseTopics(TypedDict, total=False):
    """``AlterPartitionResponse.topics``."""

    topic_name: str
    topic_id: bytes
    partitions: list[AlterPartitionResponseTopicsPartitions]


class AlterPartitionResponse(TypedDict, total=False):
    """``AlterPartitionResponse`` v0-3 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    topics: list[AlterPartitionResponseTopics]


class UpdateFeaturesRequestFeatureUpdates(TypedDict):
    """``UpdateFeaturesRequest.feature_updates``."""

    feature: str
    max_version_level: int
    allow_downgrade: bool
    upgrade_type: int


class UpdateFeaturesRequest(TypedDict):
    """``UpdateFeaturesRequest`` v0-2 (decoded: every key present)."""

    timeout_ms: int
    feature_updates: list[UpdateFeaturesRequestFeatureUpdates]
    validate_only: bool


class UpdateFeaturesResponseResults(TypedDict, total=False):
    """``UpdateFeaturesResponse.results``."""

    feature: str
    error_code: int
    error_message: str | None


class UpdateFeaturesResponse(TypedDict, total=False):
    """``UpdateFeaturesResponse`` v0-2 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    results: list[UpdateFeaturesResponseResults]


class FetchSnapshotRequestTopicsPartitionsSnapshotId(TypedDict):
    """``FetchSnapshotRequestTopicsPartitions.snapshot_id``."""

    end_offset: int
    epoch: int


class FetchSnapshotRequestTopicsPartitions(TypedDict):
    """``FetchSnapshotRequestTopics.partitions``."""

    partition: int
    current_leader_epoch: int
    snapshot_id: FetchSnapshotRequestTopicsPartitionsSnapshotId
    position: int
    replica_directory_id: bytes


class FetchSnapshotRequestTopics(TypedDict):
    """``FetchSnapshotRequest.topics``."""

    name: str
    partitions: list[FetchSnapshotRequestTopicsPartitions]


class FetchSnapshotRequest(TypedDict):
    """``FetchSnapshotRequest`` v0-1 (decoded: every key present)."""

    cluster_id: str | None
    replica_id: int
    max_bytes: int
    topics: list[FetchSnapshotRequestTopics]


class FetchSnapshotResponseTopicsPartitionsSnapshotId(TypedDict, total=False):
    """``FetchSnapshotResponseTopicsPartitions.snapshot_id``."""

    end_offset: int
    epoch: int


class FetchSnapshotResponseTopicsPartitionsCurrentLeader(TypedDict, total=False):
    """``FetchSnapshotResponseTopicsPartitions.current_leader``."""

    leader_id: int
    leader_epoch: int


class FetchSnapshotResponseTopicsPartitions(TypedDict, total=False):
    """``FetchSnapshotResponseTopics.partitions``."""

    index: int
    error_code: int
    snapshot_id: FetchSnapshotResponseTopicsPartitionsSnapshotId
    current_leader: FetchSnapshotResponseTopicsPartitionsCurrentLeader | None
    size: int
    position: int
    unaligned_records: RecordsValue


class FetchSnapshotResponseTopics(TypedDict, total=False):
    """``FetchSnapshotResponse.topics``."""

    name: str
    partitions: list[FetchSnapshotResponseTopicsPartitions]


class FetchSnapshotResponseNodeEndpoints(TypedDict, total=False):
    """``FetchSnapshotResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int


class FetchSnapshotResponse(TypedDict, total=False):
    """``FetchSnapshotResponse`` v0-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    topics: list[FetchSnapshotResponseTopics]
    node_endpoints: list[FetchSnapshotResponseNodeEndpoints]


class DescribeClusterRequest(TypedDict):
    """``DescribeClusterRequest`` v0-2 (decoded: every key present)."""

    include_cluster_authorized_operations: bool
    endpoint_type: int
    include_fenced_brokers: bool


class DescribeClusterResponseBrokers(TypedDict, total=False):
    """``DescribeClusterResponse.brokers``."""

    broker_id: int
    host: str
    port: int
    rack: str | None
    is_fenced: bool


class DescribeClusterResponse(TypedDict, total=False):
    """``DescribeClusterResponse`` v0-2 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    endpoint_type: int
    cluster_id: str
    controller_id: int
    brokers: list[DescribeClusterResponseBrokers]
    cluster_authorized_operations: int


class DescribeProducersRequestTopics(TypedDict):
    """``DescribeProducersRequest.topics``."""

    name: str
    partition_indexes: list[int]


class DescribeProducersRequest(TypedDict):
    """``DescribeProducersRequest`` v0-0 (decoded: every key present)."""

    topics: list[DescribeProducersRequestTopics]


class DescribeProducersResponseTopicsPartitionsActiveProducers(TypedDict, total=False):
    """``DescribeProducersResponseTopicsPartitions.active_producers``."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


class DescribeProducersResponseTopicsPartitions(TypedDict, total=False):
    """``DescribeProducersResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    error_message: str | None
    active_producers: list[DescribeProducersResponseTopicsPartitionsActiveProducers]


class DescribeProducersResponseTopics(TypedDict, total=False):
    """``DescribeProducersResponse.topics``."""

    name: str
    partitions: list[DescribeProducersResponseTopicsPartitions]


class DescribeProducersResponse(TypedDict, total=False):
    """``DescribeProducersResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    topics: list[DescribeProducersResponseTopics]


class BrokerRegistrationRequestListeners(TypedDict):
    """``BrokerRegistrationRequest.listeners``."""

    name: str
    host: str
    port: int
    security_protocol: int


class BrokerRegistrationRequestFeatures(TypedDict):
    """``BrokerRegistrationRequest.features``."""

    name: str
    min_supported_version: int
    max_supported_version: int


class BrokerRegistrationRequest(TypedDict):
    """``BrokerRegistrationRequest`` v0-4 (decoded: every key present)."""

    broker_id: int
    cluster_id: str
    incarnation_id: bytes
    listeners: list[BrokerRegistrationRequestListeners]
    features: list[BrokerRegistrationRequestFeatures]
    rack: str | None
    is_migrating_zk_broker: bool
    log_dirs: list[bytes]
    previous_broker_epoch: int


class BrokerRegistrationResponse(TypedDict, total=False):
    """``BrokerRegistrationResponse`` v0-4 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    broker_epoch: int


class BrokerHeartbeatRequest(TypedDict):
    """``BrokerHeartbeatRequest`` v0-1 (decoded: every key present)."""

    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shut_down: bool
    offline_log_dirs: list[bytes]


class BrokerHeartbeatResponse(TypedDict, total=False):
    """``BrokerHeartbeatResponse`` v0-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    is_caught_up: bool
    is_fenced: bool
    should_shut_down: bool


class UnregisterBrokerRequest(TypedDict):
    """``UnregisterBrokerRequest`` v0-0 (decoded: every key present)."""

    broker_id: int


class UnregisterBrokerResponse(TypedDict, total=False):
    """``UnregisterBrokerResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None


class DescribeTransactionsRequest(TypedDict):
    """``DescribeTransactionsRequest`` v0-0 (decoded: every key present)."""

    transactional_ids: list[str]


class DescribeTransactionsResponseTransactionStatesTopics(TypedDict, total=False):
    """``DescribeTransactionsResponseTransactionStates.topics``."""

    topic: str
    partitions: list[int]


class DescribeTransactionsResponseTransactionStates(TypedDict, total=False):
    """``DescribeTransactionsResponse.transaction_states``."""

    error_code: int
    transactional_id: str
    transaction_state: str
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    producer_id: int
    producer_epoch: int
    topics: list[DescribeTransactionsResponseTransactionStatesTopics]


class DescribeTransactionsResponse(TypedDict, total=False):
    """``DescribeTransactionsResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    transaction_states: list[DescribeTransactionsResponseTransactionStates]


class ListTransactionsRequest(TypedDict):
    """``ListTransactionsRequest`` v0-2 (decoded: every key present)."""

    state_filters: list[str]
    producer_id_filters: list[int]
    duration_filter: int
    transactional_id_pattern: str | None


class ListTransactionsResponseTransactionStates(TypedDict, total=False):
    """``ListTransactionsResponse.transaction_states``."""

    transactional_id: str
    producer_id: int
    transaction_state: str


class ListTransactionsResponse(TypedDict, total=False):
    """``ListTransactionsResponse`` v0-2 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    unknown_state_filters: list[str]
    transaction_states: list[ListTransactionsResponseTransactionStates]


class AllocateProducerIdsRequest(TypedDict):
    """``AllocateProducerIdsRequest`` v0-0 (decoded: every key present)."""

    broker_id: int
    broker_epoch: int


class AllocateProducerIdsResponse(TypedDict, total=False):
    """``AllocateProducerIdsResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    producer_id_start: int
    producer_id_len: int


class ConsumerGroupHeartbeatRequestTopicPartitions(TypedDict):
    """``ConsumerGroupHeartbeatRequest.topic_partitions``."""

    topic_id: bytes
    partitions: list[int]


class ConsumerGroupHeartbeatRequest(TypedDict):
    """``ConsumerGroupHeartbeatRequest`` v0-1 (decoded: every key present)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    topic_partitions: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None


class ConsumerGroupHeartbeatResponseAssignmentTopicPartitions(TypedDict, total=False):
    """``ConsumerGroupHeartbeatResponseAssignment.topic_partitions``."""

    topic_id: bytes
    partitions: list[int]


class ConsumerGroupHeartbeatResponseAssignment(TypedDict, total=False):
    """``ConsumerGroupHeartbeatResponse.assignment``."""

    topic_partitions: list[ConsumerGroupHeartbeatResponseAssignmentTopicPartitions]


class ConsumerGroupHeartbeatResponse(TypedDict, total=False):
    """``ConsumerGroupHeartbeatResponse`` v0-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: ConsumerGroupHeartbeatResponseAssignment | None


class ConsumerGroupDescribeRequest(TypedDict):
    """``ConsumerGroupDescribeRequest`` v0-1 (decoded: every key present)."""

    group_ids: list[str]
    include_authorized_operations: bool


class ConsumerGroupDescribeResponseGroupsMembersAssignmentTopicPartitions(TypedDict, total=False):
    """``ConsumerGroupDescribeResponseGroupsMembersAssignment.topic_partitions``."""

    topic_id: bytes
    topic_name: str
    partitions: list[int]


class ConsumerGroupDescribeResponseGroupsMembersAssignment(TypedDict, total=False):
    """``ConsumerGroupDescribeResponseGroupsMembers.assignment``."""

    topic_partitions: list[ConsumerGroupDescribeResponseGroupsMembersAssignmentTopicPartitions]


class ConsumerGroupDescribeResponseGroupsMembersTargetAssignmentTopicPartitions(
    TypedDict, total=False
):
    """``ConsumerGroupDescribeResponseGroupsMembersTargetAssignment.topic_partitions``."""

    topic_id: bytes
    topic_name: str
    partitions: list[int]


class ConsumerGroupDescribeResponseGroupsMembersTargetAssignment(TypedDict, total=False):
    """``ConsumerGroupDescribeResponseGroupsMembers.target_assignment``."""

    topic_partitions: list[
        ConsumerGroupDescribeResponseGroupsMembersTargetAssignmentTopicPartitions
    ]


class ConsumerGroupDescribeResponseGroupsMembers(TypedDict, total=False):
    """``ConsumerGroupDescribeResponseGroups.members``."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: ConsumerGroupDescribeResponseGroupsMembersAssignment
    target_assignment: ConsumerGroupDescribeResponseGroupsMembersTargetAssignment
    member_type: int


class ConsumerGroupDescribeResponseGroups(TypedDict, total=False):
    """``ConsumerGroupDescribeResponse.groups``."""

    error_code: int
    error_message: str | None
    group_id: str
    group_state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: list[ConsumerGroupDescribeResponseGroupsMembers]
    authorized_operations: int


class ConsumerGroupDescribeResponse(TypedDict, total=False):
    """``ConsumerGroupDescribeResponse`` v0-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    groups: list[ConsumerGroupDescribeResponseGroups]


class AssignReplicasToDirsRequestDirectoriesTopicsPartitions(TypedDict):
    """``AssignReplicasToDirsRequestDirectoriesTopics.partitions``."""

    partition_index: int


class AssignReplicasToDirsRequestDirectoriesTopics(TypedDict):
    """``AssignReplicasToDirsRequestDirectories.topics``."""

    topic_id: bytes
    partitions: list[AssignReplicasToDirsRequestDirectoriesTopicsPartitions]


class AssignReplicasToDirsRequestDirectories(TypedDict):
    """``AssignReplicasToDirsRequest.directories``."""

    id: bytes
    topics: list[AssignReplicasToDirsRequestDirectoriesTopics]


class AssignReplicasToDirsRequest(TypedDict):
    """``AssignReplicasToDirsRequest`` v0-0 (decoded: every key present)."""

    broker_id: int
    broker_epoch: int
    directories: list[AssignReplicasToDirsRequestDirectories]


class AssignReplicasToDirsResponseDirectoriesTopicsPartitions(TypedDict, total=False):
    """``AssignReplicasToDirsResponseDirectoriesTopics.partitions``."""

    partition_index: int
    error_code: int


class AssignReplicasToDirsResponseDirectoriesTopics(TypedDict, total=False):
    """``AssignReplicasToDirsResponseDirectories.topics``."""

    topic_id: bytes
    partitions: list[AssignReplicasToDirsResponseDirectoriesTopicsPartitions]


class AssignReplicasToDirsResponseDirectories(TypedDict, total=False):
    """``AssignReplicasToDirsResponse.directories``."""

    id: bytes
    topics: list[AssignReplicasToDirsResponseDirectoriesTopics]


class AssignReplicasToDirsResponse(TypedDict, total=False):
    """``AssignReplicasToDirsResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    directories: list[AssignReplicasToDirsResponseDirectories]


class ListConfigResourcesRequest(TypedDict):
    """``ListConfigResourcesRequest`` v0-1 (decoded: every key present)."""

    resource_types: list[int]


class ListConfigResourcesResponseConfigResources(TypedDict, total=False):
    """``ListConfigResourcesResponse.config_resources``."""

    resource_name: str
    resource_type: int


class ListConfigResourcesResponse(TypedDict, total=False):
    """``ListConfigResourcesResponse`` v0-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    config_resources: list[ListConfigResourcesResponseConfigResources]


class DescribeTopicPartitionsRequestTopics(TypedDict):
    """``DescribeTopicPartitionsRequest.topics``."""

    name: str


class DescribeTopicPartitionsRequestCursor(TypedDict):
    """``DescribeTopicPartitionsRequest.cursor``."""

    topic_name: str
    partition_index: int


class DescribeTopicPartitionsRequest(TypedDict):
    """``DescribeTopicPartitionsRequest`` v0-0 (decoded: every key present)."""

    topics: list[DescribeTopicPartitionsRequestTopics]
    response_partition_limit: int
    cursor: DescribeTopicPartitionsRequestCursor | None


class DescribeTopicPartitionsResponseTopicsPartitions(TypedDict, total=False):
    """``DescribeTopicPartitionsResponseTopics.partitions``."""

    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int
    replica_nodes: list[int]
    isr_nodes: list[int]
    eligible_leader_replicas: list[int] | None
    last_known_elr: list[int] | None
    offline_replicas: list[int]


class DescribeTopicPartitionsResponseTopics(TypedDict, total=False):
    """``DescribeTopicPartitionsResponse.topics``."""

    error_code: int
    name: str | None
    topic_id: bytes
    is_internal: bool
    partitions: list[DescribeTopicPartitionsResponseTopicsPartitions]
    topic_authorized_operations: int


class DescribeTopicPartitionsResponseNextCursor(TypedDict, total=False):
    """``DescribeTopicPartitionsResponse.next_cursor``."""

    topic_name: str
    partition_index: int


class DescribeTopicPartitionsResponse(TypedDict, total=False):
    """``DescribeTopicPartitionsResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    topics: list[DescribeTopicPartitionsResponseTopics]
    next_cursor: DescribeTopicPartitionsResponseNextCursor | None


class ShareGroupHeartbeatRequest(TypedDict):
    """``ShareGroupHeartbeatRequest`` v1-1 (decoded: every key present)."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: list[str] | None


class ShareGroupHeartbeatResponseAssignmentTopicPartitions(TypedDict, total=False):
    """``ShareGroupHeartbeatResponseAssignment.topic_partitions``."""

    topic_id: bytes
    partitions: list[int]


class ShareGroupHeartbeatResponseAssignment(TypedDict, total=False):
    """``ShareGroupHeartbeatResponse.assignment``."""

    topic_partitions: list[ShareGroupHeartbeatResponseAssignmentTopicPartitions]


class ShareGroupHeartbeatResponse(TypedDict, total=False):
    """``ShareGroupHeartbeatResponse`` v1-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: ShareGroupHeartbeatResponseAssignment | None


class ShareGroupDescribeRequest(TypedDict):
    """``ShareGroupDescribeRequest`` v1-1 (decoded: every key present)."""

    group_ids: list[str]
    include_authorized_operations: bool


class ShareGroupDescribeResponseGroupsMembersAssignmentTopicPartitions(TypedDict, total=False):
    """``ShareGroupDescribeResponseGroupsMembersAssignment.topic_partitions``."""

    topic_id: bytes
    topic_name: str
    partitions: list[int]


class ShareGroupDescribeResponseGroupsMembersAssignment(TypedDict, total=False):
    """``ShareGroupDescribeResponseGroupsMembers.assignment``."""

    topic_partitions: list[ShareGroupDescribeResponseGroupsMembersAssignmentTopicPartitions]


class ShareGroupDescribeResponseGroupsMembers(TypedDict, total=False):
    """``ShareGroupDescribeResponseGroups.members``."""

    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    assignment: ShareGroupDescribeResponseGroupsMembersAssignment


class ShareGroupDescribeResponseGroups(TypedDict, total=False):
    """``ShareGroupDescribeResponse.groups``."""

    error_code: int
    error_message: str | None
    group_id: str
    group_state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: list[ShareGroupDescribeResponseGroupsMembers]
    authorized_operations: int


class ShareGroupDescribeResponse(TypedDict, total=False):
    """``ShareGroupDescribeResponse`` v1-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    groups: list[ShareGroupDescribeResponseGroups]


class ShareFetchRequestTopicsPartitionsAcknowledgementBatches(TypedDict):
    """``ShareFetchRequestTopicsPartitions.acknowledgement_batches``."""

    first_offset: int
    last_offset: int
    acknowledge_types: list[int]


class ShareFetchRequestTopicsPartitions(TypedDict):
    """``ShareFetchRequestTopics.partitions``."""

    partition_index: int
    acknowledgement_batches: list[ShareFetchRequestTopicsPartitionsAcknowledgementBatches]


class ShareFetchRequestTopics(TypedDict):
    """``ShareFetchRequest.topics``."""

    topic_id: bytes
    partitions: list[ShareFetchRequestTopicsPartitions]


class ShareFetchRequestForgottenTopicsData(TypedDict):
    """``ShareFetchRequest.forgotten_topics_data``."""

    topic_id: bytes
    partitions: list[int]


class ShareFetchRequest(TypedDict):
    """``ShareFetchRequest`` v1-2 (decoded: every key present)."""

    group_id: str | None
    member_id: str | None
    share_session_epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int
    share_acquire_mode: int
    is_renew_ack: bool
    topics: list[ShareFetchRequestTopics]
    forgotten_topics_data: list[ShareFetchRequestForgottenTopicsData]


class ShareFetchResponseResponsesPartitionsCurrentLeader(TypedDict, total=False):
    """``ShareFetchResponseResponsesPartitions.current_leader``."""

    leader_id: int
    leader_epoch: int


class ShareFetchResponseResponsesPartitionsAcquiredRecords(TypedDict, total=False):
    """``ShareFetchResponseResponsesPartitions.acquired_records``."""

    first_offset: int
    last_offset: int
    delivery_count: int


class ShareFetchResponseResponsesPartitions(TypedDict, total=False):
    """``ShareFetchResponseResponses.partitions``."""

    partition_index: int
    error_code: int
    error_message: str | None
    acknowledge_error_code: int
    acknowledge_error_message: str | None
    current_leader: ShareFetchResponseResponsesPartitionsCurrentLeader
    records: RecordsValue
    acquired_records: list[ShareFetchResponseResponsesPartitionsAcquiredRecords]


class ShareFetchResponseResponses(TypedDict, total=False):
    """``ShareFetchResponse.responses``."""

    topic_id: bytes
    partitions: list[ShareFetchResponseResponsesPartitions]


class ShareFetchResponseNodeEndpoints(TypedDict, total=False):
    """``ShareFetchResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int
    rack: str | None


class ShareFetchResponse(TypedDict, total=False):
    """``ShareFetchResponse`` v1-2 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    acquisition_lock_timeout_ms: int
    responses: list[ShareFetchResponseResponses]
    node_endpoints: list[ShareFetchResponseNodeEndpoints]


class ShareAcknowledgeRequestTopicsPartitionsAcknowledgementBatches(TypedDict):
    """``ShareAcknowledgeRequestTopicsPartitions.acknowledgement_batches``."""

    first_offset: int
    last_offset: int
    acknowledge_types: list[int]


class ShareAcknowledgeRequestTopicsPartitions(TypedDict):
    """``ShareAcknowledgeRequestTopics.partitions``."""

    partition_index: int
    acknowledgement_batches: list[ShareAcknowledgeRequestTopicsPartitionsAcknowledgementBatches]


class ShareAcknowledgeRequestTopics(TypedDict):
    """``ShareAcknowledgeRequest.topics``."""

    topic_id: bytes
    partitions: list[ShareAcknowledgeRequestTopicsPartitions]


class ShareAcknowledgeRequest(TypedDict):
    """``ShareAcknowledgeRequest`` v1-2 (decoded: every key present)."""

    group_id: str | None
    member_id: str | None
    share_session_epoch: int
    is_renew_ack: bool
    topics: list[ShareAcknowledgeRequestTopics]


class ShareAcknowledgeResponseResponsesPartitionsCurrentLeader(TypedDict, total=False):
    """``ShareAcknowledgeResponseResponsesPartitions.current_leader``."""

    leader_id: int
    leader_epoch: int


class ShareAcknowledgeResponseResponsesPartitions(TypedDict, total=False):
    """``ShareAcknowledgeResponseResponses.partitions``."""

    partition_index: int
    error_code: int
    error_message: str | None
    current_leader: ShareAcknowledgeResponseResponsesPartitionsCurrentLeader


class ShareAcknowledgeResponseResponses(TypedDict, total=False):
    """``ShareAcknowledgeResponse.responses``."""

    topic_id: bytes
    partitions: list[ShareAcknowledgeResponseResponsesPartitions]


class ShareAcknowledgeResponseNodeEndpoints(TypedDict, total=False):
    """``ShareAcknowledgeResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int
    rack: str | None


class ShareAcknowledgeResponse(TypedDict, total=False):
    """``ShareAcknowledgeResponse`` v1-2 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    acquisition_lock_timeout_ms: int
    responses: list[ShareAcknowledgeResponseResponses]
    node_endpoints: list[ShareAcknowledgeResponseNodeEndpoints]


class AddRaftVoterRequestListeners(TypedDict):
    """``AddRaftVoterRequest.listeners``."""

    name: str
    host: str
    port: int


class AddRaftVoterRequest(TypedDict):
    """``AddRaftVoterRequest`` v0-1 (decoded: every key present)."""

    cluster_id: str | None
    timeout_ms: int
    voter_id: int
    voter_directory_id: bytes
    listeners: list[AddRaftVoterRequestListeners]
    ack_when_committed: bool


class AddRaftVoterResponse(TypedDict, total=False):
    """``AddRaftVoterResponse`` v0-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None


class RemoveRaftVoterRequest(TypedDict):
    """``RemoveRaftVoterRequest`` v0-0 (decoded: every key present)."""

    cluster_id: str | None
    voter_id: int
    voter_directory_id: bytes


class RemoveRaftVoterResponse(TypedDict, total=False):
    """``RemoveRaftVoterResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None


class UpdateRaftVoterRequestListeners(TypedDict):
    """``UpdateRaftVoterRequest.listeners``."""

    name: str
    host: str
    port: int


class UpdateRaftVoterRequestKraftVersionFeature(TypedDict):
    """``UpdateRaftVoterRequest.kraft_version_feature``."""

    min_supported_version: int
    max_supported_version: int


class UpdateRaftVoterRequest(TypedDict):
    """``UpdateRaftVoterRequest`` v0-0 (decoded: every key present)."""

    cluster_id: str | None
    current_leader_epoch: int
    voter_id: int
    voter_directory_id: bytes
    listeners: list[UpdateRaftVoterRequestListeners]
    kraft_version_feature: UpdateRaftVoterRequestKraftVersionFeature


class UpdateRaftVoterResponseCurrentLeader(TypedDict, total=False):
    """``UpdateRaftVoterResponse.current_leader``."""

    leader_id: int
    leader_epoch: int
    host: str
    port: int


class UpdateRaftVoterResponse(TypedDict, total=False):
    """``UpdateRaftVoterResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    current_leader: UpdateRaftVoterResponseCurrentLeader | None


class InitializeShareGroupStateRequestTopicsPartitions(TypedDict):
    """``InitializeShareGroupStateRequestTopics.partitions``."""

    partition: int
    state_epoch: int
    start_offset: int


class InitializeShareGroupStateRequestTopics(TypedDict):
    """``InitializeShareGroupStateRequest.topics``."""

    topic_id: bytes
    partitions: list[InitializeShareGroupStateRequestTopicsPartitions]


class InitializeShareGroupStateRequest(TypedDict):
    """``InitializeShareGroupStateRequest`` v0-0 (decoded: every key present)."""

    group_id: str
    topics: list[InitializeShareGroupStateRequestTopics]


class InitializeShareGroupStateResponseResultsPartitions(TypedDict, total=False):
    """``InitializeShareGroupStateResponseResults.partitions``."""

    partition: int
    error_code: int
    error_message: str | None


class InitializeShareGroupStateResponseResults(TypedDict, total=False):
    """``InitializeShareGroupStateResponse.results``."""

    topic_id: bytes
    partitions: list[InitializeShareGroupStateResponseResultsPartitions]


class InitializeShareGroupStateResponse(TypedDict, total=False):
    """``InitializeShareGroupStateResponse`` v0-0 (built: missing keys take defaults)."""

    results: list[InitializeShareGroupStateResponseResults]


class ReadShareGroupStateRequestTopicsPartitions(TypedDict):
    """``ReadShareGroupStateRequestTopics.partitions``."""

    partition: int
    leader_epoch: int


class ReadShareGroupStateRequestTopics(TypedDict):
    """``ReadShareGroupStateRequest.topics``."""

    topic_id: bytes
    partitions: list[ReadShareGroupStateRequestTopicsPartitions]


class ReadShareGroupStateRequest(TypedDict):
    """``ReadShareGroupStateRequest`` v0-0 (decoded: every key present)."""

    group_id: str
    topics: list[ReadShareGroupStateRequestTopics]


class ReadShareGroupStateResponseResultsPartitionsStateBatches(TypedDict, total=False):
    """``ReadShareGroupStateResponseResultsPartitions.state_batches``."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


class ReadShareGroupStateResponseResultsPartitions(TypedDict, total=False):
    """``ReadShareGroupStateResponseResults.partitions``."""

    partition: int
    error_code: int
    error_message: str | None
    state_epoch: int
    start_offset: int
    state_batches: list[ReadShareGroupStateResponseResultsPartitionsStateBatches]


class ReadShareGroupStateResponseResults(TypedDict, total=False):
    """``ReadShareGroupStateResponse.results``."""

    topic_id: bytes
    partitions: list[ReadShareGroupStateResponseResultsPartitions]


class ReadShareGroupStateResponse(TypedDict, total=False):
    """``ReadShareGroupStateResponse`` v0-0 (built: missing keys take defaults)."""

    results: list[ReadShareGroupStateResponseResults]


class WriteShareGroupStateRequestTopicsPartitionsStateBatches(TypedDict):
    """``WriteShareGroupStateRequestTopicsPartitions.state_batches``."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


class WriteShareGroupStateRequestTopicsPartitions(TypedDict):
    """``WriteShareGroupStateRequestTopics.partitions``."""

    partition: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: list[WriteShareGroupStateRequestTopicsPartitionsStateBatches]


class WriteShareGroupStateRequestTopics(TypedDict):
    """``WriteShareGroupStateRequest.topics``."""

    topic_id: bytes
    partitions: list[WriteShareGroupStateRequestTopicsPartitions]


class WriteShareGroupStateRequest(TypedDict):
    """``WriteShareGroupStateRequest`` v0-1 (decoded: every key present)."""

    group_id: str
    topics: list[WriteShareGroupStateRequestTopics]


class WriteShareGroupStateResponseResultsPartitions(TypedDict, total=False):
    """``WriteShareGroupStateResponseResults.partitions``."""

    partition: int
    error_code: int
    error_message: str | None


class WriteShareGroupStateResponseResults(TypedDict, total=False):
    """``WriteShareGroupStateResponse.results``."""

    topic_id: bytes
    partitions: list[WriteShareGroupStateResponseResultsPartitions]


class WriteShareGroupStateResponse(TypedDict, total=False):
    """``WriteShareGroupStateResponse`` v0-1 (built: missing keys take defaults)."""

    results: list[WriteShareGroupStateResponseResults]


class DeleteShareGroupStateRequestTopicsPartitions(TypedDict):
    """``DeleteShareGroupStateRequestTopics.partitions``."""

    partition: int


class DeleteShareGroupStateRequestTopics(TypedDict):
    """``DeleteShareGroupStateRequest.topics``."""

    topic_id: bytes
    partitions: list[DeleteShareGroupStateRequestTopicsPartitions]


class DeleteShareGroupStateRequest(TypedDict):
    """``DeleteShareGroupStateRequest`` v0-0 (decoded: every key present)."""

    group_id: str
    topics: list[DeleteShareGroupStateRequestTopics]


class DeleteShareGroupStateResponseResultsPartitions(TypedDict, total=False):
    """``DeleteShareGroupStateResponseResults.partitions``."""

    partition: int
    error_code: int
    error_message: str | None


class DeleteShareGroupStateResponseResults(TypedDict, total=False):
    """``DeleteShareGroupStateResponse.results``."""

    topic_id: bytes
    partitions: list[DeleteShareGroupStateResponseResultsPartitions]


class DeleteShareGroupStateResponse(TypedDict, total=False):
    """``DeleteShareGroupStateResponse`` v0-0 (built: missing keys take defaults)."""

    results: list[DeleteShareGroupStateResponseResults]


class ReadShareGroupStateSummaryRequestTopicsPartitions(TypedDict):
    """``ReadShareGroupStateSummaryRequestTopics.partitions``."""

    partition: int
    leader_epoch: int


class ReadShareGroupStateSummaryRequestTopics(TypedDict):
    """``ReadShareGroupStateSummaryRequest.topics``."""

    topic_id: bytes
    partitions: list[ReadShareGroupStateSummaryRequestTopicsPartitions]


class ReadShareGroupStateSummaryRequest(TypedDict):
    """``ReadShareGroupStateSummaryRequest`` v0-1 (decoded: every key present)."""

    group_id: str
    topics: list[ReadShareGroupStateSummaryRequestTopics]


class ReadShareGroupStateSummaryResponseResultsPartitions(TypedDict, total=False):
    """``ReadShareGroupStateSummaryResponseResults.partitions``."""

    partition: int
    error_code: int
    error_message: str | None
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int


class ReadShareGroupStateSummaryResponseResults(TypedDict, total=False):
    """``ReadShareGroupStateSummaryResponse.results``."""

    topic_id: bytes
    partitions: list[ReadShareGroupStateSummaryResponseResultsPartitions]


class ReadShareGroupStateSummaryResponse(TypedDict, total=False):
    """``ReadShareGroupStateSummaryResponse`` v0-1 (built: missing keys take defaults)."""

    results: list[ReadShareGroupStateSummaryResponseResults]


class DescribeShareGroupOffsetsRequestGroupsTopics(TypedDict):
    """``DescribeShareGroupOffsetsRequestGroups.topics``."""

    topic_name: str
    partitions: list[int]


class DescribeShareGroupOffsetsRequestGroups(TypedDict):
    """``DescribeShareGroupOffsetsRequest.groups``."""

    group_id: str
    topics: list[DescribeShareGroupOffsetsRequestGroupsTopics] | None


class DescribeShareGroupOffsetsRequest(TypedDict):
    """``DescribeShareGroupOffsetsRequest`` v0-1 (decoded: every key present)."""

    groups: list[DescribeShareGroupOffsetsRequestGroups]


class DescribeShareGroupOffsetsResponseGroupsTopicsPartitions(TypedDict, total=False):
    """``DescribeShareGroupOffsetsResponseGroupsTopics.partitions``."""

    partition_index: int
    start_offset: int
    leader_epoch: int
    lag: int
    error_code: int
    error_message: str | None


class DescribeShareGroupOffsetsResponseGroupsTopics(TypedDict, total=False):
    """``DescribeShareGroupOffsetsResponseGroups.topics``."""

    topic_name: str
    topic_id: bytes
    partitions: list[DescribeShareGroupOffsetsResponseGroupsTopicsPartitions]


class DescribeShareGroupOffsetsResponseGroups(TypedDict, total=False):
    """``DescribeShareGroupOffsetsResponse.groups``."""

    group_id: str
    topics: list[DescribeShareGroupOffsetsResponseGroupsTopics]
    error_code: int
    error_message: str | None


class DescribeShareGroupOffsetsResponse(TypedDict, total=False):
    """``DescribeShareGroupOffsetsResponse`` v0-1 (built: missing keys take defaults)."""

    throttle_time_ms: int
    groups: list[DescribeShareGroupOffsetsResponseGroups]


class AlterShareGroupOffsetsRequestTopicsPartitions(TypedDict):
    """``AlterShareGroupOffsetsRequestTopics.partitions``."""

    partition_index: int
    start_offset: int


class AlterShareGroupOffsetsRequestTopics(TypedDict):
    """``AlterShareGroupOffsetsRequest.topics``."""

    topic_name: str
    partitions: list[AlterShareGroupOffsetsRequestTopicsPartitions]


class AlterShareGroupOffsetsRequest(TypedDict):
    """``AlterShareGroupOffsetsRequest`` v0-0 (decoded: every key present)."""

    group_id: str
    topics: list[AlterShareGroupOffsetsRequestTopics]


class AlterShareGroupOffsetsResponseResponsesPartitions(TypedDict, total=False):
    """``AlterShareGroupOffsetsResponseResponses.partitions``."""

    partition_index: int
    error_code: int
    error_message: str | None


class AlterShareGroupOffsetsResponseResponses(TypedDict, total=False):
    """``AlterShareGroupOffsetsResponse.responses``."""

    topic_name: str
    topic_id: bytes
    partitions: list[AlterShareGroupOffsetsResponseResponsesPartitions]


class AlterShareGroupOffsetsResponse(TypedDict, total=False):
    """``AlterShareGroupOffsetsResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    responses: list[AlterShareGroupOffsetsResponseResponses]


class DeleteShareGroupOffsetsRequestTopics(TypedDict):
    """``DeleteShareGroupOffsetsRequest.topics``."""

    topic_name: str


class DeleteShareGroupOffsetsRequest(TypedDict):
    """``DeleteShareGroupOffsetsRequest`` v0-0 (decoded: every key present)."""

    group_id: str
    topics: list[DeleteShareGroupOffsetsRequestTopics]


class DeleteShareGroupOffsetsResponseResponses(TypedDict, total=False):
    """``DeleteShareGroupOffsetsResponse.responses``."""

    topic_name: str
    topic_id: bytes
    error_code: int
    error_message: str | None


class DeleteShareGroupOffsetsResponse(TypedDict, total=False):
    """``DeleteShareGroupOffsetsResponse`` v0-0 (built: missing keys take defaults)."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None
    responses: list[DeleteShareGroupOffsetsResponseResponses]


__all__ = [
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "AddRaftVoterRequest",
    "AddRaftVoterResponse",
    "AllocateProducerIdsRequest",
    "AllocateProducerIdsResponse",
    "AlterClientQuotasRequest",
    "AlterClientQuotasResponse",
    "AlterConfigsRequest",
    "AlterConfigsResponse",
    "AlterPartitionReassignmentsRequest",
    "AlterPartitionReassignmentsResponse",
    "AlterPartitionRequest",
    "AlterPartitionResponse",
    "AlterShareGroupOffsetsRequest",
    "AlterShareGroupOffsetsResponse",
    "AlterUserScramCredentialsRequest",
    "AlterUserScramCredentialsResponse",
    "ApiKey",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "AssignReplicasToDirsRequest",
    "AssignReplicasToDirsResponse",
    "BeginQuorumEpochRequest",
    "BeginQuorumEpochResponse",
    "BrokerHeartbeatRequest",
    "BrokerHeartbeatResponse",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResponse",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "CreateAclsRequest",
    "CreateAclsResponse",
    "CreatePartitionsRequest",
    "CreatePartitionsResponse",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "DeleteAclsRequest",
    "DeleteAclsResponse",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DeleteRecordsRequest",
    "DeleteRecordsResponse",
    "DeleteShareGroupOffsetsRequest",
    "DeleteShareGroupOffsetsResponse",
    "DeleteShareGroupStateRequest",
    "DeleteShareGroupStateResponse",
    "DeleteTopicsRequest",
    "DeleteTopicsResponse",
    "DescribeAclsRequest",
    "DescribeAclsResponse",
    "DescribeClientQuotasRequest",
    "DescribeClientQuotasResponse",
    "DescribeClusterRequest",
    "DescribeClusterResponse",
    "DescribeConfigsRequest",
    "DescribeConfigsResponse",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribeLogDirsRequest",
    "DescribeLogDirsResponse",
    "DescribeProducersRequest",
    "DescribeProducersResponse",
    "DescribeQuorumRequest",
    "DescribeQuorumResponse",
    "DescribeShareGroupOffsetsRequest",
    "DescribeShareGroupOffsetsResponse",
    "DescribeTopicPartitionsRequest",
    "DescribeTopicPartitionsResponse",
    "DescribeTransactionsRequest",
    "DescribeTransactionsResponse",
    "DescribeUserScramCredentialsRequest",
    "DescribeUserScramCredentialsResponse",
    "ElectLeadersRequest",
    "ElectLeadersResponse",
    "EndQuorumEpochRequest",
    "EndQuorumEpochResponse",
    "EndTxnRequest",
    "EndTxnResponse",
    "FetchRequest",
    "FetchResponse",
    "FetchSnapshotRequest",
    "FetchSnapshotResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "IncrementalAlterConfigsRequest",
    "IncrementalAlterConfigsResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "InitializeShareGroupStateRequest",
    "InitializeShareGroupStateResponse",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "ListConfigResourcesRequest",
    "ListConfigResourcesResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "ListPartitionReassignmentsRequest",
    "ListPartitionReassignmentsResponse",
    "ListTransactionsRequest",
    "ListTransactionsResponse",
    "MetadataRequest",
    "MetadataResponse",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetDeleteRequest",
    "OffsetDeleteResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "OffsetForLeaderEpochRequest",
    "OffsetForLeaderEpochResponse",
    "ProduceRequest",
    "ProduceResponse",
    "ReadShareGroupStateRequest",
    "ReadShareGroupStateResponse",
    "ReadShareGroupStateSummaryRequest",
    "ReadShareGroupStateSummaryResponse",
    "RemoveRaftVoterRequest",
    "RemoveRaftVoterResponse",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "ShareAcknowledgeRequest",
    "ShareAcknowledgeResponse",
    "ShareFetchRequest",
    "ShareFetchResponse",
    "ShareGroupDescribeRequest",
    "ShareGroupDescribeResponse",
    "ShareGroupHeartbeatRequest",
    "ShareGroupHeartbeatResponse",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    "UnregisterBrokerRequest",
    "UnregisterBrokerResponse",
    "UpdateFeaturesRequest",
    "UpdateFeaturesResponse",
    "UpdateRaftVoterRequest",
    "UpdateRaftVoterResponse",
    "VoteRequest",
    "VoteResponse",
    "WriteShareGroupStateRequest",
    "WriteShareGroupStateResponse",
    "WriteTxnMarkersRequest",
    "WriteTxnMarkersResponse",
]
