"""Leader and ISR decisions of the controller: fencing, unfencing, elections, rebalancing.

Pure functions of the committed :class:`MetadataImage` (plus the topic config policy for
``min.insync.replicas`` and ``unclean.leader.election.enable``), returning records and, for
ElectLeaders, the response. Every partition change goes through
:class:`~sparklog.controller.partition_change_builder.PartitionChangeBuilder`, as in Kafka's
``ReplicationControlManager``:

- A broker that is fenced, enters controlled shutdown or is unregistered leaves the ISR of
  every partition (without ELR, never the last member) and loses its leaderships; a new leader
  is elected from the rest (an UNCLEAN election when the topic allows it).
- A broker whose log dir failed leaves the ISR and the leadership of the partitions it holds
  in that dir, the same way (see :mod:`sparklog.controller.directories`); a replica in an
  offline dir is never an acceptable leader.
- A broker that is unfenced may lead the partitions that have no leader (it must be in their
  ISR, or in their ELR when the ISR is empty, or the topic must allow unclean election).
- A broker whose previous shutdown was unclean (KIP-966: its registration names a previous
  broker epoch other than the registered one) leaves every ISR and ELR: its log may have lost
  acknowledged records.
- ELR is on when the ``eligible.leader.replicas.version`` feature is at least 1 (Kafka 4.x's
  gate; :mod:`sparklog.metadata.bootstrap` finalizes it for release 4.1 and later).
- ElectLeaders (43): PREFERRED makes the first replica lead if it is a valid leader;
  UNCLEAN elects a leader for a partition that has none, from ISR/ELR first, then any live
  replica. Errors as Kafka answers them: UNKNOWN_TOPIC_OR_PARTITION, ELECTION_NOT_NEEDED,
  PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE. With null
  ``topic_partitions`` every partition is tried and ELECTION_NOT_NEEDED ones are left out.
- Preferred-leader rebalancing (``auto.leader.rebalance.enable``): for each broker, the
  share of partitions it should lead (it is their first replica) but does not; above
  ``leader.imbalance.per.broker.percentage`` its partitions get a preferred election.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Final

from sparklog.controller.configs import TopicConfigPolicy
from sparklog.controller.directories import default_dir, replica_dir_online
from sparklog.controller.partition_change_builder import Election, PartitionChangeBuilder
from sparklog.metadata.image import NO_LEADER, MetadataImage, PartitionRegistration, TopicImage
from sparklog.metadata.records import MetadataRecord
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    ElectLeadersResponseReplicaElectionResults,
    ElectLeadersResponseReplicaElectionResultsPartitionResult,
)
from sparklog.storage.config import LogConfig

ELR_FEATURE: Final = "eligible.leader.replicas.version"
# ElectLeadersRequest.election_type
ELECTION_PREFERRED: Final = 0
ELECTION_UNCLEAN: Final = 1

_DEFAULT_MESSAGES: Final = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: ("The preferred leader was not available."),
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: (
        "Eligible topic partition leaders are not available."
    ),
}


def elr_enabled(image: MetadataImage) -> bool:
    return image.features.levels.get(ELR_FEATURE, 0) >= 1


@dataclass(frozen=True, slots=True)
class ReplicationContext:
    """What partition decisions read besides the partition: the image and topic configs."""

    image: MetadataImage
    policy: TopicConfigPolicy

    def topic_config(self, name: str) -> LogConfig:
        overrides = self.image.configs.topic_config(name)
        try:
            return self.policy.default_log_config.with_overrides(overrides)
        except ValueError:
            # Overrides were validated when written; a newer default cannot make them fatal.
            return self.policy.default_log_config

    def acceptable(
        self, removed: frozenset[int] = frozenset(), added: frozenset[int] = frozenset()
    ) -> Callable[[int], bool]:
        """Who may lead: registered, unfenced and not shutting down (``added`` counts as
        live, ``removed`` as gone, for records not yet in the image)."""
        brokers = self.image.cluster.brokers

        def accept(replica: int) -> bool:
            if replica in removed:
                return False
            if replica in added:
                return True
            broker = brokers.get(replica)
            return broker is not None and not broker.fenced and not broker.in_controlled_shutdown

        return accept

    def builder(
        self,
        topic: TopicImage,
        partition_id: int,
        partition: PartitionRegistration,
        accept: Callable[[int], bool],
        election: Election | None = None,
    ) -> PartitionChangeBuilder:
        config = self.topic_config(topic.name)
        if election is None:
            election = (
                Election.UNCLEAN if config.unclean_leader_election_enable else Election.ONLINE
            )
        image = self.image

        def accept_online(replica: int) -> bool:
            # Kafka's LeaderAcceptor: a replica in an offline log dir never leads.
            return accept(replica) and replica_dir_online(image, partition, replica)

        return PartitionChangeBuilder(
            partition,
            topic.topic_id,
            partition_id,
            accept_online,
            min_isr=config.min_insync_replicas,
            elr_enabled=elr_enabled(self.image),
            election=election,
            metadata_version=self.image.features.metadata_version,
            default_dir=lambda broker_id: default_dir(image, broker_id),
        )


def _partitions(image: MetadataImage) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
    for topic in sorted(image.topics.by_id.values(), key=lambda t: t.name):
        for partition_id, partition in sorted(topic.partitions.items()):
            yield topic, partition_id, partition


def remove_broker_from_isrs(
    ctx: ReplicationContext,
    broker_id: int,
    *,
    unclean_shutdown: bool = False,
    only: Collection[tuple[bytes, int]] | None = None,
) -> list[MetadataRecord]:
    """``broker_id`` is being fenced, shut down or unregistered (or restarted uncleanly):
    out of every ISR and leadership, and with ``unclean_shutdown`` out of every ELR too.
    With ``only`` (topic id, partition) pairs, just those (a log dir of the broker failed)."""
    accept = ctx.acceptable(removed=frozenset({broker_id}))
    records = []
    for topic, partition_id, partition in _partitions(ctx.image):
        if only is not None and (topic.topic_id, partition_id) not in only:
            continue
        involved = broker_id in partition.isr or partition.leader == broker_id
        if unclean_shutdown:
            involved = (
                involved or broker_id in partition.elr or broker_id in partition.last_known_elr
            )
        if not involved:
            continue
        builder = ctx.builder(topic, partition_id, partition, accept)
        builder.target_isr = [r for r in partition.isr if r != broker_id]
        if unclean_shutdown:
            builder.unclean_shutdown_replicas = frozenset({broker_id})
            builder.target_elr = [r for r in partition.elr if r != broker_id]
        record = builder.build()
        if record is not None:
            records.append(record)
    return records


def elect_for_unfenced(ctx: ReplicationContext, broker_id: int) -> list[MetadataRecord]:
    """``broker_id`` is being unfenced: elect leaders for leaderless partitions it can lead."""
    accept = ctx.acceptable(added=frozenset({broker_id}))
    records = []
    for topic, partition_id, partition in _partitions(ctx.image):
        if partition.leader != NO_LEADER or broker_id not in partition.replicas:
            continue
        record = ctx.builder(topic, partition_id, partition, accept).build()
        if record is not None:
            records.append(record)
    return records


def elect_offline_partitions(ctx: ReplicationContext) -> list[MetadataRecord]:
    """Leaders for leaderless partitions where someone may lead now (e.g. a topic whose
    ``unclean.leader.election.enable`` was just turned on)."""
    accept = ctx.acceptable()
    records = []
    for topic, partition_id, partition in _partitions(ctx.image):
        if partition.leader != NO_LEADER:
            continue
        record = ctx.builder(topic, partition_id, partition, accept).build()
        if record is not None and record.data.get("leader", -2) >= 0:
            records.append(record)
    return records


# -- ElectLeaders (43) -----------------------------------------------------------------------


def elect_leader(
    ctx: ReplicationContext, topic_name: str, partition_id: int, election_type: int
) -> tuple[ErrorCode, MetadataRecord | None]:
    topic = ctx.image.topics.get_topic(topic_name)
    partition = None if topic is None else topic.partitions.get(partition_id)
    if topic is None or partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if election_type == ELECTION_UNCLEAN:
        if partition.leader != NO_LEADER:
            return ErrorCode.ELECTION_NOT_NEEDED, None
        election = Election.UNCLEAN
    else:
        if partition.replicas and partition.leader == partition.replicas[0]:
            return ErrorCode.ELECTION_NOT_NEEDED, None
        election = Election.PREFERRED
    builder = ctx.builder(topic, partition_id, partition, ctx.acceptable(), election)
    record = builder.build()
    if record is None or (election is Election.UNCLEAN and builder.elected is None):
        if election is Election.PREFERRED:
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, None
        return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, None
    return ErrorCode.NONE, record


def elect_leaders(
    ctx: ReplicationContext, request: ElectLeadersRequest, version: int
) -> tuple[list[MetadataRecord], ElectLeadersResponse]:
    """Decide an ElectLeaders request: (records, response body)."""
    election_type = request["election_type"] if version >= 1 else ELECTION_PREFERRED
    if election_type not in (ELECTION_PREFERRED, ELECTION_UNCLEAN):
        return [], {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.INVALID_REQUEST),
            "replica_election_results": [],
        }
    wanted = request["topic_partitions"]
    everything = wanted is None
    if wanted is None:
        targets = [
            (topic.name, sorted(topic.partitions))
            for topic in sorted(ctx.image.topics.by_id.values(), key=lambda t: t.name)
        ]
    else:
        targets = [(t["topic"], list(t["partitions"])) for t in wanted]
    records: list[MetadataRecord] = []
    results: list[ElectLeadersResponseReplicaElectionResults] = []
    for name, partition_ids in targets:
        partition_results: list[ElectLeadersResponseReplicaElectionResultsPartitionResult] = []
        for partition_id in partition_ids:
            code, record = elect_leader(ctx, name, partition_id, election_type)
            if record is not None:
                records.append(record)
            if everything and code == ErrorCode.ELECTION_NOT_NEEDED:
                continue
            partition_results.append(
                {
                    "partition_id": partition_id,
                    "error_code": int(code),
                    "error_message": _DEFAULT_MESSAGES.get(code),
                }
            )
        if partition_results or not everything:
            results.append({"topic": name, "partition_result": partition_results})
    return records, {"throttle_time_ms": 0, "error_code": 0, "replica_election_results": results}


# -- preferred leaders and metrics -----------------------------------------------------------


def imbalanced_partitions(
    image: MetadataImage,
) -> list[tuple[TopicImage, int, PartitionRegistration]]:
    """Partitions whose leader is not their preferred (first) replica."""
    return [
        (topic, partition_id, partition)
        for topic, partition_id, partition in _partitions(image)
        if partition.replicas and partition.leader != partition.replicas[0]
    ]


def offline_partitions_count(image: MetadataImage) -> int:
    return sum(1 for _, _, p in _partitions(image) if p.leader == NO_LEADER)


def balance_partition_leaders(
    ctx: ReplicationContext, imbalance_percentage: int
) -> list[MetadataRecord]:
    """Preferred elections for the brokers whose leader imbalance exceeds the percentage."""
    preferred_counts: dict[int, int] = {}
    for _, _, partition in _partitions(ctx.image):
        if partition.replicas:
            first = partition.replicas[0]
            preferred_counts[first] = preferred_counts.get(first, 0) + 1
    by_broker: dict[int, list[tuple[TopicImage, int, PartitionRegistration]]] = {}
    for entry in imbalanced_partitions(ctx.image):
        by_broker.setdefault(entry[2].replicas[0], []).append(entry)
    accept = ctx.acceptable()
    records = []
    for broker_id, entries in sorted(by_broker.items()):
        ratio = len(entries) / preferred_counts[broker_id]
        if ratio * 100 <= imbalance_percentage or not accept(broker_id):
            continue
        for topic, partition_id, partition in entries:
            builder = ctx.builder(topic, partition_id, partition, accept, Election.PREFERRED)
            record = builder.build()
            if record is not None and builder.elected is not None:
                records.append(record)
    return records
