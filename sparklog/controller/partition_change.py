"""AlterPartition on the controller: a partition leader's ISR change, checked and recorded.

:func:`alter_partition` is a pure function of the controller's committed image and one
AlterPartition request (the codec's dict), returning the PartitionChangeRecords to append and
the response to send once they commit, like every controller operation (see
:mod:`sparklog.controller.quorum_controller`). It follows Kafka 4.x's
``ReplicationControlManager.alterPartition``: the same checks, in the same order, with the
same error codes.

- The sender's broker epoch must match its registration, else the whole request fails with a
  top-level STALE_BROKER_EPOCH (also when the sender is not registered at all): a broker that
  restarted since it computed the change must not rewrite an ISR.
- Per topic: an unknown (or zero) topic id answers UNKNOWN_TOPIC_ID for each of its
  partitions (v0-1, by name: UNKNOWN_TOPIC_OR_PARTITION).
- Per partition, in order: unknown partition -> UNKNOWN_TOPIC_OR_PARTITION; a leader epoch or
  partition epoch *ahead* of ours -> NOT_CONTROLLER (this controller is behind: the sender
  should find the active one); an older leader epoch -> FENCED_LEADER_EPOCH; a sender that is
  not the current leader -> INVALID_REQUEST; an older partition epoch ->
  INVALID_UPDATE_VERSION; an ISR with duplicates or non-replicas, or without the leader ->
  INVALID_REQUEST; RECOVERING with more than one ISR member, or RECOVERED -> RECOVERING ->
  INVALID_REQUEST; an ISR member that is unregistered, shutting down, fenced, or (v3) whose
  broker epoch differs from its registration (-1 skips that check) -> INELIGIBLE_REPLICA
  (OPERATION_NOT_ATTEMPTED before v2).
- An accepted change is built by the
  :class:`~sparklog.controller.partition_change_builder.PartitionChangeBuilder`: one
  PartitionChangeRecord carrying only what changed (``isr``, ``leader_recovery_state``, the
  ELR when the ISR falls below min.insync.replicas, and the completion of a reassignment once
  every adding replica is in the ISR). Its replay bumps the partition epoch; the leader stays
  (every ISR member, leader included, was just checked eligible) unless completing a
  reassignment removed it, which answers NEW_LEADER_ELECTED (FENCED_LEADER_EPOCH before v3)
  with the record written. A change that changes nothing answers success with the current
  state and writes nothing.
- The response of a success carries the partition as it will be after replay: leader, leader
  epoch, ISR, recovery state, partition epoch. A partition named twice in one request is judged
  the second time against the state the first entry produced.

"""

from __future__ import annotations

from collections.abc import Sequence

from sparklog.controller.configs import TopicConfigPolicy
from sparklog.controller.replication_control import ReplicationContext
from sparklog.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from sparklog.metadata.records import MetadataRecord
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.kafka_uuid import ZERO_UUID
from sparklog.protocol.message_types import (
    AlterPartitionRequest,
    AlterPartitionRequestTopics,
    AlterPartitionRequestTopicsPartitions,
    AlterPartitionResponse,
    AlterPartitionResponseTopics,
    AlterPartitionResponseTopicsPartitions,
)

RECOVERED = 0
RECOVERING = 1
# A broker epoch of -1 in NewIsrWithEpochs means "do not check" (what v0-2 imply).
NO_EPOCH_CHECK = -1


def alter_partition(
    ctx: ReplicationContext | MetadataImage, request: AlterPartitionRequest, version: int
) -> tuple[list[MetadataRecord], AlterPartitionResponse]:
    """Decide an AlterPartition request: (records to append, response body). A bare image
    means the default topic configs."""
    if isinstance(ctx, MetadataImage):
        ctx = ReplicationContext(ctx, TopicConfigPolicy())
    image = ctx.image
    broker_id = request["broker_id"]
    sender = image.cluster.broker(broker_id)
    if sender is None or sender.epoch != request["broker_epoch"]:
        return [], {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.STALE_BROKER_EPOCH),
            "topics": [],
        }
    records: list[MetadataRecord] = []
    # Partitions changed earlier in this request, so a repeated entry sees its own effect.
    changed: dict[tuple[bytes, int], PartitionRegistration] = {}
    topics_out: list[AlterPartitionResponseTopics] = []
    for topic_data in request["topics"]:
        topic, topic_out, unknown = _resolve_topic(image, topic_data, version)
        partitions_out: list[AlterPartitionResponseTopicsPartitions] = []
        topic_out["partitions"] = partitions_out
        topics_out.append(topic_out)
        for partition_data in topic_data["partitions"]:
            index = partition_data["partition_index"]
            if topic is None:
                partitions_out.append(_partition_error(index, unknown))
                continue
            current = changed.get((topic.topic_id, index), topic.partitions.get(index))
            new_isr = _new_isr(partition_data, version)
            error = _validate(image, broker_id, current, partition_data, new_isr, version)
            if error is not None:
                partitions_out.append(_partition_error(index, error))
                continue
            assert current is not None
            builder = ctx.builder(topic, index, current, ctx.acceptable())
            builder.target_isr = [member for member, _ in new_isr]
            builder.target_recovery_state = partition_data["leader_recovery_state"]
            record = builder.build()
            if record is not None:
                records.append(record)
                current = current.merge(record.data)
                changed[(topic.topic_id, index)] = current
                if current.leader != broker_id:
                    # Completing a reassignment moved the leadership off the sender: it must
                    # learn the new state from the metadata log before anything else.
                    code = (
                        ErrorCode.NEW_LEADER_ELECTED
                        if version >= 3
                        else ErrorCode.FENCED_LEADER_EPOCH
                    )
                    partitions_out.append(_partition_error(index, code))
                    continue
            partitions_out.append(
                {
                    "partition_index": index,
                    "error_code": 0,
                    "leader_id": current.leader,
                    "leader_epoch": current.leader_epoch,
                    "isr": list(current.isr),
                    "leader_recovery_state": current.leader_recovery_state,
                    "partition_epoch": current.partition_epoch,
                }
            )
    return records, {"throttle_time_ms": 0, "error_code": 0, "topics": topics_out}


def _resolve_topic(
    image: MetadataImage, topic_data: AlterPartitionRequestTopics, version: int
) -> tuple[TopicImage | None, AlterPartitionResponseTopics, ErrorCode]:
    """The topic a request entry names, its response entry, and the error if unknown."""
    if version >= 2:
        topic_id = bytes(topic_data["topic_id"] or ZERO_UUID)
        topic = None if topic_id == ZERO_UUID else image.topics.get_topic_by_id(topic_id)
        return topic, {"topic_id": topic_id}, ErrorCode.UNKNOWN_TOPIC_ID
    name = topic_data["topic_name"] or ""
    return image.topics.get_topic(name), {"topic_name": name}, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _new_isr(
    partition_data: AlterPartitionRequestTopicsPartitions, version: int
) -> list[tuple[int, int]]:
    """The requested ISR as (broker id, broker epoch); before v3 epochs are unchecked."""
    if version >= 3:
        return [
            (state["broker_id"], state["broker_epoch"])
            for state in partition_data["new_isr_with_epochs"]
        ]
    return [(b, NO_EPOCH_CHECK) for b in partition_data["new_isr"]]


def _validate(
    image: MetadataImage,
    broker_id: int,
    partition: PartitionRegistration | None,
    partition_data: AlterPartitionRequestTopicsPartitions,
    new_isr: Sequence[tuple[int, int]],
    version: int,
) -> ErrorCode | None:
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    leader_epoch = partition_data["leader_epoch"]
    partition_epoch = partition_data["partition_epoch"]
    if leader_epoch > partition.leader_epoch or partition_epoch > partition.partition_epoch:
        # The leader has seen metadata this controller has not: it is not (or no longer)
        # the active one, and the leader should look for the one that is.
        return ErrorCode.NOT_CONTROLLER
    if leader_epoch < partition.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if broker_id != partition.leader:
        return ErrorCode.INVALID_REQUEST
    if partition_epoch < partition.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    isr_ids = [member for member, _ in new_isr]
    if not _isr_within_replicas(partition.replicas, isr_ids):
        return ErrorCode.INVALID_REQUEST
    if partition.leader not in isr_ids:
        return ErrorCode.INVALID_REQUEST
    recovery = partition_data["leader_recovery_state"]
    if recovery not in (RECOVERED, RECOVERING):
        return ErrorCode.INVALID_REQUEST
    if recovery == RECOVERING and len(isr_ids) > 1:
        return ErrorCode.INVALID_REQUEST
    if partition.leader_recovery_state == RECOVERED and recovery == RECOVERING:
        return ErrorCode.INVALID_REQUEST
    if _ineligible(image, new_isr):
        return ErrorCode.INELIGIBLE_REPLICA if version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED
    return None


def _isr_within_replicas(replicas: Sequence[int], isr: Sequence[int]) -> bool:
    """No duplicates, no negative ids, every member a replica (Kafka's Replicas.validateIsr)."""
    return len(set(isr)) == len(isr) and all(b >= 0 and b in replicas for b in isr)


def _ineligible(image: MetadataImage, new_isr: Sequence[tuple[int, int]]) -> list[int]:
    """ISR members that may not be in sync: gone, shutting down, fenced or restarted since."""
    ineligible = []
    for member, epoch in new_isr:
        broker = image.cluster.broker(member)
        if (
            broker is None
            or broker.in_controlled_shutdown
            or broker.fenced
            or (epoch != NO_EPOCH_CHECK and epoch != broker.epoch)
        ):
            ineligible.append(member)
    return ineligible


def _partition_error(index: int, code: ErrorCode) -> AlterPartitionResponseTopicsPartitions:
    # The other fields keep Kafka's zero defaults: a leader reads them only on success.
    return {
        "partition_index": index,
        "error_code": int(code),
        "leader_id": 0,
        "leader_epoch": 0,
        "isr": [],
        "leader_recovery_state": RECOVERED,
        "partition_epoch": 0,
    }
