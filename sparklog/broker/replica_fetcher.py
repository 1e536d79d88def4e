"""Replica fetchers: the asyncio drivers that pull the partitions this broker follows.

Kafka's ``ReplicaFetcherManager`` / ``ReplicaFetcherThread``: one fetcher task per (source
broker, fetcher id), ``num.replica.fetchers`` per source broker, a partition going to fetcher
``hash(topic, partition) % num.replica.fetchers`` of its leader. A fetcher sends Fetch v17 to
the leader's inter-broker listener (``inter.broker.listener.name``, from the leader's broker
registration in the metadata image) with our broker epoch in ``replica_state``, and hands each
partition's answer to the partition's :class:`~sparklog.replication.follower.FollowerCore`,
which appends the leader's batches as they are, truncates on a diverging epoch and follows the
leader's HW and log start offset.

Contract:
- Requests: ``replica.fetch.max.bytes`` per partition, ``replica.fetch.response.max.bytes``
  per response, ``replica.fetch.min.bytes`` / ``replica.fetch.wait.max.ms`` for the leader's
  long poll, in a fetch session (KIP-227, :mod:`sparklog.broker.fetch_session_handler`): after
  the first full fetch, requests carry only the partitions whose position changed and answers
  only those with news; a session error (FETCH_SESSION_ID_NOT_FOUND,
  INVALID_FETCH_SESSION_EPOCH) makes the next fetch a full one at once, without backing off.
- A partition that answered an error backs off ``replica.fetch.backoff.ms``; a broken or
  refused connection backs off the whole fetcher; FENCED_LEADER_EPOCH parks the partition
  until the metadata image brings a newer epoch (the follower core decides which).
- Appends keep the leader's flush policy: when ``flush.messages`` asks for an fsync it runs on
  the replica manager's flusher thread, off the loop, before the next fetch.
- OFFSET_MOVED_TO_TIERED_STORAGE (KIP-405): the fetcher asks the leader for its earliest local
  offset (ListOffsets, timestamp -4), reads the partition's state below it from the store
  (the manager's ``tier_reader``, the remote log manager) and restarts the log from it
  (:mod:`sparklog.broker.remote_aux_state`); without tiered storage on this broker the log
  restarts empty at the leader's local log start (with it, the fetcher waits for the remote
  log manager to start rather than skip the tier). A partition that left us, changed leader or
  moved on while the store was read is left alone.
- The manager follows the metadata: :meth:`ReplicaFetcherManager.update` (the replica manager's
  ``follower_listener``) adds partitions we now follow and removes those we lead or dropped.
  A response for a partition object the replica manager no longer hosts is discarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from sparklog.broker.fetch_session_handler import FetchSessionHandler
from sparklog.broker.partition import Partition
from sparklog.broker.replica_manager import ReplicaManager, TopicPartition
from sparklog.metadata.image import MetadataImage
from sparklog.net.client import KafkaClientConnection
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.kafka_uuid import ZERO_UUID
from sparklog.protocol.message_types import (
    FetchRequest,
    FetchRequestTopicsPartitions,
    FetchResponse,
    FetchResponseResponsesPartitions,
)
from sparklog.protocol.messages import API_BY_KEY
from sparklog.replication.follower import FollowerCore
from sparklog.replication.messages import (
    EpochEndOffset,
    FetchPosition,
    FetchResponsePartition,
    FollowerAction,
)
from sparklog.security.client_security import ClientSecurity

if TYPE_CHECKING:
    # Loaded only with tiered storage (it pulls in pyarrow through sparklog.tiering).
    from sparklog.broker.remote_aux_state import TierState

log = logging.getLogger(__name__)

FETCH_KEY = 1
FETCH_VERSION = 17
# Fetch v18's partition high_watermark (KIP-1166) at its declared default: not sent at v17.
_UNKNOWN_HIGH_WATERMARK = (1 << 63) - 1
LIST_OFFSETS_KEY = 2
LIST_OFFSETS_VERSION = 9
EARLIEST_LOCAL_TIMESTAMP = -4
TierReader = Callable[[Partition, int], Awaitable["TierState"]]
_IDLE_WAIT_S = 1.0
_SESSION_ERRORS = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _now_s() -> float:
    return time.monotonic()


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    fetch_max_bytes: int = 1_048_576
    response_max_bytes: int = 10_485_760
    wait_max_ms: int = 500
    min_bytes: int = 1
    backoff_ms: int = 1_000
    num_fetchers: int = 1
    listener_name: str = "PLAINTEXT"
    request_timeout_ms: int = 30_000
    # remote.log.storage.system.enable: followers of tiered topics rebuild from the store.
    remote_log_storage_enabled: bool = False
    # TLS/SASL on inter.broker.listener.name (None: PLAINTEXT).
    security: ClientSecurity | None = None


@dataclass(slots=True)
class _Fetching:
    partition: Partition
    core: FollowerCore
    delayed_until_s: float = 0.0


def fetcher_id(tp: TopicPartition, num_fetchers: int) -> int:
    # A stable hash: the same partition lands on the same fetcher across restarts.
    return zlib.crc32(f"{tp[0]}-{tp[1]}".encode()) % max(num_fetchers, 1)


class ReplicaFetcher:
    """One fetch loop to one source broker."""

    def __init__(
        self,
        source_broker: int,
        replica_manager: ReplicaManager,
        image: Callable[[], MetadataImage],
        broker_epoch: Callable[[], int],
        config: FetcherConfig,
        client_id: str,
        tier_reader: Callable[[], TierReader | None] = lambda: None,
    ) -> None:
        self.source_broker = source_broker
        self._tier_reader = tier_reader
        self.rm = replica_manager
        self._image = image
        self._broker_epoch = broker_epoch
        self.config = config
        self.client_id = client_id
        self.partitions: dict[TopicPartition, _Fetching] = {}
        self._wake = asyncio.Event()
        self._connection: KafkaClientConnection | None = None
        self._address: tuple[str, int] | None = None
        self.session: FetchSessionHandler[tuple[bytes, int]] = FetchSessionHandler()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def add(self, partition: Partition, core: FollowerCore) -> None:
        self.partitions[(partition.topic, partition.index)] = _Fetching(partition, core)
        self._wake.set()

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)

    async def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._connection is not None:
            await self._connection.close()

    # -- the loop ------------------------------------------------------------------------------
    async def _run(self) -> None:
        while not self._closed:
            try:
                await self._fetch_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("Replica fetcher for broker %d failed", self.source_broker)
                await self._sleep(self.config.backoff_ms / 1000)

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), max(seconds, 0.001))

    def _ready(self) -> tuple[list[tuple[_Fetching, FetchPosition]], float]:
        now = _now_s()
        ready: list[tuple[_Fetching, FetchPosition]] = []
        next_ready = now + _IDLE_WAIT_S
        for tp, fetching in list(self.partitions.items()):
            if self.rm.partitions.get(tp) is not fetching.partition:
                self.partitions.pop(tp, None)
                continue
            if fetching.delayed_until_s > now:
                next_ready = min(next_ready, fetching.delayed_until_s)
                continue
            position = fetching.core.fetch_position()
            if position is not None and fetching.core.leader_id == self.source_broker:
                ready.append((fetching, position))
        return ready, next_ready

    def _connect(self) -> KafkaClientConnection | None:
        registration = self._image().cluster.broker(self.source_broker)
        endpoint = registration.endpoint(self.config.listener_name) if registration else None
        if endpoint is None:
            return None
        address = (endpoint.host, endpoint.port)
        if self._connection is None or self._address != address:
            if self._connection is not None:
                old = self._connection
                asyncio.get_running_loop().create_task(old.close())
            self._connection = KafkaClientConnection(
                address[0],
                address[1],
                client_id=self.client_id,
                request_timeout_ms=self.config.request_timeout_ms + self.config.wait_max_ms,
                reconnect_backoff_ms=min(self.config.backoff_ms, 1_000),
                security=self.config.security,
            )
            self._address = address
        return self._connection

    async def _fetch_once(self) -> None:
        ready, next_ready = self._ready()
        if not ready:
            await self._sleep(next_ready - _now_s())
            return
        connection = self._connect()
        if connection is None:
            log.debug("No %s endpoint for broker %d", self.config.listener_name, self.source_broker)
            await self._sleep(self.config.backoff_ms / 1000)
            return
        body = self._request(ready)
        try:
            answer = await connection.request(API_BY_KEY[FETCH_KEY], FETCH_VERSION, body)
            response = cast("FetchResponse", answer)
        except (ConnectionError, TimeoutError, OSError) as exc:
            self.session.handle_error()
            log.debug("Fetch from broker %d failed: %s", self.source_broker, exc)
            await self._sleep(self.config.backoff_ms / 1000)
            return
        top_error = int(response.get("error_code", 0))
        answered = [
            (bytes(topic.get("topic_id") or b""), int(data["partition_index"]))
            for topic in response.get("responses", [])
            for data in topic.get("partitions", [])
        ]
        usable = self.session.handle_response(
            top_error, int(response.get("session_id", 0)), answered
        )
        if top_error in _SESSION_ERRORS:
            log.debug("Fetch session with broker %d: %s", self.source_broker, ErrorCode(top_error))
            return  # the next fetch is a full one
        if top_error:
            log.info("Fetch from broker %d failed: %s", self.source_broker, ErrorCode(top_error))
            await self._sleep(self.config.backoff_ms / 1000)
            return
        if usable:
            await self._process(ready, response)

    def _request(self, ready: list[tuple[_Fetching, FetchPosition]]) -> FetchRequest:
        wanted: dict[tuple[bytes, int], FetchRequestTopicsPartitions] = {}
        for fetching, position in ready:
            partition = fetching.partition
            wanted[(partition.topic_id, partition.index)] = {
                "partition": partition.index,
                "current_leader_epoch": position.current_leader_epoch,
                "fetch_offset": position.fetch_offset,
                "last_fetched_epoch": position.last_fetched_epoch,
                "log_start_offset": position.log_start_offset,
                "partition_max_bytes": self.config.fetch_max_bytes,
                # the declared defaults (tagged fields, not sent at their defaults)
                "replica_directory_id": ZERO_UUID,
                "high_watermark": _UNKNOWN_HIGH_WATERMARK,
            }
        data = self.session.build(wanted)
        topics: dict[bytes, list[FetchRequestTopicsPartitions]] = {}
        for (topic_id, _), partition_data in data.to_send.items():
            topics.setdefault(topic_id, []).append(partition_data)
        forgotten: dict[bytes, list[int]] = {}
        for topic_id, index in data.to_forget:
            forgotten.setdefault(topic_id, []).append(index)
        request: FetchRequest = {
            "cluster_id": None,
            "replica_id": -1,  # v15+ names the follower in replica_state
            "replica_state": {
                "replica_id": self.rm.broker_id,
                "replica_epoch": self._broker_epoch(),
            },
            "max_wait_ms": self.config.wait_max_ms,
            "min_bytes": self.config.min_bytes,
            "max_bytes": self.config.response_max_bytes,
            "isolation_level": 0,
            "session_id": data.session_id,
            "session_epoch": data.epoch,
            "topics": [
                {"topic": "", "topic_id": topic_id, "partitions": partitions}
                for topic_id, partitions in topics.items()
            ],
            "forgotten_topics_data": [
                {"topic": "", "topic_id": topic_id, "partitions": indexes}
                for topic_id, indexes in forgotten.items()
            ],
            "rack_id": "",
        }
        return request

    async def _process(
        self, ready: list[tuple[_Fetching, FetchPosition]], response: FetchResponse
    ) -> None:
        asked = {(f.partition.topic_id, f.partition.index): (f, position) for f, position in ready}
        now_s = _now_s()
        for topic in response.get("responses", []):
            topic_id = bytes(topic.get("topic_id") or b"")
            for data in topic.get("partitions", []):
                entry = asked.get((topic_id, int(data["partition_index"])))
                if entry is None:
                    continue
                fetching, position = entry
                await self._apply(fetching, position, data, now_s)

    async def _apply(
        self,
        fetching: _Fetching,
        position: FetchPosition,
        data: FetchResponseResponsesPartitions,
        now_s: float,
    ) -> None:
        partition = fetching.partition
        tp = (partition.topic, partition.index)
        if self.rm.partitions.get(tp) is not partition or partition.follower_core is not (
            fetching.core
        ):
            self.partitions.pop(tp, None)
            return
        diverging = data.get("diverging_epoch") or {}
        epoch_end = EpochEndOffset(
            int(diverging.get("epoch", -1)), int(diverging.get("end_offset", -1))
        )
        try:  # the core appends or truncates the log: an OSError comes from the disk
            outcome = fetching.core.on_fetch_response(
                FetchResponsePartition(
                    fetch_offset=position.fetch_offset,
                    current_leader_epoch=position.current_leader_epoch,
                    error_code=int(data.get("error_code", 0)),
                    high_watermark=int(data.get("high_watermark", -1)),
                    log_start_offset=int(data.get("log_start_offset", -1)),
                    # decoded: the codec's zero-copy view (the type also admits what encodes)
                    records=cast("memoryview | None", data.get("records")),
                    diverging_epoch=epoch_end if epoch_end.end_offset >= 0 else None,
                    generation=position.generation,
                )
            )
        except OSError as exc:
            # The log dir goes offline (the broker stops this partition's fetching).
            self.partitions.pop(tp, None)
            self.rm.log_dir_failed(partition, "Error while appending replicated records to", exc)
            return
        if outcome.truncated_to is not None:
            log.info(
                "Truncated %s-%d to %d (leader %d, epoch %d)",
                partition.topic,
                partition.index,
                outcome.truncated_to,
                self.source_broker,
                position.current_leader_epoch,
            )
        if outcome.action is FollowerAction.BUILD_TIER_STATE:
            if not await self._build_tier_state(fetching, position):
                fetching.delayed_until_s = now_s + self.config.backoff_ms / 1000
            return
        if outcome.action is FollowerAction.BACKOFF:
            fetching.delayed_until_s = now_s + self.config.backoff_ms / 1000
            log.debug(
                "Fetch of %s-%d from %d: %s",
                partition.topic,
                partition.index,
                self.source_broker,
                _error_name(outcome.error),
            )
        elif outcome.action is FollowerAction.AWAIT_METADATA:
            log.info(
                "Fetch of %s-%d from %d was fenced; waiting for newer metadata",
                partition.topic,
                partition.index,
                self.source_broker,
            )
        if outcome.appended_to >= 0 and partition.log.needs_flush:
            try:
                await self.rm.flush(partition.log)
            except KafkaApiError:  # the flush took the log dir offline
                self.partitions.pop(tp, None)
                return
        if outcome.appended_to >= 0 or outcome.hw_changed or outcome.truncated_to is not None:
            self.rm.fetch_waiters.notify(tp)

    async def _earliest_local(self, partition: Partition, leader_epoch: int) -> int | None:
        """The leader's earliest local offset (ListOffsets -4), None on any error."""
        connection = self._connection
        if connection is None:
            return None
        body = {
            "replica_id": self.rm.broker_id,
            "isolation_level": 0,
            "topics": [
                {
                    "name": partition.topic,
                    "partitions": [
                        {
                            "partition_index": partition.index,
                            "current_leader_epoch": leader_epoch,
                            "timestamp": EARLIEST_LOCAL_TIMESTAMP,
                        }
                    ],
                }
            ],
        }
        try:
            response = await connection.request(
                API_BY_KEY[LIST_OFFSETS_KEY], LIST_OFFSETS_VERSION, body
            )
        except (ConnectionError, TimeoutError, OSError) as exc:
            log.debug("ListOffsets to broker %d failed: %s", self.source_broker, exc)
            return None
        for topic in response.get("topics", []):
            for data in topic.get("partitions", []):
                if int(data.get("error_code", 0)) or int(data.get("offset", -1)) < 0:
                    log.info(
                        "Earliest local offset of %s-%d from %d: %s",
                        partition.topic,
                        partition.index,
                        self.source_broker,
                        _error_name(int(data.get("error_code", 0))),
                    )
                    return None
                return int(data["offset"])
        return None

    async def _build_tier_state(self, fetching: _Fetching, position: FetchPosition) -> bool:
        """KIP-405's follower path; False when it must be retried after a backoff."""
        partition = fetching.partition
        tp = (partition.topic, partition.index)
        local_start = await self._earliest_local(partition, position.current_leader_epoch)
        if local_start is None:
            return False
        tiered = partition.log.config.remote_storage_enable
        reader = self._tier_reader() if tiered else None
        if tiered and reader is None and self.config.remote_log_storage_enabled:
            return False  # the remote log manager is not started yet: retry soon
        state: TierState | None = None
        if reader is not None and local_start > 0:
            try:
                state = await reader(partition, local_start)
            except Exception as exc:
                log.warning(
                    "Cannot rebuild %s-%d from remote storage (leader %d, local log start"
                    " %d): %s; retrying",
                    partition.topic,
                    partition.index,
                    self.source_broker,
                    local_start,
                    exc,
                )
                return False
        current = fetching.core.fetch_position()
        if (
            self.rm.partitions.get(tp) is not partition
            or partition.follower_core is not fetching.core
            or current is None
            or current.generation != position.generation
            or current.fetch_offset != position.fetch_offset
        ):
            return True  # we moved on meanwhile; the next fetch decides again
        try:
            if state is not None:
                from sparklog.broker.remote_aux_state import apply_tier_state

                apply_tier_state(partition.log, state)
            else:
                partition.log.truncate_fully_and_start_at(local_start)
                log.info(
                    "Restarted %s-%d at the leader's local log start %d (no tiered storage here)",
                    partition.topic,
                    partition.index,
                    local_start,
                )
        except OSError as exc:
            self.partitions.pop(tp, None)
            self.rm.log_dir_failed(partition, "Error while rebuilding from the tier", exc)
            return True
        fetching.core.restarted()
        self.rm.fetch_waiters.notify(tp)
        return True


class ReplicaFetcherManager:
    """Fetchers per (source broker, fetcher id); follows leadership changes."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        image: Callable[[], MetadataImage],
        broker_epoch: Callable[[], int],
        config: FetcherConfig,
    ) -> None:
        self.rm = replica_manager
        self._image = image
        self._broker_epoch = broker_epoch
        self.config = config
        self.fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._where: dict[TopicPartition, tuple[int, int]] = {}
        self._closed = False
        # Set when tiered storage is on: the remote log manager's read_remote_log_aux_state.
        self.tier_reader: TierReader | None = None

    def update(self, followed: list[Partition], unfollowed: list[TopicPartition]) -> None:
        """The replica manager's ``follower_listener``: follow and unfollow partitions."""
        for tp in unfollowed:
            self._remove(tp)
        for partition in followed:
            core = partition.follower_core
            tp = (partition.topic, partition.index)
            if core is None or core.leader_id < 0 or self._closed:
                self._remove(tp)
                continue
            key = (core.leader_id, fetcher_id(tp, self.config.num_fetchers))
            if self._where.get(tp) != key:
                self._remove(tp)
            fetcher = self.fetchers.get(key)
            if fetcher is None:
                fetcher = ReplicaFetcher(
                    core.leader_id,
                    self.rm,
                    self._image,
                    self._broker_epoch,
                    self.config,
                    client_id=f"replica-fetcher-{self.rm.broker_id}-{key[0]}-{key[1]}",
                    tier_reader=lambda: self.tier_reader,
                )
                self.fetchers[key] = fetcher
                fetcher.start()
            fetcher.add(partition, core)
            self._where[tp] = key
            log.info(
                "Following %s-%d from broker %d (leader epoch %d, fetch offset %d)",
                partition.topic,
                partition.index,
                core.leader_id,
                core.leader_epoch,
                partition.log_end_offset,
            )

    def _remove(self, tp: TopicPartition) -> None:
        key = self._where.pop(tp, None)
        if key is not None and key in self.fetchers:
            self.fetchers[key].remove(tp)

    @property
    def partition_count(self) -> int:
        return len(self._where)

    async def close(self) -> None:
        self._closed = True
        fetchers, self.fetchers = self.fetchers, {}
        await asyncio.gather(*(f.close() for f in fetchers.values()), return_exceptions=True)
