"""PartitionChangeBuilder: the one place that turns a wanted partition state into a record.

Every controller path that changes a partition's leader, ISR, ELR or replica set (fencing,
controlled shutdown, unfencing, AlterPartition, ElectLeaders, preferred-leader rebalancing,
reassignment) describes the *target* (ISR, replicas, adding/removing, recovery state) on a
builder and calls :meth:`PartitionChangeBuilder.build`, which returns the
PartitionChangeRecord to append, or None when nothing would change. It follows Kafka 4.x's
``PartitionChangeBuilder``; the steps run in this order:

1. Reassignment completion: when every adding replica is in the target ISR and something
   other than the removing replicas remains in it, the removing replicas leave the replica set
   and the ISR, and adding/removing become empty (KIP-455).
2. ELR (KIP-966, only when enabled): if the target ISR is at least ``min.insync.replicas``,
   ELR and last-known ELR are cleared; otherwise the members of the current ISR (and ELR) that
   leave the ISR become ELR, minus replicas known to have shut down uncleanly, and the
   last-known ELR remembers everyone who was ever dropped this way.
3. Election: the current leader is kept if it is still a valid leader (in the target ISR, or
   in the ELR when the ISR is empty, and acceptable: registered, unfenced, not shutting down).
   Otherwise the first valid replica in replica order leads (for PREFERRED, the first replica
   is tried first). An ELR member elected leader becomes the whole ISR. With no valid replica
   and an UNCLEAN election, the first acceptable replica leads, the ISR becomes just it and
   the leader recovery state becomes RECOVERING (a log that may have lost committed data).
   Otherwise the partition has no leader (-1).
4. Record: only changed fields are set. The leader field is set when the leader changes, and
   also (to bump the leader epoch with the leader unchanged) when a reassignment removes
   replicas, when the ISR shrinks under a metadata.version before 3.6-IV0 (KAFKA-15021), or
   when the caller asks (``bump_leader_epoch``: a leader restarted in place).
   ``directories`` (one per replica) is set when it changes: from metadata.version 3.7-IV2 a
   replica keeps its dir, ``target_directories`` places one (AssignReplicasToDirs) and a new
   replica gets ``default_dir`` (see :mod:`sparklog.controller.directories`); before 3.7-IV2
   it is only kept parallel to a changed replica set (new replicas MIGRATING).
   Without ELR the ISR never becomes empty: a partition that loses its last ISR member keeps
   it, so that replica leads again once back. Replay of the record (``merge``) bumps the
   partition epoch on every change and the leader epoch whenever the leader field is set.

The builder never reads the cluster: whether a broker may lead is the caller's
``is_acceptable_leader``, so fencing can exclude a broker not yet fenced in the image and
unfencing can include one not yet unfenced.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sparklog.controller.directories import MIGRATING, assignment_supported
from sparklog.metadata.image import NO_LEADER, PartitionRegistration
from sparklog.metadata.records import MetadataRecord, make_record

log = logging.getLogger(__name__)

RECOVERED = 0
RECOVERING = 1
# A PartitionChangeRecord whose ``leader`` is -2 leaves the leader (and its epoch) alone.
NO_LEADER_CHANGE = -2
# metadata.version 3.6-IV0: brokers no longer need a leader epoch bump on ISR shrink.
ISR_SHRINK_NO_BUMP_LEVEL = 12


class Election(enum.Enum):
    """How a leader may be chosen (Kafka's PartitionChangeBuilder.Election)."""

    PREFERRED = "preferred"
    ONLINE = "online"
    UNCLEAN = "unclean"


@dataclass(frozen=True, slots=True)
class ElectionResult:
    node: int
    unclean: bool


@dataclass(frozen=True, slots=True)
class ReassignmentReplicas:
    """A reassignment's replica set: ``replicas`` = target followed by the removing replicas
    (Kafka's PartitionReassignmentReplicas)."""

    removing: tuple[int, ...]
    adding: tuple[int, ...]
    replicas: tuple[int, ...]

    @staticmethod
    def of(current: Sequence[int], target: Sequence[int]) -> ReassignmentReplicas:
        removing = tuple(r for r in current if r not in target)
        adding = tuple(r for r in target if r not in current)
        return ReassignmentReplicas(removing, adding, tuple(target) + removing)

    @property
    def in_progress(self) -> bool:
        return bool(self.removing or self.adding)

    def maybe_complete(self, isr: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """(replicas, ISR) once the reassignment can complete with ``isr``; None otherwise."""
        if not self.in_progress:
            return None
        new_isr = tuple(r for r in isr if r not in self.removing)
        new_replicas = tuple(r for r in self.replicas if r not in self.removing)
        if not new_isr or not all(r in new_isr for r in self.adding):
            return None
        return new_replicas, new_isr


@dataclass(slots=True)
class PartitionChangeBuilder:
    partition: PartitionRegistration
    topic_id: bytes
    partition_id: int
    is_acceptable_leader: Callable[[int], bool]
    min_isr: int = 1
    elr_enabled: bool = False
    election: Election = Election.ONLINE
    metadata_version: int = 25
    target_isr: list[int] = field(default_factory=list)
    target_replicas: list[int] = field(default_factory=list)
    target_removing: list[int] = field(default_factory=list)
    target_adding: list[int] = field(default_factory=list)
    target_elr: list[int] = field(default_factory=list)
    target_last_known_elr: list[int] = field(default_factory=list)
    target_recovery_state: int = -1
    unclean_shutdown_replicas: frozenset[int] = frozenset()
    # Replicas placed in a log dir (AssignReplicasToDirs), and where a new replica goes.
    target_directories: dict[int, bytes] = field(default_factory=dict)
    default_dir: Callable[[int], bytes] | None = None
    # Force a new leader epoch even if the leader stays (a leader restarted in place).
    bump_leader_epoch: bool = False
    # What the last build() elected; None before build or when the leader did not change.
    elected: ElectionResult | None = None
    elected_from_elr: bool = False

    def __post_init__(self) -> None:
        p = self.partition
        self.target_isr = list(p.isr)
        self.target_replicas = list(p.replicas)
        self.target_removing = list(p.removing_replicas)
        self.target_adding = list(p.adding_replicas)
        self.target_elr = list(p.elr)
        self.target_last_known_elr = list(p.last_known_elr)
        self.target_recovery_state = p.leader_recovery_state

    # -- election ---------------------------------------------------------------------------

    def _valid_leader(self, replica: int) -> bool:
        in_isr = replica in self.target_isr
        in_elr = not self.target_isr and replica in self.target_elr
        return replica >= 0 and (in_isr or in_elr) and self.is_acceptable_leader(replica)

    def elect_leader(self) -> ElectionResult:
        current = self.partition.leader
        if self.election is Election.PREFERRED and self.target_replicas:
            preferred = self.target_replicas[0]
            if self._valid_leader(preferred):
                return ElectionResult(preferred, False)
        if self._valid_leader(current):
            return ElectionResult(current, False)
        for replica in self.target_replicas:
            if self._valid_leader(replica):
                return ElectionResult(replica, False)
        if self.election is Election.UNCLEAN:
            for replica in self.target_replicas:
                if self.is_acceptable_leader(replica):
                    return ElectionResult(replica, True)
        return ElectionResult(NO_LEADER, False)

    # -- steps ------------------------------------------------------------------------------

    def _complete_reassignment(self) -> None:
        reassignment = ReassignmentReplicas(
            tuple(self.target_removing), tuple(self.target_adding), tuple(self.target_replicas)
        )
        completed = reassignment.maybe_complete(self.target_isr)
        if completed is None:
            return
        self.target_replicas, self.target_isr = list(completed[0]), list(completed[1])
        self.target_removing, self.target_adding = [], []

    def _populate_elr(self) -> None:
        if not self.elr_enabled:
            return
        if len(self.target_isr) >= self.min_isr:
            self.target_elr, self.target_last_known_elr = [], []
            return
        isr = set(self.target_isr)
        candidates = set(self.target_elr) | set(self.partition.isr)
        self.target_elr = sorted(
            r for r in candidates if r not in isr and r not in self.unclean_shutdown_replicas
        )
        known = candidates | set(self.target_last_known_elr)
        self.target_last_known_elr = sorted(
            r for r in known if r not in isr and r not in self.target_elr
        )

    def build(self) -> MetadataRecord | None:
        p = self.partition
        change: dict[str, object] = {}
        self._complete_reassignment()
        self._populate_elr()

        result = self.elect_leader()
        self.elected = None
        self.elected_from_elr = False
        if result.node != p.leader:
            self.elected = result
            if result.node in self.target_elr:
                self.elected_from_elr = True
                self.target_isr = [result.node]
                self.target_elr = [r for r in self.target_elr if r != result.node]
            elif result.unclean:
                log.info(
                    "Unclean election of replica %d as leader of %s-%d: committed data may be lost",
                    result.node,
                    self.topic_id.hex(),
                    self.partition_id,
                )
            change["leader"] = result.node
            if result.unclean:
                change["isr"] = [result.node]
                if p.leader_recovery_state != RECOVERING:
                    self.target_recovery_state = RECOVERING

        if "leader" not in change and (
            self.bump_leader_epoch or not set(p.replicas) <= set(self.target_replicas)
        ):
            change["leader"] = p.leader

        if "isr" in change or not self.elr_enabled:
            # An unclean election (or ELR off) leaves no eligible leader replicas behind.
            self.target_elr, self.target_last_known_elr = [], []
        if self.target_elr != list(p.elr):
            change["eligible_leader_replicas"] = list(self.target_elr)
        if self.target_last_known_elr != list(p.last_known_elr):
            change["last_known_elr"] = list(self.target_last_known_elr)

        if (
            "isr" not in change
            and (self.target_isr or self.elr_enabled)
            and self.target_isr != list(p.isr)
        ):
            change["isr"] = list(self.target_isr)

        if (
            0 < self.metadata_version < ISR_SHRINK_NO_BUMP_LEVEL
            and "leader" not in change
            and "isr" in change
            and not set(p.isr) <= set(change["isr"])  # type: ignore[call-overload]
        ):
            change["leader"] = p.leader

        self._assignment_changes(change)
        if self.target_recovery_state != p.leader_recovery_state:
            change["leader_recovery_state"] = self.target_recovery_state
        if not change:
            return None
        return make_record(
            "PartitionChangeRecord",
            {"topic_id": self.topic_id, "partition_id": self.partition_id, **change},
        )

    def _assignment_changes(self, change: dict[str, object]) -> None:
        p = self.partition
        if self.target_replicas and self.target_replicas != list(p.replicas):
            change["replicas"] = list(self.target_replicas)
        self._directory_changes(change)
        if self.target_removing != list(p.removing_replicas):
            change["removing_replicas"] = list(self.target_removing)
        if self.target_adding != list(p.adding_replicas):
            change["adding_replicas"] = list(self.target_adding)

    def _directory_changes(self, change: dict[str, object]) -> None:
        """The replicas' log dirs, kept parallel to the replicas: from 3.7-IV2 as Kafka sets
        them (a new replica gets its default dir); before, padded with MIGRATING."""
        p = self.partition
        targets = self.target_replicas or list(p.replicas)
        if len(p.directories) == len(p.replicas):
            current = list(p.directories)
        else:
            current = [MIGRATING] * len(p.replicas)
        known = dict(zip(p.replicas, current, strict=True))
        if assignment_supported(self.metadata_version):
            known.update(self.target_directories)
            fallback = self.default_dir or (lambda _: MIGRATING)
            directories = [known[r] if r in known else fallback(r) for r in targets]
        elif p.directories and "replicas" in change:
            directories = [known.get(r, MIGRATING) for r in targets]
        else:
            return
        if directories != current:
            change["directories"] = directories
