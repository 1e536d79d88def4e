"""Property: whatever histories replicas built under earlier leaders, syncing them with the
current leader through the two cores leaves every follower log identical to the leader's.

Elections here are deliberately unclean (any replica may become leader, with uncommitted
batches of its own), which is the hardest case for divergence detection and truncation.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.replication.follower import FollowerCore
from sparklog.replication.leader import LeaderCore
from sparklog.replication.messages import FollowerAction, PartitionView
from tests.sim.replication.memory_log import InMemoryLog
from tests.unit.replication.helpers import batch, fetch_once

REPLICAS = (0, 1, 2)

Op = tuple[str, int, int]
ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 3), st.integers(1, 3)),
        st.tuples(st.just("sync"), st.sampled_from(REPLICAS), st.integers(1, 3)),
        st.tuples(st.just("elect"), st.sampled_from(REPLICAS), st.just(0)),
    ),
    max_size=30,
)


class Cluster:
    def __init__(self) -> None:
        self.logs = {r: InMemoryLog() for r in REPLICAS}
        self.epoch = 0
        self.partition_epoch = 0
        self.leader: LeaderCore
        self.followers: dict[int, FollowerCore] = {}
        self.elect(0)

    def elect(self, replica: int) -> None:
        self.epoch += 1
        self.partition_epoch += 1
        view = PartitionView(replica, self.epoch, self.partition_epoch, REPLICAS, REPLICAS)
        self.leader = LeaderCore(replica, self.logs[replica], min_insync_replicas=1)
        assert self.leader.become_leader(view, 0)
        self.followers = {}
        for r in REPLICAS:
            if r != replica:
                follower = FollowerCore(r, self.logs[r])
                assert follower.become_follower(view)
                self.followers[r] = follower

    def append(self, batches: int, records: int) -> None:
        for _ in range(batches):
            self.logs[self.leader.local_id].append_as_leader(batch(records), self.epoch)
        self.leader.maybe_increment_hw(0)

    def sync(self, replica: int, rounds: int, max_bytes: int = 200) -> None:
        follower = self.followers.get(replica)
        if follower is None:
            return
        for _ in range(rounds):
            outcome = fetch_once(self.leader, follower, max_bytes=max_bytes)
            assert outcome is not None
            assert outcome.action is FollowerAction.CONTINUE, outcome

    def sync_all(self) -> None:
        for replica in self.followers:
            leader_end = self.logs[self.leader.local_id].log_end_offset
            for _ in range(200):
                self.sync(replica, 1, max_bytes=1 << 20)
                if self.logs[replica].log_end_offset == leader_end:
                    # One more round so a same-length diverged tail is detected and repaired.
                    self.sync(replica, 1, max_bytes=1 << 20)
                    if self.logs[replica].log_end_offset == leader_end:
                        break


@settings(max_examples=150, deadline=None)
@given(ops)
def test_followers_converge_to_the_leader(script: list[Op]) -> None:
    cluster = Cluster()
    for op, a, b in script:
        if op == "append":
            cluster.append(a, b)
        elif op == "sync":
            cluster.sync(a, b)
        else:
            cluster.elect(a)
    cluster.append(1, 1)
    cluster.sync_all()
    leader_log = cluster.logs[cluster.leader.local_id]
    expected = leader_log.offsets_and_epochs()
    for replica, log in cluster.logs.items():
        assert log.offsets_and_epochs() == expected, f"replica {replica}"
        assert [b.data for b in log.batches] == [b.data for b in leader_log.batches]
        assert log.epoch_cache.entries == leader_log.epoch_cache.entries
    # Everyone fetched up to the leader's LEO, so the HW reached it.
    assert cluster.leader.high_watermark == leader_log.log_end_offset


@settings(max_examples=100, deadline=None)
@given(ops)
def test_leader_hw_never_moves_backwards(script: list[Op]) -> None:
    cluster = Cluster()
    for op, a, b in script:
        before = cluster.leader.high_watermark
        if op == "append":
            cluster.append(a, b)
        elif op == "sync":
            cluster.sync(a, b)
        else:
            cluster.elect(a)
            continue
        assert cluster.leader.high_watermark >= before
        assert cluster.leader.high_watermark <= cluster.leader.log.log_end_offset
