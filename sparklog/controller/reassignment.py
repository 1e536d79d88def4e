"""Partition reassignment on the controller (KIP-455): AlterPartitionReassignments (45) and
ListPartitionReassignments (46).

Pure functions of the committed image, like every controller operation. Rules (Kafka's
``ReplicationControlManager`` with ``PartitionReassignmentReplicas`` /
``PartitionReassignmentRevert``):

- A target replica list must be non-empty, without duplicates, and name registered brokers
  (INVALID_REPLICA_ASSIGNMENT otherwise). Unknown topics or partitions answer
  UNKNOWN_TOPIC_OR_PARTITION. Each partition succeeds or fails on its own.
- Starting: ``adding`` = target - current, ``removing`` = current - target, and the replica
  set becomes target + removing. Nothing else changes then: the adding replicas are followers
  that fetch, catch up and are added to the ISR by the leader's ordinary AlterPartition
  expansion. The AlterPartition that puts the last adding replica in the ISR completes the
  reassignment (see the partition change builder): removing replicas leave the replica set and
  ISR, and a removed leader hands leadership to the first remaining ISR replica. A target
  that only drops or reorders replicas completes at once.
- A new target replaces an ongoing reassignment; the replica set starts from the current one.
- Cancelling (null replicas) without a reassignment in progress answers
  NO_REASSIGNMENT_IN_PROGRESS; otherwise the adding replicas leave the replica set and ISR and
  adding/removing are cleared. If only adding replicas were in the ISR, the revert needs an
  unclean election and is refused (INVALID_REPLICA_ASSIGNMENT) unless the topic allows one.
- v1 (KIP-860) with ``allow_replication_factor_change`` false refuses a target whose length
  differs from the current replication factor (INVALID_REPLICATION_FACTOR).
- Listing shows, per partition in progress, the replica set with its adding and removing
  replicas; null topics list every reassignment.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparklog.controller.partition_change_builder import Election, ReassignmentReplicas
from sparklog.controller.replication_control import ReplicationContext
from sparklog.controller.topics import check_manual_assignment
from sparklog.metadata.image import PartitionRegistration, TopicImage
from sparklog.metadata.records import MetadataRecord
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.message_types import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionReassignmentsResponseResponses,
    AlterPartitionReassignmentsResponseResponsesPartitions,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponseTopics,
    ListPartitionReassignmentsResponseTopicsPartitions,
)


def alter_partition_reassignments(
    ctx: ReplicationContext, request: AlterPartitionReassignmentsRequest
) -> tuple[list[MetadataRecord], AlterPartitionReassignmentsResponse]:
    records: list[MetadataRecord] = []
    responses: list[AlterPartitionReassignmentsResponseResponses] = []
    allow_rf_change = request["allow_replication_factor_change"]
    for topic_data in request["topics"]:
        name = topic_data["name"]
        partitions_out: list[AlterPartitionReassignmentsResponseResponsesPartitions] = []
        responses.append({"name": name, "partitions": partitions_out})
        topic = ctx.image.topics.get_topic(name)
        for partition_data in topic_data["partitions"]:
            index = partition_data["partition_index"]
            entry: AlterPartitionReassignmentsResponseResponsesPartitions = {
                "partition_index": index,
                "error_code": 0,
                "error_message": None,
            }
            try:
                partition = None if topic is None else topic.partitions.get(index)
                if topic is None or partition is None:
                    raise KafkaApiError(
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"Unable to find partition {name}:{index}.",
                    )
                target = partition_data["replicas"]
                if target is None:
                    record = _cancel(ctx, topic, index, partition)
                else:
                    replicas = list(target)
                    _check_replication_factor(partition, replicas, allow_rf_change)
                    record = _change(ctx, topic, index, partition, replicas)
                if record is not None:
                    records.append(record)
            except KafkaApiError as exc:
                entry["error_code"] = int(exc.code)
                entry["error_message"] = exc.message
            partitions_out.append(entry)
    return records, {
        "throttle_time_ms": 0,
        "allow_replication_factor_change": allow_rf_change,
        "error_code": 0,
        "error_message": None,
        "responses": responses,
    }


def _check_replication_factor(
    partition: PartitionRegistration, target: Sequence[int], allowed: bool
) -> None:
    # The replication factor a reassignment starts from is the original one (replicas minus
    # those being added), as KIP-860 defines it.
    current = len(partition.replicas) - len(partition.adding_replicas)
    if not allowed and len(target) != current:
        raise KafkaApiError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"The replication factor is changed from {current} to {len(target)} but "
            "allowReplicationFactorChange is false.",
        )


def _change(
    ctx: ReplicationContext,
    topic: TopicImage,
    index: int,
    partition: PartitionRegistration,
    target: list[int],
) -> MetadataRecord | None:
    check_manual_assignment(ctx.image, target)
    reassignment = ReassignmentReplicas.of(partition.replicas, target)
    builder = ctx.builder(topic, index, partition, ctx.acceptable())
    builder.target_replicas = list(reassignment.replicas)
    builder.target_removing = list(reassignment.removing)
    builder.target_adding = list(reassignment.adding)
    return builder.build()


def _cancel(
    ctx: ReplicationContext, topic: TopicImage, index: int, partition: PartitionRegistration
) -> MetadataRecord | None:
    if not partition.adding_replicas and not partition.removing_replicas:
        raise KafkaApiError(
            ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
            f"No ongoing reassignment for {topic.name}:{index}.",
        )
    adding = set(partition.adding_replicas)
    replicas = [r for r in partition.replicas if r not in adding]
    isr = [r for r in partition.isr if r not in adding]
    election = None
    if not isr:
        if not ctx.topic_config(topic.name).unclean_leader_election_enable:
            raise KafkaApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Unable to revert partition assignment for {topic.name}:{index} because it "
                "would require an unclean leader election.",
            )
        isr, election = list(replicas), Election.UNCLEAN
    builder = ctx.builder(topic, index, partition, ctx.acceptable(), election)
    builder.target_isr = isr
    builder.target_replicas = replicas
    builder.target_removing = []
    builder.target_adding = []
    return builder.build()


def list_partition_reassignments(
    ctx: ReplicationContext, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    wanted = request["topics"]
    if wanted is None:
        targets = [
            (topic.name, sorted(topic.partitions))
            for topic in sorted(ctx.image.topics.by_id.values(), key=lambda t: t.name)
        ]
    else:
        targets = [(t["name"], list(t["partition_indexes"])) for t in wanted]
    topics_out: list[ListPartitionReassignmentsResponseTopics] = []
    for name, indexes in targets:
        topic = ctx.image.topics.get_topic(name)
        if topic is None:
            continue
        partitions_out: list[ListPartitionReassignmentsResponseTopicsPartitions] = []
        for index in indexes:
            partition = topic.partitions.get(index)
            if partition is None or not (partition.adding_replicas or partition.removing_replicas):
                continue
            partitions_out.append(
                {
                    "partition_index": index,
                    "replicas": list(partition.replicas),
                    "adding_replicas": list(partition.adding_replicas),
                    "removing_replicas": list(partition.removing_replicas),
                }
            )
        if partitions_out:
            topics_out.append({"name": name, "partitions": partitions_out})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": topics_out}
