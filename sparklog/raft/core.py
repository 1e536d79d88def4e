"""The KRaft replica state machine, sans-IO (Kafka's ``KafkaRaftClient``).

Everything that changes a replica's role, log or high watermark lives here; this file never
touches a socket, a thread or the wall clock. A driver feeds it inbound messages
(:meth:`RaftReplica.handle`) and clock ticks (:meth:`RaftReplica.poll`) and sends the
:class:`~sparklog.raft.rpc.Outbound` messages they return; time comes in as ``now_ms``.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.kafka_uuid import ZERO_UUID
from sparklog.protocol.record_codec import RecordInput, build_batch, decode_batch
from sparklog.protocol.records import iter_batches
from sparklog.raft import rpc
from sparklog.raft.client import LeaderAndEpoch, NotLeaderError, RaftListener
from sparklog.raft.control_records import decode_control_record, encode_control_record
from sparklog.raft.elections import ElectionMixin
from sparklog.raft.leader_state import LeaderState
from sparklog.raft.listeners import ListenerDispatcher
from sparklog.raft.log import ReplicatedLog
from sparklog.raft.snapshot_format import SnapshotContents
from sparklog.raft.snapshot_sync import _Download
from sparklog.raft.snapshots import MemorySnapshotStore, SnapshotStore
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
from sparklog.raft.voter_changes import PendingChange
from sparklog.raft.voters import ReplicaKey, VoterSet, VoterSetHistory

T = TypeVar("T")

MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """Kafka's ``controller.quorum.*`` settings (defaults as in Kafka 4.x)."""

    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    fetch_max_wait_ms: int = 500
    append_linger_ms: int = 25
    max_fetch_bytes: int = 8 * 1024 * 1024
    # metadata.max.idle.interval.ms: the leader appends ``no_op_record`` when idle this long.
    idle_interval_ms: int = 500
    no_op_record: bytes | None = None
    cluster_id: str | None = None
    kraft_version: int = 1

    @property
    def check_quorum_timeout_ms(self) -> int:
        return self.fetch_timeout_ms * 3 // 2


@dataclass(slots=True)
class _Inflight:
    destination_id: int
    api_key: int
    epoch: int
    deadline_ms: int
    pre_vote: bool = False


class RaftReplica(ElectionMixin, Generic[T]):
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
        self._random = random
        self._time = time
        self._bootstrap_ids = tuple(bootstrap_ids)
        self.voters = VoterSetHistory(voters_bootstrap)
        self._kraft_versions: list[tuple[int, int]] = []
        self._outbox: list[rpc.Outbound] = []
        self._inflight: dict[int, _Inflight] = {}
        self._next_correlation = 1
        self._retry_at_ms = 0
        # When a leader last answered INCONSISTENT_CLUSTER_ID was logged (None: never).
        self._cluster_id_rejected_logged_ms: int | None = None
        self._high_watermark = 0
        self._unflushed_since_ms: int | None = None
        self._last_append_ms = 0
        self._begin_epoch_sent_ms: dict[int, int] = {}
        self._parked: dict[int, tuple[rpc.InboundRequest, int]] = {}
        self._last_sent_hw: dict[int, int] = {}
        self.pending_change: PendingChange | None = None
        self.snapshots: SnapshotStore = (
            snapshots if snapshots is not None else MemorySnapshotStore()
        )
        self._download: _Download | None = None
        self._snapshot_cache: SnapshotContents | None = None
        self._listeners: ListenerDispatcher[T] = ListenerDispatcher(
            log, decode, self.latest_snapshot
        )
        self.quorum = QuorumState(self.local, quorum_store)
        # A restart loads the latest snapshot, then replays the log above it.
        self._load_snapshot_on_start()
        self._scan_control(self.log.read(self.log.log_start_offset, 1 << 62))
        now = time()
        self.quorum.load(self.log.last_epoch, now + self._election_timeout())

    # -- RaftClient ---------------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.local.id

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self.quorum.leader_id, self.quorum.epoch)

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def role(self) -> str:
        return self.quorum.role.name

    @property
    def is_voter(self) -> bool:
        return self.voters.latest.is_voter(self.local)

    @property
    def kraft_version(self) -> int:
        return self._kraft_versions[-1][1] if self._kraft_versions else self.config.kraft_version

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
        return self._append_data(list(records))

    def append(self, records: Sequence[bytes]) -> int:
        """Append as the current leader (whatever its epoch); returns the last offset."""
        return self.schedule_append(self.quorum.epoch, records)

    # -- driving ------------------------------------------------------------------------------

    def handle(
        self, now_ms: int, message: rpc.InboundRequest | rpc.InboundResponse
    ) -> list[rpc.Outbound]:
        if isinstance(message, rpc.InboundRequest):
            self._handle_request(now_ms, message)
        else:
            inflight = self._inflight.pop(message.correlation_id, None)
            if inflight is not None and inflight.destination_id == message.source_id:
                self._handle_response(now_ms, message, inflight)
        self._after(now_ms)
        return self._drain()

    def poll(self, now_ms: int) -> tuple[list[rpc.Outbound], int]:
        for correlation_id, inflight in list(self._inflight.items()):
            if inflight.deadline_ms <= now_ms:
                del self._inflight[correlation_id]
        role = self.quorum.role
        if isinstance(role, Leader):
            self._poll_leader(now_ms, role)
        elif isinstance(role, Follower):
            if now_ms >= role.fetch_deadline_ms:
                if self.is_voter:
                    self._start_prospective(now_ms)
                else:
                    # An observer that lost its leader asks the voters who leads now.
                    role.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
                    role.has_fetched = False
                    role.leader_lost = True
        elif isinstance(role, Unattached | Resigned):
            if now_ms >= role.election_deadline_ms and self.is_voter:
                self._start_prospective(now_ms)
        elif isinstance(role, Prospective):
            if now_ms >= role.election_deadline_ms:
                self._start_prospective(now_ms)
        elif isinstance(role, Candidate):
            backoff_done = (
                role.backoff_deadline_ms is not None and now_ms >= role.backoff_deadline_ms
            )
            if backoff_done or now_ms >= role.election_deadline_ms:
                self._start_prospective(now_ms)
        self._after(now_ms)
        return self._drain(), self._next_deadline(now_ms)

    # -- internals: plumbing ------------------------------------------------------------------

    def _drain(self) -> list[rpc.Outbound]:
        out, self._outbox = self._outbox, []
        return out

    def _election_timeout(self) -> int:
        base = self.config.election_timeout_ms
        return base + self._random.randint(0, base)

    def _send(
        self, now_ms: int, destination: int, api_key: int, body: rpc.Body, pre_vote: bool = False
    ) -> None:
        correlation_id = self._next_correlation
        self._next_correlation += 1
        deadline = now_ms + self.config.request_timeout_ms
        self._inflight[correlation_id] = _Inflight(
            destination, api_key, self.quorum.epoch, deadline, pre_vote
        )
        self._outbox.append(rpc.Outbound(destination, api_key, correlation_id, body, False))

    def _respond(self, request: rpc.InboundRequest, body: rpc.Body) -> None:
        self._outbox.append(
            rpc.Outbound(request.source_id, request.api_key, request.correlation_id, body, True)
        )

    def _has_inflight(self, destination: int, api_key: int) -> bool:
        return any(
            i.destination_id == destination and i.api_key == api_key
            for i in self._inflight.values()
        )

    def _after(self, now_ms: int) -> None:
        """Work every entry point ends with: requests the role owes, then deliveries."""
        role = self.quorum.role
        if isinstance(role, Prospective | Candidate):
            self._send_votes(now_ms, role)
        elif not isinstance(role, Leader):
            self._maybe_fetch(now_ms)
        self._deliver()

    def _deliver(self) -> None:
        role = self.quorum.role
        start = role.state.epoch_start_offset + 1 if isinstance(role, Leader) else None
        self._listeners.deliver(self._high_watermark, self.leader_and_epoch, start)
        self._maybe_advance_log_start()

    def _advance_high_watermark(self, offset: int) -> None:
        if offset > self._high_watermark:
            self._high_watermark = offset

    def _next_deadline(self, now_ms: int) -> int:
        role = self.quorum.role
        deadlines = [i.deadline_ms for i in self._inflight.values()]
        if isinstance(role, Leader):
            deadlines.append(now_ms + self.config.fetch_timeout_ms // 4)
            deadlines.extend(deadline for _, deadline in self._parked.values())
            if self._unflushed_since_ms is not None:
                deadlines.append(self._unflushed_since_ms + self.config.append_linger_ms)
            if self.config.no_op_record is not None:
                deadlines.append(self._last_append_ms + self.config.idle_interval_ms)
            if self.pending_change is not None:
                deadlines.append(self.pending_change.deadline_ms)
        elif isinstance(role, Follower):
            deadlines.append(role.fetch_deadline_ms)
        elif isinstance(role, Candidate):
            deadlines.append(role.election_deadline_ms)
            if role.backoff_deadline_ms is not None:
                deadlines.append(role.backoff_deadline_ms)
        else:
            deadlines.append(role.election_deadline_ms)
        fetching = any(
            i.api_key in (rpc.FETCH, rpc.FETCH_SNAPSHOT) for i in self._inflight.values()
        )
        if not isinstance(role, Leader | Prospective | Candidate) and not fetching:
            deadlines.append(max(self._retry_at_ms, now_ms + 1))
        return max(min(deadlines), now_ms + 1)

    # -- log and control records --------------------------------------------------------------

    def _scan_control(self, data: bytes) -> None:
        """Read VotersRecord / KRaftVersionRecord from appended batches (uncommitted too)."""
        for pos, header in iter_batches(data):
            if not header.is_control:
                continue
            _, records = decode_batch(data, pos)
            for record in records:
                control = decode_control_record(record.key, record.value)
                if control is None:
                    continue
                # A batch read twice (a restart's scan, then a fetch) must not add twice.
                if control.name == "VotersRecord" and record.offset > self.voters.latest_offset:
                    self.voters.add_at(record.offset, VoterSet.from_record(control.data))
                elif control.name == "KRaftVersionRecord" and (
                    not self._kraft_versions or record.offset > self._kraft_versions[-1][0]
                ):
                    version = int(control.data["kraft_version"])
                    self._kraft_versions.append((record.offset, version))

    def _truncate(self, offset: int) -> None:
        if offset < self._high_watermark:
            raise AssertionError(
                f"node {self.local.id} would truncate to {offset} "
                f"below its high watermark {self._high_watermark}"
            )
        self.log.truncate_to(offset)
        end = self.log.log_end_offset
        self.voters.truncate_to(end)
        self._kraft_versions = [(o, v) for o, v in self._kraft_versions if o < end]

    def _build(self, records: list[RecordInput], epoch: int, control: bool) -> bytes:
        batch = build_batch(
            records,
            base_offset=self.log.log_end_offset,
            partition_leader_epoch=epoch,
            is_control=control,
        )
        if len(batch) > MAX_BATCH_SIZE_BYTES:
            raise ValueError(f"metadata batch of {len(batch)} bytes exceeds {MAX_BATCH_SIZE_BYTES}")
        return batch

    def _leader_append(self, batch: bytes, epoch: int) -> int:
        info = self.log.append_as_leader(batch, epoch)
        now = self._time()
        self._last_append_ms = now
        if self._unflushed_since_ms is None:
            self._unflushed_since_ms = now
        self._complete_parked(now, only_with_data=True)
        return info.last_offset

    def _append_data(self, values: list[bytes]) -> int:
        now = self._time()
        records = [RecordInput(None, value, timestamp=now) for value in values]
        return self._leader_append(
            self._build(records, self.quorum.epoch, False), self.quorum.epoch
        )

    def append_control(self, controls: list[tuple[str, dict[str, Any]]]) -> int:
        """Append one control batch as leader (LeaderChange, VotersRecord, ...)."""
        now = self._time()
        records = []
        for name, data in controls:
            key, value = encode_control_record(name, data)
            records.append(RecordInput(key, value, timestamp=now))
        epoch = self.quorum.epoch
        batch = self._build(records, epoch, True)
        last = self._leader_append(batch, epoch)
        self._scan_control(batch)
        role = self.quorum.role
        if isinstance(role, Leader):
            role.state.update_voters(self.voters.latest)
        return last

    # -- elections ----------------------------------------------------------------------------

    def _observe_leader(self, now_ms: int, epoch: int, leader_id: int) -> bool:
        """React to a peer's view of (epoch, leader); True if our role changed."""
        role = self.quorum.role
        if epoch > role.epoch:
            if leader_id >= 0 and leader_id != self.local.id:
                self._become_follower(now_ms, epoch, leader_id)
            else:
                self._become_unattached(now_ms, epoch)
            return True
        if epoch == role.epoch and leader_id >= 0 and leader_id != self.local.id:
            if isinstance(role, Leader | Resigned):
                raise AssertionError(f"epoch {epoch} has two leaders: {self.local.id}, {leader_id}")
            if isinstance(role, Prospective) and role.leader_id == leader_id:
                # We campaign because that leader stopped answering; hearing its name again
                # from a peer that has not timed out yet is no news.
                return False
            if not isinstance(role, Follower):
                self._become_follower(now_ms, epoch, leader_id)
                return True
        return False

    def _lost_leadership(self) -> None:
        self._parked.clear()
        self._last_sent_hw.clear()
        self._unflushed_since_ms = None
        self._begin_epoch_sent_ms.clear()
        if self.pending_change is not None:
            self._finish_change(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def _become_unattached(self, now_ms: int, epoch: int) -> None:
        was_leader = isinstance(self.quorum.role, Leader)
        self.quorum.to_unattached(epoch, now_ms + self._election_timeout())
        if was_leader:
            self._lost_leadership()

    def _become_follower(self, now_ms: int, epoch: int, leader_id: int) -> None:
        was_leader = isinstance(self.quorum.role, Leader)
        self.quorum.to_follower(epoch, leader_id, now_ms + self.config.fetch_timeout_ms)
        if was_leader:
            self._lost_leadership()

    def _start_prospective(self, now_ms: int) -> None:
        if not self.is_voter:
            return
        was_leader = isinstance(self.quorum.role, Leader)
        prospective = self.quorum.to_prospective(now_ms + self._election_timeout())
        if was_leader:
            self._lost_leadership()
        self._maybe_win_prospective(now_ms, prospective)

    def _become_leader(self, now_ms: int, role: Candidate) -> None:
        state = LeaderState(
            self.local,
            role.epoch,
            self.log.log_end_offset,
            self.voters.latest,
            now_ms,
            self.config.check_quorum_timeout_ms,
        )
        self.quorum.to_leader(state)
        voters = self.voters.latest
        controls: list[tuple[str, dict[str, Any]]] = []
        if self.voters.latest_offset < 0 and self.kraft_version >= 1 and voters.voters:
            # The first leader copies the bootstrap voter set into the log, so replicas that
            # were not formatted with it (new controllers, brokers) learn it by fetching.
            controls.append(("KRaftVersionRecord", {"kraft_version": self.kraft_version}))
            controls.append(("VotersRecord", voters.to_record()))
        controls.append(
            (
                "LeaderChangeMessage",
                {
                    "leader_id": self.local.id,
                    "voters": [
                        {"voter_id": k.id, "voter_directory_id": k.directory_id}
                        for k in voters.keys
                    ],
                    "granting_voters": [
                        {"voter_id": i, "voter_directory_id": ZERO_UUID}
                        for i in sorted(role.granted)
                    ],
                },
            )
        )
        self.append_control(controls)
        for voter in voters.voters:
            if voter.key.id != self.local.id:
                self._send_begin_epoch(now_ms, voter.key)

    def _send_begin_epoch(self, now_ms: int, key: ReplicaKey) -> None:
        self._begin_epoch_sent_ms[key.id] = now_ms
        body = rpc.begin_quorum_epoch_request(
            self.config.cluster_id, key.id, key.directory_id, self.local.id, self.quorum.epoch
        )
        self._send(now_ms, key.id, rpc.BEGIN_QUORUM_EPOCH, body)

    def resign(self, now_ms: int) -> list[rpc.Outbound]:
        """Step down as leader (graceful shutdown or removal): tell the voters to elect."""
        role = self.quorum.role
        if isinstance(role, Leader):
            self._resign(now_ms, role)
        return self._drain()

    def _resign(self, now_ms: int, role: Leader) -> None:
        progress = sorted(
            (p for p in role.state.voter_progress() if p.key.id != self.local.id),
            key=lambda p: -p.end_offset,
        )
        preferred = [(p.key.id, p.key.directory_id) for p in progress]
        self.quorum.to_resigned(now_ms + self._election_timeout())
        self._lost_leadership()
        body = rpc.end_quorum_epoch_request(
            self.config.cluster_id, self.local.id, role.epoch, preferred
        )
        for voter_id, _ in preferred:
            self._send(now_ms, voter_id, rpc.END_QUORUM_EPOCH, body)

    # -- dispatch -----------------------------------------------------------------------------

    def _handle_request(self, now_ms: int, request: rpc.InboundRequest) -> None:
        api = request.api_key
        cluster = request.body.get("cluster_id")
        if (
            cluster is not None
            and self.config.cluster_id is not None
            and cluster != self.config.cluster_id
        ):
            self._respond(request, {"error_code": int(ErrorCode.INCONSISTENT_CLUSTER_ID)})
            return
        if api == rpc.VOTE:
            self._handle_vote(now_ms, request)
        elif api in (rpc.BEGIN_QUORUM_EPOCH,):
            self._handle_begin_epoch(now_ms, request)
        elif api == rpc.END_QUORUM_EPOCH:
            self._handle_end_epoch(now_ms, request)
        elif api == rpc.FETCH:
            self._handle_fetch(now_ms, request)
        elif api == rpc.FETCH_SNAPSHOT:
            self._handle_fetch_snapshot(now_ms, request)
        elif api == rpc.DESCRIBE_QUORUM:
            self._handle_describe_quorum(now_ms, request)
        elif api in (rpc.ADD_RAFT_VOTER, rpc.REMOVE_RAFT_VOTER, rpc.UPDATE_RAFT_VOTER):
            self._handle_voter_change(now_ms, request)
        else:
            raise ValueError(f"api key {api} is not a KRaft request")

    def _handle_response(self, now_ms: int, response: rpc.InboundResponse, sent: _Inflight) -> None:
        if sent.api_key == rpc.VOTE:
            self._handle_vote_response(now_ms, response, sent)
        elif sent.api_key in (rpc.BEGIN_QUORUM_EPOCH, rpc.END_QUORUM_EPOCH):
            self._handle_epoch_response(now_ms, response)
        elif sent.api_key == rpc.FETCH:
            self._handle_fetch_response(now_ms, response, sent.epoch)
        elif sent.api_key == rpc.FETCH_SNAPSHOT:
            self._handle_fetch_snapshot_response(now_ms, response, sent.epoch)
