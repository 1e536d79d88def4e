"""The roles of a KRaft replica and the persisted election state behind them.

Everything that changes a replica's epoch, leader or vote goes through :class:`QuorumState`, and
it writes ``quorum-state`` (through the injected store) BEFORE the new role exists, so no message
can act on a vote or epoch that a crash could forget. The rules, as in Kafka's ``QuorumState``:

- The epoch never decreases, across restarts too.
- In one epoch a replica grants at most one (non-pre) vote; the vote is persisted with the
  candidate's directory id.
- A replica that learned the leader of epoch ``e`` (follower) or was that leader never grants
  a vote in ``e``; the stored leader id keeps that true across a restart.
- Pre-votes (KIP-996) change nothing: the prospective role keeps the epoch and the vote.

Roles: ``Unattached`` (no leader known; maybe voted), ``Prospective`` (asking for pre-votes),
``Candidate`` (voted for itself in a bumped epoch), ``Leader``, ``Follower`` (knows the leader
and fetches from it) and ``Resigned`` (was leader of this epoch and stepped down).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from sparklog.protocol.kafka_uuid import ZERO_UUID
from sparklog.raft.client import NO_LEADER
from sparklog.raft.leader_state import LeaderState
from sparklog.raft.quorum_state import ElectionState
from sparklog.raft.voters import ReplicaKey


class ElectionStore(Protocol):
    """Where the election state lives (``QuorumStateStore`` or the simulator's disk)."""

    def read(self) -> ElectionState | None: ...

    def write(self, state: ElectionState) -> None: ...


@dataclass(slots=True)
class Unattached:
    epoch: int
    election_deadline_ms: int
    voted: ReplicaKey | None = None
    name: str = "unattached"


@dataclass(slots=True)
class Prospective:
    epoch: int
    election_deadline_ms: int
    voted: ReplicaKey | None = None
    leader_id: int = NO_LEADER
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    name: str = "prospective"


@dataclass(slots=True)
class Candidate:
    epoch: int
    election_deadline_ms: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    backoff_deadline_ms: int | None = None
    name: str = "candidate"


@dataclass(slots=True)
class Leader:
    epoch: int
    state: LeaderState
    name: str = "leader"


@dataclass(slots=True)
class Follower:
    epoch: int
    leader_id: int
    fetch_deadline_ms: int
    has_fetched: bool = False
    # An observer whose leader stopped answering asks any voter who leads now.
    leader_lost: bool = False
    name: str = "follower"


@dataclass(slots=True)
class Resigned:
    epoch: int
    election_deadline_ms: int
    name: str = "resigned"


Role = Unattached | Prospective | Candidate | Leader | Follower | Resigned


class QuorumState:
    """The current role, with every epoch/vote/leader change persisted first."""

    def __init__(self, local: ReplicaKey, store: ElectionStore) -> None:
        self.local = local
        self._store = store
        self.role: Role = Unattached(0, 0)

    @property
    def epoch(self) -> int:
        return self.role.epoch

    @property
    def leader_id(self) -> int:
        role = self.role
        if isinstance(role, Leader):
            return self.local.id
        if isinstance(role, Follower):
            return role.leader_id
        if isinstance(role, Resigned):
            return self.local.id
        return NO_LEADER

    def load(self, log_last_epoch: int, election_deadline_ms: int) -> ElectionState:
        """Restore the role from the store on start-up (see the module rules)."""
        stored = self._store.read() or ElectionState()
        epoch = max(stored.leader_epoch, 0)
        if log_last_epoch > epoch:
            # The log saw a later epoch than the store (e.g. a fresh store); never go back.
            self._persist(ElectionState(leader_epoch=log_last_epoch))
            self.role = Unattached(log_last_epoch, election_deadline_ms)
        elif stored.leader_id == self.local.id:
            self.role = Resigned(epoch, election_deadline_ms)
        elif stored.leader_id >= 0:
            self.role = Follower(epoch, stored.leader_id, election_deadline_ms)
        elif stored.voted_id >= 0:
            voted = ReplicaKey(stored.voted_id, stored.voted_directory_id)
            self.role = Unattached(epoch, election_deadline_ms, voted)
        else:
            self.role = Unattached(epoch, election_deadline_ms)
        return stored

    def _persist(self, state: ElectionState) -> None:
        if state.leader_epoch < self.role.epoch:
            raise AssertionError(f"epoch would go back from {self.role.epoch} to {state}")
        self._store.write(state)

    def to_unattached(self, epoch: int, deadline_ms: int) -> None:
        role = self.role
        if epoch < role.epoch:
            raise AssertionError(f"unattached epoch {epoch} below {role}")
        if epoch > role.epoch:
            self._persist(ElectionState(leader_epoch=epoch))
            self.role = Unattached(epoch, deadline_ms)
        elif isinstance(role, Unattached | Prospective):
            self.role = Unattached(epoch, deadline_ms, role.voted)
        elif isinstance(role, Candidate):
            # The candidate's persisted vote for itself stays the only vote of this epoch.
            self.role = Unattached(epoch, deadline_ms, self.local)
        else:
            raise AssertionError(f"{role} cannot become unattached in its own epoch")

    def grant_vote(self, candidate: ReplicaKey, deadline_ms: int) -> None:
        role = self.role
        if not isinstance(role, Unattached | Prospective):
            raise AssertionError(f"cannot vote as {role}")
        if role.voted is not None and role.voted != candidate:
            raise AssertionError(f"already voted for {role.voted} in epoch {role.epoch}")
        self._persist(
            ElectionState(
                leader_epoch=role.epoch,
                voted_id=candidate.id,
                voted_directory_id=candidate.directory_id,
            )
        )
        self.role = Unattached(role.epoch, deadline_ms, candidate)

    def to_prospective(self, deadline_ms: int) -> Prospective:
        role = self.role
        voted = role.voted if isinstance(role, Unattached | Prospective) else None
        if isinstance(role, Candidate):
            voted = self.local
        # A prospective remembers a leader of its epoch so it never votes in that epoch.
        leader = role.leader_id if isinstance(role, Follower | Prospective) else NO_LEADER
        if isinstance(role, Resigned | Leader):
            leader = self.local.id
        prospective = Prospective(role.epoch, deadline_ms, voted, leader, {self.local.id})
        self.role = prospective
        return prospective

    def to_candidate(self, deadline_ms: int) -> Candidate:
        epoch = self.epoch + 1
        self._persist(
            ElectionState(
                leader_epoch=epoch,
                voted_id=self.local.id,
                voted_directory_id=self.local.directory_id,
            )
        )
        candidate = Candidate(epoch, deadline_ms, {self.local.id})
        self.role = candidate
        return candidate

    def to_leader(self, state: LeaderState) -> Leader:
        if not isinstance(self.role, Candidate) or self.role.epoch != state.epoch:
            raise AssertionError(f"only a candidate of epoch {state.epoch} can lead it")
        self._persist(
            ElectionState(
                leader_epoch=state.epoch,
                leader_id=self.local.id,
                voted_id=self.local.id,
                voted_directory_id=self.local.directory_id,
            )
        )
        leader = Leader(state.epoch, state)
        self.role = leader
        return leader

    def to_follower(self, epoch: int, leader_id: int, deadline_ms: int) -> Follower:
        role = self.role
        if epoch < role.epoch:
            raise AssertionError(f"follower epoch {epoch} below {role.epoch}")
        if epoch == role.epoch and isinstance(role, Leader | Resigned):
            raise AssertionError(f"two leaders in epoch {epoch}: {self.local.id}, {leader_id}")
        if epoch == role.epoch and isinstance(role, Follower) and role.leader_id != leader_id:
            raise AssertionError(f"two leaders in epoch {epoch}: {role.leader_id}, {leader_id}")
        voted = role.voted if isinstance(role, Unattached | Prospective) else None
        keep_vote = epoch == role.epoch and voted is not None
        self._persist(
            ElectionState(
                leader_epoch=epoch,
                leader_id=leader_id,
                voted_id=voted.id if keep_vote and voted is not None else -1,
                voted_directory_id=voted.directory_id
                if keep_vote and voted is not None
                else ZERO_UUID,
            )
        )
        follower = Follower(epoch, leader_id, deadline_ms)
        self.role = follower
        return follower

    def to_resigned(self, deadline_ms: int) -> Resigned:
        if not isinstance(self.role, Leader):
            raise AssertionError("only a leader resigns")
        resigned = Resigned(self.role.epoch, deadline_ms)
        self.role = resigned
        return resigned
