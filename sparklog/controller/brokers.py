"""Broker lifecycle on the controller (KIP-631): heartbeats, leases, fencing, leader moves.

Everything here is a pure function of the controller's committed image plus the in-memory
:class:`BrokerHeartbeats` table, returning the records to append and the response, the way
every controller operation works (see :mod:`sparklog.controller.quorum_controller`).

Rules, as in Kafka's ``BrokerHeartbeatManager`` and ``ReplicationControlManager``:

- A broker registers fenced; its epoch is the offset of its ``RegisterBrokerRecord``. It is
  unfenced by a heartbeat that does not ask to stay fenced once its reported metadata offset has
  reached that registration offset (it has replayed its own registration).
- The lease: a broker whose last heartbeat is older than ``broker.session.timeout.ms`` is
  fenced. Heartbeat times live only in the active controller's memory; a newly active
  controller starts every broker's lease afresh (it cannot know when the old one last heard).
- A registration with a new incarnation id is refused (DUPLICATE_BROKER_REGISTRATION) while
  the old incarnation is unfenced and has heartbeated to this controller within the session.
- Fencing, a controlled shutdown or a re-registration moves leaderships off the broker and
  takes it out of the ISRs, through the partition change builder (see
  :mod:`sparklog.controller.replication_control`): the new leader is the first replica (in
  assignment order) in the ISR that is unfenced and not shutting down. Without ELR, the last
  ISR member stays in the ISR of a partition left offline (leader -1), so it leads again once
  unfenced; with ELR it moves to the ELR when the ISR falls below min.insync.replicas.
- Controlled shutdown: the first ``want_shut_down`` heartbeat of an active broker records
  ``in_controlled_shutdown`` (PENDING_CONTROLLED_SHUTDOWN) and moves its leaderships; the next
  one, when it leads nothing, fences it and answers ``should_shut_down``.
- Offline log dirs (KIP-858, Kafka's ``handleDirectoriesOffline``; from metadata.version
  3.7-IV2): a heartbeat naming registered dirs in ``offline_log_dirs`` moves the broker out of
  the leadership and ISR of every partition whose replica on it is in one of those dirs (the
  fencing rules, for those partitions only; see :mod:`sparklog.controller.directories` for
  how replicas are placed in dirs) and records the broker's remaining online dirs
  (BrokerRegistrationChangeRecord ``log_dirs``). A replica in an UNASSIGNED or MIGRATING dir
  counts as online and stays. When the same heartbeat fences the broker or starts its
  controlled shutdown every leadership moves anyway; when it would unfence the broker, the
  unfencing waits for the next heartbeat (each decision reads the committed image, so two
  changes to one partition are never built from the same state). A broker that loses every
  data log dir halts and is fenced when its session expires.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from sparklog.controller.directories import (
    assignment_error,
    assignment_supported,
    is_online,
    newly_offline,
    partitions_in_dirs,
    registration_change,
)
from sparklog.controller.replication_control import (
    ReplicationContext,
    elect_for_unfenced,
    remove_broker_from_isrs,
)
from sparklog.metadata.image import BrokerRegistration, MetadataImage
from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.kafka_uuid import uuid_to_str
from sparklog.protocol.message_types import (
    AssignReplicasToDirsRequest,
    AssignReplicasToDirsResponse,
    AssignReplicasToDirsResponseDirectories,
    AssignReplicasToDirsResponseDirectoriesTopics,
    AssignReplicasToDirsResponseDirectoriesTopicsPartitions,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
)

log = logging.getLogger(__name__)


@dataclass(slots=True)
class BrokerHeartbeats:
    """The active controller's view of broker sessions: last contact per broker, in ms."""

    session_timeout_ms: int
    last_contact_ms: dict[int, int] = field(default_factory=dict)
    # Brokers that heartbeated to this controller since it became active.
    heard: set[int] = field(default_factory=set)

    def touch(self, broker_id: int, now_ms: int) -> None:
        self.last_contact_ms[broker_id] = now_ms
        self.heard.add(broker_id)

    def reset(self, broker_ids: Iterable[int], now_ms: int) -> None:
        self.last_contact_ms = {broker_id: now_ms for broker_id in broker_ids}
        self.heard = set()

    def heard_from(self, broker_id: int, now_ms: int) -> bool:
        """A live session this controller has itself seen a heartbeat for.

        A new registration is refused as a duplicate only then: the leases a newly active
        controller grants on activation are guesses, and a broker restarted right after a
        controller failover must not wait a whole session timeout to register again.
        """
        return broker_id in self.heard and self.has_valid_session(broker_id, now_ms)

    def has_valid_session(self, broker_id: int, now_ms: int) -> bool:
        last = self.last_contact_ms.get(broker_id)
        return last is not None and now_ms - last < self.session_timeout_ms

    def expired(self, image: MetadataImage, now_ms: int) -> list[int]:
        """Unfenced brokers whose lease ran out, by id."""
        return sorted(
            broker.broker_id
            for broker in image.cluster.brokers.values()
            if not broker.fenced and not self.has_valid_session(broker.broker_id, now_ms)
        )


def _change(broker_id: int, epoch: int, fenced: int, shutdown: int = 0) -> MetadataRecord:
    return make_record(
        "BrokerRegistrationChangeRecord",
        {
            "broker_id": broker_id,
            "broker_epoch": epoch,
            "fenced": fenced,
            "in_controlled_shutdown": shutdown,
            "log_dirs": [],
        },
    )


def move_leaderships(ctx: ReplicationContext, broker_id: int) -> list[MetadataRecord]:
    """Records taking ``broker_id`` out of leadership and out of the ISRs (see
    :func:`~sparklog.controller.replication_control.remove_broker_from_isrs`)."""
    return remove_broker_from_isrs(ctx, broker_id)


def elect_offline_leaders(ctx: ReplicationContext, broker_id: int) -> list[MetadataRecord]:
    """Records making ``broker_id`` (being unfenced) lead the leaderless partitions it may."""
    return elect_for_unfenced(ctx, broker_id)


def leads_anything(image: MetadataImage, broker_id: int) -> bool:
    return any(
        p.leader == broker_id for t in image.topics.by_id.values() for p in t.partitions.values()
    )


def fence_records(ctx: ReplicationContext, broker_id: int) -> list[MetadataRecord]:
    """Fence ``broker_id`` (lease expired, or asked to) and move its leaderships."""
    broker = ctx.image.cluster.broker(broker_id)
    if broker is None or broker.fenced:
        return []
    return [_change(broker_id, broker.epoch, 1), *move_leaderships(ctx, broker_id)]


@dataclass(frozen=True, slots=True)
class HeartbeatOutcome:
    records: tuple[MetadataRecord, ...]
    response: BrokerHeartbeatResponse


def heartbeat(
    ctx: ReplicationContext,
    sessions: BrokerHeartbeats,
    body: BrokerHeartbeatRequest,
    now_ms: int,
) -> HeartbeatOutcome:
    """Decide a BrokerHeartbeat: renew the lease, maybe (un)fence or shut down the broker."""
    image = ctx.image
    broker_id = body["broker_id"]
    broker = image.cluster.broker(broker_id)
    if broker is None:
        return HeartbeatOutcome((), _heartbeat_error(ErrorCode.BROKER_ID_NOT_REGISTERED))
    if broker.epoch != body["broker_epoch"]:
        return HeartbeatOutcome((), _heartbeat_error(ErrorCode.STALE_BROKER_EPOCH))
    sessions.touch(broker_id, now_ms)
    caught_up = body["current_metadata_offset"] >= broker.epoch
    fenced = broker.fenced
    records: list[MetadataRecord] = []
    should_shut_down = False
    offline: list[bytes] = []
    if assignment_supported(image.features.metadata_version):
        offline = newly_offline(broker, body["offline_log_dirs"])
    moved_all = False
    if body["want_shut_down"]:
        if fenced:
            should_shut_down = True
        elif not broker.in_controlled_shutdown:
            records.append(_change(broker_id, broker.epoch, 0, 1))
            records.extend(move_leaderships(ctx, broker_id))
            moved_all = True
        elif not leads_anything(image, broker_id):
            records.append(_change(broker_id, broker.epoch, 1))
            fenced = should_shut_down = True
    elif fenced and caught_up and not body["want_fence"] and not offline:
        records.append(_change(broker_id, broker.epoch, -1))
        records.extend(elect_offline_leaders(ctx, broker_id))
        fenced = False
    elif not fenced and body["want_fence"]:
        records.extend(fence_records(ctx, broker_id))
        fenced = moved_all = True
    if offline:
        records.extend(directories_offline(ctx, broker, offline, moved_all=moved_all))
    response: BrokerHeartbeatResponse = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "is_caught_up": caught_up,
        "is_fenced": fenced,
        "should_shut_down": should_shut_down,
    }
    return HeartbeatOutcome(tuple(records), response)


def directories_offline(
    ctx: ReplicationContext,
    broker: BrokerRegistration,
    offline: list[bytes],
    *,
    moved_all: bool = False,
) -> list[MetadataRecord]:
    """Kafka's ``handleDirectoriesOffline`` for ``offline``, registered dirs of ``broker``
    newly reported offline: the broker leaves the leadership and ISR of the partitions it
    holds there (unless ``moved_all``: this heartbeat already moved every one), and its
    registration keeps only the other dirs."""
    records: list[MetadataRecord] = []
    if not moved_all:
        moved = partitions_in_dirs(ctx.image, broker.broker_id, offline)
        records.extend(remove_broker_from_isrs(ctx, broker.broker_id, only=moved))
    online = [d for d in broker.log_dirs if d not in offline]
    log.warning(
        "Directories %s in broker %d marked offline, remaining directories: %s",
        [uuid_to_str(d) for d in offline],
        broker.broker_id,
        [uuid_to_str(d) for d in online],
    )
    records.append(registration_change(broker, online))
    return records


def assign_replicas_to_dirs(
    ctx: ReplicationContext, body: AssignReplicasToDirsRequest
) -> tuple[list[MetadataRecord], AssignReplicasToDirsResponse]:
    """Kafka's ``handleAssignReplicasToDirs``: place the broker's replicas in the named dirs.

    One PartitionChangeRecord per partition whose directory changes; a partition placed in a
    dir the broker no longer has online also loses the broker from its leadership and ISR in
    that same record."""
    image = ctx.image
    if not assignment_supported(image.features.metadata_version):
        return [], assignment_error(ErrorCode.UNSUPPORTED_VERSION)
    broker_id = body["broker_id"]
    broker = image.cluster.broker(broker_id)
    if broker is None:
        return [], assignment_error(ErrorCode.BROKER_ID_NOT_REGISTERED)
    if broker.epoch != body["broker_epoch"]:
        return [], assignment_error(ErrorCode.STALE_BROKER_EPOCH)
    records: list[MetadataRecord] = []
    directories: list[AssignReplicasToDirsResponseDirectories] = []
    for requested in body["directories"]:
        directory = bytes(requested["id"])
        offline = not is_online(directory, broker.log_dirs)
        accept = ctx.acceptable(removed=frozenset({broker_id}) if offline else frozenset())
        topics: list[AssignReplicasToDirsResponseDirectoriesTopics] = []
        for wanted in requested["topics"]:
            topic = image.topics.get_topic_by_id(bytes(wanted["topic_id"]))
            results: list[AssignReplicasToDirsResponseDirectoriesTopicsPartitions] = []
            for entry in wanted["partitions"]:
                index = entry["partition_index"]
                partition = None if topic is None else topic.partitions.get(index)
                if topic is None:
                    code = ErrorCode.UNKNOWN_TOPIC_ID
                elif partition is None:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif broker_id not in partition.replicas:
                    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                else:
                    code = ErrorCode.NONE
                    builder = ctx.builder(topic, index, partition, accept)
                    builder.target_directories[broker_id] = directory
                    if offline:
                        builder.target_isr = [r for r in partition.isr if r != broker_id]
                    record = builder.build()
                    if record is not None:
                        records.append(record)
                results.append({"partition_index": index, "error_code": int(code)})
            topics.append({"topic_id": bytes(wanted["topic_id"]), "partitions": results})
        directories.append({"id": directory, "topics": topics})
    return records, {"throttle_time_ms": 0, "error_code": 0, "directories": directories}


def _heartbeat_error(code: ErrorCode) -> BrokerHeartbeatResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": int(code),
        "is_caught_up": False,
        "is_fenced": True,
        "should_shut_down": False,
    }
