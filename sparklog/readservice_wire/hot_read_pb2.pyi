from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class IsolationLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    READ_UNCOMMITTED: _ClassVar[IsolationLevel]
    READ_COMMITTED: _ClassVar[IsolationLevel]
READ_UNCOMMITTED: IsolationLevel
READ_COMMITTED: IsolationLevel

class ReadRangeRequest(_message.Message):
    __slots__ = ("topic", "partition", "start_offset", "end_offset", "isolation_level", "max_chunk_bytes", "current_leader_epoch")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_LEVEL_FIELD_NUMBER: _ClassVar[int]
    MAX_CHUNK_BYTES_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    start_offset: int
    end_offset: int
    isolation_level: IsolationLevel
    max_chunk_bytes: int
    current_leader_epoch: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., start_offset: _Optional[int] = ..., end_offset: _Optional[int] = ..., isolation_level: _Optional[_Union[IsolationLevel, str]] = ..., max_chunk_bytes: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ...) -> None: ...

class AbortedTransaction(_message.Message):
    __slots__ = ("producer_id", "first_offset", "last_offset")
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    producer_id: int
    first_offset: int
    last_offset: int
    def __init__(self, producer_id: _Optional[int] = ..., first_offset: _Optional[int] = ..., last_offset: _Optional[int] = ...) -> None: ...

class RecordChunk(_message.Message):
    __slots__ = ("records", "aborted_transactions", "next_offset", "high_watermark", "last_stable_offset", "log_start_offset")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    ABORTED_TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LAST_STABLE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    records: bytes
    aborted_transactions: _containers.RepeatedCompositeFieldContainer[AbortedTransaction]
    next_offset: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    def __init__(self, records: _Optional[bytes] = ..., aborted_transactions: _Optional[_Iterable[_Union[AbortedTransaction, _Mapping]]] = ..., next_offset: _Optional[int] = ..., high_watermark: _Optional[int] = ..., last_stable_offset: _Optional[int] = ..., log_start_offset: _Optional[int] = ...) -> None: ...
