"""Errors raised by the log engine, each carrying the Kafka error code a client must see.

Contract: every exception here is a :class:`~sparklog.protocol.errors.KafkaApiError`, so a
request handler answers the partition with ``exc.code`` and keeps the connection open. A
corrupt batch is reported with the protocol layer's ``CorruptRecordError`` (CORRUPT_MESSAGE),
not with a class from this module. Anything else escaping the storage package is a bug or an
I/O failure (``OSError``), which the broker maps to KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

from sparklog.protocol.errors import ErrorCode, KafkaApiError


class StorageError(KafkaApiError):
    """Base class: a per-partition failure with a Kafka error code."""

    default_code = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(code if code is not None else self.default_code, message)

    @property
    def error_code(self) -> int:
        return int(self.code)


class OffsetOutOfRangeError(StorageError):
    """A read or DeleteRecords offset outside ``[log_start_offset, log_end_offset]``."""

    default_code = ErrorCode.OFFSET_OUT_OF_RANGE


class OffsetMovedToTieredStorageError(OffsetOutOfRangeError):
    """A read below the local log start offset of a tiered log: the data is in remote storage
    (Kafka's ``OffsetMovedToTieredStorageException``); the broker serves it with a remote fetch.
    """


class RecordTooLargeError(StorageError):
    """A batch larger than ``max.message.bytes`` (Kafka's ``RecordTooLargeException``)."""

    default_code = ErrorCode.MESSAGE_TOO_LARGE


class RecordBatchTooLargeError(StorageError):
    """One append larger than ``segment.bytes``: it could never fit in a segment."""

    default_code = ErrorCode.RECORD_LIST_TOO_LARGE


class InvalidTimestampError(StorageError):
    """A CreateTime batch outside ``message.timestamp.{before,after}.max.ms`` of now."""

    default_code = ErrorCode.INVALID_TIMESTAMP


class UnexpectedAppendOffsetError(StorageError):
    """A follower append whose first offset is not the log end offset (a replication bug)."""

    default_code = ErrorCode.UNKNOWN_SERVER_ERROR
