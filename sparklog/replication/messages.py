"""Value objects that go into and come out of the replication cores.

All are small frozen dataclasses: the cores never keep a reference to a caller's mutable data,
and a simulator can log, compare and replay them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from sparklog.replication.log import Records

UNKNOWN_OFFSET = -1
NO_EPOCH = -1


@dataclass(frozen=True, slots=True)
class PartitionView:
    """Leader and ISR of a partition as the metadata image states them."""

    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BrokerStatus:
    """What the metadata image says about a broker, for ISR eligibility (KIP-841 / KIP-903)."""

    broker_id: int
    broker_epoch: int
    fenced: bool = False
    in_controlled_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    """Fetch v12+ ``diverging_epoch``: where the leader's history of ``epoch`` ends."""

    epoch: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class FollowerFetch:
    """One partition of a Fetch from a follower, as the leader receives it.

    ``last_fetched_epoch`` is -1 when the follower has no epoch to offer (no divergence check);
    ``broker_epoch`` is the follower's (``replica_state.replica_epoch``, -1 before v15).
    """

    replica_id: int
    fetch_offset: int
    last_fetched_epoch: int = NO_EPOCH
    log_start_offset: int = UNKNOWN_OFFSET
    current_leader_epoch: int = NO_EPOCH
    broker_epoch: int = -1


@dataclass(frozen=True, slots=True)
class AlterPartitionProposal:
    """An ISR change the leader wants the controller to commit.

    ``new_isr`` pairs each member with its broker epoch (``new_isr_with_epochs``, -1 unknown).
    ``proposal_id`` names the pending state; a response for another id is stale.
    """

    proposal_id: int
    leader_id: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[tuple[int, int], ...]
    expand: bool

    @property
    def isr_ids(self) -> tuple[int, ...]:
        return tuple(broker for broker, _ in self.new_isr)


@dataclass(frozen=True, slots=True)
class FollowerFetchResult:
    """The leader's answer to one follower fetch partition.

    ``error`` non-zero: answer it and read nothing. ``diverging_epoch`` set: answer it with no
    records (the follower truncates first). Otherwise read from ``fetch_offset`` up to
    ``log_end_offset`` (not the HW). ``proposal``: an ISR expansion to send.
    """

    error: int
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    diverging_epoch: EpochEndOffset | None = None
    hw_changed: bool = False
    proposal: AlterPartitionProposal | None = None

    @property
    def should_read(self) -> bool:
        return self.error == 0 and self.diverging_epoch is None


class AlterPartitionOutcome(enum.Enum):
    APPLIED = "applied"
    """The controller committed the change: new ISR and partition epoch adopted."""
    ROLLED_BACK = "rolled_back"
    """Refused (OPERATION_NOT_ATTEMPTED, INELIGIBLE_REPLICA): back to the committed ISR."""
    AWAIT_METADATA = "await_metadata"
    """Our view is stale (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, ...): stay pending
    until the metadata image brings the partition's new state."""
    RETRY = "retry"
    """Transient (NOT_CONTROLLER, timeouts, no response): send the same proposal again."""
    STALE = "stale"
    """Not the proposal in flight any more: ignored."""


@dataclass(frozen=True, slots=True)
class FetchPosition:
    """What a follower asks its leader for next (one partition of a Fetch request)."""

    fetch_offset: int
    last_fetched_epoch: int
    current_leader_epoch: int
    log_start_offset: int
    generation: int = 0
    """The follower's position generation; echo it in the answer's
    :attr:`FetchResponsePartition.generation`."""


@dataclass(frozen=True, slots=True)
class FetchResponsePartition:
    """One partition of the leader's Fetch response, with the position it answers.

    ``fetch_offset`` and ``current_leader_epoch`` are those of the request; a response to a
    position the follower has left (truncation, new epoch) is ignored.
    """

    fetch_offset: int
    current_leader_epoch: int
    error_code: int = 0
    high_watermark: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    records: Records | None = None
    diverging_epoch: EpochEndOffset | None = None
    leader_log_end_offset: int | None = None
    """Only for OFFSET_OUT_OF_RANGE: the leader's LEO when the driver knows it (ListOffsets);
    without it the follower falls back on the leader's high watermark."""
    generation: int | None = None
    """The :attr:`FetchPosition.generation` of the request; None skips that check (a driver
    that never has two answers for one partition in flight)."""


class FollowerAction(enum.Enum):
    CONTINUE = "continue"
    """Fetch again from the new position (now)."""
    BACKOFF = "backoff"
    """Retry after ``replica.fetch.backoff.ms`` (transient error)."""
    AWAIT_METADATA = "await_metadata"
    """Stop fetching this partition until the metadata image names a new leader or epoch."""
    IGNORED = "ignored"
    """The response was for a position we have left."""
    BUILD_TIER_STATE = "build_tier_state"
    """OFFSET_MOVED_TO_TIERED_STORAGE: rebuild from the store at the leader's local log start
    (KIP-405), then call :meth:`FollowerCore.restarted`."""


@dataclass(frozen=True, slots=True)
class FollowerOutcome:
    """What processing one fetch response did to the follower's log."""

    action: FollowerAction
    appended_to: int = UNKNOWN_OFFSET
    """The LEO after appending, or -1 when nothing was appended."""
    truncated_to: int | None = None
    hw_changed: bool = False
    error: int = 0
