"""The cores over the real storage engine's Log: the protocol holds at run time too."""

from __future__ import annotations

import os
import time
from pathlib import Path

from sparklog.replication.follower import FollowerCore
from sparklog.replication.leader import LeaderCore
from sparklog.replication.messages import PartitionView
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from tests.sim.replication.memory_log import InMemoryLog
from tests.unit.replication.helpers import batch, fetch_once


def open_log(tmp_path: Path, name: str) -> Log:
    return Log.open(os.path.join(tmp_path, name), LogConfig(), lambda: int(time.time() * 1000))


def test_follower_on_storage_log_truncates_diverged_tail(tmp_path: Path) -> None:
    follower_log = open_log(tmp_path, "t-0")
    # History: epoch 1 wrote 3 batches; the follower then led epoch 2 alone and wrote 2 more.
    for _ in range(3):
        follower_log.append_as_leader(bytearray(batch(2)), 1)
    for _ in range(2):
        follower_log.append_as_leader(bytearray(batch(1)), 2)
    leader_log = InMemoryLog()
    leader_log.append_as_follower(follower_log.read(0, 1 << 20, 6).slices[0].read_bytes())
    leader_log.append_as_leader(batch(3), 3)
    view = PartitionView(1, 3, 3, (1, 2), (1, 2))
    leader = LeaderCore(1, leader_log, min_insync_replicas=2)
    leader.become_leader(view, 0)
    follower = FollowerCore(2, follower_log)
    follower.become_follower(view)
    for _ in range(5):
        fetch_once(leader, follower)
    assert follower_log.log_end_offset == leader_log.log_end_offset == 9
    assert follower_log.epoch_cache.entries == [(1, 0), (3, 6)]
    assert leader.high_watermark == 9 and follower_log.high_watermark == 9
    got = follower_log.read(0, 1 << 20, 9).slices[0].read_bytes()
    assert got == b"".join(b.data for b in leader_log.batches)
