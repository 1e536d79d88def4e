"""The leader's view of a partition's ISR: committed, or with one AlterPartition in flight.

Invariants (KIP-497, Kafka's ``PartitionState`` family):
- ``isr`` is always the last ISR the controller committed; it is what min-ISR checks use.
- ``maximal_isr`` is what the HW waits on: the committed ISR plus a replica being added. A
  replica being removed stays in it until the removal is committed, so the HW is never
  computed over a set smaller than the one the controller may still hold.
- At most one change is in flight (``is_inflight``); a pending state remembers the committed
  state it came from so a refused change can be rolled back.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CommittedIsr:
    isr: frozenset[int]

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr

    @property
    def is_inflight(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class PendingExpandIsr:
    new_replica: int
    proposal_id: int
    last_committed: CommittedIsr

    @property
    def isr(self) -> frozenset[int]:
        return self.last_committed.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.last_committed.isr | {self.new_replica}

    @property
    def is_inflight(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class PendingShrinkIsr:
    out_of_sync: frozenset[int]
    proposal_id: int
    last_committed: CommittedIsr

    @property
    def isr(self) -> frozenset[int]:
        return self.last_committed.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.last_committed.isr

    @property
    def is_inflight(self) -> bool:
        return True


IsrState = CommittedIsr | PendingExpandIsr | PendingShrinkIsr
