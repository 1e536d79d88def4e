"""Elections: Vote (with Pre-Vote, KIP-996), BeginQuorumEpoch and EndQuorumEpoch.

A mixin of :class:`~sparklog.raft.core.RaftReplica`. Rules (Kafka's ``EpochState.canGrantVote``):

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

from typing import TYPE_CHECKING

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.kafka_uuid import ZERO_UUID
from sparklog.raft import rpc
from sparklog.raft.client import NO_LEADER
from sparklog.raft.replication import FetchMixin
from sparklog.raft.state import Candidate, Follower, Leader, Prospective, Unattached
from sparklog.raft.voters import ReplicaKey

if TYPE_CHECKING:
    from sparklog.raft.core import _Inflight


class ElectionMixin(FetchMixin):
    def _maybe_win_prospective(self, now_ms: int, role: Prospective) -> None:
        voters = self.voters.latest
        if voters.is_majority(role.granted):
            candidate = self.quorum.to_candidate(now_ms + self._election_timeout())
            self._maybe_win_candidate(now_ms, candidate)
        elif len(voters.ids - role.rejected) < voters.majority_size:
            if role.leader_id >= 0 and role.leader_id != self.local.id:
                self._become_follower(now_ms, role.epoch, role.leader_id)
            elif role.leader_id == NO_LEADER:
                self.quorum.to_unattached(role.epoch, now_ms + self._election_timeout())

    def _maybe_win_candidate(self, now_ms: int, role: Candidate) -> None:
        voters = self.voters.latest
        if voters.is_majority(role.granted):
            self._become_leader(now_ms, role)
        elif (
            len(voters.ids - role.rejected) < voters.majority_size
            and role.backoff_deadline_ms is None
        ):
            backoff = self._random.randint(0, self.config.election_backoff_max_ms)
            role.backoff_deadline_ms = now_ms + backoff

    def _send_votes(self, now_ms: int, role: Prospective | Candidate) -> None:
        pre_vote = isinstance(role, Prospective)
        if isinstance(role, Candidate) and role.backoff_deadline_ms is not None:
            return
        for voter in self.voters.latest.voters:
            key = voter.key
            if key.id == self.local.id or key.id in role.granted or key.id in role.rejected:
                continue
            if self._has_inflight(key.id, rpc.VOTE):
                continue
            body = rpc.vote_request(
                self.config.cluster_id,
                key.id,
                key.directory_id,
                role.epoch,
                self.local.id,
                self.local.directory_id,
                self.log.last_epoch,
                self.log.log_end_offset,
                pre_vote,
            )
            self._send(now_ms, key.id, rpc.VOTE, body, pre_vote)

    def _can_grant(
        self, now_ms: int, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool
    ) -> bool:
        role = self.quorum.role
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
            return candidate == self.local
        return False

    def _handle_vote(self, now_ms: int, request: rpc.InboundRequest) -> None:
        p = rpc.partition_of(request.body)
        if p is None:
            self._respond(
                request,
                rpc.vote_response(
                    ErrorCode.INVALID_REQUEST, -1, self.quorum.epoch, False, ErrorCode.NONE
                ),
            )
            return
        epoch = int(p["replica_epoch"])
        candidate = ReplicaKey(
            int(p["replica_id"]), rpc.directory_id(p.get("replica_directory_id"))
        )
        pre_vote = bool(p.get("pre_vote", False))
        voter_dir = rpc.directory_id(p.get("voter_directory_id"))
        error = ErrorCode.NONE
        granted = False
        if voter_dir not in (ZERO_UUID, self.local.directory_id):
            error = ErrorCode.INVALID_VOTER_KEY
        elif epoch >= self.quorum.epoch:
            if epoch > self.quorum.epoch and not pre_vote:
                self._become_unattached(now_ms, epoch)
            up_to_date = (int(p["last_offset_epoch"]), int(p["last_offset"])) >= (
                self.log.last_epoch,
                self.log.log_end_offset,
            )
            if epoch == self.quorum.epoch or pre_vote:
                granted = self._can_grant(now_ms, candidate, up_to_date, pre_vote)
            if granted and not pre_vote:
                self.quorum.grant_vote(candidate, now_ms + self._election_timeout())
        self._respond(
            request,
            rpc.vote_response(
                ErrorCode.NONE, self.quorum.leader_id, self.quorum.epoch, granted, error
            ),
        )

    def _handle_vote_response(
        self, now_ms: int, response: rpc.InboundResponse, sent: _Inflight
    ) -> None:
        p = rpc.partition_of(response.body)
        if response.body.get("error_code", 0) or p is None:
            return
        if self._observe_leader(now_ms, int(p["leader_epoch"]), int(p["leader_id"])):
            return
        role = self.quorum.role
        if role.epoch != sent.epoch or p["error_code"]:
            return
        if isinstance(role, Prospective) and sent.pre_vote:
            (role.granted if p["vote_granted"] else role.rejected).add(response.source_id)
            self._maybe_win_prospective(now_ms, role)
        elif isinstance(role, Candidate) and not sent.pre_vote:
            (role.granted if p["vote_granted"] else role.rejected).add(response.source_id)
            self._maybe_win_candidate(now_ms, role)

    def _handle_begin_epoch(self, now_ms: int, request: rpc.InboundRequest) -> None:
        p = rpc.partition_of(request.body)
        error = ErrorCode.NONE
        if p is None:
            error = ErrorCode.INVALID_REQUEST
        elif rpc.directory_id(p.get("voter_directory_id")) not in (
            ZERO_UUID,
            self.local.directory_id,
        ):
            error = ErrorCode.INVALID_VOTER_KEY
        elif int(p["leader_epoch"]) < self.quorum.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        else:
            self._observe_leader(now_ms, int(p["leader_epoch"]), int(p["leader_id"]))
        self._respond(
            request,
            rpc.epoch_response(ErrorCode.NONE, self.quorum.leader_id, self.quorum.epoch, error),
        )

    def _handle_end_epoch(self, now_ms: int, request: rpc.InboundRequest) -> None:
        p = rpc.partition_of(request.body)
        error = ErrorCode.NONE
        if p is None:
            error = ErrorCode.INVALID_REQUEST
        elif int(p["leader_epoch"]) < self.quorum.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        else:
            epoch, leader_id = int(p["leader_epoch"]), int(p["leader_id"])
            self._observe_leader(now_ms, epoch, leader_id)
            role = self.quorum.role
            if isinstance(role, Follower) and role.leader_id == leader_id and role.epoch == epoch:
                # The leader resigned: its preferred successor campaigns at once, the others
                # after a random backoff, so one of them usually wins the first round.
                preferred = [int(c["candidate_id"]) for c in p.get("preferred_candidates") or ()]
                first = bool(preferred) and preferred[0] == self.local.id
                delay = 0 if first else self._random.randint(0, self.config.election_backoff_max_ms)
                role.fetch_deadline_ms = min(role.fetch_deadline_ms, now_ms + delay)
        self._respond(
            request,
            rpc.epoch_response(ErrorCode.NONE, self.quorum.leader_id, self.quorum.epoch, error),
        )

    def _handle_epoch_response(self, now_ms: int, response: rpc.InboundResponse) -> None:
        p = rpc.partition_of(response.body)
        if response.body.get("error_code", 0) or p is None:
            return
        if self._observe_leader(now_ms, int(p["leader_epoch"]), int(p["leader_id"])):
            return
        role = self.quorum.role
        if (
            isinstance(role, Leader)
            and response.api_key == rpc.BEGIN_QUORUM_EPOCH
            and not p["error_code"]
            and int(p["leader_epoch"]) == role.epoch
        ):
            role.state.acknowledged.add(response.source_id)
