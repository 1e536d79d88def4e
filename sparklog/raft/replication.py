"""Pull replication of the metadata log: the Fetch RPC on both sides, and the leader's tick.

A mixin of :class:`~sparklog.raft.core.RaftReplica` (it shares the replica's state; see the
invariants there). Rules:

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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparklog.protocol.errors import ErrorCode
from sparklog.raft import rpc
from sparklog.raft.snapshot_sync import SnapshotMixin
from sparklog.raft.snapshots import SnapshotId
from sparklog.raft.state import Follower, Leader, QuorumState
from sparklog.raft.voters import ReplicaKey

if TYPE_CHECKING:
    from sparklog.raft.log import ReplicatedLog


class FetchMixin(SnapshotMixin):
    quorum: QuorumState
    log: ReplicatedLog
    _parked: dict[int, tuple[rpc.InboundRequest, int]]
    _last_sent_hw: dict[int, int]
    _unflushed_since_ms: int | None
    _last_append_ms: int
    _begin_epoch_sent_ms: dict[int, int]
    _retry_at_ms: int
    _bootstrap_ids: tuple[int, ...]

    # -- leader side --------------------------------------------------------------------------

    def _handle_fetch(self, now_ms: int, request: rpc.InboundRequest) -> None:
        body = self._fetch_body(now_ms, request, allow_park=True)
        if body is not None:
            self._respond(request, body)

    def _fetch_body(
        self, now_ms: int, request: rpc.InboundRequest, allow_park: bool
    ) -> Mapping[str, Any] | None:
        role = self.quorum.role
        p = rpc.partition_of(request.body)
        if p is None:
            return rpc.fetch_response(
                ErrorCode.INVALID_REQUEST, ErrorCode.NONE, -1, role.epoch, -1, -1, None
            )
        epoch = int(p.get("current_leader_epoch", -1))
        leader_id = self.quorum.leader_id
        error = ErrorCode.NONE
        if epoch < role.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        elif epoch > role.epoch:
            error = ErrorCode.UNKNOWN_LEADER_EPOCH
        elif not isinstance(role, Leader):
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        if error or not isinstance(role, Leader):
            return rpc.fetch_response(
                ErrorCode.NONE, error, leader_id, role.epoch, -1, self.log.log_start_offset, None
            )
        state = role.state
        hw = state.high_watermark if state.high_watermark is not None else -1
        replica = ReplicaKey(
            rpc.fetch_replica_id(request.body), rpc.directory_id(p.get("replica_directory_id"))
        )
        fetch_offset = int(p["fetch_offset"])
        last_fetched_epoch = int(p.get("last_fetched_epoch", -1))
        snapshot_id = self._snapshot_for_fetch(fetch_offset, last_fetched_epoch)
        if snapshot_id is not None:
            if replica.id >= 0:
                state.touch(replica, now_ms)
            return rpc.fetch_response(
                ErrorCode.NONE,
                ErrorCode.NONE,
                self.local.id,
                role.epoch,
                hw,
                self.log.log_start_offset,
                None,
                snapshot=(snapshot_id.end_offset, snapshot_id.epoch),
            )
        if fetch_offset > 0 or last_fetched_epoch > 0:
            end_epoch, end_offset = self.log.end_offset_for_epoch(last_fetched_epoch)
            if end_epoch != last_fetched_epoch or fetch_offset > end_offset:
                return rpc.fetch_response(
                    ErrorCode.NONE,
                    ErrorCode.NONE,
                    self.local.id,
                    role.epoch,
                    hw,
                    self.log.log_start_offset,
                    None,
                    (end_epoch, end_offset),
                )
        if replica.id >= 0 and state.update_replica(
            replica, fetch_offset, now_ms, self.log.log_end_offset
        ):
            self._on_leader_high_watermark(now_ms, state.high_watermark)
            hw = state.high_watermark if state.high_watermark is not None else -1
        max_bytes = min(int(p.get("partition_max_bytes", 1 << 20)), self.config.max_fetch_bytes)
        records = self.log.read(fetch_offset, max_bytes)
        max_wait = int(request.body.get("max_wait_ms", 0))
        if allow_park and not records and max_wait > 0 and self._last_sent_hw.get(replica.id) == hw:
            self._parked[replica.id] = (request, now_ms + max_wait)
            return None
        self._last_sent_hw[replica.id] = hw
        self._parked.pop(replica.id, None)
        return rpc.fetch_response(
            ErrorCode.NONE,
            ErrorCode.NONE,
            self.local.id,
            role.epoch,
            hw,
            self.log.log_start_offset,
            records or None,
        )

    def _complete_parked(self, now_ms: int, only_with_data: bool = False) -> None:
        for replica_id, (request, deadline) in list(self._parked.items()):
            if only_with_data and deadline > now_ms:
                p = rpc.partition_of(request.body)
                if p is not None and int(p["fetch_offset"]) >= self.log.log_end_offset:
                    continue
            del self._parked[replica_id]
            body = self._fetch_body(now_ms, request, allow_park=False)
            if body is not None:
                self._respond(request, body)

    def _on_leader_high_watermark(self, now_ms: int, hw: int | None) -> None:
        if hw is None:
            return
        self._advance_high_watermark(hw)
        # Followers learn the new HW now rather than at the end of their long poll.
        self._complete_parked(now_ms)
        self._on_commit_advanced(now_ms)

    def _poll_leader(self, now_ms: int, role: Leader) -> None:
        state = role.state
        if self._unflushed_since_ms is not None and (
            now_ms >= self._unflushed_since_ms + self.config.append_linger_ms
        ):
            self.log.flush()
            self._unflushed_since_ms = None
        if state.update_local(self.log.flushed_offset):
            self._on_leader_high_watermark(now_ms, state.high_watermark)
        if not isinstance(self.quorum.role, Leader):
            return
        if state.quorum_lost(now_ms):
            self._resign(now_ms, role)
            return
        for replica_id, (_, deadline) in list(self._parked.items()):
            if deadline <= now_ms:
                self._complete_parked_one(now_ms, replica_id)
        for voter in state.voters.voters:
            key = voter.key
            if key.id == self.local.id or key.id in state.acknowledged:
                continue
            sent = self._begin_epoch_sent_ms.get(key.id, -1)
            if now_ms - sent >= self.config.request_timeout_ms:
                self._send_begin_epoch(now_ms, key)
        no_op = self.config.no_op_record
        if no_op is not None and now_ms - self._last_append_ms >= self.config.idle_interval_ms:
            self._append_data([no_op])
        self._check_pending_change(now_ms)

    def _complete_parked_one(self, now_ms: int, replica_id: int) -> None:
        request, _ = self._parked.pop(replica_id)
        body = self._fetch_body(now_ms, request, allow_park=False)
        if body is not None:
            self._respond(request, body)

    # -- follower side ------------------------------------------------------------------------

    def _fetch_target(self, now_ms: int) -> int:
        role = self.quorum.role
        if isinstance(role, Follower) and now_ms < role.fetch_deadline_ms and not role.leader_lost:
            return role.leader_id
        candidates = sorted(self.voters.latest.ids - {self.local.id}) or [
            i for i in self._bootstrap_ids if i != self.local.id
        ]
        if not candidates:
            return -1
        return candidates[self._random.randrange(len(candidates))]

    def _maybe_fetch(self, now_ms: int) -> None:
        if now_ms < self._retry_at_ms or any(
            i.api_key in (rpc.FETCH, rpc.FETCH_SNAPSHOT) for i in self._inflight.values()
        ):
            return
        download = self._current_download()
        if download is not None:
            body = self._fetch_snapshot_body(download)
            self._send(now_ms, download.leader_id, rpc.FETCH_SNAPSHOT, body)
            return
        target = self._fetch_target(now_ms)
        if target < 0:
            return
        body = rpc.fetch_request(
            self.config.cluster_id,
            self.local.id,
            self.local.directory_id,
            self.quorum.epoch,
            self.log.log_end_offset,
            self.log.last_epoch,
            self.config.fetch_max_wait_ms,
            self.config.max_fetch_bytes,
        )
        self._send(now_ms, target, rpc.FETCH, body)

    def _handle_fetch_response(
        self, now_ms: int, response: rpc.InboundResponse, sent_epoch: int
    ) -> None:
        p = self._usable_partition(now_ms, response.body, rpc.fetch_partition(response.body))
        if p is None:
            return
        role = self.quorum.role
        if p["error_code"] or not isinstance(role, Follower):
            self._retry_at_ms = now_ms + self.config.retry_backoff_ms
            return
        if role.leader_id != response.source_id or role.epoch != sent_epoch:
            return
        role.has_fetched = True
        role.leader_lost = False
        role.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
        diverging = p.get("diverging_epoch") or {}
        if int(diverging.get("epoch", -1)) >= 0 and int(diverging.get("end_offset", -1)) >= 0:
            _, local_end = self.log.end_offset_for_epoch(int(diverging["epoch"]))
            self._truncate(min(local_end, int(diverging["end_offset"])))
            return
        snapshot = p.get("snapshot_id") or {}
        if int(snapshot.get("end_offset", -1)) >= 0 and int(snapshot.get("epoch", -1)) >= 0:
            self._start_download(SnapshotId(int(snapshot["end_offset"]), int(snapshot["epoch"])))
            return
        records = p.get("records")
        if records:
            data = bytes(records)
            infos = self.log.append_as_follower(data) if self._starts_at_end(data) else []
            if infos:
                # Flushed before the next Fetch, so the offset it reports is durable.
                self.log.flush()
                self._scan_control(data)
        leader_hw = int(p.get("high_watermark", -1))
        if leader_hw >= 0:
            before = self.high_watermark
            self._advance_high_watermark(min(leader_hw, self.log.log_end_offset))
            if self.high_watermark > before:
                self._on_commit_advanced(now_ms)

    def _starts_at_end(self, data: bytes) -> bool:
        from sparklog.protocol.records import iter_batches

        for _, header in iter_batches(data):
            return header.base_offset == self.log.log_end_offset
        return False

    # -- read-only RPCs -----------------------------------------------------------------------

    def _handle_describe_quorum(self, now_ms: int, request: rpc.InboundRequest) -> None:
        role = self.quorum.role
        if not isinstance(role, Leader):
            self._respond(
                request,
                rpc.describe_quorum_response(
                    ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    self.quorum.leader_id,
                    role.epoch,
                    -1,
                    [],
                    [],
                    "not the leader",
                ),
            )
            return
        state = role.state

        def describe(progress: Any) -> dict[str, Any]:
            # As Kafka does, the leader reports itself as fetched and caught up right now.
            is_local = progress.key.id == self.local.id
            return rpc.replica_state(
                progress.key.id,
                progress.key.directory_id,
                progress.end_offset,
                now_ms if is_local else progress.last_fetch_ms,
                now_ms if is_local else progress.last_caught_up_ms,
            )

        voters = [describe(p) for p in state.voter_progress()]
        observers = [describe(p) for p in state.observers()]
        self._respond(
            request,
            rpc.describe_quorum_response(
                ErrorCode.NONE,
                self.local.id,
                role.epoch,
                self.high_watermark,
                voters,
                observers,
            ),
        )
