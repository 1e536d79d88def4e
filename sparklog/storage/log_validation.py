"""Validation of an append to a partition log, before anything is written.

Pure functions over the appended bytes and the log's :class:`~sparklog.storage.config.LogConfig`
(Kafka's ``LogValidator`` checks that need no decoding beyond the batch headers, plus the key
check of compacted topics): every batch is CRC-checked once (``validate_batch``); a batch larger
than ``max.message.bytes`` is MESSAGE_TOO_LARGE, an append larger than a segment
RECORD_BATCH_TOO_LARGE; on the leader, CreateTime timestamps outside
``message.timestamp.{before,after}.max.ms`` are INVALID_TIMESTAMP; from clients, control batches
and (compacted topics) records without a key are INVALID_RECORD.
"""

from __future__ import annotations

from sparklog.protocol.record_codec import decode_batch
from sparklog.protocol.records import (
    INVALID_RECORD,
    TIMESTAMP_CREATE_TIME,
    BatchHeader,
    CorruptRecordError,
    RecordValidationError,
    validate_batch,
)
from sparklog.storage.config import LogConfig
from sparklog.storage.errors import (
    InvalidTimestampError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
)

Records = bytes | bytearray | memoryview


def validate_append(
    buf: Records,
    now_ms: int,
    config: LogConfig,
    name: str,
    leader: bool,
    from_client: bool = False,
) -> list[tuple[int, BatchHeader]]:
    """Check every batch of an append (CRC, size, timestamps, keys, control batches) before
    anything is written; ``(position, header)`` of each. ``name`` is ``topic-partition``."""
    batches: list[tuple[int, BatchHeader]] = []
    pos = 0
    limit = config.max_message_bytes
    while pos < len(buf):
        header = validate_batch(buf, pos)
        if from_client and header.is_control:
            raise CorruptRecordError(
                f"Clients are not allowed to write control records (partition {name})",
                INVALID_RECORD,
            )
        if header.size_in_bytes > limit:
            raise RecordTooLargeError(
                f"The record batch size in the append to {name} is "
                f"{header.size_in_bytes} bytes which exceeds the maximum configured value "
                f"of {limit}."
            )
        if leader and not config.log_append_time:
            _check_timestamp(header, now_ms, config)
        if from_client and "compact" in config.cleanup_policy:
            _check_keys(buf, pos, name)
        batches.append((pos, header))
        pos += header.size_in_bytes
    if pos > config.segment_size:
        raise RecordBatchTooLargeError(
            f"Message batch size is {pos} bytes in append to partition "
            f"{name} which exceeds the maximum configured segment "
            f"size of {config.segment_size}."
        )
    return batches


def _check_keys(buf: Records, pos: int, name: str) -> None:
    """A compacted topic refuses records without a key (Kafka's LogValidator.validateKey)."""
    _, records = decode_batch(buf, pos, verify_crc=False)
    missing = [
        (
            index,
            f"Compacted topic cannot accept message without key in topic partition {name}.",
        )
        for index, record in enumerate(records)
        if record.key is None
    ]
    if missing:
        raise RecordValidationError(missing)


def _check_timestamp(header: BatchHeader, now_ms: int, config: LogConfig) -> None:
    if header.timestamp_type != TIMESTAMP_CREATE_TIME:
        return
    # Only the header is read: the base timestamp stands in for the batch minimum.
    lowest, highest = header.base_timestamp, header.max_timestamp
    if highest >= 0 and highest - now_ms > config.message_timestamp_after_max_ms:
        raise InvalidTimestampError(
            f"Timestamp {highest} of message with offset {header.base_offset} is out of "
            f"range. The timestamp should be within [{now_ms - config.message_timestamp_before_max_ms}, "  # noqa: E501
            f"{now_ms + config.message_timestamp_after_max_ms}]"
        )
    if lowest >= 0 and now_ms - lowest > config.message_timestamp_before_max_ms:
        raise InvalidTimestampError(
            f"Timestamp {lowest} of message with offset {header.base_offset} is out of "
            f"range. The timestamp should be within [{now_ms - config.message_timestamp_before_max_ms}, "  # noqa: E501
            f"{now_ms + config.message_timestamp_after_max_ms}]"
        )
