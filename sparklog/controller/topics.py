"""Topic operations of the controller: CreateTopics, DeleteTopics, CreatePartitions.

Pure functions from (the controller's image, a wire-level request dict) to (records, response
dict), following Kafka's ``ReplicationControlManager`` and ``ControllerApis``: the same checks,
in the same order, with the same error codes and messages. Topics of one request are judged
independently (one bad topic does not fail the others) and all records of a request go into
one atomic batch. Request and response dicts use the codec's snake_case field names;
absent keys take the wire defaults, so hand-built requests work too.

Bounded operations (Kafka's ``QuorumController.MAX_RECORDS_PER_USER_OP`` and ``BoundedList``):
one CreateTopics or CreatePartitions may write at most :data:`MAX_RECORDS_PER_USER_OP` records
(one TopicRecord, one ConfigRecord per override and one PartitionRecord per partition), so a
topic of 10,000 partitions or more cannot be created in one request. A request over the bound is
refused as a whole, validate-only or not, before any replica is placed: every topic gets
POLICY_VIOLATION with Kafka's "Unable to perform excessively large batch operation." and what
the bound is. Larger topics are grown with further CreatePartitions of at most 10,000
partitions each; every accepted operation is therefore one bounded metadata batch.

Placement: replicas go round-robin over the unfenced brokers (sorted by id) from a random
start, ISR = the replicas, leader = the first replica (Kafka's StripedReplicaPlacer without
racks). A partition is created with leader epoch 0 and partition epoch 0.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sparklog.controller.configs import TopicConfigPolicy
from sparklog.controller.directories import default_dir
from sparklog.metadata.image import MetadataImage, PartitionRegistration
from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.kafka_uuid import ZERO_UUID
from sparklog.protocol.message_types import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopics,
    CreatePartitionsResponse,
    CreatePartitionsResponseResults,
    CreateTopicsRequest,
    CreateTopicsRequestTopics,
    CreateTopicsResponse,
    CreateTopicsResponseTopics,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseResponses,
)

MAX_TOPIC_NAME_LENGTH = 249
# Kafka's QuorumController.MAX_RECORDS_PER_USER_OP (= MAX_RECORDS_PER_BATCH).
MAX_RECORDS_PER_USER_OP = 10_000
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``; raises KafkaApiError(INVALID_TOPIC_EXCEPTION)."""
    if not name:
        raise KafkaApiError(
            ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty"
        )
    if name in (".", ".."):
        raise KafkaApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise KafkaApiError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
            f"characters, topic name: {name}",
        )
    if not _LEGAL_TOPIC.fullmatch(name):
        raise KafkaApiError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'",
        )


def _collision_key(name: str) -> str:
    return name.replace(".", "_")


@dataclass(slots=True)
class TopicDefaults:
    num_partitions: int = 1
    replication_factor: int = 1
    delete_topic_enable: bool = True
    config_policy: TopicConfigPolicy = field(default_factory=TopicConfigPolicy)
    new_topic_id: Callable[[], bytes] = field(default=lambda: ZERO_UUID)
    rng: random.Random = field(default_factory=random.Random)


class BatchTooLargeError(Exception):
    """Kafka's ``BoundedListTooLongException``: the operation would write more than
    :data:`MAX_RECORDS_PER_USER_OP` records. Not a per-topic error: the whole request fails."""


def excessively_large_batch(needed: int, what: str) -> KafkaApiError:
    """The whole-request POLICY_VIOLATION Kafka answers for a :class:`BatchTooLargeError`."""
    return KafkaApiError(
        ErrorCode.POLICY_VIOLATION,
        f"Unable to perform excessively large batch operation. {what} needs at least {needed} "
        f"metadata records, but one operation may write at most {MAX_RECORDS_PER_USER_OP} "
        "(one per partition, plus one per topic and per config); create at most 9999 "
        "partitions per topic in one request and add more with CreatePartitions, at most "
        f"{MAX_RECORDS_PER_USER_OP} partitions at a time.",
    )


def _reserve(planned: int, more: int) -> int:
    """``planned + more``, or :class:`BatchTooLargeError` if that is over the bound."""
    if planned + more > MAX_RECORDS_PER_USER_OP:
        raise BatchTooLargeError(planned + more)
    return planned + more


class _Batch:
    """Records planned by one request, plus the topic names/ids it already claimed."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.records: list[MetadataRecord] = []
        self.claimed_names: dict[str, str] = {}
        # Records this request would write, validate-only included (Kafka bounds both).
        self.planned = 0

    def topic_exists(self, name: str) -> bool:
        return self.image.topics.get_topic(name) is not None or name in self.claimed_names.values()


def _usable_brokers(image: MetadataImage) -> list[int]:
    return [b.broker_id for b in image.cluster.unfenced_brokers() if not b.in_controlled_shutdown]


def place_replicas(
    image: MetadataImage,
    start_partition: int,
    count: int,
    replication_factor: int,
    rng: random.Random,
) -> list[list[int]]:
    brokers = _usable_brokers(image)
    registered = len(image.cluster.brokers)
    if not brokers:
        raise KafkaApiError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): All brokers are "
            "currently fenced.",
        )
    if replication_factor > len(brokers):
        raise KafkaApiError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): The target "
            f"replication factor of {replication_factor} cannot be reached because only "
            f"{len(brokers)} broker(s) are registered"
            + ("." if registered == len(brokers) else f" and unfenced ({registered} registered)."),
        )
    start = rng.randrange(len(brokers))
    return [
        [
            brokers[(start + start_partition + p + i) % len(brokers)]
            for i in range(replication_factor)
        ]
        for p in range(count)
    ]


def check_manual_assignment(
    image: MetadataImage, assignment: Sequence[int], expected_rf: int | None = None
) -> None:
    """A manual replica assignment (CreateTopics, CreatePartitions, a reassignment's target)
    names registered brokers, each once, and ``expected_rf`` of them when given; else
    INVALID_REPLICA_ASSIGNMENT with Kafka's message."""
    if not assignment:
        raise KafkaApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        )
    seen: set[int] = set()
    for broker_id in assignment:
        if broker_id in seen:
            raise KafkaApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {broker_id} more than once.",
            )
        seen.add(broker_id)
        if broker_id not in image.cluster.brokers:
            raise KafkaApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {broker_id}, but no such "
                "broker is registered.",
            )
    if expected_rf is not None and len(assignment) != expected_rf:
        raise KafkaApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"The manual partition assignment includes a partition with {len(assignment)} "
            f"replica(s), but this is not consistent with previous partitions, which have "
            f"{expected_rf} replica(s).",
        )


def _new_partition(
    image: MetadataImage, partition_id: int, replicas: Sequence[int]
) -> PartitionRegistration:
    usable = set(_usable_brokers(image))
    isr = tuple(b for b in replicas if b in usable)
    if not isr:
        raise KafkaApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"All brokers specified in the manual partition assignment for partition "
            f"{partition_id} are fenced or in controlled shutdown.",
        )
    return PartitionRegistration(
        replicas=tuple(replicas),
        isr=isr,
        leader=isr[0],
        leader_epoch=0,
        partition_epoch=0,
        # Kafka's defaultDir: the only dir of a single-dir broker, else UNASSIGNED (from
        # 3.7-IV2; MIGRATING before) until the broker reports where it put the replica.
        directories=tuple(default_dir(image, b) for b in replicas),
    )


def create_topics(
    image: MetadataImage, request: CreateTopicsRequest, defaults: TopicDefaults
) -> tuple[list[MetadataRecord], CreateTopicsResponse]:
    batch = _Batch(image)
    validate_only = request["validate_only"]
    topics = request["topics"]
    counts: dict[str, int] = {}
    for topic in topics:
        counts[topic["name"]] = counts.get(topic["name"], 0) + 1
    results: list[CreateTopicsResponseTopics] = []
    for topic in topics:
        name = topic["name"]
        result: CreateTopicsResponseTopics = {
            "name": name,
            "topic_id": ZERO_UUID,
            "error_code": 0,
            "error_message": None,
        }
        try:
            if counts[name] > 1:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            result.update(_create_one(batch, topic, defaults, validate_only))
        except KafkaApiError as exc:
            result["error_code"] = int(exc.code)
            result["error_message"] = exc.message
        except BatchTooLargeError as exc:
            error = excessively_large_batch(exc.args[0], "This CreateTopics request")
            refused: list[CreateTopicsResponseTopics] = [
                {
                    "name": t["name"],
                    "topic_id": ZERO_UUID,
                    "error_code": int(error.code),
                    "error_message": error.message,
                }
                for t in topics
            ]
            return [], {"throttle_time_ms": 0, "topics": refused}
        results.append(result)
    return ([] if validate_only else batch.records), {"throttle_time_ms": 0, "topics": results}


def _create_one(
    batch: _Batch, topic: CreateTopicsRequestTopics, defaults: TopicDefaults, validate_only: bool
) -> CreateTopicsResponseTopics:
    name = topic["name"]
    image = batch.image
    validate_topic_name(name)
    if batch.topic_exists(name):
        raise KafkaApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    key = _collision_key(name)
    for existing in list(image.topics.by_name) + list(batch.claimed_names.values()):
        if existing != name and _collision_key(existing) == key:
            raise KafkaApiError(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Topic '{name}' collides with existing topic: {existing}",
            )
    num_partitions = topic["num_partitions"]
    replication_factor = topic["replication_factor"]
    assignments = topic["assignments"]
    planned_partitions = len(assignments) or (
        defaults.num_partitions if num_partitions == -1 else max(num_partitions, 0)
    )
    # Checked before any placement, so a request for a million partitions costs nothing.
    batch.planned = _reserve(batch.planned, 1 + len(topic["configs"]) + planned_partitions)
    if assignments:
        if num_partitions != -1:
            raise KafkaApiError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        if replication_factor != -1:
            raise KafkaApiError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but replicationFactor was not "
                "set to -1.",
            )
        indexes = sorted(a["partition_index"] for a in assignments)
        if indexes != list(range(len(assignments))):
            raise KafkaApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "Partitions should be a consecutive 0-based integer sequence",
            )
        replica_lists: list[list[int]] = []
        for assignment in sorted(assignments, key=lambda a: a["partition_index"]):
            expected = len(replica_lists[0]) if replica_lists else None
            check_manual_assignment(image, assignment["broker_ids"], expected)
            replica_lists.append(list(assignment["broker_ids"]))
    else:
        if num_partitions == -1:
            num_partitions = defaults.num_partitions
        elif num_partitions <= 0:
            raise KafkaApiError(
                ErrorCode.INVALID_PARTITIONS,
                "Number of partitions was set to an invalid non-positive value.",
            )
        if replication_factor == -1:
            replication_factor = defaults.replication_factor
        elif replication_factor <= 0:
            raise KafkaApiError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        replica_lists = place_replicas(image, 0, num_partitions, replication_factor, defaults.rng)
    overrides: dict[str, str] = {}
    for entry in topic["configs"]:
        value = entry["value"]
        if value is None:
            raise KafkaApiError(
                ErrorCode.INVALID_CONFIG,
                f"Null value not supported for topic configs: {entry['name']}",
            )
        overrides[entry["name"]] = value
    defaults.config_policy.validate_topic(overrides)
    registrations = [
        _new_partition(image, partition_id, replicas)
        for partition_id, replicas in enumerate(replica_lists)
    ]
    topic_id = ZERO_UUID if validate_only else defaults.new_topic_id()
    if not validate_only:
        batch.claimed_names[topic_id.hex()] = name
        batch.records.append(make_record("TopicRecord", {"name": name, "topic_id": topic_id}))
        for config_name, value in overrides.items():
            batch.records.append(
                defaults.config_policy.topic_config_record(name, config_name, value)
            )
        for partition_id, registration in enumerate(registrations):
            batch.records.append(registration.to_record(topic_id, partition_id))
    return {
        "topic_id": topic_id,
        "num_partitions": len(registrations),
        "replication_factor": len(replica_lists[0]),
        "configs": defaults.config_policy.describe_topic(overrides),
    }


def delete_topics(
    image: MetadataImage, request: DeleteTopicsRequest, version: int, defaults: TopicDefaults
) -> tuple[list[MetadataRecord], DeleteTopicsResponse]:
    wanted: list[tuple[str | None, bytes]]
    if version >= 6:
        wanted = [(t["name"], bytes(t["topic_id"] or ZERO_UUID)) for t in request["topics"]]
    else:
        wanted = [(name, ZERO_UUID) for name in request["topic_names"]]
    names = [n for n, i in wanted if n is not None and i == ZERO_UUID]
    ids = [i for _, i in wanted if i != ZERO_UUID]
    records: list[MetadataRecord] = []
    deleted: set[bytes] = set()
    responses: list[DeleteTopicsResponseResponses] = []
    for name, topic_id in wanted:
        response: DeleteTopicsResponseResponses = {
            "name": name,
            "topic_id": topic_id,
            "error_code": 0,
            "error_message": None,
        }
        try:
            if name is not None and topic_id != ZERO_UUID:
                raise KafkaApiError(
                    ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id."
                )
            if name is None and topic_id == ZERO_UUID:
                raise KafkaApiError(
                    ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified."
                )
            if (name is not None and names.count(name) > 1) or (
                topic_id != ZERO_UUID and ids.count(topic_id) > 1
            ):
                raise KafkaApiError(
                    ErrorCode.INVALID_REQUEST,
                    "Duplicate topic name." if name is not None else "Duplicate topic id.",
                )
            if not defaults.delete_topic_enable:
                raise KafkaApiError(
                    ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled."
                )
            if topic_id != ZERO_UUID:
                topic = image.topics.get_topic_by_id(topic_id)
                if topic is None:
                    raise KafkaApiError(
                        ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."
                    )
                response["name"] = topic.name
            else:
                assert name is not None
                topic = image.topics.get_topic(name)
                if topic is None:
                    raise KafkaApiError(
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        "This server does not host this topic-partition.",
                    )
                response["topic_id"] = topic.topic_id
            if topic.topic_id not in deleted:
                deleted.add(topic.topic_id)
                records.append(make_record("RemoveTopicRecord", {"topic_id": topic.topic_id}))
        except KafkaApiError as exc:
            response["error_code"] = int(exc.code)
            response["error_message"] = exc.message
        responses.append(response)
    return records, {"throttle_time_ms": 0, "responses": responses}


def create_partitions(
    image: MetadataImage, request: CreatePartitionsRequest, defaults: TopicDefaults
) -> tuple[list[MetadataRecord], CreatePartitionsResponse]:
    validate_only = request["validate_only"]
    topics = request["topics"]
    names = [t["name"] for t in topics]
    records: list[MetadataRecord] = []
    results: list[CreatePartitionsResponseResults] = []
    for topic in topics:
        name = topic["name"]
        result: CreatePartitionsResponseResults = {
            "name": name,
            "error_code": 0,
            "error_message": None,
        }
        try:
            if names.count(name) > 1:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            records.extend(_create_partitions_one(image, topic, defaults, len(records)))
        except KafkaApiError as exc:
            result["error_code"] = int(exc.code)
            result["error_message"] = exc.message
        except BatchTooLargeError as exc:
            error = excessively_large_batch(exc.args[0], "This CreatePartitions request")
            refused: list[CreatePartitionsResponseResults] = [
                {"name": t["name"], "error_code": int(error.code), "error_message": error.message}
                for t in topics
            ]
            return [], {"throttle_time_ms": 0, "results": refused}
        results.append(result)
    return ([] if validate_only else records), {"throttle_time_ms": 0, "results": results}


def _create_partitions_one(
    image: MetadataImage,
    topic: CreatePartitionsRequestTopics,
    defaults: TopicDefaults,
    planned: int,
) -> list[MetadataRecord]:
    name = topic["name"]
    existing = image.topics.get_topic(name)
    if existing is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find topic {name}")
    current = len(existing.partitions)
    count = topic["count"]
    if count < current:
        raise KafkaApiError(
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {name} currently has {current} partition(s); {count} would not be an "
            "increase.",
        )
    if count == current:
        raise KafkaApiError(
            ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
        )
    additional = count - current
    _reserve(planned, additional)
    first = existing.partitions.get(0)
    replication_factor = len(first.replicas) if first is not None else defaults.replication_factor
    assignments = topic["assignments"]
    if assignments is not None:
        if len(assignments) != additional:
            raise KafkaApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {additional} additional partition(s), but only "
                f"{len(assignments)} assignment(s) were specified.",
            )
        replica_lists = []
        for assignment in assignments:
            check_manual_assignment(image, assignment["broker_ids"], replication_factor)
            replica_lists.append(list(assignment["broker_ids"]))
    else:
        replica_lists = place_replicas(image, current, additional, replication_factor, defaults.rng)
    return [
        _new_partition(image, current + i, replicas).to_record(existing.topic_id, current + i)
        for i, replicas in enumerate(replica_lists)
    ]
