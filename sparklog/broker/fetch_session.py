"""Fetch sessions (KIP-227): the broker's cache of incremental fetch sessions (Kafka's
``FetchSession.scala``: ``FetchSessionCache``, ``FetchManager.newContext`` and the fetch
contexts). Plain and synchronous: no I/O, no clock (callers pass ``now_ms``), no asyncio.

A fetch names a session id and an epoch:

- epoch 0 (INITIAL): a full fetch. A session it names is closed; a new one is created when the
  cache has room (or evicts, below) and its id returned; otherwise session id 0.
- epoch -1 (FINAL): a full fetch that closes the session it names and creates none.
- epoch > 0: an incremental fetch of session ``session_id`` at exactly the session's epoch
  (else INVALID_FETCH_SESSION_EPOCH; an unknown id is FETCH_SESSION_ID_NOT_FOUND; a session made
  with topic ids used without them, or the reverse, is FETCH_SESSION_TOPIC_ID_ERROR). The
  request carries only added or changed partitions and ``forgotten_topics_data``; the broker
  reads every partition of the session. A session left empty is closed (session id 0).

Invariants:
- A session's epoch moves on once per accepted incremental request (1, 2, ... wrapping from
  2**31-1 to 1); the response is only built if it is still the expected one (a duplicate
  request in between answers INVALID_FETCH_SESSION_EPOCH with no partitions).
- An incremental response carries a partition only if it returns records, its high watermark,
  last stable offset or log start offset differ from what the session last sent, it has an
  error (which also forgets the sent high watermark, so the partition is re-sent once the error
  clears), a diverging epoch or a preferred read replica. Kafka does not compare the last stable
  offset; we do, so a read_committed consumer learns an LSO that moved on without the HW. A
  partition that returned records moves to the end of the session (round-robin under
  ``max_bytes``).
- Eviction (Kafka's ``tryEvict``): with the cache full
  (``max.incremental.fetch.session.cache.slots``), a new session evicts the least recently used
  one if it was unused for ``eviction_ms``; otherwise the "least valuable" evictable session,
  ordered by (privileged, size, id), if the new one is at least as valuable. Whether a session
  is evictable is fixed when it is last used: by anyone once older than ``eviction_ms``; by a
  privileged (follower) session also when it is a consumer's. Kafka splits the cache into 8
  shards to spread lock contention; one event loop needs no lock, so this is one shard holding
  every slot.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sparklog.protocol.errors import ErrorCode

# A Fetch response partition (message_types.FetchResponseResponsesPartitions, or a plain dict).
ResponseT = TypeVar("ResponseT", bound=Mapping[str, Any])

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
DEFAULT_CACHE_SLOTS = 1000
# Kafka's KafkaBroker.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS.
DEFAULT_EVICTION_MS = 120_000
_INT32_MAX = 2**31 - 1

# (topic id, partition) in a session that uses topic ids (v13+), (topic name, partition) before.
PartitionKey = tuple[bytes | str, int]


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (FINAL stays FINAL; 2**31-1 wraps to 1)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _INT32_MAX else epoch + 1


@dataclass(slots=True, eq=False)
class FetchPartition:
    """One partition of a fetch: the request's parameters and, inside a session, what the last
    response sent for it (Kafka's ``CachedPartition``; ``sent_*`` are -1 until then)."""

    topic: str  # "" while a topic id is unknown
    topic_id: bytes
    partition: int
    fetch_offset: int
    current_leader_epoch: int
    max_bytes: int
    last_fetched_epoch: int = -1
    log_start_offset: int = -1
    sent_high_watermark: int = -1
    sent_last_stable_offset: int = -1
    sent_log_start_offset: int = -1

    def key(self, uses_topic_ids: bool) -> PartitionKey:
        return (self.topic_id, self.partition) if uses_topic_ids else (self.topic, self.partition)

    def update_request(self, other: FetchPartition) -> None:
        self.fetch_offset = other.fetch_offset
        self.current_leader_epoch = other.current_leader_epoch
        self.max_bytes = other.max_bytes
        self.last_fetched_epoch = other.last_fetched_epoch
        self.log_start_offset = other.log_start_offset

    def unchanged(
        self, high_watermark: int, last_stable_offset: int, log_start_offset: int
    ) -> bool:
        """True when these marks are the ones the session last sent."""
        return (
            self.sent_high_watermark == high_watermark
            and self.sent_last_stable_offset == last_stable_offset
            and self.sent_log_start_offset == log_start_offset
        )

    def must_respond(self, response: Mapping[str, Any]) -> bool:
        """Kafka's ``maybeUpdateResponseData``: whether an incremental response carries this
        partition; records what is sent."""
        respond = bool(response.get("records"))
        high_watermark = response["high_watermark"]
        last_stable_offset = response.get("last_stable_offset", -1)
        log_start_offset = response.get("log_start_offset", -1)
        if not self.unchanged(high_watermark, last_stable_offset, log_start_offset):
            respond = True
            self.sent_high_watermark = high_watermark
            self.sent_last_stable_offset = last_stable_offset
            self.sent_log_start_offset = log_start_offset
        if response.get("preferred_read_replica", -1) >= 0:
            respond = True
        if response["error_code"]:
            self.sent_high_watermark = -1
            respond = True
        diverging = response.get("diverging_epoch")
        if diverging and diverging.get("end_offset", -1) >= 0:
            respond = True
        return respond


@dataclass(slots=True, eq=False)
class FetchSession:
    id: int
    privileged: bool  # created by a follower
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    partitions: dict[PartitionKey, FetchPartition] = field(default_factory=dict)
    cached_size: int = -1
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False

    def update(self, changed: Iterable[FetchPartition], forgotten: Iterable[PartitionKey]) -> None:
        for wanted in changed:
            key = wanted.key(self.uses_topic_ids)
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = wanted
            else:
                cached.update_request(wanted)
        for key in forgotten:
            self.partitions.pop(key, None)


@dataclass(slots=True)
class FetchContext:
    """What one fetch reads and how its response is built (Kafka's FetchContext kinds):
    ``error`` set: answer it with no partitions; ``session`` set: incremental; ``create``: a
    full fetch that may create a session; none: sessionless."""

    partitions: list[FetchPartition]
    error: ErrorCode = ErrorCode.NONE
    session: FetchSession | None = None
    expected_epoch: int = FINAL_EPOCH
    create: bool = False
    privileged: bool = False
    uses_topic_ids: bool = False

    @property
    def incremental(self) -> bool:
        return self.session is not None


class FetchSessionCache:
    """The broker's fetch sessions, at most ``max_entries`` of them."""

    def __init__(
        self,
        max_entries: int = DEFAULT_CACHE_SLOTS,
        eviction_ms: int = DEFAULT_EVICTION_MS,
        *,
        rng: random.Random | None = None,
        on_evict: Callable[[], None] = lambda: None,
    ) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self._rng = rng or random.Random()
        self.on_evict = on_evict  # the IncrementalFetchSessionEvictionsPerSec meter
        self.sessions: dict[int, FetchSession] = {}
        self._last_used: OrderedDict[int, FetchSession] = OrderedDict()
        self.total_partitions = 0
        self.evictions = 0
        self.incremental_fetches = 0
        self.full_fetches = 0

    def __len__(self) -> int:
        return len(self.sessions)

    # -- a request's context (Kafka's FetchManager.newContext) ----------------------------------
    def new_context(
        self,
        *,
        session_id: int,
        epoch: int,
        uses_topic_ids: bool,
        privileged: bool,
        partitions: list[FetchPartition],
        forgotten: Iterable[PartitionKey],
        now_ms: int,
    ) -> FetchContext:
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            self.full_fetches += 1
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)
            return FetchContext(
                partitions,
                create=epoch == INITIAL_EPOCH,
                privileged=privileged,
                uses_topic_ids=uses_topic_ids,
            )
        session = self.sessions.get(session_id)
        if session is None:
            return FetchContext([], ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return FetchContext([], ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            return FetchContext([], ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(partitions, forgotten)
        if not session.partitions:
            self.remove(session_id)
            return FetchContext(partitions)
        self.incremental_fetches += 1
        self._touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        return FetchContext(
            list(session.partitions.values()),
            session=session,
            expected_epoch=session.epoch,
            privileged=privileged,
            uses_topic_ids=uses_topic_ids,
        )

    def complete(
        self,
        context: FetchContext,
        results: list[tuple[FetchPartition, ResponseT]],
        now_ms: int,
    ) -> tuple[ErrorCode, int, list[tuple[FetchPartition, ResponseT]]]:
        """The response's (error, session id, partitions) once the partitions were read.

        ``results`` pairs each partition read with its Fetch response partition
        (``records``, ``high_watermark``, ``error_code``...); an incremental fetch may leave out
        partitions it knows are unchanged (see :meth:`FetchPartition.unchanged`).
        """
        if context.error:
            return context.error, INVALID_SESSION_ID, []
        session = context.session
        if session is not None:
            if session.epoch != context.expected_epoch:
                return ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, []
            kept: list[tuple[FetchPartition, ResponseT]] = []
            for wanted, response in results:
                if wanted.must_respond(response):
                    kept.append((wanted, response))
                    if response.get("records"):
                        key = wanted.key(session.uses_topic_ids)
                        moved = session.partitions.pop(key, None)
                        if moved is not None:
                            session.partitions[key] = moved
            return ErrorCode.NONE, session.id, kept
        if not context.create:
            return ErrorCode.NONE, INVALID_SESSION_ID, results
        session_id = self._maybe_create(context, results, now_ms)
        return ErrorCode.NONE, session_id, results

    # -- the cache ---------------------------------------------------------------------------
    def _maybe_create(
        self,
        context: FetchContext,
        results: Sequence[tuple[FetchPartition, Mapping[str, Any]]],
        now_ms: int,
    ) -> int:
        size = len(results)
        if len(self.sessions) >= self.max_entries and not self._try_evict(
            context.privileged, size, now_ms
        ):
            return INVALID_SESSION_ID
        session = FetchSession(
            self._new_session_id(),
            context.privileged,
            context.uses_topic_ids,
            now_ms,
            now_ms,
            next_epoch(INITIAL_EPOCH),
        )
        for wanted, response in results:
            wanted.sent_high_watermark = response["high_watermark"]
            wanted.sent_last_stable_offset = response.get("last_stable_offset", -1)
            wanted.sent_log_start_offset = response.get("log_start_offset", -1)
            session.partitions[wanted.key(context.uses_topic_ids)] = wanted
        self.sessions[session.id] = session
        self._touch(session, now_ms)
        return session.id

    def _new_session_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, _INT32_MAX - 1)
            if session_id not in self.sessions:
                return session_id

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        oldest = next(iter(self._last_used.values()), None)
        if oldest is None:
            return False
        if now_ms - oldest.last_used_ms > self.eviction_ms:
            self._evict(oldest)
            return True
        candidates = [
            s
            for s in self.sessions.values()
            if (s.evictable_by_privileged if privileged else s.evictable_by_all)
        ]
        if not candidates:
            return False
        victim = min(candidates, key=lambda s: (s.privileged, s.cached_size, s.id))
        if (privileged, size, 0) < (victim.privileged, victim.cached_size, victim.id):
            return False
        self._evict(victim)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session.id)
        self.evictions += 1
        self.on_evict()

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self._last_used.pop(session_id, None)
            self.total_partitions -= session.cached_size
        return session

    def _touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms
        self._last_used.pop(session.id, None)
        self._last_used[session.id] = session
        if session.cached_size >= 0:
            self.total_partitions -= session.cached_size
        session.cached_size = len(session.partitions)
        self.total_partitions += session.cached_size
        old = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_all = old
        session.evictable_by_privileged = old or not session.privileged
