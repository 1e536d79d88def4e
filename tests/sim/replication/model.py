"""The model controller of the replication simulator: registrations, fencing, leader and ISR.

A small, synchronous state machine for one partition, written from Kafka's
``ClusterControlManager`` / ``ReplicationControlManager`` / ``PartitionChangeBuilder`` rules
(KRaft, metadata version with KIP-903 broker epochs in AlterPartition and KIP-966 ELR). The
simulator delivers broker requests to it over the faulty network and pushes its
:meth:`ControllerModel.image` to brokers the same way.

Rules kept (and checked by the simulator's invariants):
- Every change bumps the partition epoch; a leader change also bumps the leader epoch. The
  metadata ``version`` (our stand-in for the metadata log offset) grows with every change.
- The ISR always contains the leader, or the leader is -1.
- A leader is elected from the ISR among registered, unfenced brokers; from the ELR only when
  the ISR is empty (the new leader becomes the whole ISR).
- ELR (KIP-966): whenever the ISR is below ``min_isr`` the replicas that leave it join the ELR;
  the ELR is cleared once the ISR reaches ``min_isr`` again. A broker that comes back from an
  unclean shutdown is removed from the ISR and the ELR, so it cannot lead before it rejoins
  the ISR through the leader (this is exactly where acknowledged data would be lost).
- A new incarnation may register only once the previous one's session expired (Kafka answers
  DUPLICATE_BROKER_REGISTRATION before): so a crashed broker is first fenced, which removes it
  from the ISR. Every registration is fenced until its first heartbeat.
- AlterPartition is validated in Kafka's order: stale broker epoch of the sender, leader epoch
  ahead (NOT_CONTROLLER), partition epoch ahead (NOT_CONTROLLER), stale leader epoch
  (FENCED_LEADER_EPOCH), sender not the leader (INVALID_REQUEST), stale partition epoch
  (INVALID_UPDATE_VERSION), ISR not a subset of the replicas or without the leader
  (INVALID_REQUEST), fenced / unregistered / stale-epoch members (INELIGIBLE_REPLICA).

Simplifications (documented here so nobody mistakes them for Kafka): the controller is one
reliable process that never fails over; one partition; no controlled shutdown, no clean restart
(every crash is an unclean shutdown), no unclean leader election, no reassignment; a broker is
unfenced by its first heartbeat after registration (Kafka also waits until it has caught up with
the metadata log, which here arrives with the registration answer).
"""

from __future__ import annotations

from dataclasses import dataclass

from sparklog.protocol.errors import ErrorCode
from sparklog.replication.messages import AlterPartitionProposal, BrokerStatus, PartitionView


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """What a broker learns from the metadata log, as of ``version``."""

    version: int
    partition: PartitionView
    elr: tuple[int, ...]
    brokers: tuple[BrokerStatus, ...]

    def broker_map(self) -> dict[int, BrokerStatus]:
        return {b.broker_id: b for b in self.brokers}


@dataclass(slots=True)
class Registration:
    broker_id: int
    broker_epoch: int
    incarnation: int
    fenced: bool
    last_heartbeat_ms: int


@dataclass(frozen=True, slots=True)
class AlterPartitionAnswer:
    error: int
    leader_epoch: int = -1
    partition_epoch: int = -1
    isr: tuple[int, ...] = ()


@dataclass
class ControllerStats:
    elections: int = 0
    fenced: int = 0
    unfenced: int = 0
    registrations: int = 0
    duplicate_registrations: int = 0
    isr_shrinks: int = 0
    isr_expands: int = 0
    alter_errors: dict[int, int] | None = None


class ControllerModel:
    """One partition over ``replicas``; every broker starts registered, unfenced, in the ISR."""

    def __init__(
        self,
        replicas: tuple[int, ...],
        min_isr: int,
        session_timeout_ms: int,
        *,
        elr_enabled: bool = True,
        remove_unclean_from_elr: bool = True,
        mutation: str | None = None,
    ) -> None:
        self.replicas = replicas
        self.min_isr = min_isr
        self.session_timeout_ms = session_timeout_ms
        self.elr_enabled = elr_enabled
        # Only the mutation test turns this off, to prove the invariants catch the data loss.
        self.remove_unclean_from_elr = remove_unclean_from_elr
        # Deliberate bugs for the tests that prove the invariants can fail:
        # "keep_isr_on_restart" lets a crashed broker re-register at once, unfenced and still in
        # the ISR, as if its unflushed data had survived; "elect_any" elects any live replica
        # when the current leader is not valid (an unclean election on every failover).
        self.mutation = mutation
        self.leader = replicas[0]
        self.leader_epoch = 0
        self.partition_epoch = 0
        self.isr: tuple[int, ...] = replicas
        self.elr: tuple[int, ...] = ()
        self.version = 1
        self.registrations = {
            b: Registration(b, i + 1, 1, False, 0) for i, b in enumerate(replicas)
        }
        self._next_broker_epoch = len(replicas) + 1
        self.stats = ControllerStats(alter_errors={})

    # -- views -----------------------------------------------------------------------------------
    def view(self) -> PartitionView:
        return PartitionView(
            self.leader, self.leader_epoch, self.partition_epoch, self.replicas, self.isr
        )

    def image(self) -> MetadataImage:
        brokers = tuple(
            BrokerStatus(r.broker_id, r.broker_epoch, fenced=r.fenced)
            for r in sorted(self.registrations.values(), key=lambda r: r.broker_id)
        )
        return MetadataImage(self.version, self.view(), self.elr, brokers)

    def _acceptable_leader(self, broker_id: int) -> bool:
        registration = self.registrations.get(broker_id)
        return registration is not None and not registration.fenced

    # -- brokers ---------------------------------------------------------------------------------
    def register(self, broker_id: int, incarnation: int, now_ms: int) -> tuple[int, int]:
        """``(error, broker_epoch)`` for a (re)starting broker; every restart is unclean."""
        existing = self.registrations.get(broker_id)
        if existing is not None and existing.incarnation == incarnation:
            return int(ErrorCode.NONE), existing.broker_epoch  # a duplicate of the same request
        if self.mutation == "keep_isr_on_restart":
            epoch = self._next_broker_epoch
            self._next_broker_epoch += 1
            self.registrations[broker_id] = Registration(
                broker_id, epoch, incarnation, False, now_ms
            )
            self.version += 1
            return int(ErrorCode.NONE), epoch
        if existing is not None and not existing.fenced:
            if now_ms - existing.last_heartbeat_ms <= self.session_timeout_ms:
                self.stats.duplicate_registrations += 1
                return int(ErrorCode.DUPLICATE_BROKER_REGISTRATION), -1
            self._fence(broker_id)
        epoch = self._next_broker_epoch
        self._next_broker_epoch += 1
        self.registrations[broker_id] = Registration(broker_id, epoch, incarnation, True, now_ms)
        self.stats.registrations += 1
        self.version += 1
        # KIP-966 unclean shutdown: out of the ISR (already, since it was fenced) and the ELR.
        unclean = {broker_id} if self.remove_unclean_from_elr else set()
        target = tuple(r for r in self.isr if r != broker_id)
        self._change(target, unclean)
        return int(ErrorCode.NONE), epoch

    def heartbeat(self, broker_id: int, broker_epoch: int, now_ms: int) -> None:
        registration = self.registrations.get(broker_id)
        if registration is None or registration.broker_epoch != broker_epoch:
            return
        registration.last_heartbeat_ms = now_ms
        if registration.fenced:
            registration.fenced = False
            self.stats.unfenced += 1
            self.version += 1
            # Kafka's handleBrokerUnfenced: partitions without a leader may get one now.
            self._change(self.isr, set())

    def tick(self, now_ms: int) -> None:
        """Fence every broker whose session expired."""
        for registration in list(self.registrations.values()):
            expired = now_ms - registration.last_heartbeat_ms > self.session_timeout_ms
            if not registration.fenced and expired:
                self._fence(registration.broker_id)

    def _fence(self, broker_id: int) -> None:
        self.registrations[broker_id].fenced = True
        self.stats.fenced += 1
        self.version += 1
        self._change(tuple(r for r in self.isr if r != broker_id), set())

    # -- AlterPartition --------------------------------------------------------------------------
    def alter_partition(
        self, broker_id: int, broker_epoch: int, proposal: AlterPartitionProposal
    ) -> AlterPartitionAnswer:
        answer = self._alter_partition(broker_id, broker_epoch, proposal)
        if answer.error and self.stats.alter_errors is not None:
            errors = self.stats.alter_errors
            errors[answer.error] = errors.get(answer.error, 0) + 1
        return answer

    def _alter_partition(
        self, broker_id: int, broker_epoch: int, proposal: AlterPartitionProposal
    ) -> AlterPartitionAnswer:
        sender = self.registrations.get(broker_id)
        if sender is None or sender.broker_epoch != broker_epoch:
            return AlterPartitionAnswer(int(ErrorCode.STALE_BROKER_EPOCH))
        if proposal.leader_epoch > self.leader_epoch:
            return AlterPartitionAnswer(int(ErrorCode.NOT_CONTROLLER))
        if proposal.partition_epoch > self.partition_epoch:
            return AlterPartitionAnswer(int(ErrorCode.NOT_CONTROLLER))
        if proposal.leader_epoch < self.leader_epoch:
            return AlterPartitionAnswer(int(ErrorCode.FENCED_LEADER_EPOCH))
        if broker_id != self.leader:
            return AlterPartitionAnswer(int(ErrorCode.INVALID_REQUEST))
        if proposal.partition_epoch < self.partition_epoch:
            return AlterPartitionAnswer(int(ErrorCode.INVALID_UPDATE_VERSION))
        new_isr = proposal.isr_ids
        if (
            len(set(new_isr)) != len(new_isr)
            or not set(new_isr) <= set(self.replicas)
            or self.leader not in new_isr
        ):
            return AlterPartitionAnswer(int(ErrorCode.INVALID_REQUEST))
        for member, epoch in proposal.new_isr:
            registration = self.registrations.get(member)
            if (
                registration is None
                or registration.fenced
                or (epoch != -1 and epoch != registration.broker_epoch)
            ):
                return AlterPartitionAnswer(int(ErrorCode.INELIGIBLE_REPLICA))
        before = set(self.isr)
        ordered = tuple(r for r in self.replicas if r in new_isr)
        self._change(ordered, set(), force=True)
        if set(ordered) < before:
            self.stats.isr_shrinks += 1
        elif set(ordered) > before:
            self.stats.isr_expands += 1
        return AlterPartitionAnswer(
            int(ErrorCode.NONE), self.leader_epoch, self.partition_epoch, self.isr
        )

    # -- partition changes -----------------------------------------------------------------------
    def _change(self, target_isr: tuple[int, ...], unclean: set[int], force: bool = False) -> None:
        """Kafka's ``PartitionChangeBuilder.build``: ELR, election, ISR, epochs."""
        elr = tuple(r for r in self.elr if r not in unclean)
        if self.elr_enabled:
            if len(target_isr) >= self.min_isr:
                elr = ()
            else:
                candidates = set(elr) | set(self.isr)
                elr = tuple(
                    r
                    for r in self.replicas
                    if r in candidates and r not in target_isr and r not in unclean
                )
        else:
            elr = ()

        def valid(replica: int) -> bool:
            in_set = replica in target_isr or (not target_isr and replica in elr)
            return in_set and self._acceptable_leader(replica)

        leader = self.leader
        if not valid(leader):
            leader = next((r for r in self.replicas if valid(r)), -1)
            if self.mutation == "elect_any" and leader != self.leader:
                leader = next((r for r in self.replicas if self._acceptable_leader(r)), -1)
        if leader != self.leader and leader >= 0 and leader not in target_isr:
            # Elected from the ELR: it becomes the ISR on its own.
            target_isr = (leader,)
            elr = tuple(r for r in elr if r != leader)
        if not self.elr_enabled and not target_isr:
            # Without ELR the ISR never becomes empty: the last member stays, leaderless.
            target_isr = self.isr
        changed = leader != self.leader or target_isr != self.isr or elr != self.elr
        if not changed and not force:
            return
        if leader != self.leader:
            self.leader_epoch += 1
            self.stats.elections += 1
        self.leader = leader
        self.isr = target_isr
        self.elr = elr
        self.partition_epoch += 1
        self.version += 1
