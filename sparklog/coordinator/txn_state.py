"""The transaction state machine of one transactional id (Kafka's ``TransactionMetadata`` and
the checks of ``TransactionCoordinator``), sans-IO.

Everything that decides a transaction's fate lives here; the driver
(:mod:`sparklog.coordinator.txn_coordinator`) only persists and delivers. Every operation is
two-phase, as in Kafka: ``begin_*`` checks the request against the current metadata and returns
the :class:`~sparklog.coordinator.txn_records.TxnLogValue` to append (marking the metadata
``pending``), or raises :class:`TxnError` with the Kafka error for the client; once the record is
durable the driver calls :meth:`TxnMetadata.complete`, or :meth:`TxnMetadata.abandon` if the
append failed. Rules kept:

- A transition is prepared only from a state Kafka allows (``_VALID_PREVIOUS``) and never
  while another is pending; a pending transition answers CONCURRENT_TRANSACTIONS.
- Epochs only grow for one producer id: InitProducerId bumps it (or rotates to a new producer
  id once it reaches 32766, leaving room to fence), an abort forced by the coordinator (timeout,
  or InitProducerId finding an Ongoing transaction) bumps it so the old producer is fenced on
  every partition by the abort markers.
- A request with a stale epoch is PRODUCER_FENCED (handlers map it to INVALID_PRODUCER_EPOCH
  for old versions); a producer id that is not the id's is INVALID_PRODUCER_ID_MAPPING.
- PrepareCommit/PrepareAbort carry the partition set the markers go to; CompleteCommit/
  CompleteAbort and Empty carry none. While a transaction is PrepareCommit/PrepareAbort its
  markers are being written (Kafka's pending CompleteCommit/CompleteAbort), so EndTxn of
  either result is CONCURRENT_TRANSACTIONS; INVALID_TXN_STATE is EndTxn on Empty, or of the
  other result on CompleteCommit/CompleteAbort, as in Kafka's ``handleEndTransaction``.
- Transactions version 2 (KIP-890 part 2), per transaction: the metadata keeps the
  ``client_transaction_version`` of the last client request that moved it (EndTxn v5, and the
  partition leader's AddPartitionsToTxn v5 / TxnOffsetCommit v5 are 2; older requests 0).
  EndTxn with version 2 bumps the epoch into PrepareCommit/PrepareAbort (the markers carry the
  bumped epoch, fencing the ended transaction's stragglers); at an exhausted epoch it also
  takes a fresh producer id (``next_producer_id``) that becomes the id, at epoch 0, with
  CompleteCommit/CompleteAbort. Once a transaction is version 2, an EndTxn is valid only with
  the epoch before the bump (a retry: answered with the current id and epoch, or
  CONCURRENT_TRANSACTIONS while the markers are written) or, on Ongoing/Empty, the current
  epoch; anything else is PRODUCER_FENCED.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sparklog.coordinator.txn_records import TxnLogValue, TxnState
from sparklog.protocol.errors import ErrorCode

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
# Kafka refuses to hand out an epoch of Short.MAX_VALUE so a coordinator can always fence.
_EPOCH_EXHAUSTED = 32767 - 1
# transaction.version levels (Kafka's TransactionVersion): 2 bumps the epoch per transaction.
TV_0 = 0
TV_2 = 2

TopicPartition = tuple[str, int]

_VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.ONGOING: frozenset(
        {TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}
    ),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    TxnState.PREPARE_ABORT: frozenset({TxnState.ONGOING}),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
}

EXPIRABLE = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})


class TxnError(Exception):
    """A request the state machine refuses: ``code`` is what the client gets."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(message or code.name)
        self.code = code


def epoch_exhausted(epoch: int) -> bool:
    return epoch >= _EPOCH_EXHAUSTED


def supports_epoch_bump(transaction_version: int) -> bool:
    return transaction_version >= TV_2


@dataclass(slots=True)
class TxnMetadata:
    """The coordinator's view of one transactional id (mutated only through ``complete``)."""

    transactional_id: str
    producer_id: int
    previous_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60000
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = TV_0
    pending: TxnLogValue | None = None
    # The last epoch to remember once ``pending`` is durable (None: keep the current one).
    pending_last_epoch: int | None = field(default=None, repr=False)

    @classmethod
    def from_log(cls, transactional_id: str, value: TxnLogValue) -> TxnMetadata:
        return cls(
            transactional_id,
            value.producer_id,
            previous_producer_id=value.previous_producer_id,
            producer_epoch=value.producer_epoch,
            timeout_ms=value.timeout_ms,
            state=value.state,
            partitions=set(value.partitions),
            start_ms=value.start_ms,
            last_update_ms=value.last_update_ms,
            next_producer_id=value.next_producer_id,
            client_transaction_version=value.client_transaction_version,
        )

    def snapshot(self) -> TxnLogValue:
        return TxnLogValue(
            producer_id=self.producer_id,
            previous_producer_id=self.previous_producer_id,
            producer_epoch=self.producer_epoch,
            timeout_ms=self.timeout_ms,
            state=self.state,
            partitions=frozenset(self.partitions),
            last_update_ms=self.last_update_ms,
            start_ms=self.start_ms,
            next_producer_id=self.next_producer_id,
            client_transaction_version=self.client_transaction_version,
        )

    # -- the two phases ------------------------------------------------------------------------
    def _prepare(self, target: TxnLogValue, last_epoch: int | None = None) -> TxnLogValue:
        if self.pending is not None:
            raise AssertionError(f"{self.transactional_id}: transition while one is pending")
        if self.state not in _VALID_PREVIOUS[target.state]:
            raise AssertionError(
                f"{self.transactional_id}: {self.state.display_name} -> "
                f"{target.state.display_name} is not a valid transition"
            )
        self.pending = target
        self.pending_last_epoch = last_epoch
        return target

    def complete(self, target: TxnLogValue) -> None:
        """Apply a transition whose record is now durable."""
        if self.pending != target:
            raise AssertionError(f"{self.transactional_id}: completing a transition not pending")
        last_epoch = self.pending_last_epoch
        self.pending = None
        self.pending_last_epoch = None
        if last_epoch is not None:
            self.last_producer_epoch = last_epoch
        self.producer_id = target.producer_id
        self.previous_producer_id = target.previous_producer_id
        self.producer_epoch = target.producer_epoch
        self.timeout_ms = target.timeout_ms
        self.state = target.state
        self.partitions = set(target.partitions)
        self.start_ms = target.start_ms
        self.last_update_ms = target.last_update_ms
        self.next_producer_id = target.next_producer_id
        self.client_transaction_version = target.client_transaction_version

    def abandon(self) -> None:
        """Forget a pending transition whose record could not be written."""
        self.pending = None
        self.pending_last_epoch = None

    # -- operations ----------------------------------------------------------------------------
    def _check_producer(self, producer_id: int, producer_epoch: int) -> None:
        if self.producer_id != producer_id:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if self.producer_epoch != producer_epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        if self.pending is not None:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)

    def needs_new_producer_id(self, expected_epoch: int | None) -> bool:
        return epoch_exhausted(self.producer_epoch) and (
            expected_epoch is None or expected_epoch == self.producer_epoch
        )

    def begin_init(
        self,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        now_ms: int,
        fresh_producer_id: int | None,
    ) -> tuple[TxnLogValue, bool]:
        """InitProducerId. Returns the record to write and whether it is an abort forced on an
        Ongoing transaction (the client then gets CONCURRENT_TRANSACTIONS and retries).
        ``fresh_producer_id`` is required when :meth:`needs_new_producer_id` says so."""
        if self.pending is not None:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and not self._valid_expected(*expected):
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        if self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if self.state is TxnState.ONGOING:
            return self.begin_fence(now_ms), True
        if self.state not in EXPIRABLE:
            raise AssertionError(f"{self.transactional_id}: InitProducerId in {self.state}")
        expected_epoch = expected[1] if expected is not None else None
        base = TxnLogValue(
            producer_id=self.producer_id,
            previous_producer_id=self.previous_producer_id,
            producer_epoch=self.producer_epoch,
            timeout_ms=timeout_ms,
            state=TxnState.EMPTY,
            partitions=frozenset(),
            last_update_ms=now_ms,
            start_ms=-1,
        )
        if self.needs_new_producer_id(expected_epoch):
            if fresh_producer_id is None:
                raise AssertionError("a fresh producer id is needed to rotate")
            target = replace(
                base,
                producer_id=fresh_producer_id,
                previous_producer_id=self.producer_id,
                producer_epoch=0,
            )
            last = self.producer_epoch if expected is not None else NO_PRODUCER_EPOCH
            return self._prepare(target, last), False
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            # A retry of an InitProducerId that succeeded but whose answer was lost.
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        return self._prepare(replace(base, producer_epoch=epoch), last), False

    def _valid_expected(self, producer_id: int, producer_epoch: int) -> bool:
        return (
            self.producer_epoch == NO_PRODUCER_EPOCH
            or producer_id == self.producer_id
            or (producer_id == self.previous_producer_id and epoch_exhausted(producer_epoch))
        )

    def begin_add_partitions(
        self,
        producer_id: int,
        producer_epoch: int,
        partitions: set[TopicPartition],
        now_ms: int,
        transaction_version: int = TV_0,
    ) -> TxnLogValue | None:
        """AddPartitionsToTxn / AddOffsetsToTxn (and their implicit TV2 forms, with
        ``transaction_version`` 2); None when every partition is already in."""
        self._check_producer(producer_id, producer_epoch)
        if self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if self.state is TxnState.ONGOING and partitions <= self.partitions:
            return None
        starting = self.state is not TxnState.ONGOING
        return self._prepare(
            replace(
                self.snapshot(),
                state=TxnState.ONGOING,
                partitions=frozenset(self.partitions | partitions),
                start_ms=now_ms if starting else self.start_ms,
                last_update_ms=now_ms,
                client_transaction_version=transaction_version,
            )
        )

    def verify_partitions(
        self, producer_id: int, producer_epoch: int, partitions: set[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ ``verify_only``: which partitions are in the transaction."""
        if self.producer_id != producer_id:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if self.producer_epoch != producer_epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        if self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        return {
            tp: ErrorCode.NONE if tp in self.partitions else ErrorCode.TRANSACTION_ABORTABLE
            for tp in partitions
        }

    def end_needs_new_producer_id(self, transaction_version: int) -> bool:
        """EndTxn at an exhausted epoch with version 2 rotates to a fresh producer id."""
        return supports_epoch_bump(transaction_version) and epoch_exhausted(self.producer_epoch)

    def _valid_end_epoch(self, producer_id: int, producer_epoch: int) -> tuple[bool, bool]:
        """(epoch valid, retry after a rotation) for an EndTxn, as Kafka's endTransaction."""
        if not supports_epoch_bump(self.client_transaction_version):
            return producer_epoch == self.producer_epoch, False
        retry_on_overflow = (
            self.previous_producer_id == producer_id
            and producer_epoch == _EPOCH_EXHAUSTED
            and self.producer_epoch == 0
        )
        retry_on_bump = self.producer_epoch == producer_epoch + 1
        if self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return retry_on_bump, False
        if self.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            return retry_on_bump or retry_on_overflow, retry_on_overflow
        return producer_epoch == self.producer_epoch, False

    def begin_end(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        now_ms: int,
        transaction_version: int = TV_0,
        fresh_producer_id: int | None = None,
    ) -> TxnLogValue | None:
        """EndTxn from the client; None when the transaction already ended that way (a retry).
        ``fresh_producer_id`` is required when :meth:`end_needs_new_producer_id` says so."""
        valid_epoch, retry_on_overflow = self._valid_end_epoch(producer_id, producer_epoch)
        if self.producer_id != producer_id and not retry_on_overflow:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        if self.pending is not None:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        state = self.state
        if state is TxnState.ONGOING:
            target = replace(
                self.snapshot(),
                state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
                last_update_ms=now_ms,
                client_transaction_version=transaction_version,
            )
            if not supports_epoch_bump(transaction_version):
                return self._prepare(target)
            next_producer_id = NO_PRODUCER_ID
            if epoch_exhausted(self.producer_epoch):
                if fresh_producer_id is None:
                    raise AssertionError("a fresh producer id is needed to rotate")
                next_producer_id = fresh_producer_id
            bumped = replace(
                target, producer_epoch=self.producer_epoch + 1, next_producer_id=next_producer_id
            )
            return self._prepare(bumped, self.producer_epoch)
        if state is (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT):
            return None
        if state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            # Kafka holds CompleteCommit/CompleteAbort pending while the markers are written,
            # and its pending check comes before the state table: either result is
            # CONCURRENT_TRANSACTIONS until the transaction is complete.
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        raise TxnError(
            ErrorCode.INVALID_TXN_STATE,
            f"Transaction {self.transactional_id} is {state.display_name}, "
            f"cannot {'commit' if commit else 'abort'}",
        )

    def ended_producer(self) -> tuple[int, int]:
        """The producer id and epoch an EndTxn v5 answers: the next transaction's."""
        if self.next_producer_id != NO_PRODUCER_ID:
            return self.next_producer_id, 0
        return self.producer_id, self.producer_epoch

    def begin_fence(self, now_ms: int) -> TxnLogValue:
        """Abort the Ongoing transaction on the coordinator's initiative (timeout, or a new
        producer instance), bumping the epoch so the old instance is fenced everywhere."""
        if self.state is not TxnState.ONGOING or self.pending is not None:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        target = replace(
            self.snapshot(),
            state=TxnState.PREPARE_ABORT,
            producer_epoch=self.producer_epoch + 1,
            last_update_ms=now_ms,
        )
        return self._prepare(target, NO_PRODUCER_EPOCH)

    def begin_complete(self, now_ms: int) -> TxnLogValue:
        """After every marker is written: CompleteCommit or CompleteAbort."""
        if self.state is TxnState.PREPARE_COMMIT:
            target = TxnState.COMPLETE_COMMIT
        elif self.state is TxnState.PREPARE_ABORT:
            target = TxnState.COMPLETE_ABORT
        else:
            raise TxnError(ErrorCode.INVALID_TXN_STATE)
        if self.pending is not None:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        completed = replace(
            self.snapshot(), state=target, partitions=frozenset(), last_update_ms=now_ms
        )
        if (
            supports_epoch_bump(self.client_transaction_version)
            and self.next_producer_id != NO_PRODUCER_ID
        ):
            # The epoch overflowed with this transaction: its markers are written, so the
            # fresh producer id takes over at epoch 0.
            completed = replace(
                completed,
                producer_id=self.next_producer_id,
                previous_producer_id=self.producer_id,
                next_producer_id=NO_PRODUCER_ID,
                producer_epoch=0,
            )
            return self._prepare(completed, self.producer_epoch)
        return self._prepare(completed)

    def begin_expire(self) -> TxnLogValue:
        """transactional.id.expiration.ms passed without use: the id goes (a tombstone)."""
        if self.state not in EXPIRABLE or self.pending is not None:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        return self._prepare(replace(self.snapshot(), state=TxnState.DEAD, partitions=frozenset()))

    # -- queries -------------------------------------------------------------------------------
    def timed_out(self, now_ms: int) -> bool:
        return (
            self.state is TxnState.ONGOING
            and self.pending is None
            and self.start_ms + self.timeout_ms < now_ms
        )

    def expired(self, now_ms: int, expiration_ms: int) -> bool:
        return (
            self.state in EXPIRABLE
            and self.pending is None
            and self.last_update_ms + expiration_ms <= now_ms
        )


def new_metadata(
    transactional_id: str, producer_id: int, timeout_ms: int, now_ms: int
) -> TxnMetadata:
    """A transactional id seen for the first time (epoch -1 until its first InitProducerId)."""
    return TxnMetadata(transactional_id, producer_id, timeout_ms=timeout_ms, last_update_ms=now_ms)
