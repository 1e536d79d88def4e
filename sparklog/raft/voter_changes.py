"""Dynamic voters on the leader (KIP-853): AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter.

:class:`VoterChanges`, a component of :class:`~sparklog.raft.core.RaftReplica`. It is given the
shared :class:`~sparklog.raft.replica_state.ReplicaState`, the
:class:`~sparklog.raft.replica_state.Messenger` to answer with, and two leader actions: append a
control batch and resign. It owns the pending change; the replica ticks it
(:meth:`VoterChanges.check_pending_change`) on every leader poll and whenever the HW advances,
and aborts it (:meth:`VoterChanges.finish_change`) when leadership is lost. Rules, with the
errors Kafka returns:

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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    AddRaftVoterRequest,
    RemoveRaftVoterRequest,
    UpdateRaftVoterRequest,
)
from sparklog.raft import rpc
from sparklog.raft.replica_state import Messenger, ReplicaState
from sparklog.raft.state import Leader
from sparklog.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet

# Appends one control batch as leader: [(record name, record data)] -> last offset.
AppendControl = Callable[[list[tuple[str, dict[str, Any]]]], int]


@dataclass(slots=True)
class PendingChange:
    request: rpc.InboundRequest
    node: VoterNode
    deadline_ms: int
    ack_when_committed: bool = True
    record_offset: int | None = None


class VoterChanges:
    """AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter on the leader, one change at a time."""

    def __init__(
        self,
        state: ReplicaState,
        messenger: Messenger,
        append_control: AppendControl,
        resign: Callable[[int, Leader], None],
    ) -> None:
        self._state = state
        self._messenger = messenger
        self._append_control = append_control
        self._resign = resign
        self.pending: PendingChange | None = None

    def _change_response(self, api_key: int, error: ErrorCode, message: str | None) -> rpc.Body:
        quorum = self._state.quorum
        if api_key == rpc.UPDATE_RAFT_VOTER:
            return rpc.update_voter_response(error, quorum.leader_id, quorum.epoch)
        return rpc.voter_change_response(error, message)

    def handle_voter_change(self, now_ms: int, request: rpc.InboundRequest) -> None:
        error, message = self._start_change(now_ms, request)
        if error is not None:
            self._messenger.respond(request, self._change_response(request.api_key, error, message))
        else:
            self.check_pending_change(now_ms)

    def _start_change(
        self, now_ms: int, request: rpc.InboundRequest
    ) -> tuple[ErrorCode | None, str | None]:
        state = self._state
        role = state.quorum.role
        # dispatched by key: the body is one of the three voter-change requests
        body = cast(
            "AddRaftVoterRequest | RemoveRaftVoterRequest | UpdateRaftVoterRequest", request.body
        )
        if not isinstance(role, Leader):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, "this replica is not the leader"
        if state.kraft_version < 1:
            return ErrorCode.UNSUPPORTED_VERSION, "kraft.version 0 has a static voter set"
        hw = role.state.high_watermark
        if self.pending is not None or hw is None or state.voters.latest_offset >= hw:
            return ErrorCode.REQUEST_TIMED_OUT, "another voter change is in progress"
        key = ReplicaKey(int(body["voter_id"]), rpc.directory_id(body.get("voter_directory_id")))
        latest = state.voters.latest
        if request.api_key == rpc.ADD_RAFT_VOTER:
            add = cast("AddRaftVoterRequest", body)
            if key.id in latest.ids:
                return ErrorCode.DUPLICATE_VOTER, f"voter {key.id} is already in the voter set"
            timeout = int(add.get("timeout_ms", state.config.request_timeout_ms))
            self.pending = PendingChange(
                request,
                VoterNode(key, _endpoints(add)),
                now_ms + timeout,
                bool(add.get("ack_when_committed", True)),
            )
            return None, None
        node = latest.node(key.id)
        if node is None or node.key.directory_id != key.directory_id:
            return ErrorCode.VOTER_NOT_FOUND, f"{key} is not in the voter set"
        if request.api_key == rpc.REMOVE_RAFT_VOTER:
            new_set = latest.without_voter(key)
            updated = node
        else:
            update = cast("UpdateRaftVoterRequest", body)
            feature = update.get("kraft_version_feature") or {}
            low = int(feature.get("min_supported_version", 0))
            high = int(feature.get("max_supported_version", 0))
            if not low <= state.kraft_version <= high:
                return ErrorCode.INVALID_REQUEST, "the voter does not support kraft.version"
            updated = VoterNode(key, _endpoints(update) or node.endpoints, low, high)
            new_set = latest.with_updated(updated)
        deadline = now_ms + state.config.request_timeout_ms
        self.pending = PendingChange(request, updated, deadline)
        self._append_voters(new_set)
        return None, None

    def _append_voters(self, voters: VoterSet) -> None:
        assert self.pending is not None
        last = self._append_control([("VotersRecord", voters.to_record())])
        self.pending.record_offset = last

    def finish_change(self, error: ErrorCode, message: str | None = None) -> None:
        """Answer the pending change (if any) with ``error`` and forget it."""
        pending = self.pending
        if pending is None:
            return
        self.pending = None
        if pending.request is not None:
            self._messenger.respond(
                pending.request, self._change_response(pending.request.api_key, error, message)
            )

    def check_pending_change(self, now_ms: int) -> None:
        """The leader's tick: add a caught-up voter, answer a committed or timed-out change,
        resign once our own removal is committed. Nothing on a replica that does not lead."""
        state = self._state
        role = state.quorum.role
        if not isinstance(role, Leader):
            return
        pending = self.pending
        hw = role.state.high_watermark
        if pending is not None and pending.record_offset is None:
            progress = role.state.replicas.get(pending.node.key.id)
            caught_up = (
                progress is not None
                and progress.key.matches(pending.node.key)
                and hw is not None
                and progress.end_offset >= hw
                and now_ms - progress.last_fetch_ms <= state.config.fetch_timeout_ms
            )
            if caught_up:
                self._append_voters(state.voters.latest.with_voter(pending.node))
                if not pending.ack_when_committed:
                    self.finish_change(ErrorCode.NONE)
        pending = self.pending
        offset = pending.record_offset if pending is not None else None
        if offset is not None and hw is not None and hw > offset:
            self.finish_change(ErrorCode.NONE)
        if self.pending is not None and now_ms >= self.pending.deadline_ms:
            self.finish_change(ErrorCode.REQUEST_TIMED_OUT, "the voter change did not complete")
        if (
            not role.state.counts_itself
            and hw is not None
            and state.voters.latest_offset < hw
            and isinstance(state.quorum.role, Leader)
        ):
            # Our removal is committed: hand leadership to the remaining voters.
            self._resign(now_ms, role)


def _endpoints(body: AddRaftVoterRequest | UpdateRaftVoterRequest) -> tuple[Endpoint, ...]:
    """The listeners an AddRaftVoter or UpdateRaftVoter request names for the voter."""
    return tuple(
        Endpoint(str(e["name"]), str(e["host"]), int(e["port"]))
        for e in body.get("listeners") or ()
    )
