"""What the console's pages show, gathered as a Kafka client would (blocking; run off the loop).

Contract:

- Every function takes an :class:`~sparklog.client.admin.AdminClient` connected to this
  node's own broker listener and the node's current :class:`MetadataImage`; cluster-wide facts
  come over the Kafka protocol (DescribeQuorum, ListOffsets to each leader, ListGroups on every
  broker, OffsetFetch at the coordinator, Fetch from the leader), so a page shows the cluster,
  not only what this node hosts. Broker registrations (fenced, epochs) and partition
  registrations (ISR, ELR) come from the image, which every broker replays in full.
- Offsets: ``log_start`` is ListOffsets earliest (-2), ``high_watermark`` latest (-1),
  ``last_stable`` latest under read_committed, ``earliest_local`` -4 and ``highest_tiered`` -5
  (KIP-405 / KIP-1005; -1 when nothing is tiered). A partition whose leader cannot answer shows
  ``None`` with the error name, never an exception.
- Lag per group partition = high watermark - committed offset (``kafka-consumer-groups.sh``).
- :class:`NotFound` names what is missing (a topic, a partition, a group): the page is a 404.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparklog.client.admin import (
    EARLIEST,
    EARLIEST_LOCAL,
    LATEST,
    LATEST_TIERED,
    AdminClient,
    TopicPartition,
)
from sparklog.client.consumer import ConsumedRecord, PartitionReader
from sparklog.client.groups import (
    GroupDescription,
    committed_offsets,
    describe_group,
    list_groups,
)
from sparklog.metadata.image import MetadataImage
from sparklog.protocol.errors import error_name

METADATA_TOPIC = "__cluster_metadata"
MAX_RECORDS = 500


class NotFound(LookupError):
    """The page's subject does not exist; the message says which."""


@dataclass(frozen=True, slots=True)
class BrokerRow:
    broker_id: int
    endpoints: str
    epoch: int
    fenced: bool
    in_controlled_shutdown: bool
    rack: str | None


@dataclass(frozen=True, slots=True)
class VoterRow:
    replica_id: int
    role: str  # Leader, Follower, Observer
    log_end_offset: int
    lag: int


@dataclass(frozen=True, slots=True)
class QuorumView:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: list[VoterRow]
    error: str | None = None


@dataclass(frozen=True, slots=True)
class TopicRow:
    name: str
    partitions: int
    replication_factor: int
    under_replicated: int
    offline: int


@dataclass(frozen=True, slots=True)
class ClusterView:
    cluster_id: str
    metadata_offset: int
    features: dict[str, int]
    quorum: QuorumView
    brokers: list[BrokerRow]
    topics: list[TopicRow]


@dataclass(frozen=True, slots=True)
class PartitionRow:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    log_start: int | None
    high_watermark: int | None
    last_stable: int | None
    earliest_local: int | None
    highest_tiered: int | None
    error: str | None = None

    @property
    def tiered_range(self) -> str:
        if self.highest_tiered is None or self.highest_tiered < 0 or self.log_start is None:
            return "none"
        return f"{self.log_start}..{self.highest_tiered}"

    @property
    def copy_lag(self) -> int | None:
        """Offsets committed but not yet in the tier (the active segment included)."""
        if self.high_watermark is None or self.highest_tiered is None:
            return None
        return max(self.high_watermark - (max(self.highest_tiered, -1) + 1), 0)


@dataclass(frozen=True, slots=True)
class TopicView:
    name: str
    topic_id: str
    configs: dict[str, str]
    partitions: list[PartitionRow]


@dataclass(frozen=True, slots=True)
class GroupRow:
    group_id: str
    group_type: str
    state: str


@dataclass(frozen=True, slots=True)
class GroupOffsetRow:
    topic: str
    partition: int
    committed: int
    end: int | None

    @property
    def lag(self) -> int | None:
        return None if self.end is None else max(self.end - self.committed, 0)


@dataclass(frozen=True, slots=True)
class GroupView:
    description: GroupDescription
    offsets: list[GroupOffsetRow] = field(default_factory=list)

    @property
    def total_lag(self) -> int:
        return sum(row.lag or 0 for row in self.offsets)


def _quorum(admin: AdminClient) -> QuorumView:
    body = {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}
    try:
        response = admin.request("DescribeQuorum", body)
    except (OSError, ConnectionError) as exc:
        return QuorumView(-1, -1, -1, [], error=str(exc))
    if response.get("error_code"):
        return QuorumView(-1, -1, -1, [], error=error_name(response["error_code"]))
    partition = response["topics"][0]["partitions"][0]
    if partition["error_code"]:
        return QuorumView(-1, -1, -1, [], error=error_name(partition["error_code"]))
    leader_id = int(partition["leader_id"])
    replicas = [(v, "Follower") for v in partition["current_voters"]]
    replicas += [(o, "Observer") for o in partition["observers"]]
    leader_end = max((int(v["log_end_offset"]) for v, _ in replicas), default=0)
    for replica, _ in replicas:
        if replica["replica_id"] == leader_id:
            leader_end = int(replica["log_end_offset"])
    rows = [
        VoterRow(
            int(r["replica_id"]),
            "Leader" if r["replica_id"] == leader_id else role,
            int(r["log_end_offset"]),
            max(leader_end - int(r["log_end_offset"]), 0),
        )
        for r, role in replicas
    ]
    rows.sort(key=lambda row: (row.role != "Leader", row.role == "Observer", row.replica_id))
    return QuorumView(
        leader_id, int(partition["leader_epoch"]), int(partition["high_watermark"]), rows
    )


def cluster_view(admin: AdminClient, image: MetadataImage) -> ClusterView:
    brokers = [
        BrokerRow(
            b.broker_id,
            ", ".join(f"{e.name}://{e.host}:{e.port}" for e in b.endpoints),
            b.epoch,
            b.fenced,
            b.in_controlled_shutdown,
            b.rack,
        )
        for b in sorted(image.cluster.brokers.values(), key=lambda b: b.broker_id)
    ]
    topics = []
    for name in sorted(image.topics.by_name):
        parts = image.topics.by_name[name].partitions.values()
        topics.append(
            TopicRow(
                name,
                len(parts),
                max((len(p.replicas) for p in parts), default=0),
                sum(1 for p in parts if len(p.isr) < len(p.replicas)),
                sum(1 for p in parts if p.leader < 0),
            )
        )
    return ClusterView(
        image.cluster_id or "",
        image.provenance.last_offset,
        dict(sorted(image.features.levels.items())),
        _quorum(admin),
        brokers,
        topics,
    )


def topic_view(admin: AdminClient, image: MetadataImage, name: str) -> TopicView:
    topic = image.topics.by_name.get(name)
    if topic is None:
        raise NotFound(f"Topic {name!r} does not exist.")
    tps: list[TopicPartition] = [(name, p) for p in sorted(topic.partitions)]
    specs = {
        "log_start": (EARLIEST, 0),
        "high_watermark": (LATEST, 0),
        "last_stable": (LATEST, 1),
        "earliest_local": (EARLIEST_LOCAL, 0),
        "highest_tiered": (LATEST_TIERED, 0),
    }
    answers: dict[str, dict[TopicPartition, tuple[int, int]]] = {}
    for key, (spec, isolation) in specs.items():
        answers[key] = admin.list_offsets(tps, spec, isolation)
    rows = []
    for tp in tps:
        reg = topic.partitions[tp[1]]
        values: dict[str, Any] = {}
        errors = []
        for key in specs:
            offset, code = answers[key].get(tp, (-1, -1))
            values[key] = offset if code == 0 else None
            if code not in (0, -1):
                errors.append(f"{key}: {error_name(code)}")
        rows.append(
            PartitionRow(
                tp[1],
                reg.leader,
                reg.leader_epoch,
                reg.replicas,
                reg.isr,
                reg.elr,
                error="; ".join(sorted(set(errors))) or None,
                **values,
            )
        )
    configs = dict(sorted(image.configs.resources.get((2, name), {}).items()))
    return TopicView(name, topic.topic_id.hex(), configs, rows)


def groups(admin: AdminClient) -> list[GroupRow]:
    rows = [
        GroupRow(
            g["group_id"],
            g.get("group_type") or g.get("protocol_type") or "",
            g.get("group_state", ""),
        )
        for g in list_groups(admin)
    ]
    return sorted(rows, key=lambda row: row.group_id)


def group_view(admin: AdminClient, group_id: str) -> GroupView:
    description = describe_group(admin, group_id)
    if description is None:
        raise NotFound(f"Group {group_id!r} does not exist.")
    committed = committed_offsets(admin, group_id)
    ends = admin.list_offsets(sorted(committed), LATEST) if committed else {}
    offsets = [
        GroupOffsetRow(tp[0], tp[1], offset, ends[tp][0] if ends.get(tp, (-1, 1))[1] == 0 else None)
        for tp, offset in sorted(committed.items())
    ]
    return GroupView(description, offsets)


def records(
    bootstrap: str, image: MetadataImage, topic: str, partition: int, offset: int, limit: int
) -> list[ConsumedRecord]:
    """Up to ``limit`` records of one partition from ``offset`` (read_uncommitted)."""
    found = image.topics.by_name.get(topic)
    if found is None:
        raise NotFound(f"Topic {topic!r} does not exist.")
    if partition not in found.partitions:
        raise NotFound(f"Topic {topic!r} has no partition {partition}.")
    limit = max(1, min(limit, MAX_RECORDS))
    out: list[ConsumedRecord] = []
    with PartitionReader(bootstrap, client_id="sparklog-console", max_wait_ms=100) as reader:
        tp = (topic, partition)
        start, end = (
            reader.list_offsets([tp], EARLIEST)[tp],
            reader.list_offsets([tp], LATEST)[tp],
        )
        reader.assign({tp: max(offset, start)})
        while len(out) < limit and reader.position(tp) < end:
            batch = reader.poll()
            if not batch:
                break
            out += [r for r in batch if r.offset >= offset]
    return out[:limit]
