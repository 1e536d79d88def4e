"""Safety invariants of partition replication, checked after every simulator event.

1. One writer per leader epoch: no two brokers ever append as leader (or become leader) in the
   same leader epoch.
2. No acknowledged write is lost: every acks=all record acknowledged in leader epoch ``e`` is in
   the log (same offset, same bytes) of every broker acting as leader in an epoch above ``e``,
   from the moment it leads (checked when it becomes leader and when a new ack arrives), and
   of any broker that takes up leadership in ``e`` itself afresh. Records below the leader's
   log start offset (DeleteRecords) are exempt.
3. A leader's high watermark never goes backwards within its leader epoch.
4. A follower's log equals its leader's below the follower's high watermark (the leader being
   the broker the follower fetches from, while that broker leads in the same epoch).
5. The controller's ISR contains the leader, or the leader is -1.
6. No replica ever truncates its log below its own high watermark (what it acknowledged as
   committed); a crash losing unflushed records is not a truncation (issue 16).

Liveness is checked by the scenarios after healing (:func:`check_converged`).
"""

from __future__ import annotations

import bisect

from tests.sim.replication.cluster import ReplSimulation
from tests.sim.replication.memory_log import StoredBatch
from tests.sim.replication.node import CrashLog


class InvariantViolation(AssertionError):
    pass


class LivenessViolation(InvariantViolation):
    """The cluster did not converge after healing (as opposed to a safety violation)."""


def _base(batch: StoredBatch) -> int:
    return batch.header.base_offset


def _batch_at(log: CrashLog, base_offset: int) -> bytes | None:
    batches = log.batches
    index = bisect.bisect_left(batches, base_offset, key=_base)
    if index < len(batches) and batches[index].header.base_offset == base_offset:
        return batches[index].data
    return None


class ReplInvariants:
    def __init__(self) -> None:
        self.epoch_owner: dict[int, int] = {}
        self.acked: list[tuple[int, int, bytes]] = []  # (leader epoch, base offset, data)
        self._acked_offsets: dict[int, bytes] = {}
        self._leader_hw: dict[tuple[int, int], int] = {}
        # (follower, leader, follower log generation, leader log generation) -> checked up to.
        self._prefix_checked: dict[tuple[int, int, int, int], int] = {}
        self.max_leader_epoch = 0

    # -- hooks -----------------------------------------------------------------------------------
    def _own_epoch(self, broker_id: int, leader_epoch: int, what: str) -> None:
        owner = self.epoch_owner.setdefault(leader_epoch, broker_id)
        if owner != broker_id:
            raise InvariantViolation(
                f"broker {broker_id} {what} in leader epoch {leader_epoch} owned by {owner}"
            )
        self.max_leader_epoch = max(self.max_leader_epoch, leader_epoch)

    def become_leader(self, sim: ReplSimulation, broker_id: int, leader_epoch: int) -> None:
        self._own_epoch(broker_id, leader_epoch, "became leader")
        log = sim.brokers[broker_id].log
        start = log.log_start_offset
        for epoch, base, data in self.acked:
            # Below the log start a record may be gone by DeleteRecords, legitimately. The
            # same epoch counts too: a leader that restarted must not lead it again.
            if epoch <= leader_epoch and base >= start and _batch_at(log, base) != data:
                raise InvariantViolation(
                    f"broker {broker_id} became leader in epoch {leader_epoch} at t={sim.now} "
                    f"without the record acked at offset {base} in epoch {epoch}"
                )

    def leader_append(self, sim: ReplSimulation, broker_id: int, leader_epoch: int) -> None:
        self._own_epoch(broker_id, leader_epoch, "appended as leader")

    def ack(
        self, sim: ReplSimulation, broker_id: int, leader_epoch: int, base_offset: int, data: bytes
    ) -> None:
        known = self._acked_offsets.get(base_offset)
        if known is not None and known != data:
            raise InvariantViolation(
                f"offset {base_offset} acked twice with different records (broker {broker_id}, "
                f"epoch {leader_epoch})"
            )
        self._acked_offsets[base_offset] = data
        self.acked.append((leader_epoch, base_offset, data))
        for broker in sim.acting_leaders():
            assert broker.leader is not None
            if (
                broker.leader.leader_epoch > leader_epoch
                and base_offset >= broker.log.log_start_offset
                and _batch_at(broker.log, base_offset) != data
            ):
                raise InvariantViolation(
                    f"broker {broker_id} acked offset {base_offset} in epoch {leader_epoch} at "
                    f"t={sim.now} that leader {broker.broker_id} (epoch "
                    f"{broker.leader.leader_epoch}) lacks"
                )

    # -- after every event -----------------------------------------------------------------------
    def check(self, sim: ReplSimulation) -> None:
        for broker in sim.brokers.values():
            if broker.log.below_hw_truncations:
                offset, hw = broker.log.below_hw_truncations[0]
                raise InvariantViolation(
                    f"broker {broker.broker_id} truncated its log to {offset}, below its high "
                    f"watermark {hw} (t={sim.now})"
                )
        controller = sim.controller
        if controller.leader >= 0 and controller.leader not in controller.isr:
            raise InvariantViolation(
                f"controller leader {controller.leader} not in its ISR {controller.isr}"
            )
        leaders = {}
        for broker in sim.acting_leaders():
            core = broker.leader
            assert core is not None
            key = (broker.broker_id, core.leader_epoch)
            hw = broker.log.high_watermark
            if hw < self._leader_hw.get(key, -1):
                raise InvariantViolation(
                    f"leader {broker.broker_id} HW went back to {hw} in epoch {core.leader_epoch}"
                )
            self._leader_hw[key] = hw
            leaders[broker.broker_id] = core.leader_epoch
        for broker in sim.brokers.values():
            follower = broker.follower
            if not broker.up or follower is None:
                continue
            if leaders.get(follower.leader_id) != follower.leader_epoch:
                continue
            self._check_prefix(sim, broker.broker_id, follower.leader_id)

    def _check_prefix(self, sim: ReplSimulation, follower_id: int, leader_id: int) -> None:
        log = sim.brokers[follower_id].log
        leader_log = sim.brokers[leader_id].log
        key = (follower_id, leader_id, log.generation, leader_log.generation)
        start = max(
            self._prefix_checked.get(key, 0), log.log_start_offset, leader_log.log_start_offset
        )
        hw = log.high_watermark
        if hw <= start:
            return
        batches = log.batches
        index = bisect.bisect_left(batches, start, key=_base)
        checked = start
        while index < len(batches) and batches[index].header.last_offset < hw:
            batch = batches[index]
            if _batch_at(leader_log, batch.header.base_offset) != batch.data:
                raise InvariantViolation(
                    f"follower {follower_id} differs from leader {leader_id} at offset "
                    f"{batch.header.base_offset} below its HW {hw} (t={sim.now})"
                )
            checked = batch.header.next_offset
            index += 1
        self._prefix_checked[key] = checked


def check_converged(sim: ReplSimulation, invariants: ReplInvariants) -> None:
    """Liveness after healing: one leader the controller agrees on, a full ISR, every replica
    identical to the leader up to the same HW, and something acknowledged."""
    controller = sim.controller
    leader_id = controller.leader
    if leader_id < 0:
        raise LivenessViolation(
            f"no leader after healing: ISR {controller.isr} ELR {controller.elr}"
        )
    leader = sim.brokers[leader_id]
    core = leader.leader
    if core is None or core.leader_epoch != controller.leader_epoch:
        raise LivenessViolation(f"broker {leader_id} does not act as leader after healing")
    replicas = set(sim.config.replicas)
    if set(controller.isr) != replicas or set(core.isr) != replicas:
        raise LivenessViolation(
            f"ISR not full after healing: controller {controller.isr}, leader {sorted(core.isr)}"
        )
    start = max(b.log.log_start_offset for b in sim.brokers.values())

    def retained(log: CrashLog) -> list[tuple[int, int, int]]:
        return [entry for entry in log.offsets_and_epochs() if entry[0] >= start]

    expected = retained(leader.log)
    for broker in sim.brokers.values():
        if retained(broker.log) != expected:
            raise LivenessViolation(
                f"broker {broker.broker_id} log differs from leader {leader_id} after healing "
                f"(LEO {broker.log.log_end_offset} vs {leader.log.log_end_offset})"
            )
        if broker.log.high_watermark != leader.log.high_watermark:
            raise LivenessViolation(
                f"broker {broker.broker_id} HW {broker.log.high_watermark} vs leader "
                f"{leader.log.high_watermark} after healing"
            )
    if not invariants.acked:
        raise LivenessViolation("nothing was acknowledged")
