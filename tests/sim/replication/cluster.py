"""A deterministic replication cluster in one process: brokers, controller, producer, network.

One seeded ``random.Random`` drives every choice (message delays, losses, duplicates, flush
times, fault choices) and one priority queue of events on a simulated clock orders every step,
so a seed replays exactly. Nodes: the model controller (:class:`ControllerModel`, id 100), the
brokers (:class:`SimBroker`, ids 0..n-1, each one replica of the partition) and one acks=all
producer (id 200) that writes to whichever broker it believes leads.

Faults: the network (:class:`tests.sim.cluster.NetworkFaults`) drops, duplicates and delays
(hence reorders) messages, and can cut groups or single directed links (so a leader can lose
the controller and keep its clients). A crash loses the broker's unflushed log suffix and all
its in-memory state; a restart is a new incarnation that must register again. A pause
(SIGSTOP) holds every delivery and timer of the broker until it resumes, then runs them in
order against its stale state. Invariants (:mod:`tests.sim.replication.invariants`) are
checked after every event.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sparklog.protocol.errors import ErrorCode
from tests.sim.cluster import NetworkFaults
from tests.sim.events import EventQueue
from tests.sim.replication.model import ControllerModel, MetadataImage
from tests.sim.replication.node import DEFAULT_CONFIG, ReplConfig, SimBroker
from tests.sim.replication.wire import (
    CONTROLLER_ID,
    PRODUCER_ID,
    AlterPartition,
    AlterPartitionReply,
    Envelope,
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

CONTROLLER_TICK_MS = 50
PRODUCER_TIMEOUT_MS = 800
PRODUCER_MAX_INFLIGHT = 8


class Observer(Protocol):
    """The invariants: told of leadership, appends and acks, and checked after every event."""

    def become_leader(self, sim: ReplSimulation, broker_id: int, leader_epoch: int) -> None: ...

    def leader_append(self, sim: ReplSimulation, broker_id: int, leader_epoch: int) -> None: ...

    def ack(
        self, sim: ReplSimulation, broker_id: int, leader_epoch: int, base_offset: int, data: bytes
    ) -> None: ...

    def check(self, sim: ReplSimulation) -> None: ...


@dataclass
class ReplStatsCounters:
    produced: int = 0
    acked: int = 0
    produce_errors: dict[int, int] = field(default_factory=dict)
    leader_changes: int = 0
    truncations: int = 0
    crashes: int = 0
    lost_offsets: int = 0
    pauses: int = 0
    deletions: int = 0
    offline: bool = False
    delivered: int = 0
    dropped: int = 0


@dataclass
class Producer:
    leader: int = -1
    leader_epoch: int = -1
    next_id: int = 0
    inflight: dict[int, int] = field(default_factory=dict)  # request id -> sent at


class ReplSimulation:
    """The event loop; scenarios schedule faults and workload with :meth:`at`."""

    def __init__(
        self,
        seed: int,
        config: ReplConfig = DEFAULT_CONFIG,
        *,
        elr_enabled: bool = True,
        remove_unclean_from_elr: bool = True,
        mutation: str | None = None,
    ) -> None:
        self.seed = seed
        self.mutation = mutation
        self.replay_metadata_on_restart = False
        """Restarted brokers replay every image pushed so far first (see ``SimBroker``)."""
        self.image_history: list[MetadataImage] = []
        self.random = random.Random(seed)
        self.config = config
        self.now = 0
        self.events = 0
        self._events = EventQueue()
        self.net = NetworkFaults()
        # A fraction of messages take a long detour (TCP retransmits, a slow NIC queue): the
        # stale interleavings that short, uniform delays almost never produce.
        self.slow_fraction = 0.0
        self.slow_extra_ms = (100, 800)
        self.stats = ReplStatsCounters()
        self.observers: list[Observer] = []
        self.controller = ControllerModel(
            config.replicas,
            config.min_isr,
            config.session_timeout_ms,
            elr_enabled=elr_enabled,
            remove_unclean_from_elr=remove_unclean_from_elr,
            mutation=mutation,
        )
        self.producer = Producer()
        self.producing = False
        self._backlog: dict[int, list[Callable[[], None]]] = {}
        self.brokers = {b: SimBroker(b, self) for b in config.replicas}
        image = self.controller.image()
        self.image_history.append(image)
        for broker_id, broker in self.brokers.items():
            broker.start(image, self.controller.registrations[broker_id].broker_epoch)
        self._pushed_version = image.version
        self.at(CONTROLLER_TICK_MS, self._controller_tick)
        self.at(config.metadata_push_ms, self._metadata_push_loop)

    # -- scheduling ------------------------------------------------------------------------------
    def at(self, time_ms: int, action: Callable[[], None]) -> None:
        self._events.at(time_ms, action)

    def run_until(self, end_ms: int) -> None:
        for time_ms, action in self._events.due(end_ms):
            self.now = max(self.now, time_ms)
            action()
            self.events += 1
            for observer in self.observers:
                observer.check(self)
        self.now = max(self.now, end_ms)

    def timer(self, broker_id: int, delay_ms: int, action: Callable[[], None]) -> None:
        broker = self.brokers[broker_id]
        incarnation = broker.incarnation

        def fire() -> None:
            self._run_on(broker, incarnation, action)

        self.at(self.now + delay_ms, fire)

    def _run_on(self, broker: SimBroker, incarnation: int, action: Callable[[], None]) -> None:
        if not broker.up or broker.incarnation != incarnation:
            return
        if broker.paused:
            self._backlog.setdefault(broker.broker_id, []).append(
                lambda: self._run_on(broker, incarnation, action)
            )
            return
        action()

    def flush_delay(self) -> int:
        return self.random.randint(self.config.flush_min_ms, self.config.flush_max_ms)

    # -- network ---------------------------------------------------------------------------------
    def send(self, src: int, dst: int, payload: Payload, dst_incarnation: int | None) -> None:
        src_incarnation = self.brokers[src].incarnation if src in self.brokers else 1
        envelope = Envelope(src, dst, src_incarnation, dst_incarnation, payload)
        if self.net.blocked(src, dst) or self.random.random() < self.net.drop:
            self.stats.dropped += 1
            return
        copies = 2 if self.random.random() < self.net.duplicate else 1
        for _ in range(copies):
            delay = self.random.randint(self.net.min_delay_ms, self.net.max_delay_ms)
            if self.slow_fraction and self.random.random() < self.slow_fraction:
                delay += self.random.randint(*self.slow_extra_ms)
            self.at(self.now + delay, lambda: self._deliver(envelope))

    def _deliver(self, envelope: Envelope) -> None:
        if self.net.blocked(envelope.src, envelope.dst):
            self.stats.dropped += 1
            return
        dst = envelope.dst
        if dst == CONTROLLER_ID:
            self.stats.delivered += 1
            self._controller_receive(envelope)
            return
        if dst == PRODUCER_ID:
            self.stats.delivered += 1
            self._producer_receive(envelope)
            return
        broker = self.brokers[dst]
        if not broker.up or (
            envelope.dst_incarnation is not None and envelope.dst_incarnation != broker.incarnation
        ):
            self.stats.dropped += 1
            return
        self.stats.delivered += 1
        self._run_on(broker, broker.incarnation, lambda: broker.receive(envelope))

    # -- controller ------------------------------------------------------------------------------
    def _controller_receive(self, envelope: Envelope) -> None:
        controller = self.controller
        payload = envelope.payload
        reply: Payload | None = None
        if isinstance(payload, Register):
            error, epoch = controller.register(envelope.src, payload.incarnation, self.now)
            image = controller.image() if error == ErrorCode.NONE else None
            reply = RegisterReply(payload.incarnation, error, epoch, image)
        elif isinstance(payload, Heartbeat):
            controller.heartbeat(envelope.src, payload.broker_epoch, self.now)
        elif isinstance(payload, AlterPartition):
            answer = controller.alter_partition(
                envelope.src, payload.broker_epoch, payload.proposal
            )
            reply = AlterPartitionReply(payload.proposal, answer)
        if reply is not None:
            self.send(CONTROLLER_ID, envelope.src, reply, envelope.src_incarnation)
        self._maybe_push()

    def _maybe_push(self) -> None:
        if self.controller.version != self._pushed_version:
            self._push()

    def _push(self) -> None:
        image = self.controller.image()
        self._pushed_version = image.version
        if self.replay_metadata_on_restart and image.version != self.image_history[-1].version:
            self.image_history.append(image)
        for broker_id in self.brokers:
            self.send(CONTROLLER_ID, broker_id, MetadataPush(image), None)

    def _controller_tick(self) -> None:
        self.controller.tick(self.now)
        self._maybe_push()
        self.at(self.now + CONTROLLER_TICK_MS, self._controller_tick)

    def _metadata_push_loop(self) -> None:
        # Brokers pull the metadata log continuously in Kafka; a periodic push of the whole
        # image stands in for that, so a lost push only delays them.
        self._push()
        self.at(self.now + self.config.metadata_push_ms, self._metadata_push_loop)

    # -- producer --------------------------------------------------------------------------------
    def workload(self, start_ms: int, end_ms: int, every_ms: int) -> None:
        def on() -> None:
            self.producing = True

        def off() -> None:
            self.producing = False

        self.at(start_ms, on)
        self.at(end_ms, off)
        for t in range(start_ms, end_ms, every_ms):
            self.at(t, self._produce)
        for t in range(start_ms, end_ms, 400):
            self.at(t, self._refresh_metadata)

    def _produce(self) -> None:
        producer = self.producer
        if not self.producing:
            return
        for request_id, sent_at in list(producer.inflight.items()):
            if self.now - sent_at > PRODUCER_TIMEOUT_MS:
                del producer.inflight[request_id]
                self._refresh_metadata()
        if producer.leader < 0:
            self._refresh_metadata()
            return
        if len(producer.inflight) >= PRODUCER_MAX_INFLIGHT:
            return
        producer.next_id += 1
        request_id = producer.next_id
        producer.inflight[request_id] = self.now
        self.stats.produced += 1
        value = f"s{self.seed}-r{request_id}".encode()
        self.send(PRODUCER_ID, producer.leader, Produce(request_id, value), None)

    def _refresh_metadata(self) -> None:
        target = self.random.choice(list(self.brokers))
        self.send(PRODUCER_ID, target, MetadataQuery(), None)

    def _producer_receive(self, envelope: Envelope) -> None:
        producer = self.producer
        payload = envelope.payload
        if isinstance(payload, MetadataAnswer):
            # Clients keep the newest leader epoch they have seen (KIP-320).
            if payload.leader_epoch > producer.leader_epoch or producer.leader < 0:
                producer.leader = payload.leader
                producer.leader_epoch = max(producer.leader_epoch, payload.leader_epoch)
        elif isinstance(payload, ProduceReply):
            if producer.inflight.pop(payload.request_id, None) is None:
                return
            if payload.error:
                errors = self.stats.produce_errors
                errors[payload.error] = errors.get(payload.error, 0) + 1
                self._refresh_metadata()

    # -- hooks from brokers ----------------------------------------------------------------------
    def on_become_leader(self, broker_id: int, leader_epoch: int) -> None:
        self.stats.leader_changes += 1
        for observer in self.observers:
            observer.become_leader(self, broker_id, leader_epoch)

    def on_leader_append(self, broker_id: int, leader_epoch: int) -> None:
        for observer in self.observers:
            observer.leader_append(self, broker_id, leader_epoch)

    def on_ack(self, broker_id: int, leader_epoch: int, base_offset: int, data: bytes) -> None:
        self.stats.acked += 1
        for observer in self.observers:
            observer.ack(self, broker_id, leader_epoch, base_offset, data)

    def replayed_metadata(self) -> Sequence[MetadataImage]:
        return self.image_history if self.replay_metadata_on_restart else ()

    def on_truncate(self, broker_id: int) -> None:
        self.stats.truncations += 1

    # -- faults ----------------------------------------------------------------------------------
    def crash(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        if not broker.up:
            return
        self.stats.crashes += 1
        self.stats.lost_offsets += broker.crash()
        self._backlog.pop(broker_id, None)

    def restart(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        if not broker.up:
            broker.start()

    def pause(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        if broker.up and not broker.paused:
            broker.paused = True
            self.stats.pauses += 1

    def resume(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        if not broker.paused:
            return
        broker.paused = False
        for action in self._backlog.pop(broker_id, []):
            self.at(self.now, action)

    def delete_records(self) -> int | None:
        """DeleteRecords through the controller's leader: its log start moves to a random
        offset up to its HW (Kafka never deletes above the HW); followers follow through
        their fetches. Returns the new log start offset, or None with no acting leader."""
        leader_id = self.controller.leader
        broker = self.brokers.get(leader_id)
        if broker is None or broker.leader is None or broker.paused:
            return None
        log = broker.log
        offset = self.random.randint(log.log_start_offset, log.high_watermark)
        log.increment_log_start_offset(offset)
        self.stats.deletions += 1
        return offset

    def heal(self) -> None:
        self.net.drop = self.net.duplicate = self.slow_fraction = 0.0
        self.net.groups = {}
        self.net.one_way = set()
        for broker_id in self.brokers:
            self.resume(broker_id)
            self.restart(broker_id)

    def cut(self, a: int, b: int) -> None:
        """Block both directions between ``a`` and ``b``."""
        self.net.one_way |= {(a, b), (b, a)}

    # -- views -----------------------------------------------------------------------------------
    def acting_leaders(self) -> list[SimBroker]:
        return [b for b in self.brokers.values() if b.up and b.leader is not None]
