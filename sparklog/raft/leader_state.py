"""What a KRaft leader tracks of its epoch: replica progress, the high watermark, check-quorum.

Rules (Kafka's ``LeaderState``):

- The high watermark (HW) is the largest offset ``o`` such that a majority of the *latest*
  voter set (committed or not) has durably stored every entry below ``o``. Each follower's
  progress is the fetch offset of its last Fetch (a follower flushes before fetching again);
  the leader's own progress is its *flushed* end offset, counted once and only while the leader
  is itself in the latest voter set (a leader being removed stops counting itself).
- The HW only advances past ``epoch_start_offset``: entries of earlier epochs are committed
  indirectly, by committing an entry of this epoch (Raft's figure-8 rule). It never decreases.
- Check-quorum: the leader must hear a Fetch from a majority of voters (itself included)
  within ``check_quorum_timeout_ms``, or it resigns so a partitioned leader cannot linger.
- Observers (non-voters) are tracked for DescribeQuorum and for the catch-up check of
  AddRaftVoter, but never count toward the HW.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparklog.raft.voters import ReplicaKey, VoterSet


@dataclass(slots=True)
class ReplicaProgress:
    key: ReplicaKey
    end_offset: int = -1
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1


class LeaderState:
    def __init__(
        self,
        local: ReplicaKey,
        epoch: int,
        epoch_start_offset: int,
        voters: VoterSet,
        now_ms: int,
        check_quorum_timeout_ms: int,
    ) -> None:
        self.local = local
        self.epoch = epoch
        self.epoch_start_offset = epoch_start_offset
        self.high_watermark: int | None = None
        self.replicas: dict[int, ReplicaProgress] = {}
        self._voters = voters
        self._check_quorum_timeout_ms = check_quorum_timeout_ms
        self._epoch_start_ms = now_ms
        self._local_end_offset = -1
        # Voters that acknowledged the new epoch (BeginQuorumEpoch response or a Fetch).
        self.acknowledged: set[int] = {local.id}
        for voter in voters.voters:
            self.replicas.setdefault(voter.key.id, ReplicaProgress(voter.key))

    @property
    def voters(self) -> VoterSet:
        return self._voters

    @property
    def counts_itself(self) -> bool:
        return self._voters.is_voter(self.local)

    def update_voters(self, voters: VoterSet) -> bool:
        self._voters = voters
        for voter in voters.voters:
            progress = self.replicas.get(voter.key.id)
            if progress is None or progress.key != voter.key:
                self.replicas[voter.key.id] = ReplicaProgress(voter.key)
        return self._recompute()

    def update_local(self, flushed_end_offset: int) -> bool:
        """The leader flushed its log up to ``flushed_end_offset``; True if the HW moved."""
        self._local_end_offset = flushed_end_offset
        return self._recompute()

    def update_replica(
        self, key: ReplicaKey, fetch_offset: int, now_ms: int, leader_end_offset: int
    ) -> bool:
        """A Fetch from ``key`` at ``fetch_offset``; True if the HW moved."""
        progress = self.replicas.get(key.id)
        if progress is None or not progress.key.matches(key):
            progress = ReplicaProgress(key)
            self.replicas[key.id] = progress
        progress.end_offset = fetch_offset
        progress.last_fetch_ms = now_ms
        if fetch_offset >= leader_end_offset:
            progress.last_caught_up_ms = now_ms
        if self._voters.is_voter(key):
            self.acknowledged.add(key.id)
        return self._recompute()

    def touch(self, key: ReplicaKey, now_ms: int) -> None:
        """A request from ``key`` that proves it follows us but says nothing of its log (a Fetch
        answered with a snapshot id, a FetchSnapshot): counts for check-quorum only."""
        progress = self.replicas.get(key.id)
        if progress is None or not progress.key.matches(key):
            progress = ReplicaProgress(key)
            self.replicas[key.id] = progress
        progress.last_fetch_ms = now_ms
        if self._voters.is_voter(key):
            self.acknowledged.add(key.id)

    def _recompute(self) -> bool:
        offsets = []
        for voter in self._voters.voters:
            if voter.key.id == self.local.id:
                if voter.key.matches(self.local):
                    offsets.append(self._local_end_offset)
                continue
            progress = self.replicas.get(voter.key.id)
            matched = progress is not None and progress.key.matches(voter.key)
            offsets.append(progress.end_offset if progress is not None and matched else -1)
        if not offsets:
            return False
        offsets.sort(reverse=True)
        candidate = offsets[self._voters.majority_size - 1]
        if candidate <= self.epoch_start_offset:
            return False
        if self.high_watermark is not None and candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        return True

    def quorum_lost(self, now_ms: int) -> bool:
        """Check-quorum: no Fetch from a majority within the timeout (self included)."""
        if now_ms - self._epoch_start_ms < self._check_quorum_timeout_ms:
            return False
        if len(self._voters.voters) == 1 and self.counts_itself:
            return False
        since = now_ms - self._check_quorum_timeout_ms
        heard = {self.local.id} if self.counts_itself else set()
        for voter in self._voters.voters:
            progress = self.replicas.get(voter.key.id)
            if progress is not None and progress.last_fetch_ms >= since:
                heard.add(voter.key.id)
        return not self._voters.is_majority(heard)

    def observers(self) -> list[ReplicaProgress]:
        return [p for p in self.replicas.values() if not self._voters.is_voter(p.key)]

    def voter_progress(self) -> list[ReplicaProgress]:
        out = []
        for voter in self._voters.voters:
            progress = self.replicas.get(voter.key.id) or ReplicaProgress(voter.key)
            if voter.key.id == self.local.id:
                progress = ReplicaProgress(voter.key, self._local_end_offset, -1, -1)
            out.append(progress)
        return out
