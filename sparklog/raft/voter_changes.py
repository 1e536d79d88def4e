"""Dynamic voters on the leader (KIP-853): AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter.

A mixin of :class:`~sparklog.raft.core.RaftReplica`; it also declares the replica state the
other mixins share, so each file type-checks on its own. Rules, with the errors Kafka returns:

- Only the leader changes the voter set (else ``NOT_LEADER_OR_FOLLOWER``), only with
  ``kraft.version`` >= 1 (else ``UNSUPPORTED_VERSION``), and one change at a time: while a
  change is pending, the latest voter set is uncommitted, or this epoch has not committed an
  entry yet, a new one gets ``REQUEST_TIMED_OUT`` (Raft's single-server-change rule, with the
  fix that a new leader first commits in its epoch).
- Add: the id must not be a voter (``DUPLICATE_VOTER``); the new voter must be an observer
  that has caught up to the HW before ``timeout_ms`` (else ``REQUEST_TIMED_OUT``); then one
  ``VotersRecord`` with the new set is appended and the answer waits for its commit (unless
  ``ack_when_committed`` is false).
- Remove: the exact (id, directory id) must be a voter (``VOTER_NOT_FOUND``). If the leader
  removes itself it keeps leading and replicating but stops counting itself, and resigns once
  the record is committed.
- Update: the voter must exist (``VOTER_NOT_FOUND``) and support the finalized kraft.version
  (``INVALID_REQUEST``); endpoints and the supported range are replaced.
"""

from __future__ import annotations

import random as random_module
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparklog.protocol.errors import ErrorCode
from sparklog.raft import rpc
from sparklog.raft.state import Candidate, Leader, QuorumState
from sparklog.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet, VoterSetHistory

if TYPE_CHECKING:
    from sparklog.raft.core import RaftConfig, _Inflight


@dataclass(slots=True)
class PendingChange:
    request: rpc.InboundRequest
    node: VoterNode
    deadline_ms: int
    ack_when_committed: bool = True
    record_offset: int | None = None


class VoterChangeMixin:
    local: ReplicaKey
    config: RaftConfig
    quorum: QuorumState
    voters: VoterSetHistory
    pending_change: PendingChange | None
    _random: random_module.Random
    _inflight: dict[int, _Inflight]

    # Provided by RaftReplica and the other mixins; declared for the type checker only, so
    # no stub can shadow a real method at run time.
    if TYPE_CHECKING:

        @property
        def high_watermark(self) -> int: ...

        @property
        def is_voter(self) -> bool: ...

        @property
        def kraft_version(self) -> int: ...

        def _respond(self, request: rpc.InboundRequest, body: rpc.Body) -> None: ...

        def _send(
            self,
            now_ms: int,
            destination: int,
            api_key: int,
            body: rpc.Body,
            pre_vote: bool = False,
        ) -> None: ...

        def _observe_leader(self, now_ms: int, epoch: int, leader_id: int) -> bool: ...

        def _advance_high_watermark(self, offset: int) -> None: ...

        def _truncate(self, offset: int) -> None: ...

        def _scan_control(self, data: bytes) -> None: ...

        def _append_data(self, values: list[bytes]) -> int: ...

        def append_control(self, controls: list[tuple[str, dict[str, Any]]]) -> int: ...

        def _resign(self, now_ms: int, role: Leader) -> None: ...

        def _send_begin_epoch(self, now_ms: int, key: ReplicaKey) -> None: ...

        def _has_inflight(self, destination: int, api_key: int) -> bool: ...

        def _election_timeout(self) -> int: ...

        def _become_follower(self, now_ms: int, epoch: int, leader_id: int) -> None: ...

        def _become_unattached(self, now_ms: int, epoch: int) -> None: ...

        def _become_leader(self, now_ms: int, role: Candidate) -> None: ...

    # -- voter changes ------------------------------------------------------------------------

    def _change_response(self, api_key: int, error: ErrorCode, message: str | None) -> rpc.Body:
        if api_key == rpc.UPDATE_RAFT_VOTER:
            return rpc.update_voter_response(error, self.quorum.leader_id, self.quorum.epoch)
        return rpc.voter_change_response(error, message)

    def _handle_voter_change(self, now_ms: int, request: rpc.InboundRequest) -> None:
        error, message = self._start_change(now_ms, request)
        if error is not None:
            self._respond(request, self._change_response(request.api_key, error, message))
        else:
            self._check_pending_change(now_ms)

    def _start_change(
        self, now_ms: int, request: rpc.InboundRequest
    ) -> tuple[ErrorCode | None, str | None]:
        role = self.quorum.role
        body = request.body
        if not isinstance(role, Leader):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, "this replica is not the leader"
        if self.kraft_version < 1:
            return ErrorCode.UNSUPPORTED_VERSION, "kraft.version 0 has a static voter set"
        hw = role.state.high_watermark
        if self.pending_change is not None or hw is None or self.voters.latest_offset >= hw:
            return ErrorCode.REQUEST_TIMED_OUT, "another voter change is in progress"
        key = ReplicaKey(int(body["voter_id"]), rpc.directory_id(body.get("voter_directory_id")))
        latest = self.voters.latest
        endpoints = tuple(
            Endpoint(str(e["name"]), str(e["host"]), int(e["port"]))
            for e in body.get("listeners") or ()
        )
        if request.api_key == rpc.ADD_RAFT_VOTER:
            if key.id in latest.ids:
                return ErrorCode.DUPLICATE_VOTER, f"voter {key.id} is already in the voter set"
            timeout = int(body.get("timeout_ms", self.config.request_timeout_ms))
            self.pending_change = PendingChange(
                request,
                VoterNode(key, endpoints),
                now_ms + timeout,
                bool(body.get("ack_when_committed", True)),
            )
            return None, None
        node = latest.node(key.id)
        if node is None or node.key.directory_id != key.directory_id:
            return ErrorCode.VOTER_NOT_FOUND, f"{key} is not in the voter set"
        if request.api_key == rpc.REMOVE_RAFT_VOTER:
            new_set = latest.without_voter(key)
            updated = node
        else:
            feature = body.get("kraft_version_feature") or {}
            low = int(feature.get("min_supported_version", 0))
            high = int(feature.get("max_supported_version", 0))
            if not low <= self.kraft_version <= high:
                return ErrorCode.INVALID_REQUEST, "the voter does not support kraft.version"
            updated = VoterNode(key, endpoints or node.endpoints, low, high)
            new_set = latest.with_updated(updated)
        deadline = now_ms + self.config.request_timeout_ms
        self.pending_change = PendingChange(request, updated, deadline)
        self._append_voters(new_set)
        return None, None

    def _append_voters(self, voters: VoterSet) -> None:
        assert self.pending_change is not None
        last = self.append_control([("VotersRecord", voters.to_record())])
        self.pending_change.record_offset = last

    def _finish_change(self, error: ErrorCode, message: str | None = None) -> None:
        pending = self.pending_change
        if pending is None:
            return
        self.pending_change = None
        if pending.request is not None:
            self._respond(
                pending.request, self._change_response(pending.request.api_key, error, message)
            )

    def _check_pending_change(self, now_ms: int) -> None:
        role = self.quorum.role
        if not isinstance(role, Leader):
            return
        pending = self.pending_change
        hw = role.state.high_watermark
        if pending is not None and pending.record_offset is None:
            progress = role.state.replicas.get(pending.node.key.id)
            caught_up = (
                progress is not None
                and progress.key.matches(pending.node.key)
                and hw is not None
                and progress.end_offset >= hw
                and now_ms - progress.last_fetch_ms <= self.config.fetch_timeout_ms
            )
            if caught_up:
                self._append_voters(self.voters.latest.with_voter(pending.node))
                if not pending.ack_when_committed:
                    self._finish_change(ErrorCode.NONE)
        pending = self.pending_change
        offset = pending.record_offset if pending is not None else None
        if offset is not None and hw is not None and hw > offset:
            self._finish_change(ErrorCode.NONE)
        if self.pending_change is not None and now_ms >= self.pending_change.deadline_ms:
            self._finish_change(ErrorCode.REQUEST_TIMED_OUT, "the voter change did not complete")
        if (
            not role.state.counts_itself
            and hw is not None
            and self.voters.latest_offset < hw
            and isinstance(self.quorum.role, Leader)
        ):
            # Our removal is committed: hand leadership to the remaining voters.
            self._resign(now_ms, role)

    def _on_commit_advanced(self, now_ms: int) -> None:
        self._check_pending_change(now_ms)
