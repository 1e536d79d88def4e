"""What the coordinators need of the node they run on (Kafka's ``CoordinatorRuntime`` and
``PartitionWriter``): the group, transaction and share coordinators see the broker only
through these interfaces, which the broker implements
(:mod:`sparklog.broker.coordinator_runtime`). The coordinator package never imports the broker.

Contract of :class:`CoordinatorRuntime`:

- :meth:`~CoordinatorRuntime.leader_partition` is the partition of an internal topic when this
  node leads it (its leader epoch, log start, log end and high watermark read live), else None.
- :meth:`~CoordinatorRuntime.append` appends record batches as the leader with ``acks=all``
  (min ISR checked before, the high watermark awaited after, up to ``timeout_ms`` or the
  broker's default) and returns the first offset written; failures raise
  :class:`~sparklog.protocol.errors.KafkaApiError` (or an ``OSError`` for storage).
- :meth:`~CoordinatorRuntime.read` returns whole record batches from the leader's log from the
  batch holding ``offset``, stopping before ``end`` (not bounded by the high watermark: a
  coordinator replays its partition up to its log end when it loads it).
- :meth:`~CoordinatorRuntime.wait_until` waits for ``condition`` to hold, woken by the
  partition's high-watermark moves, for at most ``timeout_s``.

:class:`CoordinatorContext` is what the coordinator APIs' request handlers read of the broker's
request context; marker types (:class:`TxnMarker`, :data:`MarkerWriter`) belong here because the
transaction coordinator decides the markers the broker writes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import TypedRequest

if TYPE_CHECKING:
    from sparklog.config import ServerConfig
    from sparklog.coordinator.coordinator import GroupCoordinator
    from sparklog.coordinator.share_state_apis import ShareStateCoordinator
    from sparklog.coordinator.txn_coordinator import TransactionCoordinator
    from sparklog.metadata.image import MetadataImage
    from sparklog.share.state_store import ShareState

__all__ = [
    "ControllerChannel",
    "CoordinatorContext",
    "CoordinatorRuntime",
    "MarkerKey",
    "MarkerWriter",
    "PartitionView",
    "SharePersister",
    "TxnMarker",
]

# (producer id, topic, partition)
MarkerKey = tuple[int, str, int]


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """A decided transaction of one producer and the partitions that need its marker."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    committed: bool
    partitions: tuple[tuple[str, int], ...]


# markers -> error per (producer id, topic, partition); a missing key counts as a failure.
MarkerWriter = Callable[[Sequence[TxnMarker]], Awaitable[dict[MarkerKey, ErrorCode]]]

# (operation name, decoded request body, version) -> response body
ControllerChannel = Callable[[str, dict[str, Any], int], Awaitable[dict[str, Any]]]


class PartitionView(Protocol):
    """A partition of an internal topic this node leads, its positions read live."""

    @property
    def index(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def high_watermark(self) -> int: ...


class CoordinatorRuntime(Protocol):
    """The partitions of the coordinators' internal topics, as the broker hosts them."""

    @property
    def image(self) -> MetadataImage | None:
        """The latest metadata image the broker applied (None before the first)."""
        ...

    def leader_partition(self, topic: str, index: int) -> PartitionView | None: ...

    async def append(
        self, topic: str, index: int, records: bytearray, timeout_ms: int | None = None
    ) -> int: ...

    def read(self, topic: str, index: int, offset: int, max_bytes: int, end: int) -> bytes: ...

    def producer_entry(self, topic: str, index: int, producer_id: int) -> tuple[int, int] | None:
        """``(epoch, last sequence)`` the partition's log holds for ``producer_id``."""
        ...

    async def wait_until(
        self, topic: str, index: int, condition: Callable[[], bool], timeout_s: float
    ) -> bool: ...

    def delete_records(self, topic: str, index: int, offset: int) -> int: ...


class SharePersister(Protocol):
    """The broker's client of the share coordinators (KIP-932's Persister)."""

    async def call(
        self, group_id: str, topic_id: bytes, partition: int, op: str, **args: Any
    ) -> tuple[ErrorCode, ShareState | None]: ...

    async def latest_offsets(
        self, partitions: list[tuple[str, int]]
    ) -> dict[tuple[str, int], tuple[ErrorCode, int]]:
        """``(error, latest offset)`` of each ``(topic, partition)`` from its leader (Kafka's
        PartitionMetadataClient.listLatestOffsets, for the share-partition lag)."""
        ...


class TxnPartitionAdder(Protocol):
    """A partition leader's line to the transaction coordinator of a transactional id, wherever
    it is (the broker's ``AddPartitionsToTxnManager``): the coordinator's code per partition."""

    # transaction.partition.verification.enable: verify what version 1 clients added
    verification_enabled: bool

    async def add_or_verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[tuple[str, int]],
        verify_only: bool,
    ) -> dict[tuple[str, int], ErrorCode]: ...


class CoordinatorContext(Protocol):
    """What the coordinator APIs' handlers read of the broker's request context."""

    # created on first use by the share handlers
    share_state: ShareStateCoordinator | None

    @property
    def config(self) -> ServerConfig: ...

    @property
    def controller(self) -> ControllerChannel: ...

    @property
    def groups(self) -> GroupCoordinator | None: ...

    @property
    def transactions(self) -> TransactionCoordinator | None: ...

    @property
    def image(self) -> MetadataImage: ...

    @property
    def coordinator_runtime(self) -> CoordinatorRuntime: ...

    @property
    def share_persister(self) -> SharePersister: ...

    @property
    def txn_verification(self) -> TxnPartitionAdder | None: ...

    def topic_name(self, topic_id: bytes) -> str | None: ...


# A coordinator API handler: (context, request, listener name) -> the response body. A handler
# may type its request (TypedRequest[JoinGroupRequest]) and response (JoinGroupResponse, a
# Mapping): the tables keyed by ApiKey hold them all as this type.
Handler = Callable[[CoordinatorContext, TypedRequest[Any], str], Awaitable[Mapping[str, Any]]]
