"""Pull replication of the metadata log: the Fetch RPC on both sides, and the leader's tick.

Two components of :class:`~sparklog.raft.core.RaftReplica` (see the invariants there), each
given the shared :class:`~sparklog.raft.replica_state.ReplicaState` and
:class:`~sparklog.raft.replica_state.Messenger`:

- :class:`LeaderReplication` owns the leader's write path (:meth:`LeaderReplication.append_data`,
  :meth:`LeaderReplication.append_control`), the parked (long-polling) Fetches, the flush linger
  and the BeginQuorumEpoch re-sends; it asks :class:`~sparklog.raft.snapshot_sync.SnapshotSync`
  which snapshot a fetcher must load, ticks :class:`~sparklog.raft.voter_changes.VoterChanges`
  when the HW advances and on every poll, and calls ``resign`` when check-quorum fails.
  :meth:`LeaderReplication.stop_leading` forgets all of it when leadership is lost.
- :class:`FollowerFetcher` sends Fetch (or FetchSnapshot for the download in progress) and
  handles their answers; ``observe_leader`` (the elections') moves the replica to the epoch and
  leader an answer names, ``on_commit_advanced`` is told when the HW moves.

Rules:

- Leader side: a Fetch names the follower's ``fetch_offset`` and ``last_fetched_epoch``. If
  the leader's log does not hold that epoch ending at or after that offset, the follower gets
  ``diverging_epoch`` (the largest epoch <= its epoch and where it ends) and no records, and
  its progress is not updated. Otherwise its progress becomes ``fetch_offset`` (which counts
  toward the HW if it is a voter) and it gets whole batches from there. Before any of that, a
  follower below the log start (or behind the snapshot there) gets ``snapshot_id`` instead.
  A Fetch with nothing to return waits ("long poll") until data or a new HW arrives or
  ``max_wait_ms`` passes.
- Follower side: a response from the leader of our epoch either truncates (diverging), names
  a snapshot to download (see :mod:`~sparklog.raft.snapshot_sync`), or appends at our log end
  offset; the follower flushes before its next Fetch, and its HW
  becomes ``min(leader HW, log end offset)`` when that is higher.
- Leader tick: flush after ``append_linger_ms`` (only flushed entries count for the leader),
  check-quorum, re-send BeginQuorumEpoch to voters that have not acknowledged, the idle no-op.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    DescribeQuorumResponseTopicsPartitionsCurrentVoters,
    FetchResponseResponsesPartitions,
    FetchSnapshotResponseTopicsPartitions,
)
from sparklog.protocol.record_codec import RecordInput
from sparklog.protocol.records import iter_batches
from sparklog.raft import rpc
from sparklog.raft.control_records import encode_control_record
from sparklog.raft.leader_state import ReplicaProgress
from sparklog.raft.replica_state import Messenger, ReplicaState
from sparklog.raft.snapshot_sync import SnapshotSync
from sparklog.raft.snapshots import SnapshotId
from sparklog.raft.state import Follower, Leader
from sparklog.raft.voter_changes import VoterChanges
from sparklog.raft.voters import ReplicaKey

_log = logging.getLogger(__name__)
_CLUSTER_ID_LOG_INTERVAL_MS = 60_000

# The partition of a Fetch or a FetchSnapshot answer (both carry current_leader).
_Answer = TypeVar(
    "_Answer", FetchResponseResponsesPartitions, FetchSnapshotResponseTopicsPartitions
)


class LeaderReplication:
    """The leader's side of Fetch, its appends, flushes and tick (a no-op on other roles'
    state: the replica calls it only while leading, and :meth:`stop_leading` on losing it)."""

    def __init__(
        self,
        state: ReplicaState,
        messenger: Messenger,
        snapshot_sync: SnapshotSync,
        voter_changes: VoterChanges,
        resign: Callable[[int, Leader], None],
    ) -> None:
        self._state = state
        self._messenger = messenger
        self._snapshot_sync = snapshot_sync
        self._voter_changes = voter_changes
        self._resign = resign
        # Fetches waiting for data or a new HW: replica id -> (request, answer-by deadline).
        self._parked: dict[int, tuple[rpc.InboundRequest, int]] = {}
        self._last_sent_hw: dict[int, int] = {}
        self._unflushed_since_ms: int | None = None
        self._last_append_ms = 0
        self._begin_epoch_sent_ms: dict[int, int] = {}

    def stop_leading(self) -> None:
        self._parked.clear()
        self._last_sent_hw.clear()
        self._unflushed_since_ms = None
        self._begin_epoch_sent_ms.clear()

    def deadlines(self) -> list[int]:
        """When the leader's tick has work: parked fetches, the flush linger, the idle no-op."""
        config = self._state.config
        deadlines = [deadline for _, deadline in self._parked.values()]
        if self._unflushed_since_ms is not None:
            deadlines.append(self._unflushed_since_ms + config.append_linger_ms)
        if config.no_op_record is not None:
            deadlines.append(self._last_append_ms + config.idle_interval_ms)
        return deadlines

    # -- appending ----------------------------------------------------------------------------

    def _leader_append(self, batch: bytes, epoch: int) -> int:
        info = self._state.log.append_as_leader(batch, epoch)
        now = self._state.time()
        self._last_append_ms = now
        if self._unflushed_since_ms is None:
            self._unflushed_since_ms = now
        self._complete_parked(now, only_with_data=True)
        return info.last_offset

    def append_data(self, values: list[bytes]) -> int:
        """Append one batch of ``values`` in the current epoch; returns its last offset."""
        state = self._state
        now = state.time()
        records = [RecordInput(None, value, timestamp=now) for value in values]
        epoch = state.quorum.epoch
        return self._leader_append(state.build(records, epoch, False), epoch)

    def append_control(self, controls: list[tuple[str, dict[str, Any]]]) -> int:
        """Append one control batch as leader (LeaderChange, VotersRecord, ...)."""
        state = self._state
        now = state.time()
        records = []
        for name, data in controls:
            key, value = encode_control_record(name, data)
            records.append(RecordInput(key, value, timestamp=now))
        epoch = state.quorum.epoch
        batch = state.build(records, epoch, True)
        last = self._leader_append(batch, epoch)
        state.scan_control(batch)
        role = state.quorum.role
        if isinstance(role, Leader):
            role.state.update_voters(state.voters.latest)
        return last

    # -- Fetch --------------------------------------------------------------------------------

    def handle_fetch(self, now_ms: int, request: rpc.InboundRequest) -> None:
        body = self._fetch_body(now_ms, request, allow_park=True)
        if body is not None:
            self._messenger.respond(request, body)

    def _fetch_body(
        self, now_ms: int, request: rpc.InboundRequest, allow_park: bool
    ) -> Mapping[str, Any] | None:
        state = self._state
        log = state.log
        role = state.quorum.role
        p = rpc.fetch_request_partition(request.body)
        if p is None:
            return rpc.fetch_response(
                ErrorCode.INVALID_REQUEST, ErrorCode.NONE, -1, role.epoch, -1, -1, None
            )
        epoch = p["current_leader_epoch"]
        leader_id = state.quorum.leader_id
        error = ErrorCode.NONE
        if epoch < role.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        elif epoch > role.epoch:
            error = ErrorCode.UNKNOWN_LEADER_EPOCH
        elif not isinstance(role, Leader):
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        if error or not isinstance(role, Leader):
            return rpc.fetch_response(
                ErrorCode.NONE, error, leader_id, role.epoch, -1, log.log_start_offset, None
            )
        leader = role.state
        hw = leader.high_watermark if leader.high_watermark is not None else -1
        replica = ReplicaKey(
            rpc.fetch_replica_id(request.body), rpc.directory_id(p["replica_directory_id"])
        )
        fetch_offset = p["fetch_offset"]
        last_fetched_epoch = p["last_fetched_epoch"]
        snapshot_id = self._snapshot_sync.snapshot_for_fetch(fetch_offset, last_fetched_epoch)
        if snapshot_id is not None:
            if replica.id >= 0:
                leader.touch(replica, now_ms)
            return rpc.fetch_response(
                ErrorCode.NONE,
                ErrorCode.NONE,
                state.local.id,
                role.epoch,
                hw,
                log.log_start_offset,
                None,
                snapshot=(snapshot_id.end_offset, snapshot_id.epoch),
            )
        if fetch_offset > 0 or last_fetched_epoch > 0:
            end_epoch, end_offset = log.end_offset_for_epoch(last_fetched_epoch)
            if end_epoch != last_fetched_epoch or fetch_offset > end_offset:
                return rpc.fetch_response(
                    ErrorCode.NONE,
                    ErrorCode.NONE,
                    state.local.id,
                    role.epoch,
                    hw,
                    log.log_start_offset,
                    None,
                    (end_epoch, end_offset),
                )
        if replica.id >= 0 and leader.update_replica(
            replica, fetch_offset, now_ms, log.log_end_offset
        ):
            self._on_leader_high_watermark(now_ms, leader.high_watermark)
            hw = leader.high_watermark if leader.high_watermark is not None else -1
        max_bytes = min(p["partition_max_bytes"], state.config.max_fetch_bytes)
        records = log.read(fetch_offset, max_bytes)
        max_wait = int(request.body.get("max_wait_ms", 0))
        if allow_park and not records and max_wait > 0 and self._last_sent_hw.get(replica.id) == hw:
            self._parked[replica.id] = (request, now_ms + max_wait)
            return None
        self._last_sent_hw[replica.id] = hw
        self._parked.pop(replica.id, None)
        return rpc.fetch_response(
            ErrorCode.NONE,
            ErrorCode.NONE,
            state.local.id,
            role.epoch,
            hw,
            log.log_start_offset,
            records or None,
        )

    def _complete_parked(self, now_ms: int, only_with_data: bool = False) -> None:
        for replica_id, (request, deadline) in list(self._parked.items()):
            if only_with_data and deadline > now_ms:
                p = rpc.fetch_request_partition(request.body)
                if p is not None and p["fetch_offset"] >= self._state.log.log_end_offset:
                    continue
            del self._parked[replica_id]
            body = self._fetch_body(now_ms, request, allow_park=False)
            if body is not None:
                self._messenger.respond(request, body)

    def _on_leader_high_watermark(self, now_ms: int, hw: int | None) -> None:
        if hw is None:
            return
        self._state.advance_high_watermark(hw)
        # Followers learn the new HW now rather than at the end of their long poll.
        self._complete_parked(now_ms)
        self._voter_changes.check_pending_change(now_ms)

    # -- the leader's tick --------------------------------------------------------------------

    def poll(self, now_ms: int, role: Leader) -> None:
        state = self._state
        config = state.config
        leader = role.state
        if self._unflushed_since_ms is not None and (
            now_ms >= self._unflushed_since_ms + config.append_linger_ms
        ):
            state.log.flush()
            self._unflushed_since_ms = None
        if leader.update_local(state.log.flushed_offset):
            self._on_leader_high_watermark(now_ms, leader.high_watermark)
        if not isinstance(state.quorum.role, Leader):
            return
        if leader.quorum_lost(now_ms):
            self._resign(now_ms, role)
            return
        for replica_id, (_, deadline) in list(self._parked.items()):
            if deadline <= now_ms:
                self._complete_parked_one(now_ms, replica_id)
        for voter in leader.voters.voters:
            key = voter.key
            if key.id == state.local.id or key.id in leader.acknowledged:
                continue
            sent = self._begin_epoch_sent_ms.get(key.id, -1)
            if now_ms - sent >= config.request_timeout_ms:
                self.send_begin_epoch(now_ms, key)
        no_op = config.no_op_record
        if no_op is not None and now_ms - self._last_append_ms >= config.idle_interval_ms:
            self.append_data([no_op])
        self._voter_changes.check_pending_change(now_ms)

    def _complete_parked_one(self, now_ms: int, replica_id: int) -> None:
        request, _ = self._parked.pop(replica_id)
        body = self._fetch_body(now_ms, request, allow_park=False)
        if body is not None:
            self._messenger.respond(request, body)

    def send_begin_epoch(self, now_ms: int, key: ReplicaKey) -> None:
        state = self._state
        self._begin_epoch_sent_ms[key.id] = now_ms
        body = rpc.begin_quorum_epoch_request(
            state.config.cluster_id, key.id, key.directory_id, state.local.id, state.quorum.epoch
        )
        self._messenger.send(now_ms, key.id, rpc.BEGIN_QUORUM_EPOCH, body)

    # -- read-only RPCs -----------------------------------------------------------------------

    def handle_describe_quorum(self, now_ms: int, request: rpc.InboundRequest) -> None:
        state = self._state
        role = state.quorum.role
        if not isinstance(role, Leader):
            self._messenger.respond(
                request,
                rpc.describe_quorum_response(
                    ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    state.quorum.leader_id,
                    role.epoch,
                    -1,
                    [],
                    [],
                    "not the leader",
                ),
            )
            return
        leader = role.state

        def describe(
            progress: ReplicaProgress,
        ) -> DescribeQuorumResponseTopicsPartitionsCurrentVoters:
            # As Kafka does, the leader reports itself as fetched and caught up right now.
            is_local = progress.key.id == state.local.id
            return rpc.replica_state(
                progress.key.id,
                progress.key.directory_id,
                progress.end_offset,
                now_ms if is_local else progress.last_fetch_ms,
                now_ms if is_local else progress.last_caught_up_ms,
            )

        voters = [describe(p) for p in leader.voter_progress()]
        observers = [describe(p) for p in leader.observers()]
        self._messenger.respond(
            request,
            rpc.describe_quorum_response(
                ErrorCode.NONE,
                state.local.id,
                role.epoch,
                state.high_watermark,
                voters,
                observers,
            ),
        )


class FollowerFetcher:
    """The follower's (and observer's) Fetch and FetchSnapshot requests and their answers."""

    def __init__(
        self,
        state: ReplicaState,
        messenger: Messenger,
        snapshot_sync: SnapshotSync,
        observe_leader: Callable[[int, int, int], bool],
        on_commit_advanced: Callable[[int], None],
    ) -> None:
        self._state = state
        self._messenger = messenger
        self._snapshot_sync = snapshot_sync
        self._observe_leader = observe_leader
        self._on_commit_advanced = on_commit_advanced
        # When a leader last answered INCONSISTENT_CLUSTER_ID was logged (None: never).
        self._cluster_id_rejected_logged_ms: int | None = None

    def _fetch_target(self, now_ms: int) -> int:
        state = self._state
        role = state.quorum.role
        if isinstance(role, Follower) and now_ms < role.fetch_deadline_ms and not role.leader_lost:
            return role.leader_id
        candidates = sorted(state.voters.latest.ids - {state.local.id}) or [
            i for i in state.bootstrap_ids if i != state.local.id
        ]
        if not candidates:
            return -1
        return candidates[state.random.randrange(len(candidates))]

    def maybe_fetch(self, now_ms: int) -> None:
        """Send the next Fetch (or FetchSnapshot) unless one is in flight or backing off."""
        state = self._state
        if now_ms < state.retry_at_ms or self._messenger.fetching():
            return
        download = self._snapshot_sync.current_download()
        if download is not None:
            body = self._snapshot_sync.fetch_snapshot_body(download)
            self._messenger.send(now_ms, download.leader_id, rpc.FETCH_SNAPSHOT, body)
            return
        target = self._fetch_target(now_ms)
        if target < 0:
            return
        config = state.config
        body = rpc.fetch_request(
            config.cluster_id,
            state.local.id,
            state.local.directory_id,
            state.quorum.epoch,
            state.log.log_end_offset,
            state.log.last_epoch,
            config.fetch_max_wait_ms,
            config.max_fetch_bytes,
        )
        self._messenger.send(now_ms, target, rpc.FETCH, body)

    def handle_fetch_response(
        self, now_ms: int, response: rpc.InboundResponse, sent_epoch: int
    ) -> None:
        state = self._state
        log = state.log
        p = self._usable_partition(now_ms, response.body, rpc.fetch_partition(response.body))
        if p is None:
            return
        role = state.quorum.role
        if p["error_code"] or not isinstance(role, Follower):
            state.retry_at_ms = now_ms + state.config.retry_backoff_ms
            return
        if role.leader_id != response.source_id or role.epoch != sent_epoch:
            return
        role.has_fetched = True
        role.leader_lost = False
        role.fetch_deadline_ms = now_ms + state.config.fetch_timeout_ms
        diverging = p.get("diverging_epoch") or {}
        if int(diverging.get("epoch", -1)) >= 0 and int(diverging.get("end_offset", -1)) >= 0:
            _, local_end = log.end_offset_for_epoch(int(diverging["epoch"]))
            state.truncate(min(local_end, int(diverging["end_offset"])))
            return
        snapshot = p.get("snapshot_id") or {}
        if int(snapshot.get("end_offset", -1)) >= 0 and int(snapshot.get("epoch", -1)) >= 0:
            self._snapshot_sync.start_download(
                SnapshotId(int(snapshot["end_offset"]), int(snapshot["epoch"]))
            )
            return
        # decoded, a memoryview; built by rpc.fetch_response (the simulator), bytes
        records = cast("bytes | memoryview | None", p.get("records"))
        if records:
            data = bytes(records)
            infos = log.append_as_follower(data) if self._starts_at_end(data) else []
            if infos:
                # Flushed before the next Fetch, so the offset it reports is durable.
                log.flush()
                state.scan_control(data)
        leader_hw = int(p.get("high_watermark", -1))
        if leader_hw >= 0:
            before = state.high_watermark
            state.advance_high_watermark(min(leader_hw, log.log_end_offset))
            if state.high_watermark > before:
                self._on_commit_advanced(now_ms)

    def _starts_at_end(self, data: bytes) -> bool:
        for _, header in iter_batches(data):
            return header.base_offset == self._state.log.log_end_offset
        return False

    def handle_fetch_snapshot_response(
        self, now_ms: int, response: rpc.InboundResponse, sent_epoch: int
    ) -> None:
        p = self._usable_partition(
            now_ms, response.body, rpc.fetch_snapshot_response_partition(response.body)
        )
        if p is not None:
            self._snapshot_sync.receive_chunk(now_ms, response.source_id, sent_epoch, p)

    def _usable_partition(self, now_ms: int, body: rpc.Body, p: _Answer | None) -> _Answer | None:
        """The partition of a Fetch or FetchSnapshot response when it is worth reading on.

        None after a top-level error or a missing partition (the next request waits out the
        retry backoff), and when the response's current leader moved this replica to another
        epoch or leader (what was asked of the old one no longer applies).
        """
        if body.get("error_code", 0) or p is None:
            if body.get("error_code", 0) == ErrorCode.INCONSISTENT_CLUSTER_ID:
                self._log_cluster_id_rejected(now_ms)
            self._state.retry_at_ms = now_ms + self._state.config.retry_backoff_ms
            return None
        leader = p.get("current_leader") or {}
        if self._observe_leader(
            now_ms, int(leader.get("leader_epoch", -1)), int(leader.get("leader_id", -1))
        ):
            return None
        return p

    def _log_cluster_id_rejected(self, now_ms: int) -> None:
        """Say why this node never catches up: it was formatted for another cluster. Without
        this, a broker formatted with the wrong cluster id waits to be unfenced forever and
        its log never names the cause (issue 19). Logged at once, then once a minute."""
        last = self._cluster_id_rejected_logged_ms
        if last is not None and now_ms - last < _CLUSTER_ID_LOG_INTERVAL_MS:
            return
        self._cluster_id_rejected_logged_ms = now_ms
        _log.error(
            "The controller quorum rejects node %d's cluster id %s (INCONSISTENT_CLUSTER_ID): "
            "its metadata log directory was formatted for another cluster. Format this node "
            "again with the quorum's cluster id (sparklog storage format --cluster-id <id> "
            "--config <server.properties>), or point controller.quorum.bootstrap.servers at "
            "its own cluster. It cannot join until then.",
            self._state.local.id,
            self._state.config.cluster_id,
        )
