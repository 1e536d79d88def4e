"""KIP-405 value objects: segment ids, segment metadata, states and the data handed to a copy.

Names follow Kafka's ``org.apache.kafka.server.log.remote.storage`` API. Ids are Kafka uuids in
their 22-character text form. States and their transitions are Kafka's
``RemoteLogSegmentState``::

    (none) -> COPY_SEGMENT_STARTED -> COPY_SEGMENT_FINISHED -> DELETE_SEGMENT_STARTED
                     |                                              |
                     +------------------> DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED

A self transition is valid (retries and failover are idempotent); anything else raises
:class:`IllegalStateTransition`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from sparklog.protocol.kafka_uuid import random_uuid, uuid_from_str


class IllegalStateTransition(ValueError):
    """A segment state change Kafka's RemoteLogSegmentState does not allow."""


class RemoteLogSegmentState(enum.Enum):
    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3


_NEXT: dict[RemoteLogSegmentState | None, frozenset[RemoteLogSegmentState]] = {
    None: frozenset({RemoteLogSegmentState.COPY_SEGMENT_STARTED}),
    RemoteLogSegmentState.COPY_SEGMENT_STARTED: frozenset(
        {RemoteLogSegmentState.COPY_SEGMENT_FINISHED, RemoteLogSegmentState.DELETE_SEGMENT_STARTED}
    ),
    RemoteLogSegmentState.COPY_SEGMENT_FINISHED: frozenset(
        {RemoteLogSegmentState.DELETE_SEGMENT_STARTED}
    ),
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED: frozenset(
        {RemoteLogSegmentState.DELETE_SEGMENT_FINISHED}
    ),
    RemoteLogSegmentState.DELETE_SEGMENT_FINISHED: frozenset(),
}


def is_valid_transition(
    source: RemoteLogSegmentState | None, target: RemoteLogSegmentState
) -> bool:
    return source == target or target in _NEXT[source]


def check_transition(
    segment_id: str, source: RemoteLogSegmentState | None, target: RemoteLogSegmentState
) -> None:
    if not is_valid_transition(source, target):
        name = source.name if source is not None else "(no state)"
        raise IllegalStateTransition(
            f"remote log segment {segment_id}: illegal state transition {name} -> {target.name}"
        )


@dataclass(frozen=True, slots=True)
class TopicIdPartition:
    """A partition named by topic id (Kafka uuid text), topic name and partition index."""

    topic_id: str
    topic: str
    partition: int

    def __post_init__(self) -> None:
        uuid_from_str(self.topic_id)
        if self.partition < 0:
            raise ValueError(f"invalid partition {self.partition}")

    def __str__(self) -> str:
        return f"{self.topic_id}:{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentId:
    """A remote copy of one segment; a new copy attempt of the same segment may get a new id."""

    topic_id_partition: TopicIdPartition
    id: str

    def __post_init__(self) -> None:
        uuid_from_str(self.id)

    @classmethod
    def generate(cls, topic_id_partition: TopicIdPartition) -> RemoteLogSegmentId:
        return cls(topic_id_partition, random_uuid())

    def __str__(self) -> str:
        return f"{self.topic_id_partition}/{self.id}"


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadata:
    """What is known of a remote segment before and after its copy.

    ``end_offset`` is inclusive (Kafka's: the next segment's base offset minus one).
    ``segment_leader_epochs`` are the ``(epoch, start_offset)`` entries of the segment's range;
    ``leader_epoch`` is the copying leader's epoch; ``segment_size_in_bytes`` is the local
    ``.log`` size. ``state`` is the RLMM's latest state for this id.
    """

    remote_log_segment_id: RemoteLogSegmentId
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_size_in_bytes: int
    segment_leader_epochs: tuple[tuple[int, int], ...] = ()
    leader_epoch: int = -1
    state: RemoteLogSegmentState = RemoteLogSegmentState.COPY_SEGMENT_STARTED

    def __post_init__(self) -> None:
        if self.start_offset < 0 or self.end_offset < self.start_offset:
            raise ValueError(
                f"segment {self.remote_log_segment_id.id}: bad offset range"
                f" [{self.start_offset}, {self.end_offset}]"
            )

    @property
    def topic_id_partition(self) -> TopicIdPartition:
        return self.remote_log_segment_id.topic_id_partition

    @property
    def segment_id(self) -> str:
        return self.remote_log_segment_id.id

    def with_state(self, state: RemoteLogSegmentState, event_ms: int) -> RemoteLogSegmentMetadata:
        return replace(self, state=state, event_timestamp_ms=event_ms)


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """An aborted transaction of the transaction index: producer ``producer_id``'s data records
    in ``[first_offset, last_offset]`` (``last_offset`` is the ABORT marker's) are aborted.
    ``last_stable_offset`` is the LSO right after the marker (-1 when unknown): once it reaches
    a search's upper bound no later marker can abort data below that bound."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int = -1


@dataclass(frozen=True, slots=True)
class LogSegmentData:
    """The local files of a segment to copy (Kafka's ``LogSegmentData``, trimmed to what the
    Parquet layout needs). ``producer_snapshot_path`` None uploads an empty snapshot.

    ``aborted_txns`` are the aborted transactions with data in the segment (they set the Parquet
    ``aborted`` flag); ``transaction_index`` is the segment's own transaction index (the aborts
    whose marker is in it, Kafka's ``LogSegmentData.transactionIndex``), uploaded as the
    ``.txnindex`` object."""

    log_path: str
    leader_epochs: tuple[tuple[int, int], ...] = ()
    producer_snapshot_path: str | None = None
    aborted_txns: tuple[AbortedTxn, ...] = ()
    transaction_index: tuple[AbortedTxn, ...] = ()


@dataclass(frozen=True, slots=True)
class CopiedSegment:
    """What a finished copy produced: the facts the manifest records beyond the metadata."""

    path: str
    size_bytes: int
    record_count: int
    first_offset: int
    last_offset: int
    first_timestamp: int
    max_timestamp: int
    leader_epochs: tuple[tuple[int, int], ...]
    #: Control, aborted and transactional rows of the object (see ``ManifestSegment``).
    control_records: int | None = None
    aborted_records: int | None = None
    transactional_records: int | None = None
