"""What this broker holds locally: DescribeLogDirs (35) and DescribeProducers (61).

Contract (Kafka's ``ReplicaManager.describeLogDirs`` / ``activeProducerState``):
- DescribeLogDirs answers one entry per configured log dir, in configuration order. An online
  dir lists the requested partitions it holds (a null ``topics`` asks for all) with their size
  in bytes, ``offset_lag`` = max(0, high watermark - log end offset) and ``is_future_key``
  false (this broker never moves replicas between dirs), and from v4 the file system's
  ``total_bytes`` / ``usable_bytes``. An offline dir is KAFKA_STORAGE_ERROR with no topics.
- DescribeProducers answers, per requested partition, every producer in the partition's
  producer state, on the leader or a follower (each replica keeps its own, as in Kafka). A
  partition the image does not know is UNKNOWN_TOPIC_OR_PARTITION; one with no replica here
  NOT_LEADER_OR_FOLLOWER; one in an offline log dir KAFKA_STORAGE_ERROR.
Both read local state only; they never block and never write.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from sparklog.broker.context import BrokerContext
from sparklog.broker.log_dir_failure import log_dir_of
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    DescribeLogDirsRequest,
    DescribeLogDirsRequestTopics,
    DescribeLogDirsResponse,
    DescribeLogDirsResponseResults,
    DescribeLogDirsResponseResultsTopicsPartitions,
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeProducersResponseTopicsPartitions,
)
from sparklog.storage.log import Log

Wanted = dict[str, set[int]] | None  # topic -> partitions; None means everything


def _wanted(topics: Iterable[DescribeLogDirsRequestTopics] | None) -> Wanted:
    if topics is None:
        return None
    out: dict[str, set[int]] = {}
    for t in topics:
        out.setdefault(t["topic"], set()).update(t["partitions"])
    return out


def _capacity(log_dir: str) -> tuple[int, int]:
    try:
        stats = os.statvfs(log_dir)
    except OSError:
        return -1, -1
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize


def _partition_entry(log: Log) -> DescribeLogDirsResponseResultsTopicsPartitions:
    return {
        "partition_index": log.partition,
        "partition_size": log.size_in_bytes,
        "offset_lag": max(0, log.high_watermark - log.log_end_offset),
        "is_future_key": False,
    }


async def handle_describe_log_dirs(
    ctx: BrokerContext, request: TypedRequest[DescribeLogDirsRequest]
) -> DescribeLogDirsResponse:
    wanted = _wanted(request.body["topics"])
    replicas = ctx.replica_manager
    failures = replicas.log_dir_failures
    by_dir: dict[str, dict[str, list[DescribeLogDirsResponseResultsTopicsPartitions]]] = {
        d: {} for d in failures.log_dirs
    }
    for log in replicas.log_manager.all_logs():
        if wanted is not None and log.partition not in wanted.get(log.topic, ()):
            continue
        topics = by_dir.get(log_dir_of(log.directory))
        if topics is not None:
            topics.setdefault(log.topic, []).append(_partition_entry(log))
    results: list[DescribeLogDirsResponseResults] = []
    for log_dir, topics in by_dir.items():
        if not failures.is_online(log_dir):
            results.append(
                {
                    "error_code": int(ErrorCode.KAFKA_STORAGE_ERROR),
                    "log_dir": log_dir,
                    "topics": [],
                    "total_bytes": -1,
                    "usable_bytes": -1,
                }
            )
            continue
        total, usable = _capacity(log_dir)
        results.append(
            {
                "error_code": 0,
                "log_dir": log_dir,
                "topics": [
                    {
                        "name": name,
                        "partitions": sorted(parts, key=lambda p: p["partition_index"]),
                    }
                    for name, parts in sorted(topics.items())
                ],
                "total_bytes": total,
                "usable_bytes": usable,
            }
        )
    return {"throttle_time_ms": 0, "error_code": 0, "results": results}


def _producers_of(
    ctx: BrokerContext, topic: str, index: int
) -> DescribeProducersResponseTopicsPartitions:
    entry: DescribeProducersResponseTopicsPartitions = {
        "partition_index": index,
        "error_code": 0,
        "error_message": None,
        "active_producers": [],
    }
    known = ctx.image.topics.by_name.get(topic)
    if known is None or index not in known.partitions:
        entry["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return entry
    replicas = ctx.replica_manager
    partition = replicas.partitions.get((topic, index))
    if partition is not None and not replicas.log_dir_failures.is_online(
        log_dir_of(partition.log.directory)
    ):
        entry["error_code"] = int(ErrorCode.KAFKA_STORAGE_ERROR)
        return entry
    if partition is None:  # any replica answers (Kafka: Partition.activeProducerState)
        entry["error_code"] = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return entry
    entry["active_producers"] = [
        {
            "producer_id": p.producer_id,
            "producer_epoch": p.epoch,
            "last_sequence": p.last_seq,
            "last_timestamp": p.last_timestamp,
            "coordinator_epoch": p.coordinator_epoch,
            "current_txn_start_offset": p.current_txn_first_offset,
        }
        for p in sorted(
            partition.log.producer_state.producers.values(), key=lambda p: p.producer_id
        )
    ]
    return entry


async def handle_describe_producers(
    ctx: BrokerContext, request: TypedRequest[DescribeProducersRequest]
) -> DescribeProducersResponse:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t["name"],
                "partitions": [_producers_of(ctx, t["name"], i) for i in t["partition_indexes"]],
            }
            for t in request.body["topics"]
        ],
    }
