"""A simulated broker hosting one partition replica through the real replication cores.

The broker is the driver the sans-IO cores expect: it registers with the model controller,
heartbeats, applies metadata images (creating a :class:`LeaderCore` when it is named leader and
a :class:`FollowerCore` otherwise), runs the follower fetch loop, answers follower fetches and
producer requests as leader, sends the leader's AlterPartition proposals, and answers acks=all
produces when ``check_enough_replicas`` says so. All I/O goes through a :class:`Host` (the
simulation), so a seed replays exactly.

:class:`CrashLog` is an :class:`InMemoryLog` with a flushed prefix: a crash keeps only what was
flushed (Kafka's default is to leave flushing to the OS, so most appends are not flushed), and
truncations count as durable. It records every truncation below its high watermark (the
records it acknowledged as committed): the invariants allow none.

Restart with old metadata (issue 16): when the simulation asks for it
(:meth:`Host.replayed_metadata`), a restarted broker applies every historical image older than
the one its registration returned, then that one, as a metadata loader replaying its log would
publish them, all within one event. The cores must refuse the states older than the broker's
log; like the broker's ``Partition``, the driver drops a fresh :class:`LeaderCore` that
refused its first view.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.record_codec import build_batch
from sparklog.replication.follower import FollowerCore
from sparklog.replication.leader import LeaderCore
from sparklog.replication.messages import (
    AlterPartitionOutcome,
    AlterPartitionProposal,
    FetchResponsePartition,
    FollowerAction,
    FollowerFetch,
)
from tests.sim.replication.memory_log import InMemoryLog
from tests.sim.replication.model import MetadataImage
from tests.sim.replication.wire import (
    CONTROLLER_ID,
    PRODUCER_ID,
    AlterPartition,
    AlterPartitionReply,
    Envelope,
    Fetch,
    FetchReply,
    Heartbeat,
    MetadataAnswer,
    MetadataPush,
    MetadataQuery,
    Payload,
    Produce,
    ProduceReply,
    Register,
    RegisterReply,
)


class CrashLog(InMemoryLog):
    """An in-memory log that loses its unflushed suffix on :meth:`crash`."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed_offset = 0
        self.generation = 0
        """Bumped whenever batches are removed: cached comparisons are void."""
        self.below_hw_truncations: list[tuple[int, int]] = []
        """(offset, high watermark) of every truncation below the high watermark."""

    def flush(self) -> None:
        self.flushed_offset = self.log_end_offset

    def truncate_to(self, offset: int) -> bool:
        if offset < self.high_watermark:
            self.below_hw_truncations.append((offset, self.high_watermark))
        truncated = super().truncate_to(offset)
        if truncated:
            self.generation += 1
            self.flushed_offset = min(self.flushed_offset, self.log_end_offset)
        return truncated

    def truncate_fully_and_start_at(self, offset: int) -> None:
        super().truncate_fully_and_start_at(offset)
        self.generation += 1
        self.flushed_offset = offset

    def crash(self) -> int:
        """Drop what was not flushed; returns how many offsets were lost."""
        lost = self.log_end_offset - self.flushed_offset
        if lost > 0:
            super().truncate_to(self.flushed_offset)
            self.generation += 1
        return max(lost, 0)

    def batch_data(self, base_offset: int) -> bytes | None:
        for batch in reversed(self.batches):
            if batch.header.base_offset == base_offset:
                return batch.data
            if batch.header.base_offset < base_offset:
                return None
        return None


@dataclass(frozen=True, slots=True)
class ReplConfig:
    replicas: tuple[int, ...] = (0, 1, 2)
    min_isr: int = 2
    heartbeat_ms: int = 50
    session_timeout_ms: int = 300
    replica_lag_time_max_ms: int = 300
    isr_check_ms: int = 100
    fetch_idle_ms: int = 20
    fetch_backoff_ms: int = 50
    fetch_timeout_ms: int = 250
    fetch_max_bytes: int = 2048
    alter_timeout_ms: int = 250
    produce_timeout_ms: int = 1000
    register_retry_ms: int = 100
    metadata_push_ms: int = 150
    flush_min_ms: int = 50
    flush_max_ms: int = 400


DEFAULT_CONFIG = ReplConfig()


class Host(Protocol):
    """What a broker needs from the simulation."""

    now: int
    config: ReplConfig
    mutation: str | None

    def replayed_metadata(self) -> Sequence[MetadataImage]:
        """The images a restarted broker replays before the current one (oldest first)."""
        ...

    def send(self, src: int, dst: int, payload: Payload, dst_incarnation: int | None) -> None: ...

    def timer(self, broker_id: int, delay_ms: int, action: Callable[[], None]) -> None: ...

    def flush_delay(self) -> int: ...

    def on_become_leader(self, broker_id: int, leader_epoch: int) -> None: ...

    def on_leader_append(self, broker_id: int, leader_epoch: int) -> None: ...

    def on_ack(self, broker_id: int, leader_epoch: int, base_offset: int, data: bytes) -> None: ...

    def on_truncate(self, broker_id: int) -> None: ...


@dataclass(slots=True)
class PendingProduce:
    src_incarnation: int
    base_offset: int
    required_offset: int
    deadline_ms: int


class SimBroker:
    def __init__(self, broker_id: int, host: Host) -> None:
        self.broker_id = broker_id
        self.host = host
        self.log = CrashLog()
        self.incarnation = 0
        self.up = False
        self.paused = False
        self.registered = False
        self.broker_epoch = -1
        self.image: MetadataImage | None = None
        self.leader: LeaderCore | None = None
        self.follower: FollowerCore | None = None
        self.pending: dict[int, PendingProduce] = {}
        self.fetch_inflight: int | None = None
        self.alter_inflight: tuple[int, int] | None = None
        self._request_ids = 0
        self._fetch_token = 0
        self._replaying = False

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self, image: MetadataImage | None = None, broker_epoch: int = -1) -> None:
        """Start a new incarnation; ``image`` given: already registered (the initial cluster)."""
        self.incarnation += 1
        self.up = True
        self.paused = False
        self._reset_roles()
        self.registered = False
        self.image = None
        if image is not None:
            self._registered(broker_epoch, image)
        else:
            self._register()
        self.host.timer(self.broker_id, self.host.flush_delay(), self._flush_loop)

    def crash(self) -> int:
        self.up = False
        self.paused = False
        self._reset_roles()
        self.registered = False
        return self.log.crash()

    def _reset_roles(self) -> None:
        self.leader = None
        self.follower = None
        self.pending = {}
        self.fetch_inflight = None
        self.alter_inflight = None

    def _register(self) -> None:
        if self.registered:
            return
        self._send(CONTROLLER_ID, Register(self.incarnation))
        self.host.timer(self.broker_id, self.host.config.register_retry_ms, self._register)

    def _registered(self, broker_epoch: int, image: MetadataImage) -> None:
        self.registered = True
        self.broker_epoch = broker_epoch
        # The replay runs within one event, so its passing roles are never observable (no
        # request reaches them): only what they leave behind (the log, its epoch cache) counts.
        self._replaying = True
        try:
            for old in self.host.replayed_metadata():
                if old.version >= image.version:
                    break
                if self.host.mutation == "rewrite_epoch_cache":
                    self._rewrite_epoch_cache(old)
                self.apply_image(old)
        finally:
            self._replaying = False
        self.apply_image(image)
        self._heartbeat_loop()
        self.host.timer(self.broker_id, self.host.config.isr_check_ms, self._leader_tick)

    def _rewrite_epoch_cache(self, old: MetadataImage) -> None:
        """The bug of issue 16 on purpose: a replayed leadership assigns its old epoch at our
        log end, and the epoch cache drops every newer entry."""
        view = old.partition
        if view.leader != self.broker_id:
            return
        cache = self.log.epoch_cache
        end = self.log.log_end_offset
        while cache.epochs and (cache.epochs[-1] >= view.leader_epoch or cache.starts[-1] >= end):
            cache.epochs.pop()
            cache.starts.pop()
        cache.epochs.append(view.leader_epoch)
        cache.starts.append(end)

    def _heartbeat_loop(self) -> None:
        self._send(CONTROLLER_ID, Heartbeat(self.broker_epoch))
        self.host.timer(self.broker_id, self.host.config.heartbeat_ms, self._heartbeat_loop)

    def _flush_loop(self) -> None:
        self.log.flush()
        self.host.timer(self.broker_id, self.host.flush_delay(), self._flush_loop)

    def _send(self, dst: int, payload: Payload, dst_incarnation: int | None = None) -> None:
        self.host.send(self.broker_id, dst, payload, dst_incarnation)

    # -- inbound ---------------------------------------------------------------------------------
    def receive(self, envelope: Envelope) -> None:
        payload = envelope.payload
        if isinstance(payload, RegisterReply):
            if payload.incarnation != self.incarnation or self.registered:
                return
            if payload.error == ErrorCode.NONE and payload.image is not None:
                self._registered(payload.broker_epoch, payload.image)
            return
        if isinstance(payload, MetadataQuery):
            view = self.image.partition if self.image is not None else None
            answer = (
                MetadataAnswer(view.leader, view.leader_epoch) if view else MetadataAnswer(-1, -1)
            )
            self._send(envelope.src, answer, envelope.src_incarnation)
            return
        if not self.registered:
            return  # Kafka brokers serve nothing before their registration and metadata
        if isinstance(payload, MetadataPush):
            self.apply_image(payload.image)
        elif isinstance(payload, Fetch):
            self._on_fetch(envelope, payload)
        elif isinstance(payload, FetchReply):
            self._on_fetch_reply(payload)
        elif isinstance(payload, Produce):
            self._on_produce(envelope, payload)
        elif isinstance(payload, AlterPartitionReply):
            self._on_alter_reply(payload)

    # -- metadata --------------------------------------------------------------------------------
    def apply_image(self, image: MetadataImage) -> None:
        if self.image is not None and image.version <= self.image.version:
            return
        self.image = image
        view = image.partition
        now = self.host.now
        if view.leader == self.broker_id:
            if self.leader is None:
                self._reset_roles()
                self.leader = LeaderCore(
                    self.broker_id,
                    self.log,
                    replica_lag_time_max_ms=self.host.config.replica_lag_time_max_ms,
                    min_insync_replicas=self.host.config.min_isr,
                    local_broker_epoch=self.broker_epoch,
                )
            leader = self.leader
            leader.update_brokers(image.broker_map())
            before = leader.leader_epoch
            if leader.become_leader(view, now):
                self.alter_inflight = None
                if leader.leader_epoch != before and not self._replaying:
                    self.host.on_become_leader(self.broker_id, leader.leader_epoch)
            elif leader.leader_epoch < 0:
                self.leader = None  # a stale first view (older than our log): no role yet
                return
            self._complete_produces()
            return
        if self.leader is not None:
            for request_id, pending in self.pending.items():
                self._answer_produce(request_id, pending, int(ErrorCode.NOT_LEADER_OR_FOLLOWER))
            self._reset_roles()
        if self.follower is None:
            self.follower = FollowerCore(self.broker_id, self.log)
        if self.follower.become_follower(view):
            self.fetch_inflight = None
            self._schedule_fetch(0)

    # -- follower side ---------------------------------------------------------------------------
    def _schedule_fetch(self, delay_ms: int) -> None:
        self._fetch_token += 1
        token = self._fetch_token

        def fire() -> None:
            if token == self._fetch_token:
                self._fetch()

        self.host.timer(self.broker_id, delay_ms, fire)

    def _fetch(self) -> None:
        follower = self.follower
        if follower is None or self.fetch_inflight is not None:
            return
        position = follower.fetch_position()
        if position is None:
            return
        self._request_ids += 1
        request_id = self._request_ids
        self.fetch_inflight = request_id
        fetch = FollowerFetch(
            replica_id=self.broker_id,
            fetch_offset=position.fetch_offset,
            last_fetched_epoch=position.last_fetched_epoch,
            log_start_offset=position.log_start_offset,
            current_leader_epoch=position.current_leader_epoch,
            broker_epoch=self.broker_epoch,
        )
        self._send(follower.leader_id, Fetch(request_id, fetch))

        def timeout() -> None:
            if self.fetch_inflight == request_id:
                self.fetch_inflight = None
                self._fetch()

        self.host.timer(self.broker_id, self.host.config.fetch_timeout_ms, timeout)

    def _on_fetch_reply(self, reply: FetchReply) -> None:
        follower = self.follower
        if follower is None or reply.request_id != self.fetch_inflight:
            # Kafka's fetcher has one fetch in flight per connection and drops the connection
            # when it times out, so it never sees a late or duplicated answer; the core's
            # position check alone cannot tell one apart after a truncate-and-refetch (see
            # tests/sim/test_repl_core_findings.py), so neither may this driver.
            return
        self.fetch_inflight = None
        outcome = follower.on_fetch_response(reply.response, self.host.now)
        if outcome.truncated_to is not None:
            self.host.on_truncate(self.broker_id)
        config = self.host.config
        if outcome.action is FollowerAction.AWAIT_METADATA:
            return
        if outcome.action is FollowerAction.BACKOFF:
            self._schedule_fetch(config.fetch_backoff_ms)
        elif outcome.appended_to >= 0 or outcome.truncated_to is not None:
            self._schedule_fetch(0)
        else:
            self._schedule_fetch(config.fetch_idle_ms)

    # -- leader side -----------------------------------------------------------------------------
    def _on_fetch(self, envelope: Envelope, request: Fetch) -> None:
        fetch = request.fetch
        leader = self.leader
        now = self.host.now
        if leader is None:
            # Kafka's checkCurrentLeaderEpoch runs before the leadership check: a fetcher
            # behind our metadata is fenced (and waits for metadata), one ahead is told we do
            # not know its epoch yet.
            known = self.image.partition.leader_epoch if self.image is not None else -1
            requested = fetch.current_leader_epoch
            if 0 <= requested < known:
                code = ErrorCode.FENCED_LEADER_EPOCH
            elif requested > known:
                code = ErrorCode.UNKNOWN_LEADER_EPOCH
            else:
                code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            response = FetchResponsePartition(fetch.fetch_offset, requested, error_code=int(code))
        else:
            result = leader.on_follower_fetch(fetch, now)
            records = b""
            if result.should_read and fetch.fetch_offset < self.log.log_end_offset:
                records = self.log.read(fetch.fetch_offset, self.host.config.fetch_max_bytes)
            out_of_range = result.error == ErrorCode.OFFSET_OUT_OF_RANGE
            response = FetchResponsePartition(
                fetch.fetch_offset,
                fetch.current_leader_epoch,
                error_code=result.error,
                high_watermark=result.high_watermark,
                log_start_offset=result.log_start_offset,
                records=records,
                diverging_epoch=result.diverging_epoch,
                leader_log_end_offset=result.log_end_offset if out_of_range else None,
            )
            if result.proposal is not None:
                self._send_alter(result.proposal)
            if result.hw_changed:
                self._complete_produces()
        self._send(envelope.src, FetchReply(request.request_id, response), envelope.src_incarnation)

    def _send_alter(self, proposal: AlterPartitionProposal) -> None:
        self.alter_inflight = (proposal.proposal_id, self.host.now)
        self._send(CONTROLLER_ID, AlterPartition(self.broker_epoch, proposal))

    def _on_alter_reply(self, reply: AlterPartitionReply) -> None:
        leader = self.leader
        if leader is None or leader.pending_proposal != reply.proposal:
            # Proposal ids restart with every LeaderCore, so an answer to the previous
            # leadership's proposal can carry the id pending now; matched by id alone, its
            # error would leave the new proposal waiting for metadata that never comes (see
            # tests/sim/test_repl_core_findings.py). Match the whole proposal instead.
            return
        answer = reply.answer
        outcome = leader.on_alter_partition_response(
            reply.proposal.proposal_id,
            answer.error,
            self.host.now,
            leader_epoch=answer.leader_epoch,
            partition_epoch=answer.partition_epoch,
            isr=answer.isr,
        )
        if outcome is AlterPartitionOutcome.STALE:
            return
        self.alter_inflight = None
        if outcome is AlterPartitionOutcome.RETRY:
            pending = leader.pending_proposal
            if pending is not None:
                self._send_alter(pending)
        self._complete_produces()

    def _leader_tick(self) -> None:
        leader = self.leader
        now = self.host.now
        config = self.host.config
        if leader is not None:
            inflight = self.alter_inflight
            if inflight is not None and now - inflight[1] >= config.alter_timeout_ms:
                self.alter_inflight = None
                outcome = leader.on_alter_partition_response(
                    inflight[0], int(ErrorCode.REQUEST_TIMED_OUT), now
                )
                pending = leader.pending_proposal
                if outcome is AlterPartitionOutcome.RETRY and pending is not None:
                    self._send_alter(pending)
            proposal = leader.maybe_shrink_isr(now)
            if proposal is not None:
                self._send_alter(proposal)
            leader.maybe_increment_hw(now)
            self._complete_produces()
            for request_id, pending_produce in list(self.pending.items()):
                if now >= pending_produce.deadline_ms:
                    del self.pending[request_id]
                    self._answer_produce(
                        request_id, pending_produce, int(ErrorCode.REQUEST_TIMED_OUT)
                    )
        self.host.timer(self.broker_id, config.isr_check_ms, self._leader_tick)

    def _on_produce(self, envelope: Envelope, request: Produce) -> None:
        leader = self.leader
        error = 0
        if leader is None:
            error = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        elif leader.is_under_min_isr:
            error = int(ErrorCode.NOT_ENOUGH_REPLICAS)
        if leader is None or error:
            self._send(
                envelope.src, ProduceReply(request.request_id, error), envelope.src_incarnation
            )
            return
        first, last = self.log.append_as_leader(
            build_batch([(None, request.value)]), leader.leader_epoch
        )
        self.host.on_leader_append(self.broker_id, leader.leader_epoch)
        self.pending[request.request_id] = PendingProduce(
            envelope.src_incarnation,
            first,
            last + 1,
            self.host.now + self.host.config.produce_timeout_ms,
        )
        leader.maybe_increment_hw(self.host.now)
        self._complete_produces()

    def _complete_produces(self) -> None:
        leader = self.leader
        if leader is None or not self.pending:
            return
        for request_id, pending in list(self.pending.items()):
            done, error = leader.check_enough_replicas(pending.required_offset)
            if not done:
                continue
            del self.pending[request_id]
            if error == ErrorCode.NONE:
                data = self.log.batch_data(pending.base_offset)
                if data is None:
                    raise AssertionError(
                        f"broker {self.broker_id} acked offset {pending.base_offset} it lacks"
                    )
                self.host.on_ack(self.broker_id, leader.leader_epoch, pending.base_offset, data)
            self._answer_produce(request_id, pending, error)

    def _answer_produce(self, request_id: int, pending: PendingProduce, error: int) -> None:
        self._send(PRODUCER_ID, ProduceReply(request_id, error), pending.src_incarnation)
