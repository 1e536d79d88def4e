"""Issue 16, with real processes: a restarting broker must not act on the historical partition
states of its metadata log (3 controllers + 3 brokers, RF 3, min.insync.replicas=2).

An idempotent acks=all confluent-kafka producer writes a numbered sequence to a one-partition
topic while the test SIGKILLs and restarts the partition's leader several times (every broker
leads an epoch its log has since passed), then SIGKILLs and restarts a follower that led an
old epoch. Every restart happens while the controllers are paused (SIGSTOP) until the broker
opened its logs and installed its metadata publishers, so its metadata log is replayed only
afterwards (a slow quorum at start-up; otherwise whether the replay comes before or after the
installation is a race). Every restart is checked:

- no broker ever truncates the partition below the high watermark it had checkpointed before
  (a thread samples every broker's ``replication-offset-checkpoint``; every ``Truncating ...
  to offset N`` line of a node's log is compared with the HW that node had by then);
- it is back in the ISR, and its ``leader-epoch-checkpoint`` equals the leader's;
- finally every acknowledged record is readable at the offset it was acknowledged with.

Before the fix the restarted broker published every replayed state: one naming it leader of
an old epoch assigned that epoch at its log end, which dropped the newer epochs from its epoch
cache, and it then truncated to the end of that old epoch, far below its high watermark.
"""

from __future__ import annotations

import functools
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparklog.storage.checkpoint import read_epoch_checkpoint, read_offset_checkpoint
from sparklog.storage.epoch_cache import LEADER_EPOCH_CHECKPOINT
from sparklog.storage.manager import REPLICATION_OFFSET_CHECKPOINT
from tests.integration.cluster_harness import Cluster, ClusterNode, running_cluster, wait_until
from tests.integration.test_replication_chaos import (
    TIMINGS,
    SequenceProducer,
    create_topic,
    partition_state,
    read_back,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

TOPIC = "replayed"
LEADER_RESTARTS = 3
# The controllers stay paused for the victim's start-up (~5 s): longer broker sessions, so no
# broker is fenced meanwhile.
SETTINGS = {**TIMINGS, "broker.session.timeout.ms": 12_000}
# Logged by the broker once its metadata plane runs, just before it loads its logs.
BROKER_STARTING = b"Segment files are opened on demand"
TRUNCATION = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] INFO "
    r"Truncating (\S+) (?:fully and starting at|to) offset (\d+)",
    re.MULTILINE,
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("restart-old-metadata")
    with running_cluster(root, controllers=3, brokers=3, overrides=SETTINGS) as cluster:
        yield cluster


def partition_dir(node: ClusterNode) -> Path:
    return node.workdir / "data" / f"{TOPIC}-0"


def checkpointed_hw(node: ClusterNode) -> int:
    """The HW of the partition in ``node``'s replication-offset-checkpoint (-1 if absent)."""
    path = node.workdir / "data" / REPLICATION_OFFSET_CHECKPOINT
    try:
        return read_offset_checkpoint(str(path)).get((TOPIC, 0), -1)
    except (OSError, ValueError):
        return -1


def hw_past(node: ClusterNode, offset: int) -> bool:
    return checkpointed_hw(node) > offset


def epoch_entries(node: ClusterNode) -> list[tuple[int, int]]:
    return read_epoch_checkpoint(str(partition_dir(node) / LEADER_EPOCH_CHECKPOINT))


def log_since(node: ClusterNode, since: int) -> bytes:
    with node.log_path.open("rb") as f:
        f.seek(since)
        return f.read()


def launch_with_paused_controllers(cluster: Cluster, victim: ClusterNode) -> None:
    """Start ``victim`` while no controller answers, until it installed its publishers."""
    since = victim.log_path.stat().st_size
    paused = [c for c in cluster.controllers if c.process is not None]
    for controller in paused:
        assert controller.process is not None
        controller.process.send_signal(signal.SIGSTOP)
    try:
        victim.launch()
        wait_until(
            f"broker {victim.node_id} starting its data plane",
            lambda: BROKER_STARTING in log_since(victim, since),
            30,
            interval_s=0.05,
        )
        time.sleep(1.0)  # it loads its logs and installs its publishers; no metadata comes
    finally:
        for controller in paused:
            assert controller.process is not None
            controller.process.send_signal(signal.SIGCONT)


def truncations(node: ClusterNode) -> list[tuple[float, int]]:
    """(wall-clock time, offset) of every truncation of the partition in ``node``'s log."""
    text = log_since(node, 0).decode(errors="replace")
    wanted = str(partition_dir(node))
    found = []
    for m in TRUNCATION.finditer(text):
        if m.group(3) == wanted:
            at = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"))
            found.append((at + int(m.group(2)) / 1000, int(m.group(4))))
    return found


class HwMonitor:
    """Samples every broker's checkpointed HW of the partition on a thread: the high
    watermark a broker had acknowledged as committed by a given time."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.samples: dict[int, list[tuple[float, int]]] = {b.node_id: [] for b in cluster.brokers}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            for node in self.cluster.brokers:
                hw = checkpointed_hw(node)
                if hw >= 0:
                    self.samples[node.node_id].append((time.time(), hw))

    def hw_before(self, broker: int, at: float) -> int:
        """The highest HW ``broker`` had checkpointed before ``at`` (a 0.5 s margin)."""
        return max((hw for t, hw in self.samples[broker] if t < at - 0.5), default=-1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def assert_no_truncation_below_hw(cluster: Cluster, monitor: HwMonitor) -> None:
    below: dict[int, list[tuple[str, int, int]]] = {}
    for node in cluster.brokers:
        for at, offset in truncations(node):
            hw = monitor.hw_before(node.node_id, at)
            if offset < hw:
                when = time.strftime("%X", time.localtime(at))
                below.setdefault(node.node_id, []).append((when, offset, hw))
    assert not below, (
        f"brokers truncated {TOPIC}-0 below the high watermark they had checkpointed: "
        f"{below} (broker -> [(time, offset, HW)])"
    )


def restart(cluster: Cluster, producer: SequenceProducer, victim: ClusterNode) -> bool:
    """SIGKILL ``victim`` and start it again with old metadata to replay; True if it led."""
    leader, isr = partition_state(cluster, TOPIC)
    assert len(isr) == 3, (leader, isr)
    with producer._lock:
        acked = max(producer.acked.values(), default=-1)
    # The HW checkpoint is written every 5 s: wait until it covers what was acked by now, so
    # a truncation below it would cut acknowledged records.
    for node in cluster.brokers:
        wait_until(
            f"broker {node.node_id}'s HW checkpoint past offset {acked}",
            functools.partial(hw_past, node, acked),
            30,
        )
    victim.kill()
    if victim.node_id == leader:
        wait_until(
            "a new leader",
            lambda: partition_state(cluster, TOPIC)[0] not in (-1, victim.node_id),
        )
    launch_with_paused_controllers(cluster, victim)
    victim.wait_ready()
    wait_until(
        f"broker {victim.node_id} back in the ISR",
        lambda: len(partition_state(cluster, TOPIC)[1]) == 3,
        120,
    )
    restored_at = time.monotonic()
    wait_until("acks with the full ISR", lambda: producer.acks_after(restored_at), 60)
    return victim.node_id == leader


def assert_same_epochs_as_the_leader(cluster: Cluster, broker: int) -> None:
    leader, _ = partition_state(cluster, TOPIC)
    restarted = cluster.broker(broker)
    entries = wait_until(
        f"broker {broker}'s leader-epoch-checkpoint equal to the leader's ({leader})",
        lambda: (e := epoch_entries(restarted)) == epoch_entries(cluster.broker(leader)) and e,
        30,
    )
    print(f"restarted broker {broker}; leader {leader}; epoch cache {entries}")


def test_restart_replaying_old_metadata_never_moves_a_replica_backwards(cluster: Cluster) -> None:
    create_topic(cluster, TOPIC)
    wait_until("a full ISR", lambda: len(partition_state(cluster, TOPIC)[1]) == 3)
    monitor = HwMonitor(cluster)
    producer = SequenceProducer(cluster, TOPIC)
    producer.start()
    former_leaders: list[int] = []
    try:
        wait_until("first acks", lambda: producer.acks_after(0) > 200)
        for _ in range(LEADER_RESTARTS):
            leader, _ = partition_state(cluster, TOPIC)
            former_leaders.append(leader)
            assert restart(cluster, producer, cluster.broker(leader))
            assert_no_truncation_below_hw(cluster, monitor)
            assert_same_epochs_as_the_leader(cluster, leader)
        # A follower that led an old epoch: the metadata it replays names it leader of it.
        leader, _ = partition_state(cluster, TOPIC)
        follower = next(b for b in former_leaders if b != leader)
        assert not restart(cluster, producer, cluster.broker(follower))
        assert_no_truncation_below_hw(cluster, monitor)
        assert_same_epochs_as_the_leader(cluster, follower)
    finally:
        producer.stop()
        monitor.stop()
    assert not producer.errors, producer.errors[:10]
    end = max(producer.acked.values()) + 1
    records = read_back(cluster, TOPIC, end)
    lost = [n for n, offset in producer.acked.items() if records.get(offset) != str(n).encode()]
    print(f"acknowledged {len(producer.acked)} of {producer.sent} sent; lost {len(lost)}")
    assert lost == [], f"{len(lost)} acknowledged record(s) lost, e.g. {lost[:10]}"
    assert_no_truncation_below_hw(cluster, monitor)
    leader, isr = partition_state(cluster, TOPIC)
    assert len(isr) == 3, (leader, isr)
