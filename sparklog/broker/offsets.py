"""ListOffsets (2), OffsetForLeaderEpoch (23) and DeleteRecords (21).

ListOffsets special timestamps, as Kafka 4.x: -2 earliest (the log start offset, which may lie
in remote storage), -1 latest (high watermark, or the last stable offset under read_committed),
-3 the offset of the record with the largest timestamp (KIP-734), -4 earliest local offset and
-5 latest tiered offset (KIP-1005: the highest offset copied to remote storage, -1 if none).
A real timestamp answers the first offset whose timestamp is at least that, or -1 if none.
"""

from __future__ import annotations

from sparklog.broker.context import BrokerContext
from sparklog.broker.partition import Partition
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsResponseTopics,
    DeleteRecordsResponseTopicsPartitions,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsResponseTopics,
    ListOffsetsResponseTopicsPartitions,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResponseTopics,
    OffsetForLeaderEpochResponseTopicsPartitions,
)

EARLIEST = -2
LATEST = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5


async def _list_one(
    ctx: BrokerContext, partition: Partition, timestamp: int, isolation_level: int
) -> tuple[int, int, int]:
    """(timestamp, offset, leader_epoch) for one ListOffsets query."""
    log = partition.log
    if timestamp == EARLIEST:
        offset = partition.log_start_offset
        return -1, offset, log.epoch_cache.epoch_for_offset(offset)
    if timestamp == EARLIEST_LOCAL:
        offset = log.local_log_start_offset
        return -1, offset, log.epoch_cache.epoch_for_offset(offset)
    if timestamp == LATEST:
        offset = partition.last_stable_offset if isolation_level == 1 else partition.high_watermark
        return -1, offset, log.epoch_cache.epoch_for_offset(offset)
    if timestamp == LATEST_TIERED:
        offset = log.highest_remote_offset
        return -1, offset, log.epoch_cache.epoch_for_offset(offset) if offset >= 0 else -1
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp_offset()
    elif timestamp < 0:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Invalid timestamp {timestamp}")
    else:
        if log.remote_storage and ctx.remote_offset_for_timestamp is not None:
            remote = await ctx.remote_offset_for_timestamp(partition, timestamp)
            if remote is not None and remote[1] < log.local_log_start_offset:
                return remote
        found = log.offset_for_timestamp(timestamp)
    if found is None:
        return -1, -1, -1
    upper = partition.last_stable_offset if isolation_level == 1 else partition.high_watermark
    if found.offset >= upper:
        return -1, -1, -1
    return found.timestamp, found.offset, found.leader_epoch


async def handle_list_offsets(
    ctx: BrokerContext, request: TypedRequest[ListOffsetsRequest]
) -> ListOffsetsResponse:
    body = request.body
    isolation_level = body["isolation_level"]
    topics: list[ListOffsetsResponseTopics] = []
    for topic in body["topics"]:
        partitions: list[ListOffsetsResponseTopicsPartitions] = []
        for p in topic["partitions"]:
            index = p["partition_index"]
            entry: ListOffsetsResponseTopicsPartitions = {
                "partition_index": index,
                "error_code": 0,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
            }
            try:
                partition = ctx.replica_manager.leader_partition(
                    topic["name"], index, p["current_leader_epoch"]
                )
                ts, offset, epoch = await _list_one(ctx, partition, p["timestamp"], isolation_level)
                entry["timestamp"] = ts
                entry["offset"] = offset
                entry["leader_epoch"] = epoch
            except KafkaApiError as exc:
                entry["error_code"] = int(exc.code)
            partitions.append(entry)
        topics.append({"name": topic["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


async def handle_offset_for_leader_epoch(
    ctx: BrokerContext, request: TypedRequest[OffsetForLeaderEpochRequest]
) -> OffsetForLeaderEpochResponse:
    topics: list[OffsetForLeaderEpochResponseTopics] = []
    for topic in request.body["topics"]:
        partitions: list[OffsetForLeaderEpochResponseTopicsPartitions] = []
        for p in topic["partitions"]:
            entry: OffsetForLeaderEpochResponseTopicsPartitions = {
                "error_code": 0,
                "partition": p["partition"],
                "leader_epoch": -1,
                "end_offset": -1,
            }
            try:
                partition = ctx.replica_manager.leader_partition(
                    topic["topic"], p["partition"], p["current_leader_epoch"]
                )
                epoch, end_offset = partition.log.end_offset_for_epoch(p["leader_epoch"])
                entry["leader_epoch"] = epoch
                entry["end_offset"] = end_offset
            except KafkaApiError as exc:
                entry["error_code"] = int(exc.code)
            partitions.append(entry)
        topics.append({"topic": topic["topic"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


async def handle_delete_records(
    ctx: BrokerContext, request: TypedRequest[DeleteRecordsRequest]
) -> DeleteRecordsResponse:
    topics: list[DeleteRecordsResponseTopics] = []
    for topic in request.body["topics"]:
        partitions: list[DeleteRecordsResponseTopicsPartitions] = []
        for p in topic["partitions"]:
            entry: DeleteRecordsResponseTopicsPartitions = {
                "partition_index": p["partition_index"],
                "low_watermark": -1,
                "error_code": 0,
            }
            try:
                entry["low_watermark"] = ctx.replica_manager.delete_records(
                    topic["name"], p["partition_index"], p["offset"]
                )
            except KafkaApiError as exc:
                entry["error_code"] = int(exc.code)
            partitions.append(entry)
        topics.append({"name": topic["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
