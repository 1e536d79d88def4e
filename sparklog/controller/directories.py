"""Replicas in log directories on the controller (KIP-858, JBOD in KRaft).

As Kafka 4.x's ``DirectoryId``, ``ClusterControlManager.defaultDir`` and
``ReplicationControlManager.handleDirectoriesOffline``/``handleAssignReplicasToDirs``:

- Every partition names, for each replica, the directory holding it
  (``PartitionRecord``/``PartitionChangeRecord.directories``, parallel to ``replicas``). Three
  reserved ids: MIGRATING (the zero uuid: placed before directories were tracked), UNASSIGNED
  (0,1: not placed yet) and LOST (0,2: in some offline dir). MIGRATING and UNASSIGNED count as
  online, LOST as offline; a real id is online while the broker's registration lists it (a
  registration with no dirs at all, from before 3.7-IV2, counts every dir online).
- Directory assignment exists from ``metadata.version`` 3.7-IV2 (level 17) on. Before it every
  new replica is MIGRATING and offline dirs change nothing. From it a new replica on a broker
  with exactly one registered dir is placed in that dir at once (no AssignReplicasToDirs for
  single-dir brokers: the 20,000-partition create stays one record a partition); on a broker
  with several it is UNASSIGNED until the broker reports where it put it.
- AssignReplicasToDirs (73): each named partition that has the broker as a replica gets one
  PartitionChangeRecord setting its directory (only if it changes); a partition assigned to a
  dir the broker no longer has online also leaves the broker's leadership and ISR.
- A heartbeat naming registered dirs in ``offline_log_dirs``: every partition whose replica on
  that broker is in one of them leaves the broker's leadership and ISR (the fenced-broker
  rules, see :mod:`sparklog.controller.replication_control`, for those partitions only), and
  a BrokerRegistrationChangeRecord keeps only the remaining dirs. A replica in an offline dir
  is never an acceptable leader (Kafka's ``LeaderAcceptor``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from sparklog.metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration
from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    AssignReplicasToDirsRequest,
    AssignReplicasToDirsResponse,
)

MIGRATING: Final = b"\x00" * 16
UNASSIGNED: Final = b"\x00" * 15 + b"\x01"
LOST: Final = b"\x00" * 15 + b"\x02"
# metadata.version 3.7-IV2: directory assignment (Kafka's isDirectoryAssignmentSupported).
DIRECTORY_ASSIGNMENT_LEVEL: Final = 17
# Kafka's AssignReplicasToDirsRequest.MAX_ASSIGNMENTS_PER_REQUEST.
MAX_ASSIGNMENTS_PER_REQUEST: Final = 2250


def assignment_supported(metadata_version: int) -> bool:
    return metadata_version >= DIRECTORY_ASSIGNMENT_LEVEL


def is_online(directory: bytes, online_dirs: Sequence[bytes]) -> bool:
    """Kafka's ``DirectoryId.isOnline``."""
    if directory in (UNASSIGNED, MIGRATING):
        return True
    if directory == LOST:
        return False
    return not online_dirs or directory in online_dirs


def directory_of(partition: PartitionRegistration, broker_id: int) -> bytes:
    """The directory ``partition``'s replica on ``broker_id`` is in (MIGRATING if untracked)."""
    if len(partition.directories) != len(partition.replicas):
        return MIGRATING
    try:
        return partition.directories[partition.replicas.index(broker_id)]
    except ValueError:
        return MIGRATING


def replica_dir_online(image: MetadataImage, partition: PartitionRegistration, broker: int) -> bool:
    """Kafka's ``ClusterControlManager.hasOnlineDir`` for ``partition``'s replica on ``broker``."""
    registration = image.cluster.broker(broker)
    if registration is None:
        return False
    return is_online(directory_of(partition, broker), registration.log_dirs)


def default_dir(image: MetadataImage, broker_id: int) -> bytes:
    """Where a new replica on ``broker_id`` goes before the broker says (``defaultDir``)."""
    if not assignment_supported(image.features.metadata_version):
        return MIGRATING
    registration = image.cluster.broker(broker_id)
    if registration is None:
        return UNASSIGNED
    if not registration.log_dirs:
        return MIGRATING
    if len(registration.log_dirs) == 1:
        return registration.log_dirs[0]
    return UNASSIGNED


def newly_offline(broker: BrokerRegistration, reported: Iterable[bytes]) -> list[bytes]:
    """Registered dirs of ``broker`` among ``reported`` (``directoryIntersection``)."""
    offline = {bytes(d) for d in reported}
    return [d for d in broker.log_dirs if d in offline]


def partitions_in_dirs(
    image: MetadataImage, broker_id: int, dirs: Iterable[bytes]
) -> set[tuple[bytes, int]]:
    """(topic id, partition) of every replica of ``broker_id`` placed in one of ``dirs``."""
    wanted = set(dirs)
    found = set()
    for topic in image.topics.by_id.values():
        for partition_id, partition in topic.partitions.items():
            if broker_id in partition.replicas and directory_of(partition, broker_id) in wanted:
                found.add((topic.topic_id, partition_id))
    return found


def assignments_of(request: Mapping[str, Any]) -> list[tuple[bytes, bytes, int]]:
    """(dir id, topic id, partition) of every assignment an AssignReplicasToDirs request names."""
    return [
        (bytes(d["id"]), bytes(t["topic_id"]), int(p["partition_index"]))
        for d in request.get("directories") or ()
        for t in d.get("topics") or ()
        for p in t.get("partitions") or ()
    ]


def assignment_request(
    broker_id: int, broker_epoch: int, assignments: Iterable[tuple[bytes, bytes, int]]
) -> AssignReplicasToDirsRequest:
    """An AssignReplicasToDirs request body for (dir id, topic id, partition) triples."""
    by_dir: dict[bytes, dict[bytes, list[int]]] = {}
    for directory, topic_id, partition in assignments:
        by_dir.setdefault(directory, {}).setdefault(topic_id, []).append(partition)
    return {
        "broker_id": broker_id,
        "broker_epoch": broker_epoch,
        "directories": [
            {
                "id": directory,
                "topics": [
                    {
                        "topic_id": topic_id,
                        "partitions": [{"partition_index": p} for p in sorted(partitions)],
                    }
                    for topic_id, partitions in topics.items()
                ],
            }
            for directory, topics in by_dir.items()
        ],
    }


def registration_change(broker: BrokerRegistration, online: Sequence[bytes]) -> MetadataRecord:
    """The BrokerRegistrationChangeRecord keeping only ``online`` dirs (nothing else changes)."""
    return make_record(
        "BrokerRegistrationChangeRecord",
        {
            "broker_id": broker.broker_id,
            "broker_epoch": broker.epoch,
            "fenced": 0,
            "in_controlled_shutdown": 0,
            "log_dirs": list(online),
        },
    )


def assignment_error(code: ErrorCode) -> AssignReplicasToDirsResponse:
    return {"throttle_time_ms": 0, "error_code": int(code), "directories": []}
