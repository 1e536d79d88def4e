"""Issue 16: a restarted replica refuses partition states older than its log (old metadata
replayed), in the cores and in the broker's Partition, so the epoch cache keeps its history and
no follower truncates below its high watermark."""

from __future__ import annotations

import time
from pathlib import Path

from sparklog.broker.partition import Partition, PartitionState, RoleChange
from sparklog.replication.follower import FollowerCore
from sparklog.replication.leader import LeaderCore
from sparklog.replication.messages import PartitionView
from sparklog.storage.config import LogConfig
from sparklog.storage.epoch_cache import LEADER_EPOCH_CHECKPOINT
from sparklog.storage.manager import LogManager
from tests.sim.replication.memory_log import InMemoryLog
from tests.unit.replication.helpers import batch, fetch_once

TOPIC_ID = b"s" * 16
REPLICAS = (1, 2, 3)


def history_log() -> InMemoryLog:
    """A log written by leaders of epochs 1, 3 and 7 (offsets 0, 10 and 20; LEO 30)."""
    log = InMemoryLog()
    for epoch in (1, 3, 7):
        log.append_as_leader(batch(10), epoch)
    log.high_watermark = 30
    return log


def test_leader_core_refuses_a_view_older_than_its_log() -> None:
    log = history_log()
    leader = LeaderCore(1, log, min_insync_replicas=2)  # a fresh core: the broker restarted
    assert not leader.become_leader(PartitionView(1, 3, 3, REPLICAS, REPLICAS), 0)
    assert leader.leader_epoch == -1
    assert log.epoch_cache.entries == [(1, 0), (3, 10), (7, 20)]
    # The latest epoch itself (we led it before the restart) and newer ones are taken.
    assert leader.become_leader(PartitionView(1, 7, 7, REPLICAS, REPLICAS), 0)
    assert log.epoch_cache.entries == [(1, 0), (3, 10), (7, 20)]
    assert leader.become_leader(PartitionView(1, 8, 8, REPLICAS, REPLICAS), 0)
    assert log.epoch_cache.entries == [(1, 0), (3, 10), (7, 20), (8, 30)]


def test_follower_core_refuses_a_view_older_than_its_log() -> None:
    log = history_log()
    follower = FollowerCore(2, log)
    assert not follower.become_follower(PartitionView(1, 3, 3, REPLICAS, REPLICAS))
    assert follower.fetch_position() is None  # nobody to fetch from: waits for newer metadata
    assert follower.become_follower(PartitionView(3, 7, 7, REPLICAS, REPLICAS))
    assert follower.leader_id == 3


def test_replayed_stale_leadership_never_truncates_a_follower_below_its_hw() -> None:
    """The incident: broker 1 restarts and old metadata names it leader of epoch 3 while the
    followers' logs hold epoch 7 up to HW 30; then the current state (epoch 8) arrives."""
    leader_log, follower_log = history_log(), history_log()
    leader = LeaderCore(1, leader_log, min_insync_replicas=2)
    follower = FollowerCore(2, follower_log)
    assert not leader.become_leader(PartitionView(1, 3, 3, REPLICAS, REPLICAS), 0)
    assert leader.become_leader(PartitionView(1, 8, 8, REPLICAS, REPLICAS), 0)
    assert follower.become_follower(PartitionView(1, 8, 8, REPLICAS, REPLICAS))
    outcome = fetch_once(leader, follower)
    assert outcome is not None and outcome.truncated_to is None
    assert follower_log.log_end_offset == 30 and follower_log.high_watermark == 30


def test_partition_skips_a_state_older_than_its_log(tmp_path: Path) -> None:
    config = LogConfig().with_overrides({"min.insync.replicas": "2"})
    manager = LogManager([str(tmp_path)], config, lambda: int(time.time() * 1000))
    log = manager.create_log("s", 0, TOPIC_ID, config)
    for epoch in (1, 3, 7):
        log.append_as_follower(_stamped(log.log_end_offset, epoch))
    checkpoint = Path(log.directory) / LEADER_EPOCH_CHECKPOINT
    before = checkpoint.read_text()
    assert log.epoch_cache.entries == [(1, 0), (3, 10), (7, 20)]
    partition = Partition("s", 0, TOPIC_ID, log, 1)  # fresh after a restart: epoch -1
    # Old states, as a replay of the metadata log would publish them: leader, then follower.
    assert partition.apply_state(PartitionState(1, 3, 3, REPLICAS, REPLICAS)) is RoleChange.NONE
    assert partition.apply_state(PartitionState(2, 5, 5, REPLICAS, REPLICAS)) is RoleChange.NONE
    assert not partition.is_leader
    assert partition.leader_core is None and partition.follower_core is None
    assert checkpoint.read_text() == before
    # The current state is taken; an older partition epoch after it is not.
    assert partition.apply_state(PartitionState(1, 8, 9, REPLICAS, REPLICAS)) is RoleChange.LEADER
    assert log.epoch_cache.entries == [(1, 0), (3, 10), (7, 20), (8, 30)]
    assert partition.apply_state(PartitionState(2, 9, 8, REPLICAS, REPLICAS)) is RoleChange.NONE
    assert partition.is_leader


def _stamped(base_offset: int, epoch: int) -> bytes:
    """Ten records as a leader of ``epoch`` wrote them at ``base_offset``."""
    log = InMemoryLog(base_offset)
    log.append_as_leader(batch(10), epoch)
    return log.read(base_offset, 1 << 20)
