"""What request handlers share: the node's identity, the current metadata image, the replica
manager and the channel to the controller.

Handlers read metadata only from the latest published image (never from controller state) and
send every metadata change to the controller through :class:`ControllerChannel`, as a broker
forwards admin requests to the active controller in KRaft.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sparklog.broker.coordinator_runtime import ReplicaManagerRuntime
from sparklog.broker.fetch_session import FetchSessionCache
from sparklog.broker.partition import Partition
from sparklog.broker.producer_ids import ProducerIdManager
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.broker.share_metrics import ShareMetrics
from sparklog.broker.topic_metrics import BrokerTopicMetrics
from sparklog.config import ServerConfig
from sparklog.coordinator.runtime import ControllerChannel
from sparklog.metadata.image import MetadataImage

if TYPE_CHECKING:
    from sparklog.broker.quotas import QuotaManagers
    from sparklog.broker.share_partitions import SharePartitionManager
    from sparklog.broker.share_persister import SharePersister
    from sparklog.broker.txn_verification import AddPartitionsToTxnManager
    from sparklog.coordinator.coordinator import GroupCoordinator
    from sparklog.coordinator.share_state_apis import ShareStateCoordinator
    from sparklog.coordinator.txn_coordinator import TransactionCoordinator
    from sparklog.security.authorizer import StandardAuthorizer


@dataclass(frozen=True, slots=True)
class RemoteRead:
    """Kafka record batches read from remote storage and, for a read_committed fetch, the
    ``(producer_id, first_offset)`` of the aborted transactions overlapping them."""

    records: bytes | memoryview  # a memoryview: one batch framed in place (tiering.batch_encode)
    aborted_transactions: tuple[tuple[int, int], ...] = ()


# (partition, fetch offset, max bytes, read_committed) -> what remote storage holds from there
RemoteFetch = Callable[["Partition", int, int, bool], Awaitable[RemoteRead]]


@dataclass
class BrokerContext:
    config: ServerConfig
    cluster_id: str
    replica_manager: ReplicaManager
    controller: ControllerChannel
    image_supplier: Callable[[], MetadataImage]
    producer_ids: ProducerIdManager
    controller_id: int = -1
    remote_fetch: RemoteFetch | None = None
    # (partition, timestamp) -> (timestamp, offset, leader epoch) found in remote storage
    remote_offset_for_timestamp: (
        Callable[[Partition, int], Awaitable[tuple[int, int, int] | None]] | None
    ) = None
    groups: GroupCoordinator | None = None
    transactions: TransactionCoordinator | None = None
    # produce-time transaction checks with the coordinator (KIP-890; None: none)
    txn_verification: AddPartitionsToTxnManager | None = None
    # KIP-932 share-partitions and share sessions this leader keeps (created on first use)
    shares: SharePartitionManager | None = None
    # the share coordinator's __share_group_state partitions (created on first use)
    share_state: ShareStateCoordinator | None = None
    # authorizer.class.name's StandardAuthorizer; None: no authorizer, everything allowed
    authorizer: StandardAuthorizer | None = None
    # client quotas (producer_byte_rate, consumer_byte_rate, request_percentage)
    quotas: QuotaManagers | None = None
    # the advertised (host, port) of the client listener, per listener name
    endpoints: dict[str, tuple[str, int]] = field(default_factory=dict)
    # KIP-227 fetch sessions (max.incremental.fetch.session.cache.slots, set by the node)
    fetch_sessions: FetchSessionCache = field(default_factory=FetchSessionCache)
    # Kafka's BrokerTopicMetrics (the node gives it the metrics registry)
    topic_metrics: BrokerTopicMetrics = field(default_factory=BrokerTopicMetrics)
    # Kafka's share-group metrics (the node gives it the metrics registry)
    share_metrics: ShareMetrics = field(default_factory=ShareMetrics)

    @property
    def coordinator_runtime(self) -> ReplicaManagerRuntime:
        """The coordinators' view of this broker's partitions
        (:class:`~sparklog.coordinator.runtime.CoordinatorRuntime`)."""
        return ReplicaManagerRuntime(self.replica_manager)

    @property
    def share_persister(self) -> SharePersister:
        """The share-partition manager's persister (created with the manager on first use)."""
        from sparklog.broker.share_partitions import manager

        return manager(self).persister

    @property
    def node_id(self) -> int:
        return self.config.node_id

    @property
    def image(self) -> MetadataImage:
        return self.image_supplier()

    def topic_name(self, topic_id: bytes) -> str | None:
        topic = self.image.topics.by_id.get(bytes(topic_id))
        return topic.name if topic is not None else None
