"""What the transaction coordinator is configured with, answers, and makes of the answers it
gets (Kafka's names): its settings (:class:`TxnConfig`), the results of InitProducerId and
DescribeTransactions, the marker writer it is given, what each answer to a marker means
(:func:`marker_outcome`, Kafka's ``TransactionMarkerRequestCompletionHandler``) and what a
client hears when a ``__transaction_state`` append fails (:func:`append_error`, Kafka's
mapping in ``TransactionStateManager.appendTransactionToLog``). Pure data and functions.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sparklog.config import ServerConfig
from sparklog.coordinator.txn_records import TxnState
from sparklog.coordinator.txn_state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition
from sparklog.protocol.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class TxnConfig:
    """The broker settings the coordinator obeys (Kafka's names in the comments)."""

    num_partitions: int = 50  # transaction.state.log.num.partitions
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms
    abort_interval_ms: int = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    expire_interval_ms: int = (
        3_600_000  # transaction.remove.expired.transaction.cleanup.interval.ms
    )

    @classmethod
    def from_config(cls, config: ServerConfig) -> TxnConfig:
        return cls(
            num_partitions=int(config.get("transaction.state.log.num.partitions")),
            max_timeout_ms=int(config.get("transaction.max.timeout.ms")),
            id_expiration_ms=int(config.get("transactional.id.expiration.ms")),
            abort_interval_ms=int(
                config.get("transaction.abort.timed.out.transaction.cleanup.interval.ms")
            ),
            expire_interval_ms=int(
                config.get("transaction.remove.expired.transaction.cleanup.interval.ms")
            ),
        )


class MarkerOutcome(enum.Enum):
    WRITTEN = "written"
    RETRY = "retry"
    DROP = "drop"
    """The partition leaves the transaction's pending set unwritten."""
    FENCED = "fenced"
    """This coordinator stops completing the transaction."""
    UNEXPECTED = "unexpected"
    """Retried, logged as an error."""


_RETRIABLE = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.KAFKA_STORAGE_ERROR,
        # from the marker channel: no leader yet, the leader unreachable
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
    }
)


def marker_outcome(code: ErrorCode) -> MarkerOutcome:
    """What a partition's answer to a marker means for the transaction (Kafka's
    ``TransactionMarkerRequestCompletionHandler``): a retriable failure is sent again to the
    partition's leader of the moment; UNSUPPORTED_FOR_MESSAGE_FORMAT and UNSUPPORTED_VERSION
    drop the partition (the producer could not have written to it); INVALID_PRODUCER_EPOCH and
    TRANSACTION_COORDINATOR_FENCED stop this coordinator. Kafka treats any other answer as
    fatal (an IllegalStateException); here it is logged as an error and retried, so the
    transaction completes once the cause is gone."""
    if code == ErrorCode.NONE:
        return MarkerOutcome.WRITTEN
    if code in _RETRIABLE:
        return MarkerOutcome.RETRY
    if code in (ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, ErrorCode.UNSUPPORTED_VERSION):
        return MarkerOutcome.DROP
    if code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED):
        return MarkerOutcome.FENCED
    return MarkerOutcome.UNEXPECTED


ProducerIdSource = Callable[[], Awaitable[int]]


@dataclass(frozen=True, slots=True)
class InitResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class TxnDescription:
    transactional_id: str
    state: TxnState
    timeout_ms: int
    start_ms: int
    producer_id: int
    producer_epoch: int
    partitions: frozenset[TopicPartition]


# Append errors raised after the record reached the leader's log (it is committed later, unless
# leadership moves and the shard is reloaded from the new leader's log).
APPENDED_UNREPLICATED = frozenset(
    {ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND}
)


def append_error(code: ErrorCode) -> ErrorCode:
    """What the client hears when a transition could not be written (Kafka's mapping in
    ``TransactionStateManager.appendTransactionToLog``)."""
    if code in (
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.KAFKA_STORAGE_ERROR,
    ):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return ErrorCode.COORDINATOR_NOT_AVAILABLE
