"""Produce (API key 0): validate and append each partition's batches, answer per partition.

Errors follow Kafka: a bad ``acks`` fails every partition with INVALID_REQUIRED_ACKS; a corrupt
or oversized batch fails only its partition (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD)
and the connection stays open; an unknown partition is UNKNOWN_TOPIC_OR_PARTITION (or
UNKNOWN_TOPIC_ID when the request names topics by id). ``acks=0`` gets no response at all.
A control batch from a client is INVALID_RECORD: transaction markers are written only by the
transaction coordinator (WriteTxnMarkers). Transactional batches are appended like any other;
their producer opens a transaction in the partition's producer state, which holds the last
stable offset until the coordinator's marker closes it.

The records blob is never decoded: the log validates batch headers and CRCs and assigns offsets
in place, so a frame's bytes go to the segment file as received.
"""

from __future__ import annotations

import logging
from typing import Any

from sparklog.broker.context import BrokerContext
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import Request

log = logging.getLogger(__name__)

_ACKS = (0, 1, -1)


def _error_partition(index: int, code: int, message: str | None = None) -> dict[str, Any]:
    return {
        "index": index,
        "error_code": int(code),
        "base_offset": -1,
        "log_append_time_ms": -1,
        "log_start_offset": -1,
        "error_message": message,
    }


async def handle_produce(ctx: BrokerContext, request: Request) -> dict[str, Any] | None:
    body = request.body
    version = request.header.api_version
    acks = body["acks"]
    by_id = version >= 13
    responses: list[dict[str, Any]] = []
    for topic in body["topic_data"]:
        name = topic["name"]
        unknown_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if by_id:
            resolved = ctx.topic_name(topic["topic_id"])
            unknown_code = ErrorCode.UNKNOWN_TOPIC_ID
            name = resolved or ""
        partitions: list[dict[str, Any]] = []
        for pdata in topic["partition_data"]:
            index = pdata["index"]
            if acks not in _ACKS:
                partitions.append(_error_partition(index, ErrorCode.INVALID_REQUIRED_ACKS))
                continue
            records = pdata["records"]
            if not name:
                partitions.append(_error_partition(index, unknown_code))
                continue
            if records is None or len(records) == 0:
                partitions.append(
                    _error_partition(
                        index, ErrorCode.INVALID_RECORD, "Produce request has no records"
                    )
                )
                continue
            try:
                writable = records if not records.readonly else bytearray(records)
                outcome = await ctx.replica_manager.append(name, index, writable, acks)
            except KafkaApiError as exc:
                partitions.append(_error_partition(index, exc.code, exc.message))
                continue
            except Exception as exc:  # storage errors carry a Kafka error code
                code = getattr(exc, "error_code", None)
                if code is None:
                    log.exception("append to %s-%d failed", name, index)
                    code = ErrorCode.KAFKA_STORAGE_ERROR
                partitions.append(_error_partition(index, code, str(exc)))
                continue
            partitions.append(
                {
                    "index": index,
                    "error_code": 0,
                    "base_offset": outcome.base_offset,
                    "log_append_time_ms": outcome.log_append_time_ms,
                    "log_start_offset": outcome.log_start_offset,
                }
            )
        responses.append(
            {
                "name": topic["name"],
                "topic_id": topic.get("topic_id"),
                "partition_responses": partitions,
            }
        )
    if acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}
