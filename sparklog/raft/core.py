"""The KRaft replica state machine, sans-IO (Kafka's ``KafkaRaftClient``).

Everything that changes a replica's role, log or high watermark lives in this class and the
components it is composed of; none of them touches a socket, a thread or the wall clock. A
driver feeds it inbound messages (:meth:`RaftReplica.handle`) and clock ticks
(:meth:`RaftReplica.poll`) and sends the :class:`~sparklog.raft.rpc.Outbound` messages they
return; time comes in as ``now_ms``.

The replica is composed of collaborators, each in its own module with its contract in its
docstring, sharing only a :class:`~sparklog.raft.replica_state.ReplicaState` (typed fields: the
log, the role, the voter sets, the HW, ...) and a :class:`~sparklog.raft.replica_state.Messenger`
(outbox, requests in flight): :class:`~sparklog.raft.elections.Elections` (every role change, the
vote and epoch RPCs), :class:`~sparklog.raft.replication.LeaderReplication` (the leader's appends,
Fetch serving, flush and tick), :class:`~sparklog.raft.replication.FollowerFetcher` (Fetch and
FetchSnapshot requests and answers), :class:`~sparklog.raft.snapshot_sync.SnapshotSync` and
:class:`~sparklog.raft.voter_changes.VoterChanges`. :class:`RaftReplica` builds them, dispatches
messages and ticks to them, and keeps the public ``RaftClient`` API.

Invariants kept here (the simulator in ``tests/sim`` checks them after every event):

- Election safety: a replica grants one vote per epoch, persisted before the response leaves;
  a candidate leads only with votes from a majority of its latest voter set; so there is at
  most one leader per epoch. Pre-votes (KIP-996) change no state.
- Log matching: a follower appends only at its log end offset after the leader checked its
  ``(fetch_offset, last_fetched_epoch)``; a diverging follower truncates to the end of the
  last common epoch and never below its high watermark.
- Commit: the HW is computed by :class:`~sparklog.raft.leader_state.LeaderState` from voters'
  fetch offsets and the leader's *flushed* end offset; followers flush before fetching again,
  so a committed entry is durable on a majority. The HW a replica reports never decreases.
- Voter changes (KIP-853): the voter set is read from ``VotersRecord`` control records as soon
  as they are appended (reverted on truncation); a leader starts a change only when the voter
  set is committed and the epoch has committed an entry; a removed leader keeps replicating
  but stops counting itself, and resigns once the removal is committed.
- Snapshots (KIP-630, :mod:`~sparklog.raft.snapshot_sync`): a snapshot only ever covers
  committed entries, so installing one raises the HW to its end; the log start offset is the
  latest snapshot's end (once every listener read that far), a replica behind it is sent the
  snapshot id and downloads it with FetchSnapshot, and a restart installs the latest snapshot
  before it scans the log above it.
"""

from __future__ import annotations

import random as random_module
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from sparklog.protocol.errors import ErrorCode
from sparklog.raft import rpc
from sparklog.raft.client import LeaderAndEpoch, NotLeaderError, RaftListener
from sparklog.raft.elections import Elections
from sparklog.raft.listeners import ListenerDispatcher
from sparklog.raft.log import ReplicatedLog
from sparklog.raft.replica_state import Inflight, Messenger, RaftConfig, ReplicaState
from sparklog.raft.replication import FollowerFetcher, LeaderReplication
from sparklog.raft.snapshot_format import SnapshotContents
from sparklog.raft.snapshot_sync import SnapshotSync
from sparklog.raft.snapshots import MemorySnapshotStore, SnapshotId, SnapshotStore
from sparklog.raft.state import (
    Candidate,
    ElectionStore,
    Follower,
    Leader,
    Prospective,
    QuorumState,
    Resigned,
    Unattached,
)
from sparklog.raft.voter_changes import PendingChange, VoterChanges
from sparklog.raft.voters import ReplicaKey, VoterSet, VoterSetHistory

__all__ = ["RaftConfig", "RaftReplica"]

T = TypeVar("T")


class RaftReplica(Generic[T]):
    """One member (voter or observer) of the KRaft quorum; a ``RaftClient``."""

    def __init__(
        self,
        node_id: int,
        directory_id: bytes,
        log: ReplicatedLog,
        quorum_store: ElectionStore,
        voters_bootstrap: VoterSet | None,
        config: RaftConfig,
        random: random_module.Random,
        time: Callable[[], int],
        *,
        decode: Callable[[bytes], Any] = bytes,
        bootstrap_ids: Sequence[int] = (),
        snapshots: SnapshotStore | None = None,
    ) -> None:
        self.local = ReplicaKey(node_id, directory_id)
        self.log = log
        self.config = config
        self.voters = VoterSetHistory(voters_bootstrap)
        self.quorum = QuorumState(self.local, quorum_store)
        self.snapshots: SnapshotStore = (
            snapshots if snapshots is not None else MemorySnapshotStore()
        )
        state = ReplicaState(
            self.local, config, log, self.quorum, self.voters, random, time, tuple(bootstrap_ids)
        )
        self._state = state
        messenger = Messenger(self.quorum, config.request_timeout_ms)
        self._messenger = messenger
        self._snapshot_sync = SnapshotSync(state, messenger, self.snapshots)
        # Leaders resign from inside the replication and voter-change components; the
        # elections, which own every role change, are built last from them.
        self._voter_changes = VoterChanges(
            state,
            messenger,
            append_control=lambda controls: self._leader.append_control(controls),
            resign=lambda now_ms, role: self._elections.resign(now_ms, role),
        )
        self._leader = LeaderReplication(
            state,
            messenger,
            self._snapshot_sync,
            self._voter_changes,
            resign=lambda now_ms, role: self._elections.resign(now_ms, role),
        )
        self._elections = Elections(state, messenger, self._leader, self._voter_changes)
        self._follower = FollowerFetcher(
            state,
            messenger,
            self._snapshot_sync,
            observe_leader=self._elections.observe_leader,
            on_commit_advanced=self._voter_changes.check_pending_change,
        )
        self._listeners: ListenerDispatcher[T] = ListenerDispatcher(
            log, decode, self._snapshot_sync.latest_snapshot
        )
        # A restart loads the latest snapshot, then replays the log above it.
        self._snapshot_sync.load_on_start()
        state.scan_control(self.log.read(self.log.log_start_offset, 1 << 62))
        now = time()
        self.quorum.load(self.log.last_epoch, now + state.election_timeout())

    # -- RaftClient ---------------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.local.id

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self.quorum.leader_id, self.quorum.epoch)

    @property
    def high_watermark(self) -> int:
        return self._state.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def role(self) -> str:
        return self.quorum.role.name

    @property
    def is_voter(self) -> bool:
        return self._state.is_voter

    @property
    def kraft_version(self) -> int:
        return self._state.kraft_version

    @property
    def pending_change(self) -> PendingChange | None:
        """The voter change the leader is working on (AddRaftVoter, ...), if any."""
        return self._voter_changes.pending

    def register_listener(self, listener: RaftListener[T]) -> None:
        self._listeners.register(listener)
        self._deliver()

    def unregister_listener(self, listener: RaftListener[T]) -> None:
        self._listeners.unregister(listener)

    def schedule_append(self, epoch: int, records: Sequence[bytes]) -> int:
        role = self.quorum.role
        if not isinstance(role, Leader) or role.epoch != epoch:
            raise NotLeaderError(f"node {self.local.id} is not the leader of epoch {epoch}")
        if self._listeners.delivering:
            raise RuntimeError("schedule_append called from inside a raft listener callback")
        if not records:
            raise ValueError("schedule_append needs at least one record")
        return self._leader.append_data(list(records))

    def append(self, records: Sequence[bytes]) -> int:
        """Append as the current leader (whatever its epoch); returns the last offset."""
        return self.schedule_append(self.quorum.epoch, records)

    def append_control(self, controls: list[tuple[str, dict[str, Any]]]) -> int:
        """Append one control batch as leader (LeaderChange, VotersRecord, ...)."""
        return self._leader.append_control(controls)

    def resign(self, now_ms: int) -> list[rpc.Outbound]:
        """Step down as leader (graceful shutdown or removal): tell the voters to elect."""
        role = self.quorum.role
        if isinstance(role, Leader):
            self._elections.resign(now_ms, role)
        return self._messenger.drain()

    # -- snapshots ----------------------------------------------------------------------------

    def latest_snapshot(self) -> SnapshotContents | None:
        """The latest frozen snapshot, parsed (cached until a newer one exists)."""
        return self._snapshot_sync.latest_snapshot()

    @property
    def latest_snapshot_id(self) -> SnapshotId | None:
        return self.snapshots.latest()

    def create_snapshot(
        self, end_offset: int, values: Iterable[bytes], last_contained_timestamp: int
    ) -> SnapshotId:
        """Freeze a snapshot of the state after every record below ``end_offset``."""
        snapshot_id = self._snapshot_sync.create(end_offset, values, last_contained_timestamp)
        self._snapshot_sync.advance_log_start(self._listeners.min_next_offset())
        return snapshot_id

    # -- driving ------------------------------------------------------------------------------

    def handle(
        self, now_ms: int, message: rpc.InboundRequest | rpc.InboundResponse
    ) -> list[rpc.Outbound]:
        if isinstance(message, rpc.InboundRequest):
            self._handle_request(now_ms, message)
        else:
            inflight = self._messenger.answered(message)
            if inflight is not None:
                self._handle_response(now_ms, message, inflight)
        self._after(now_ms)
        return self._messenger.drain()

    def poll(self, now_ms: int) -> tuple[list[rpc.Outbound], int]:
        self._messenger.expire(now_ms)
        role = self.quorum.role
        if isinstance(role, Leader):
            self._leader.poll(now_ms, role)
        elif isinstance(role, Follower):
            if now_ms >= role.fetch_deadline_ms:
                if self.is_voter:
                    self._elections.start_prospective(now_ms)
                else:
                    # An observer that lost its leader asks the voters who leads now.
                    role.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
                    role.has_fetched = False
                    role.leader_lost = True
        elif isinstance(role, Unattached | Resigned):
            if now_ms >= role.election_deadline_ms and self.is_voter:
                self._elections.start_prospective(now_ms)
        elif isinstance(role, Prospective):
            if now_ms >= role.election_deadline_ms:
                self._elections.start_prospective(now_ms)
        elif isinstance(role, Candidate):
            backoff_done = (
                role.backoff_deadline_ms is not None and now_ms >= role.backoff_deadline_ms
            )
            if backoff_done or now_ms >= role.election_deadline_ms:
                self._elections.start_prospective(now_ms)
        self._after(now_ms)
        return self._messenger.drain(), self._next_deadline(now_ms)

    # -- internals ----------------------------------------------------------------------------

    def _after(self, now_ms: int) -> None:
        """Work every entry point ends with: requests the role owes, then deliveries."""
        role = self.quorum.role
        if isinstance(role, Prospective | Candidate):
            self._elections.send_votes(now_ms, role)
        elif not isinstance(role, Leader):
            self._follower.maybe_fetch(now_ms)
        self._deliver()

    def _deliver(self) -> None:
        role = self.quorum.role
        start = role.state.epoch_start_offset + 1 if isinstance(role, Leader) else None
        self._listeners.deliver(self._state.high_watermark, self.leader_and_epoch, start)
        self._snapshot_sync.advance_log_start(self._listeners.min_next_offset())

    def _next_deadline(self, now_ms: int) -> int:
        role = self.quorum.role
        deadlines = self._messenger.deadlines()
        if isinstance(role, Leader):
            deadlines.append(now_ms + self.config.fetch_timeout_ms // 4)
            deadlines.extend(self._leader.deadlines())
            pending = self._voter_changes.pending
            if pending is not None:
                deadlines.append(pending.deadline_ms)
        elif isinstance(role, Follower):
            deadlines.append(role.fetch_deadline_ms)
        elif isinstance(role, Candidate):
            deadlines.append(role.election_deadline_ms)
            if role.backoff_deadline_ms is not None:
                deadlines.append(role.backoff_deadline_ms)
        else:
            deadlines.append(role.election_deadline_ms)
        fetching = self._messenger.fetching()
        if not isinstance(role, Leader | Prospective | Candidate) and not fetching:
            deadlines.append(max(self._state.retry_at_ms, now_ms + 1))
        return max(min(deadlines), now_ms + 1)

    # -- dispatch -----------------------------------------------------------------------------

    def _handle_request(self, now_ms: int, request: rpc.InboundRequest) -> None:
        api = request.api_key
        cluster = request.body.get("cluster_id")
        if (
            cluster is not None
            and self.config.cluster_id is not None
            and cluster != self.config.cluster_id
        ):
            self._messenger.respond(request, {"error_code": int(ErrorCode.INCONSISTENT_CLUSTER_ID)})
            return
        if api == rpc.VOTE:
            self._elections.handle_vote(now_ms, request)
        elif api == rpc.BEGIN_QUORUM_EPOCH:
            self._elections.handle_begin_epoch(now_ms, request)
        elif api == rpc.END_QUORUM_EPOCH:
            self._elections.handle_end_epoch(now_ms, request)
        elif api == rpc.FETCH:
            self._leader.handle_fetch(now_ms, request)
        elif api == rpc.FETCH_SNAPSHOT:
            self._snapshot_sync.handle_fetch_snapshot(now_ms, request)
        elif api == rpc.DESCRIBE_QUORUM:
            self._leader.handle_describe_quorum(now_ms, request)
        elif api in (rpc.ADD_RAFT_VOTER, rpc.REMOVE_RAFT_VOTER, rpc.UPDATE_RAFT_VOTER):
            self._voter_changes.handle_voter_change(now_ms, request)
        else:
            raise ValueError(f"api key {api} is not a KRaft request")

    def _handle_response(self, now_ms: int, response: rpc.InboundResponse, sent: Inflight) -> None:
        if sent.api_key == rpc.VOTE:
            self._elections.handle_vote_response(now_ms, response, sent)
        elif sent.api_key in (rpc.BEGIN_QUORUM_EPOCH, rpc.END_QUORUM_EPOCH):
            self._elections.handle_epoch_response(now_ms, response)
        elif sent.api_key == rpc.FETCH:
            self._follower.handle_fetch_response(now_ms, response, sent.epoch)
        elif sent.api_key == rpc.FETCH_SNAPSHOT:
            self._follower.handle_fetch_snapshot_response(now_ms, response, sent.epoch)
