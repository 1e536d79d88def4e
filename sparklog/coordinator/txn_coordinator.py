"""The transaction coordinator of one broker: the transactional ids of the
``__transaction_state`` partitions it leads, driven on the event loop.

Contract:
- The coordinator of a transactional id is the leader of partition
  ``abs(java_hash(id)) % transaction.state.log.num.partitions`` of ``__transaction_state``
  (Kafka's ``Utils.abs(String.hashCode)``, so clients and tools agree). A request for an id
  whose partition we do not lead is NOT_COORDINATOR.
- The shards and the one way a transition reaches the log are a collaborator,
  :class:`sparklog.coordinator.txn_shards.TxnShards`; this module holds the request
  operations, the marker phase and the timers.
- A partition's state is its log: a shard is loaded by replaying the partition (log start to
  high watermark) the first time it is needed after we became leader or the leader epoch
  changed, and by the timer loop, which also loads shards nobody asked for yet so that
  transactions left in PrepareCommit/PrepareAbort are finished and hung ones time out after a
  restart or a failover. The leader epoch of the partition is the coordinator epoch stamped on
  markers.
- Each operation runs under its shard's lock: the state machine
  (:mod:`sparklog.coordinator.txn_state`) prepares a transition, the record is appended with
  acks=all, and only then is the transition applied and the client answered. An append
  refused before it reached the log leaves the state as it was and answers NOT_COORDINATOR
  or COORDINATOR_NOT_AVAILABLE (Kafka's mapping). An append that reached our log but was not
  replicated in time (REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND) answers
  COORDINATOR_NOT_AVAILABLE too, but the transition stays pending (the id answers
  CONCURRENT_TRANSACTIONS) until the HW covers the record, and is then applied: a leader's
  log is what every later leader loads, so the state must never fall behind it (an
  AddPartitionsToTxn applied on a failover but forgotten here made a later EndTxn(abort)
  INVALID_TXN_STATE).
- EndTxn answers once PrepareCommit/PrepareAbort is durable (as Kafka). A background task then
  writes the markers to every partition of the transaction through the injected
  :data:`MarkerWriter` (on a node, the marker channel that reaches every partition leader:
  :mod:`sparklog.broker.txn_marker_channel`), retrying with backoff until each partition has
  its marker (a partition of a deleted topic is dropped; :func:`marker_outcome` says what each
  answer means), and persists CompleteCommit/CompleteAbort only then, retrying that append
  while it is COORDINATOR_NOT_AVAILABLE (Kafka's ``txnLogAppendRetryQueue``). Until then the
  id answers CONCURRENT_TRANSACTIONS. A coordinator fenced by a partition (a newer producer
  or coordinator epoch) stops; the transaction is the newer coordinator's to finish.
- Timers (``transaction.abort.timed.out.transaction.cleanup.interval.ms``): an Ongoing
  transaction older than its timeout is aborted with an epoch bump (its producer is fenced);
  ``transactional.id.expiration.ms`` after its last use an idle id is tombstoned
  (checked every ``transaction.remove.expired.transaction.cleanup.interval.ms``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable

from sparklog.coordinator.coordinator import partition_for
from sparklog.coordinator.runtime import CoordinatorRuntime, MarkerWriter, TxnMarker
from sparklog.coordinator.txn_answers import (
    InitResult,
    MarkerOutcome,
    ProducerIdSource,
    TxnConfig,
    TxnDescription,
    marker_outcome,
)
from sparklog.coordinator.txn_records import TxnLogValue, TxnState
from sparklog.coordinator.txn_shards import TRANSACTION_STATE_TOPIC, TxnShard, TxnShards
from sparklog.coordinator.txn_state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TV_0,
    TopicPartition,
    TxnError,
    TxnMetadata,
    new_metadata,
)
from sparklog.protocol.errors import ErrorCode, KafkaApiError

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "InitResult",
    "MarkerOutcome",
    "MarkerWriter",
    "ProducerIdSource",
    "TransactionCoordinator",
    "TxnConfig",
    "TxnDescription",
    "marker_outcome",
]

log = logging.getLogger(__name__)

_MARKER_RETRY_MIN_S = 0.02
_MARKER_RETRY_MAX_S = 1.0
_MARKER_LOG_EVERY = 20
_MAX_TICK_S = 1.0


def _now_ms() -> int:
    return int(time.time() * 1000)


class TransactionCoordinator:
    def __init__(
        self,
        config: TxnConfig,
        runtime: CoordinatorRuntime,
        producer_ids: ProducerIdSource,
        marker_writer: MarkerWriter,
        *,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        self.config = config
        self.runtime = runtime
        self.producer_ids = producer_ids
        self.marker_writer = marker_writer
        self.clock = clock
        self.shards = TxnShards(runtime, config.num_partitions, self._spawn_finish)
        self._next_abort_ms = 0
        self._next_expire_ms = clock() + config.expire_interval_ms

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.num_partitions)

    # -- markers -----------------------------------------------------------------------------
    def _spawn_finish(self, shard: TxnShard, meta: TxnMetadata, prepared: TxnLogValue) -> None:
        self.shards.spawn(shard, self._finish(shard, meta, prepared))

    def _finisher(
        self, shard: TxnShard, meta: TxnMetadata, prepared: TxnLogValue
    ) -> Callable[[], None]:
        return lambda: self._spawn_finish(shard, meta, prepared)

    def _topic_exists(self, topic: str) -> bool:
        image = self.runtime.image
        return image is None or topic in image.topics.by_name

    async def _finish(self, shard: TxnShard, meta: TxnMetadata, prepared: TxnLogValue) -> None:
        committed = prepared.state is TxnState.PREPARE_COMMIT
        remaining = set(prepared.partitions)
        delay_s = _MARKER_RETRY_MIN_S
        attempts = 0
        while remaining:
            if not self.shards.current(shard):
                return
            request = TxnMarker(
                prepared.producer_id,
                prepared.producer_epoch,
                shard.leader_epoch,
                committed,
                tuple(sorted(remaining)),
            )
            try:
                errors = await self.marker_writer([request])
            except Exception:
                log.exception("Writing markers of %s failed", meta.transactional_id)
                errors = {}
            attempts += 1
            failed: dict[TopicPartition, ErrorCode] = {}
            for topic, index in list(remaining):
                code = errors.get(
                    (prepared.producer_id, topic, index), ErrorCode.UNKNOWN_SERVER_ERROR
                )
                outcome = marker_outcome(code)
                if outcome is MarkerOutcome.FENCED:
                    # The producer or coordinator epoch moved on: a newer coordinator owns
                    # this transaction now.
                    log.warning(
                        "Giving up on the markers of %s: %s-%d answered %s",
                        meta.transactional_id,
                        topic,
                        index,
                        code.name,
                    )
                    return
                if outcome is MarkerOutcome.WRITTEN or not self._topic_exists(topic):
                    remaining.discard((topic, index))
                elif outcome is MarkerOutcome.DROP:
                    log.info(
                        "Dropping %s-%d from the markers of %s: %s",
                        topic,
                        index,
                        meta.transactional_id,
                        code.name,
                    )
                    remaining.discard((topic, index))
                else:
                    failed[(topic, index)] = code
            if failed and (attempts == 1 or attempts % _MARKER_LOG_EVERY == 0):
                unexpected = any(
                    marker_outcome(c) is MarkerOutcome.UNEXPECTED for c in failed.values()
                )
                log.log(
                    logging.ERROR if unexpected else logging.INFO,
                    "Retrying the %s markers of %s (attempt %d): %s",
                    "COMMIT" if committed else "ABORT",
                    meta.transactional_id,
                    attempts,
                    ", ".join(f"{t}-{i} {c.name}" for (t, i), c in sorted(failed.items())),
                )
            if remaining:
                await asyncio.sleep(delay_s)
                delay_s = min(delay_s * 2, _MARKER_RETRY_MAX_S)
        await self._complete(shard, meta, prepared)

    async def _complete(self, shard: TxnShard, meta: TxnMetadata, prepared: TxnLogValue) -> None:
        """Persist CompleteCommit/CompleteAbort, again while the append is
        COORDINATOR_NOT_AVAILABLE (NOT_COORDINATOR: the next leader's load finishes it)."""
        delay_s = _MARKER_RETRY_MIN_S
        attempts = 0
        while True:
            async with shard.lock:
                if (
                    not self.shards.current(shard)
                    or shard.txns.get(meta.transactional_id) is not meta
                    or meta.state is not prepared.state
                    or meta.producer_epoch != prepared.producer_epoch
                    or meta.pending is not None
                ):
                    return
                target = meta.begin_complete(self.clock())
                error = await self.shards.persist(shard, meta, target)
            if error == ErrorCode.NONE or meta.pending is not None:
                return  # written, or written and waiting to be replicated (_settle)
            attempts += 1
            if error != ErrorCode.COORDINATOR_NOT_AVAILABLE:
                log.warning("Could not complete %s: %s", meta.transactional_id, error.name)
                return
            if attempts == 1 or attempts % _MARKER_LOG_EVERY == 0:
                log.info(
                    "Retrying the completion of %s (attempt %d): %s",
                    meta.transactional_id,
                    attempts,
                    error.name,
                )
            await asyncio.sleep(delay_s)
            delay_s = min(delay_s * 2, _MARKER_RETRY_MAX_S)

    # -- operations --------------------------------------------------------------------------
    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, producer_id: int, producer_epoch: int
    ) -> InitResult:
        """InitProducerId with a transactional id."""
        if not transactional_id:
            return InitResult(ErrorCode.INVALID_REQUEST)
        if timeout_ms <= 0 or timeout_ms > self.config.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
            return InitResult(ErrorCode.INVALID_REQUEST)
        expected = None if producer_id == NO_PRODUCER_ID else (producer_id, producer_epoch)
        shard = self.shards.of(transactional_id)
        async with shard.lock:
            if not self.shards.current(shard):
                return InitResult(ErrorCode.NOT_COORDINATOR)
            meta = shard.txns.get(transactional_id)
            now = self.clock()
            if meta is None:
                meta = new_metadata(transactional_id, await self.producer_ids(), timeout_ms, now)
                shard.txns[transactional_id] = meta
            fresh: int | None = None
            if meta.needs_new_producer_id(expected[1] if expected else None):
                fresh = await self.producer_ids()
            try:
                target, fencing = meta.begin_init(timeout_ms, expected, now, fresh)
            except TxnError as exc:
                return InitResult(exc.code)
            then = self._finisher(shard, meta, target) if fencing else None
            error = await self.shards.persist(shard, meta, target, then)
            if error != ErrorCode.NONE:
                return InitResult(error)
            if fencing:
                log.info(
                    "Aborting the ongoing transaction of %s for a new producer instance",
                    transactional_id,
                )
                return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
            return InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch)

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        transaction_version: int = TV_0,
    ) -> ErrorCode:
        """AddPartitionsToTxn (and AddOffsetsToTxn, with the group's offsets partition);
        ``transaction_version`` 2 for the implicit adds of TV2 producers."""
        wanted = set(partitions)
        return await self._transition(
            transactional_id,
            lambda meta: meta.begin_add_partitions(
                producer_id, producer_epoch, wanted, self.clock(), transaction_version
            ),
            finish=False,
        )

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ with ``verify_only``."""
        wanted = set(partitions)
        try:
            if not transactional_id:
                raise TxnError(ErrorCode.INVALID_REQUEST)
            meta = self.shards.of(transactional_id).txns.get(transactional_id)
            if meta is None:
                raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
            return meta.verify_partitions(producer_id, producer_epoch, wanted)
        except (TxnError, KafkaApiError) as exc:
            return dict.fromkeys(wanted, exc.code)

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> ErrorCode:
        """EndTxn before v5 (transactions version 1): no epoch bump."""
        code, _, _ = await self.end_transaction(
            transactional_id, producer_id, producer_epoch, commit
        )
        return code

    async def end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        transaction_version: int = TV_0,
    ) -> tuple[ErrorCode, int, int]:
        """EndTxn: answered once PrepareCommit/PrepareAbort is durable, with the producer id
        and epoch the client's next transaction uses (-1, -1 on an error)."""
        answer = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)

        async def begin(meta: TxnMetadata) -> TxnLogValue | None:
            nonlocal answer
            fresh = None
            if meta.state is TxnState.ONGOING and meta.end_needs_new_producer_id(
                transaction_version
            ):
                fresh = await self.producer_ids()
            target = meta.begin_end(
                producer_id, producer_epoch, commit, self.clock(), transaction_version, fresh
            )
            if target is None:
                answer = meta.ended_producer()
            elif target.next_producer_id != NO_PRODUCER_ID:
                answer = (target.next_producer_id, 0)
            else:
                answer = (target.producer_id, target.producer_epoch)
            return target

        code = await self._transition(transactional_id, begin, finish=True)
        if code != ErrorCode.NONE:
            return code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        return code, *answer

    async def _transition(
        self,
        transactional_id: str,
        begin: Callable[[TxnMetadata], TxnLogValue | Awaitable[TxnLogValue | None] | None],
        *,
        finish: bool,
    ) -> ErrorCode:
        """Runs a client request's ``begin`` on the id's metadata under its shard's lock and
        persists the state it returns (None: nothing to write, as for a retry); with
        ``finish``, the markers phase starts once that state is durable."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        shard = self.shards.of(transactional_id)
        async with shard.lock:
            if not self.shards.current(shard):
                # The partition moved while this request waited: its state is stale.
                return ErrorCode.NOT_COORDINATOR
            meta = shard.txns.get(transactional_id)
            if meta is None:
                return ErrorCode.INVALID_PRODUCER_ID_MAPPING
            try:
                begun = begin(meta)
                target = await begun if inspect.isawaitable(begun) else begun
            except TxnError as exc:
                if exc.code == ErrorCode.INVALID_TXN_STATE:
                    # Rare and fatal to the client: say what the coordinator saw.
                    log.info(
                        "Answering INVALID_TXN_STATE to %s: %s (producer %d epoch %d)",
                        transactional_id,
                        meta.state.display_name,
                        meta.producer_id,
                        meta.producer_epoch,
                    )
                return exc.code
            if target is None:
                return ErrorCode.NONE
            then = self._finisher(shard, meta, target) if finish else None
            return await self.shards.persist(shard, meta, target, then)

    def describe(self, transactional_id: str) -> TxnDescription | ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        try:
            meta = self.shards.of(transactional_id).txns.get(transactional_id)
        except KafkaApiError as exc:
            return exc.code
        if meta is None:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        return TxnDescription(
            transactional_id,
            meta.state,
            meta.timeout_ms,
            meta.start_ms,
            meta.producer_id,
            meta.producer_epoch,
            frozenset(meta.partitions),
        )

    def transactions(self) -> list[TxnMetadata]:
        """Every transactional id of every partition we lead (loading those not loaded)."""
        return list(self.shards.all_transactions())

    # -- timers ------------------------------------------------------------------------------
    async def run(self, stopping: asyncio.Event) -> None:
        """Load led shards, abort timed-out transactions and expire idle ids until
        ``stopping`` is set."""
        tick_s = min(self.config.abort_interval_ms / 1000.0, _MAX_TICK_S)
        try:
            while not stopping.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), max(tick_s, 0.01))
                if stopping.is_set():
                    break
                try:
                    await self.tick()
                except Exception:
                    log.exception("Transaction coordinator timers failed")
        finally:
            self.shards.unload_all()

    async def tick(self) -> None:
        now = self.clock()
        self.shards.refresh()
        if now >= self._next_abort_ms:
            self._next_abort_ms = now + self.config.abort_interval_ms
            await self.abort_timed_out()
        if now >= self._next_expire_ms:
            self._next_expire_ms = now + self.config.expire_interval_ms
            await self.expire_ids()

    async def abort_timed_out(self) -> int:
        """Abort (with an epoch bump) every Ongoing transaction past its timeout."""
        aborted = 0
        for shard in self.shards.loaded():
            async with shard.lock:
                for meta in list(shard.txns.values()):
                    if not self.shards.current(shard) or not meta.timed_out(self.clock()):
                        continue
                    target = meta.begin_fence(self.clock())
                    log.info(
                        "Aborting transaction of %s (producer %d): older than its timeout of %d ms",
                        meta.transactional_id,
                        meta.producer_id,
                        meta.timeout_ms,
                    )
                    then = self._finisher(shard, meta, target)
                    if await self.shards.persist(shard, meta, target, then) == ErrorCode.NONE:
                        aborted += 1
        return aborted

    async def expire_ids(self) -> int:
        """Tombstone the transactional ids unused for transactional.id.expiration.ms."""
        expired = 0
        for shard in self.shards.loaded():
            async with shard.lock:
                for meta in list(shard.txns.values()):
                    now = self.clock()
                    if not self.shards.current(shard) or not meta.expired(
                        now, self.config.id_expiration_ms
                    ):
                        continue
                    target = meta.begin_expire()
                    if await self.shards.persist(shard, meta, target) == ErrorCode.NONE:
                        expired += 1
        if expired:
            log.info("Expired %d transactional id(s)", expired)
        return expired
