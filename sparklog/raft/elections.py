"""Elections: Vote (with Pre-Vote, KIP-996), BeginQuorumEpoch and EndQuorumEpoch.

:class:`Elections`, a component of :class:`~sparklog.raft.core.RaftReplica`, owns every change of
role (:meth:`Elections.observe_leader`, :meth:`Elections.start_prospective`,
:meth:`Elections.resign`, ...). It is given the shared
:class:`~sparklog.raft.replica_state.ReplicaState` and
:class:`~sparklog.raft.replica_state.Messenger`, the
:class:`~sparklog.raft.replication.LeaderReplication` (a new leader appends its LeaderChange and
sends BeginQuorumEpoch through it; a replica losing leadership stops it) and the
:class:`~sparklog.raft.voter_changes.VoterChanges` (a pending change fails when leadership is
lost). Rules (Kafka's ``EpochState.canGrantVote``):

- A vote request from an epoch below ours is refused and tells the sender our epoch; a real
  vote from a higher epoch first moves us to that epoch (unattached, persisted).
- A real vote is granted only if the candidate's log is at least as up to date as ours
  (``(last epoch, end offset)`` compared in that order) and we have neither voted for
  another candidate nor known a leader in this epoch; the vote is persisted before replying.
- A pre-vote is granted if the log is up to date and we have not heard from a leader within
  the fetch timeout; it changes nothing. A leader grants nothing.
- A prospective with a majority of pre-votes becomes a candidate (bumping the epoch); a
  candidate with a majority of votes leads. Rejected by a majority, a prospective goes back to
  following (or unattached) and a candidate backs off for a random time up to
  ``election_backoff_max_ms`` before trying again as a prospective.
"""

from __future__ import annotations

from typing import Any

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.kafka_uuid import ZERO_UUID
from sparklog.raft import rpc
from sparklog.raft.client import NO_LEADER
from sparklog.raft.leader_state import LeaderState
from sparklog.raft.replica_state import Inflight, Messenger, ReplicaState
from sparklog.raft.replication import LeaderReplication
from sparklog.raft.state import Candidate, Follower, Leader, Prospective, Resigned, Unattached
from sparklog.raft.voter_changes import VoterChanges
from sparklog.raft.voters import ReplicaKey


class Elections:
    """Role changes and the Vote, BeginQuorumEpoch and EndQuorumEpoch RPCs."""

    def __init__(
        self,
        state: ReplicaState,
        messenger: Messenger,
        leader: LeaderReplication,
        voter_changes: VoterChanges,
    ) -> None:
        self._state = state
        self._messenger = messenger
        self._leader = leader
        self._voter_changes = voter_changes

    # -- role changes -------------------------------------------------------------------------

    def observe_leader(self, now_ms: int, epoch: int, leader_id: int) -> bool:
        """React to a peer's view of (epoch, leader); True if our role changed."""
        local_id = self._state.local.id
        role = self._state.quorum.role
        if epoch > role.epoch:
            if leader_id >= 0 and leader_id != local_id:
                self.become_follower(now_ms, epoch, leader_id)
            else:
                self.become_unattached(now_ms, epoch)
            return True
        if epoch == role.epoch and leader_id >= 0 and leader_id != local_id:
            if isinstance(role, Leader | Resigned):
                raise AssertionError(f"epoch {epoch} has two leaders: {local_id}, {leader_id}")
            if isinstance(role, Prospective) and role.leader_id == leader_id:
                # We campaign because that leader stopped answering; hearing its name again
                # from a peer that has not timed out yet is no news.
                return False
            if not isinstance(role, Follower):
                self.become_follower(now_ms, epoch, leader_id)
                return True
        return False

    def _lost_leadership(self) -> None:
        self._leader.stop_leading()
        if self._voter_changes.pending is not None:
            self._voter_changes.finish_change(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def become_unattached(self, now_ms: int, epoch: int) -> None:
        quorum = self._state.quorum
        was_leader = isinstance(quorum.role, Leader)
        quorum.to_unattached(epoch, now_ms + self._state.election_timeout())
        if was_leader:
            self._lost_leadership()

    def become_follower(self, now_ms: int, epoch: int, leader_id: int) -> None:
        quorum = self._state.quorum
        was_leader = isinstance(quorum.role, Leader)
        quorum.to_follower(epoch, leader_id, now_ms + self._state.config.fetch_timeout_ms)
        if was_leader:
            self._lost_leadership()

    def start_prospective(self, now_ms: int) -> None:
        state = self._state
        if not state.is_voter:
            return
        was_leader = isinstance(state.quorum.role, Leader)
        prospective = state.quorum.to_prospective(now_ms + state.election_timeout())
        if was_leader:
            self._lost_leadership()
        self._maybe_win_prospective(now_ms, prospective)

    def _become_leader(self, now_ms: int, role: Candidate) -> None:
        state = self._state
        leader_state = LeaderState(
            state.local,
            role.epoch,
            state.log.log_end_offset,
            state.voters.latest,
            now_ms,
            state.config.check_quorum_timeout_ms,
        )
        state.quorum.to_leader(leader_state)
        voters = state.voters.latest
        controls: list[tuple[str, dict[str, Any]]] = []
        if state.voters.latest_offset < 0 and state.kraft_version >= 1 and voters.voters:
            # The first leader copies the bootstrap voter set into the log, so replicas that
            # were not formatted with it (new controllers, brokers) learn it by fetching.
            controls.append(("KRaftVersionRecord", {"kraft_version": state.kraft_version}))
            controls.append(("VotersRecord", voters.to_record()))
        controls.append(
            (
                "LeaderChangeMessage",
                {
                    "leader_id": state.local.id,
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
        self._leader.append_control(controls)
        for voter in voters.voters:
            if voter.key.id != state.local.id:
                self._leader.send_begin_epoch(now_ms, voter.key)

    def resign(self, now_ms: int, role: Leader) -> None:
        """Step down: tell the other voters (the most caught up first) to elect."""
        state = self._state
        progress = sorted(
            (p for p in role.state.voter_progress() if p.key.id != state.local.id),
            key=lambda p: -p.end_offset,
        )
        preferred = [(p.key.id, p.key.directory_id) for p in progress]
        state.quorum.to_resigned(now_ms + state.election_timeout())
        self._lost_leadership()
        body = rpc.end_quorum_epoch_request(
            state.config.cluster_id, state.local.id, role.epoch, preferred
        )
        for voter_id, _ in preferred:
            self._messenger.send(now_ms, voter_id, rpc.END_QUORUM_EPOCH, body)

    # -- campaigning --------------------------------------------------------------------------

    def _maybe_win_prospective(self, now_ms: int, role: Prospective) -> None:
        state = self._state
        voters = state.voters.latest
        if voters.is_majority(role.granted):
            candidate = state.quorum.to_candidate(now_ms + state.election_timeout())
            self._maybe_win_candidate(now_ms, candidate)
        elif len(voters.ids - role.rejected) < voters.majority_size:
            if role.leader_id >= 0 and role.leader_id != state.local.id:
                self.become_follower(now_ms, role.epoch, role.leader_id)
            elif role.leader_id == NO_LEADER:
                state.quorum.to_unattached(role.epoch, now_ms + state.election_timeout())

    def _maybe_win_candidate(self, now_ms: int, role: Candidate) -> None:
        voters = self._state.voters.latest
        if voters.is_majority(role.granted):
            self._become_leader(now_ms, role)
        elif (
            len(voters.ids - role.rejected) < voters.majority_size
            and role.backoff_deadline_ms is None
        ):
            backoff = self._state.random.randint(0, self._state.config.election_backoff_max_ms)
            role.backoff_deadline_ms = now_ms + backoff

    def send_votes(self, now_ms: int, role: Prospective | Candidate) -> None:
        """Ask every voter that has not answered yet (and has no request in flight)."""
        state = self._state
        pre_vote = isinstance(role, Prospective)
        if isinstance(role, Candidate) and role.backoff_deadline_ms is not None:
            return
        for voter in state.voters.latest.voters:
            key = voter.key
            if key.id == state.local.id or key.id in role.granted or key.id in role.rejected:
                continue
            if self._messenger.has_inflight(key.id, rpc.VOTE):
                continue
            body = rpc.vote_request(
                state.config.cluster_id,
                key.id,
                key.directory_id,
                role.epoch,
                state.local.id,
                state.local.directory_id,
                state.log.last_epoch,
                state.log.log_end_offset,
                pre_vote,
            )
            self._messenger.send(now_ms, key.id, rpc.VOTE, body, pre_vote)

    def _can_grant(
        self, now_ms: int, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool
    ) -> bool:
        role = self._state.quorum.role
        if isinstance(role, Leader):
            return False
        if pre_vote:
            if isinstance(role, Follower):
                fetched_recently = role.has_fetched and now_ms < role.fetch_deadline_ms
                return up_to_date and not fetched_recently
            return up_to_date
        if isinstance(role, Unattached):
            return up_to_date and (role.voted is None or role.voted == candidate)
        if isinstance(role, Prospective):
            if role.leader_id != NO_LEADER:
                return False
            return up_to_date and (role.voted is None or role.voted == candidate)
        if isinstance(role, Candidate):
            return candidate == self._state.local
        return False

    def handle_vote(self, now_ms: int, request: rpc.InboundRequest) -> None:
        state = self._state
        quorum = state.quorum
        p = rpc.vote_partition(request.body)
        if p is None:
            self._messenger.respond(
                request,
                rpc.vote_response(
                    ErrorCode.INVALID_REQUEST, -1, quorum.epoch, False, ErrorCode.NONE
                ),
            )
            return
        epoch = p["replica_epoch"]
        candidate = ReplicaKey(p["replica_id"], rpc.directory_id(p["replica_directory_id"]))
        pre_vote = p["pre_vote"]
        voter_dir = rpc.directory_id(p["voter_directory_id"])
        error = ErrorCode.NONE
        granted = False
        if voter_dir not in (ZERO_UUID, state.local.directory_id):
            error = ErrorCode.INVALID_VOTER_KEY
        elif epoch >= quorum.epoch:
            if epoch > quorum.epoch and not pre_vote:
                self.become_unattached(now_ms, epoch)
            up_to_date = (p["last_offset_epoch"], p["last_offset"]) >= (
                state.log.last_epoch,
                state.log.log_end_offset,
            )
            if epoch == quorum.epoch or pre_vote:
                granted = self._can_grant(now_ms, candidate, up_to_date, pre_vote)
            if granted and not pre_vote:
                quorum.grant_vote(candidate, now_ms + state.election_timeout())
        self._messenger.respond(
            request,
            rpc.vote_response(ErrorCode.NONE, quorum.leader_id, quorum.epoch, granted, error),
        )

    def handle_vote_response(
        self, now_ms: int, response: rpc.InboundResponse, sent: Inflight
    ) -> None:
        p = rpc.vote_response_partition(response.body)
        if response.body.get("error_code", 0) or p is None:
            return
        if self.observe_leader(now_ms, int(p["leader_epoch"]), int(p["leader_id"])):
            return
        role = self._state.quorum.role
        if role.epoch != sent.epoch or p["error_code"]:
            return
        if isinstance(role, Prospective) and sent.pre_vote:
            (role.granted if p["vote_granted"] else role.rejected).add(response.source_id)
            self._maybe_win_prospective(now_ms, role)
        elif isinstance(role, Candidate) and not sent.pre_vote:
            (role.granted if p["vote_granted"] else role.rejected).add(response.source_id)
            self._maybe_win_candidate(now_ms, role)

    def handle_begin_epoch(self, now_ms: int, request: rpc.InboundRequest) -> None:
        quorum = self._state.quorum
        p = rpc.begin_epoch_partition(request.body)
        error = ErrorCode.NONE
        if p is None:
            error = ErrorCode.INVALID_REQUEST
        elif rpc.directory_id(p["voter_directory_id"]) not in (
            ZERO_UUID,
            self._state.local.directory_id,
        ):
            error = ErrorCode.INVALID_VOTER_KEY
        elif p["leader_epoch"] < quorum.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        else:
            self.observe_leader(now_ms, p["leader_epoch"], p["leader_id"])
        self._messenger.respond(
            request,
            rpc.epoch_response(ErrorCode.NONE, quorum.leader_id, quorum.epoch, error),
        )

    def handle_end_epoch(self, now_ms: int, request: rpc.InboundRequest) -> None:
        state = self._state
        quorum = state.quorum
        p = rpc.end_epoch_partition(request.body)
        error = ErrorCode.NONE
        if p is None:
            error = ErrorCode.INVALID_REQUEST
        elif p["leader_epoch"] < quorum.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        else:
            epoch, leader_id = p["leader_epoch"], p["leader_id"]
            self.observe_leader(now_ms, epoch, leader_id)
            role = quorum.role
            if isinstance(role, Follower) and role.leader_id == leader_id and role.epoch == epoch:
                # The leader resigned: its preferred successor campaigns at once, the others
                # after a random backoff, so one of them usually wins the first round.
                preferred = [c["candidate_id"] for c in p["preferred_candidates"] or ()]
                first = bool(preferred) and preferred[0] == state.local.id
                backoff_max = state.config.election_backoff_max_ms
                delay = 0 if first else state.random.randint(0, backoff_max)
                role.fetch_deadline_ms = min(role.fetch_deadline_ms, now_ms + delay)
        self._messenger.respond(
            request,
            rpc.epoch_response(ErrorCode.NONE, quorum.leader_id, quorum.epoch, error),
        )

    def handle_epoch_response(self, now_ms: int, response: rpc.InboundResponse) -> None:
        p = rpc.epoch_response_partition(response.body)
        if response.body.get("error_code", 0) or p is None:
            return
        if self.observe_leader(now_ms, int(p["leader_epoch"]), int(p["leader_id"])):
            return
        role = self._state.quorum.role
        if (
            isinstance(role, Leader)
            and response.api_key == rpc.BEGIN_QUORUM_EPOCH
            and not p["error_code"]
            and int(p["leader_epoch"]) == role.epoch
        ):
            role.state.acknowledged.add(response.source_id)
