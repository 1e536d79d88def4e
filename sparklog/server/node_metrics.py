"""The metrics a node reports, with Apache Kafka's names (seed 000), as gauges over live state.

:func:`register_node_metrics` fills a :class:`~sparklog.metrics.MetricsRegistry` from a
:class:`~sparklog.server.plane.MetadataPlane` (and the broker's lifecycle state on a broker).
Every gauge reads the current state when scraped; nothing is sampled in the background.

On every node (the KRaft replica, voter or observer), ``kafka.server:type=raft-metrics``:
``current-leader``, ``current-epoch``, ``current-vote``, ``current-state`` (``leader``,
``candidate``, ``prospective``, ``voted``, ``follower``, ``observer``, ``resigned``,
``unattached``), ``high-watermark``, ``log-end-offset``, ``log-end-epoch``,
``number-of-voters``, ``number-unknown-voter-connections`` (voters other than us whose
controller endpoint this node does not know), ``commit-latency-avg``/``-max`` (ms from the
controller's append to its commit, over the last appends this node made as active controller).

On a controller, ``kafka.controller:type=KafkaController,name=...`` (attribute ``Value``):
``ActiveControllerCount`` (1 on the active controller; the cluster sum must be exactly 1),
``ActiveBrokerCount``, ``FencedBrokerCount``, ``GlobalTopicCount``, ``GlobalPartitionCount``,
``OfflinePartitionsCount`` (no leader), ``PreferredReplicaImbalanceCount``,
``LastAppliedRecordOffset``, ``LastCommittedRecordOffset``, ``LastAppliedRecordTimestamp``,
``LastAppliedRecordLagMs``, ``MetadataErrorCount``; and the counters (attribute ``Count``)
``TimedOutBrokerHeartbeatCount``, ``ElectionFromEligibleLeaderReplicasPerSec`` and
``UncleanLeaderElectionsPerSec`` (leaders elected from the ELR / uncleanly, counted by the
active controller as the records commit).

On a broker, ``kafka.server:type=broker-metadata-metrics``: ``last-applied-record-offset``,
``last-applied-record-timestamp``, ``last-applied-record-lag-ms`` (the metadata lag: now minus
the append time of the last record the broker's image folded in; the idle no-op every
``metadata.max.idle.interval.ms`` keeps it small while the broker keeps up),
``metadata-load-error-count``; and ``kafka.server:type=KafkaServer,name=BrokerState``.

On a broker, replication (``kafka.server:type=ReplicaManager,name=...``): the gauges
``UnderReplicatedPartitions`` (we lead, ISR smaller than the assignment),
``UnderMinIsrPartitionCount``, ``LeaderCount``, ``PartitionCount`` (attribute ``Value``), and the
counters ``IsrShrinksPerSec``, ``IsrExpandsPerSec``, ``FailedIsrUpdatesPerSec`` (attribute
``Count``: totals since start, as a Kafka meter's count); and
``kafka.server:type=ReplicaFetcherManager,name=PartitionCount`` (partitions we follow). See
:func:`register_replica_metrics`. Fetch sessions (KIP-227): :func:`register_fetch_session_metrics`.

sparklog's own, for operators and tests: ``sparklog:type=metadata-image`` (``last-offset``,
``offset-lag`` = last committed offset - last applied, ``digest`` of the loader's image,
``controller-digest`` on controllers, ``snapshots-loaded``) and ``sparklog:type=metadata-snapshots``
(``latest-snapshot-end-offset``, ``snapshots-emitted``, ``log-start-offset``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from sparklog.controller.replication_control import imbalanced_partitions, offline_partitions_count
from sparklog.metadata.image import MetadataImage
from sparklog.metrics import MetricName, MetricsRegistry, MetricValue
from sparklog.raft.state import Follower, Leader, Unattached
from sparklog.server.plane import MetadataPlane

if TYPE_CHECKING:
    from sparklog.broker.fetch_session import FetchSessionCache
    from sparklog.broker.replica_fetcher import ReplicaFetcherManager
    from sparklog.broker.replica_manager import ReplicaManager

RAFT = "raft-metrics"
BROKER_METADATA = "broker-metadata-metrics"
# Kafka's BrokerState values (metadata/.../BrokerState.java).
BROKER_STATES = {
    "NOT_RUNNING": 0,
    "STARTING": 1,
    "RECOVERY": 2,
    "RUNNING": 3,
    "PENDING_CONTROLLED_SHUTDOWN": 6,
    "SHUTTING_DOWN": 7,
}


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def controller_metric(name: str, *, attribute: str = "Value") -> MetricName:
    return MetricName.yammer("kafka.controller", "KafkaController", name, attribute=attribute)


def raft_metric(attribute: str) -> MetricName:
    return MetricName.kafka("kafka.server", RAFT, attribute)


def broker_metadata_metric(attribute: str) -> MetricName:
    return MetricName.kafka("kafka.server", BROKER_METADATA, attribute)


def sparklog_metric(group: str, attribute: str) -> MetricName:
    return MetricName.kafka("sparklog", group, attribute)


def raft_state_name(plane: MetadataPlane) -> str:
    replica = plane.replica
    role = replica.quorum.role
    if isinstance(role, Follower):
        return "follower" if replica.is_voter else "observer"
    if isinstance(role, Unattached):
        if role.voted is not None:
            return "voted"
        return "unattached" if replica.is_voter else "observer"
    return role.name


def _current_vote(plane: MetadataPlane) -> int:
    role = plane.replica.quorum.role
    if isinstance(role, Leader):
        return plane.replica.node_id
    voted = getattr(role, "voted", None)
    return voted.id if voted is not None else -1


def _unknown_voter_connections(plane: MetadataPlane) -> int:
    me = plane.replica.node_id
    ids = plane.replica.voters.latest.ids
    return sum(1 for i in ids if i != me and plane.controller_address(i) is None)


def _lag_ms(image: MetadataImage, clock_ms: Callable[[], int]) -> int:
    timestamp = image.provenance.last_append_timestamp
    return max(0, clock_ms() - timestamp) if timestamp >= 0 else 0


def _register_raft(registry: MetricsRegistry, plane: MetadataPlane) -> None:
    replica = plane.replica
    gauges: dict[str, Callable[[], MetricValue]] = {
        "current-leader": lambda: replica.leader_and_epoch.leader_id,
        "current-epoch": lambda: replica.leader_and_epoch.epoch,
        "current-vote": lambda: _current_vote(plane),
        "current-state": lambda: raft_state_name(plane),
        "high-watermark": lambda: replica.high_watermark,
        "log-end-offset": lambda: replica.log_end_offset,
        "log-end-epoch": lambda: replica.log.last_epoch,
        "number-of-voters": lambda: len(replica.voters.latest.ids),
        "number-unknown-voter-connections": lambda: _unknown_voter_connections(plane),
    }
    driver = plane.controller_driver
    if driver is not None:
        gauges["commit-latency-avg"] = lambda: driver.commit_latency.average_ms
        gauges["commit-latency-max"] = lambda: driver.commit_latency.max_ms
    for attribute, read in gauges.items():
        registry.gauge(raft_metric(attribute), read)


def _register_controller(
    registry: MetricsRegistry, plane: MetadataPlane, clock_ms: Callable[[], int]
) -> None:
    controller, driver = plane.controller, plane.controller_driver
    if controller is None or driver is None:
        return
    replica = plane.replica

    def brokers(fenced: bool) -> int:
        return sum(1 for b in controller.image.cluster.brokers.values() if b.fenced == fenced)

    gauges: dict[str, Callable[[], MetricValue]] = {
        "ActiveControllerCount": lambda: 1 if driver.is_active else 0,
        "ActiveBrokerCount": lambda: brokers(False),
        "FencedBrokerCount": lambda: brokers(True),
        "GlobalTopicCount": lambda: len(controller.image.topics.by_id),
        "GlobalPartitionCount": lambda: sum(
            len(t.partitions) for t in controller.image.topics.by_id.values()
        ),
        "OfflinePartitionsCount": lambda: offline_partitions_count(controller.image),
        "PreferredReplicaImbalanceCount": lambda: len(imbalanced_partitions(controller.image)),
        "LastAppliedRecordOffset": lambda: controller.image.provenance.last_offset,
        "LastCommittedRecordOffset": lambda: replica.high_watermark - 1,
        "LastAppliedRecordTimestamp": lambda: controller.image.provenance.last_append_timestamp,
        "LastAppliedRecordLagMs": lambda: _lag_ms(controller.image, clock_ms),
        "MetadataErrorCount": lambda: plane.snapshot_errors.count,
    }
    for name, read in gauges.items():
        registry.gauge(controller_metric(name), read)
    registry.counter_of(
        controller_metric("TimedOutBrokerHeartbeatCount", attribute="Count"),
        lambda: driver.timed_out_broker_heartbeats,
    )
    registry.counter_of(
        controller_metric("ElectionFromEligibleLeaderReplicasPerSec", attribute="Count"),
        lambda: controller.elections_from_elr,
    )
    registry.counter_of(
        controller_metric("UncleanLeaderElectionsPerSec", attribute="Count"),
        lambda: controller.unclean_elections,
    )
    registry.gauge(
        sparklog_metric("metadata-image", "controller-digest"), lambda: controller.image.digest()
    )


def _register_broker(
    registry: MetricsRegistry,
    plane: MetadataPlane,
    clock_ms: Callable[[], int],
    broker_state: Callable[[], str],
) -> None:
    loader = plane.loader
    gauges: dict[str, Callable[[], MetricValue]] = {
        "last-applied-record-offset": lambda: loader.image.provenance.last_offset,
        "last-applied-record-timestamp": lambda: loader.image.provenance.last_append_timestamp,
        "last-applied-record-lag-ms": lambda: _lag_ms(loader.image, clock_ms),
        "metadata-load-error-count": lambda: plane.snapshot_errors.count,
    }
    for attribute, read in gauges.items():
        registry.gauge(broker_metadata_metric(attribute), read)
    registry.gauge(
        MetricName.yammer("kafka.server", "KafkaServer", "BrokerState"),
        lambda: BROKER_STATES.get(broker_state(), 0),
    )


def _register_sparklog(registry: MetricsRegistry, plane: MetadataPlane) -> None:
    replica, loader = plane.replica, plane.loader

    def latest_snapshot_end() -> int:
        latest = replica.latest_snapshot_id
        return latest.end_offset if latest is not None else -1

    gauges: dict[MetricName, Callable[[], MetricValue]] = {
        sparklog_metric("metadata-image", "last-offset"): lambda: (
            loader.image.provenance.last_offset
        ),
        sparklog_metric("metadata-image", "offset-lag"): lambda: max(
            0, replica.high_watermark - 1 - loader.image.provenance.last_offset
        ),
        sparklog_metric("metadata-image", "digest"): lambda: loader.image.digest(),
        sparklog_metric("metadata-image", "snapshots-loaded"): lambda: loader.snapshots_loaded,
        sparklog_metric("metadata-snapshots", "latest-snapshot-end-offset"): latest_snapshot_end,
        sparklog_metric("metadata-snapshots", "snapshots-emitted"): lambda: (
            plane.snapshot_generator.emitted
        ),
        sparklog_metric("metadata-snapshots", "log-start-offset"): lambda: (
            replica.log.log_start_offset
        ),
    }
    for name, read in gauges.items():
        registry.gauge(name, read)


def register_node_metrics(
    registry: MetricsRegistry,
    plane: MetadataPlane,
    *,
    broker_state: Callable[[], str] | None = None,
    clock_ms: Callable[[], int] = _wall_clock_ms,
) -> MetricsRegistry:
    """Register this node's metrics; ``broker_state`` only on a broker."""
    _register_raft(registry, plane)
    _register_controller(registry, plane, clock_ms)
    if broker_state is not None:
        _register_broker(registry, plane, clock_ms, broker_state)
    _register_sparklog(registry, plane)
    return registry


def replica_manager_metric(name: str, *, attribute: str = "Value") -> MetricName:
    return MetricName.yammer("kafka.server", "ReplicaManager", name, attribute=attribute)


def register_replica_metrics(
    registry: MetricsRegistry,
    replica_manager: ReplicaManager,
    fetchers: ReplicaFetcherManager | None = None,
) -> None:
    """The broker's replication metrics (Kafka's ReplicaManager names)."""
    rm = replica_manager
    registry.gauge(
        replica_manager_metric("UnderReplicatedPartitions"), lambda: rm.under_replicated_count
    )
    registry.gauge(
        replica_manager_metric("UnderMinIsrPartitionCount"), lambda: rm.under_min_isr_count
    )
    registry.gauge(replica_manager_metric("LeaderCount"), lambda: rm.leader_count)
    registry.gauge(replica_manager_metric("PartitionCount"), lambda: len(rm.partitions))
    # Disk failures (Kafka's names): partitions taken out of service with their log dir.
    registry.gauge(
        replica_manager_metric("OfflineReplicaCount"), lambda: len(rm.offline_partitions)
    )
    registry.gauge(
        MetricName.yammer("kafka.log", "LogManager", "OfflineLogDirectoryCount"),
        lambda: len(rm.log_dir_failures.offline_dirs),
    )
    registry.counter_of(
        replica_manager_metric("IsrShrinksPerSec", attribute="Count"), lambda: rm.isr_shrinks
    )
    registry.counter_of(
        replica_manager_metric("IsrExpandsPerSec", attribute="Count"), lambda: rm.isr_expands
    )
    registry.counter_of(
        replica_manager_metric("FailedIsrUpdatesPerSec", attribute="Count"),
        lambda: rm.failed_isr_updates,
    )
    if fetchers is not None:
        registry.gauge(
            MetricName.yammer("kafka.server", "ReplicaFetcherManager", "PartitionCount"),
            lambda: fetchers.partition_count,
        )


def register_fetch_session_metrics(registry: MetricsRegistry, cache: FetchSessionCache) -> None:
    """KIP-227's ``kafka.server:type=FetchSessionCache,name=...`` (Kafka's names):
    ``NumIncrementalFetchSessions``, ``NumIncrementalFetchPartitionsCached`` and the meter
    ``IncrementalFetchSessionEvictionsPerSec``; and sparklog's ``sparklog:type=fetch-sessions``
    (``incremental-fetches``, ``full-fetches``: requests served of each kind since start)."""
    domain, type_ = "kafka.server", "FetchSessionCache"
    registry.gauge(
        MetricName.yammer(domain, type_, "NumIncrementalFetchSessions"), lambda: len(cache)
    )
    registry.gauge(
        MetricName.yammer(domain, type_, "NumIncrementalFetchPartitionsCached"),
        lambda: cache.total_partitions,
    )
    cache.on_evict = registry.meter(domain, type_, "IncrementalFetchSessionEvictionsPerSec").mark
    own = "fetch-sessions"
    registry.counter_of(
        MetricName.kafka("sparklog", own, "incremental-fetches"), lambda: cache.incremental_fetches
    )
    registry.counter_of(
        MetricName.kafka("sparklog", own, "full-fetches"), lambda: cache.full_fetches
    )
