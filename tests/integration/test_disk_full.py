"""A full disk on a real cluster (3 controllers + 3 brokers): a data log dir, the metadata log
dir, then one of two data log dirs, each a small tmpfs mount that a filler file fills to
ENOSPC, and last a controller's metadata log dir.

1. Broker 101 keeps its data log dir (``log.dirs``) on an 8 MiB tmpfs and leads a partition
   with replication factor 3 and ``min.insync.replicas=2`` while a confluent-kafka producer
   (``acks=all``, idempotent) writes to it. Once the dir is full the broker takes it offline
   and, since it has no other data log dir, halts as Kafka does: exit status 1 after
   "Shutdown broker because all log dirs in ... have failed". The controller fences it and
   moves the leadership; producing goes on. After the filler is removed and the broker
   restarted it recovers its log, rejoins the ISR, and every acknowledged record is read
   back.
2. Broker 102 keeps its metadata log dir (``metadata.log.dir``) on a tmpfs. Once it is full the
   next metadata append (the leader's no-op records arrive every
   ``metadata.max.idle.interval.ms``) fails and the node halts with a fatal fault naming the
   metadata log dir and the error (no silent hang with stale metadata); with room again it
   restarts and is unfenced.

3. Broker 103 has two data log dirs, each a tmpfs. Filling the one holding a partition it
   alone hosts takes only that dir offline: a produce there answers KAFKA_STORAGE_ERROR, the
   broker keeps running on its other dir, and the controller records the offline dir from the
   broker's heartbeats (KIP-858) and takes the partition's leadership away (no other replica:
   no leader). After a clean stop, freeing the space and a restart, the partition is served
   again with every record it held.

4. Broker 103 leads the partitions of a topic whose replicas it holds in both of its dirs,
   while a producer (``acks=all``) writes to every partition. Filling one dir moves the
   leadership (and 103's place in the ISR) of exactly the partitions in that dir to other
   brokers (KIP-858: the controller knows each replica's dir from AssignReplicasToDirs); the
   partitions in the healthy dir keep 103 as their leader, producing goes on everywhere and
   no acknowledged record is lost. Repaired and restarted, 103 rejoins every ISR.

5. Controller 3 keeps its metadata log on a tmpfs. Once it is full the controller halts with a
   fatal fault naming the dir; the two other voters keep a leader and the cluster takes admin
   writes; with room again it restarts and catches up with the quorum.

No node's log may ever contain "Task exception was never retrieved". The tests need root to
mount tmpfs and are skipped (saying so) otherwise.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparklog.client.producer import ProduceError, Producer, ProducerConfig
from sparklog.protocol.errors import ErrorCode
from tests.integration.cluster_harness import (
    Cluster,
    ClusterNode,
    consume_values,
    partition_metadata,
    running_cluster,
    wait_until,
)
from tests.integration.node_harness import assert_no_lost_task
from tests.integration.test_cluster_kraft import wait_caught_up

confluent_kafka = pytest.importorskip("confluent_kafka")
admin_module = pytest.importorskip("confluent_kafka.admin")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(420),
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root"),
]

TOPIC = "full-disk"
TMPFS_SIZE = "8m"
SETTINGS = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "broker.session.timeout.ms": 3000,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": 4000,
    "replica.fetch.backoff.ms": 200,
    "replica.fetch.wait.max.ms": 200,
}
WAIT_S = 90.0


def mount_tmpfs(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(path)], check=True
    )


def unmount(path: Path) -> None:
    for _ in range(50):
        done = subprocess.run(["umount", str(path)], capture_output=True, check=False)
        if done.returncode == 0 or b"not mounted" in done.stderr:
            return
        time.sleep(0.1)  # a child still holding a file there is being reaped


def fill(mount: Path) -> Path:
    """Write a filler file until the mount answers ENOSPC; the filler's path."""
    filler = mount / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (1 << 16, 4096, 512, 1):
            chunk = b"\0" * size
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, chunk)
    finally:
        os.close(fd)
    return filler


def admin(bootstrap: str) -> Any:
    return admin_module.AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def partition_state(cluster: Cluster) -> Any:
    return partition_metadata(cluster, TOPIC)


def wait_for(what: str, check: Any, timeout_s: float = WAIT_S) -> Any:
    return wait_until(what, check, timeout_s, interval_s=0.25, tolerate=(Exception,))


def halted(node: ClusterNode, timeout_s: float = WAIT_S) -> list[str]:
    """Wait for ``node`` to halt on its own; its exit status must be 1 (a fatal fault). The
    fatal lines of its log."""
    assert node.process is not None
    try:
        code = node.process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{node.name} still running:\n{node.log_tail()}") from None
    node.process = None
    assert code == 1, node.log_tail()
    log = node.log_path.read_text(errors="replace")
    fatal = [line for line in log.splitlines() if "Encountered fatal fault" in line]
    assert len(fatal) == 1, node.log_tail()
    return fatal


class Producing:
    """A producer thread (acks=all, idempotent) writing numbered values until stopped, round
    robin over ``partitions`` of ``topic``; ``acked`` are the values acknowledged, ``acked_at``
    the same by partition."""

    def __init__(
        self, cluster: Cluster, topic: str = TOPIC, partitions: tuple[int, ...] = (0,)
    ) -> None:
        self.topic, self.partitions = topic, partitions
        self.producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "message.timeout.ms": 120_000,
                "linger.ms": 5,
                "log_level": 0,
            }
        )
        self.acked: list[bytes] = []
        self.acked_at: dict[int, list[bytes]] = {p: [] for p in partitions}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _report(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.append(msg.value())
            self.acked_at[msg.partition()].append(msg.value())
        else:
            self.errors.append(str(err))

    def _run(self) -> None:
        sequence = 0
        while not self._stop.is_set():
            value = f"record-{sequence:08d}-".encode() + b"x" * 200
            try:
                partition = self.partitions[sequence % len(self.partitions)]
                self.producer.produce(
                    self.topic, value, partition=partition, on_delivery=self._report
                )
                sequence += 1
            except BufferError:
                pass
            self.producer.poll(0.002)

    def __enter__(self) -> Producing:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(timeout=30)
            self.producer.flush(150)


def assert_no_lost_task_anywhere(cluster: Cluster) -> None:
    for node in cluster.nodes:
        assert_no_lost_task(node.log_path)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("disk-full")
    data_mount, meta_mount = root / "tmpfs-data-101", root / "tmpfs-meta-102"
    jbod = [root / "tmpfs-data-103-a", root / "tmpfs-data-103-b"]
    controller_mount = root / "tmpfs-meta-controller-3"

    def place_dirs(cluster: Cluster) -> None:
        # 101: data on a tmpfs, metadata on the ordinary disk; 102 the other way round; 103
        # two data log dirs, each a tmpfs, and metadata on the ordinary disk.
        data_broker, meta_broker, jbod_broker = (cluster.broker(i) for i in (101, 102, 103))
        data_broker.props["log.dirs"] = str(data_mount)
        meta_broker.props["metadata.log.dir"] = str(meta_mount)
        jbod_broker.props["log.dirs"] = ",".join(str(d) for d in jbod)
        for node in (data_broker, jbod_broker):
            node.props["metadata.log.dir"] = str(node.workdir / "meta")
        for node in (data_broker, meta_broker, jbod_broker):
            node.write_properties()
        # Controller 3: its only dir (metadata log) on a tmpfs.
        cluster.controller(3).props["log.dirs"] = str(controller_mount)
        cluster.controller(3).write_properties()

    mounted: list[Path] = []
    try:
        for mount in (data_mount, meta_mount, *jbod, controller_mount):
            mount_tmpfs(mount)
            mounted.append(mount)
        with running_cluster(root, 3, 3, SETTINGS, prepare=place_dirs) as cluster:
            topic = admin_module.NewTopic(
                TOPIC,
                num_partitions=1,
                replica_assignment=[[101, 102, 103]],
                config={"min.insync.replicas": "2"},
            )
            client = admin(cluster.bootstrap_servers)  # kept alive until the result is in
            client.create_topics([topic], operation_timeout=30)[TOPIC].result(timeout=60)
            wait_for("101 leading the topic", lambda: partition_state(cluster).leader == 101)
            yield cluster
    finally:
        for mount in mounted:
            unmount(mount)


def test_a_full_data_log_dir_halts_the_broker_and_loses_no_acknowledged_record(
    cluster: Cluster,
) -> None:
    broker = cluster.broker(101)
    mount = Path(broker.props["log.dirs"])
    with Producing(cluster) as producing:
        wait_for("records acknowledged", lambda: len(producing.acked) >= 300)
        filler = fill(mount)
        fatal = halted(broker)
        assert f"Shutdown broker because all log dirs in {mount} have failed" in fatal[0]
        assert "No space left on device" in broker.log_path.read_text(errors="replace")
        leader = wait_for(
            "a new leader", lambda: partition_state(cluster).leader in (102, 103) or None
        )
        acked_at_move = len(producing.acked)
        wait_for("producing past the move", lambda: len(producing.acked) >= acked_at_move + 300)
    assert not producing.errors, producing.errors[:5]
    filler.unlink()
    broker.launch()
    broker.wait_ready()
    wait_for("101 back in the ISR", lambda: 101 in partition_state(cluster).isrs)
    log = broker.log_path.read_text(errors="replace")
    assert log.count("Encountered fatal fault") == 1, "the restart must not fail again"
    acked = set(producing.acked)
    consumed = set(
        consume_values(cluster.running_bootstrap_servers, TOPIC, 0, len(producing.acked), WAIT_S)
    )
    lost = acked - consumed
    assert not lost, f"{len(lost)} acknowledged records lost (new leader {leader})"
    assert_no_lost_task_anywhere(cluster)


def test_a_full_metadata_log_dir_is_a_fatal_fault_and_the_node_restarts(
    cluster: Cluster,
) -> None:
    broker = cluster.broker(102)
    mount = Path(broker.props["metadata.log.dir"])
    filler = fill(mount)
    # The leader appends a no-op record every metadata.max.idle.interval.ms: 102 must follow.
    fatal = halted(broker)
    assert str(mount) in fatal[0] and "No space left on device" in fatal[0], fatal[0]
    filler.unlink()
    broker.launch()
    broker.wait_ready()  # the client listener opens once the controller unfenced it
    wait_for("102 back in the ISR", lambda: 102 in partition_state(cluster).isrs)
    assert_no_lost_task_anywhere(cluster)


def test_one_of_two_log_dirs_failing_takes_only_its_partitions_offline(cluster: Cluster) -> None:
    broker = cluster.broker(103)
    topic = "one-dir-of-two"
    since = len(broker.log_path.read_text(errors="replace"))
    created = admin_module.NewTopic(topic, num_partitions=1, replica_assignment=[[103]])
    client = admin(cluster.bootstrap_servers)
    client.create_topics([created], operation_timeout=30)[topic].result(timeout=60)
    wait_for("the controller to place the replica", lambda: _placed(broker, since) >= 1)
    config = ProducerConfig(retries=5, retry_backoff_ms=200)
    with Producer(cluster.bootstrap_servers, config) as producer:
        for i in range(5):
            producer.send(topic, f"before-{i}".encode(), partition=0)
        producer.flush()
    dirs = [Path(d) for d in broker.props["log.dirs"].split(",")]
    failing = next(d for d in dirs if (d / f"{topic}-0").is_dir())
    filler = fill(failing)
    # No retry: the first answer is the storage error (a retry would find no leader at all).
    with Producer(cluster.bootstrap_servers, ProducerConfig(retries=0)) as producer:
        producer.send(topic, b"x" * 100_000, partition=0)  # more than a page: ENOSPC
        with pytest.raises(ProduceError) as raised:
            producer.flush()
    assert raised.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR, raised.value
    # The broker keeps running on its other dir and reports the failed one to the controller.
    wait_for(
        "the controller to record the offline dir",
        lambda: any(
            "in broker 103 marked offline" in c.log_path.read_text(errors="replace")
            for c in cluster.controllers
        ),
    )
    assert broker.is_running(), broker.log_tail()
    log = broker.log_path.read_text(errors="replace")
    assert f"(log dir {failing} is now offline)" in log and "Encountered fatal" not in log
    # Its only replica is in the offline dir: the partition has no leader (KIP-858).
    wait_for("no leader", lambda: partition_metadata(cluster, topic).leader == -1)
    # A clean stop with a dir offline, then a restart with room again: all is served.
    broker.stop()
    filler.unlink()
    broker.launch()
    broker.wait_ready()
    with Producer(cluster.running_bootstrap_servers, config) as producer:
        producer.send(topic, b"after", partition=0)
        producer.flush()
    values = consume_values(cluster.running_bootstrap_servers, topic, 0, 6, WAIT_S)
    assert values == [f"before-{i}".encode() for i in range(5)] + [b"after"]
    assert_no_lost_task_anywhere(cluster)


def _placed(broker: ClusterNode, since: int) -> int:
    """Replicas the controller placed in their log dirs for ``broker`` (its log after
    ``since``): AssignReplicasToDirs answered."""
    tail = broker.log_path.read_text(errors="replace")[since:]
    return sum(int(m.group(1)) for m in re.finditer(r"The controller placed (\d+) replicas", tail))


def test_a_failed_dir_of_two_moves_the_leadership_of_only_its_partitions(
    cluster: Cluster,
) -> None:
    broker = cluster.broker(103)
    topic, count = "jbod-leaders", 4
    partitions = tuple(range(count))
    since = len(broker.log_path.read_text(errors="replace"))
    created = admin_module.NewTopic(
        topic,
        num_partitions=count,
        replica_assignment=[[103, 101, 102]] * count,
        config={"min.insync.replicas": "2"},
    )
    client = admin(cluster.bootstrap_servers)
    client.create_topics([created], operation_timeout=30)[topic].result(timeout=60)

    def leaders() -> list[int]:
        return [partition_metadata(cluster, topic, p).leader for p in partitions]

    wait_for("103 leading every partition", lambda: leaders() == [103] * count)
    # 103 has two data log dirs: the controller left its replicas UNASSIGNED and learns
    # where each log went from AssignReplicasToDirs (KIP-858).
    wait_for("the controller to place 103's replicas", lambda: _placed(broker, since) >= count)
    dirs = [Path(d) for d in broker.props["log.dirs"].split(",")]
    holder = {p: next(d for d in dirs if (d / f"{topic}-{p}").is_dir()) for p in partitions}
    failing = holder[0]
    moved = [p for p in partitions if holder[p] == failing]
    kept = [p for p in partitions if holder[p] != failing]
    assert moved and kept, holder
    with Producing(cluster, topic, partitions) as producing:
        wait_for(
            "records acknowledged on every partition",
            lambda: all(len(producing.acked_at[p]) >= 100 for p in partitions),
        )
        filler = fill(failing)

        def moved_off() -> bool:
            now = leaders()
            assert all(now[p] == 103 for p in kept), now  # the healthy dir keeps its leader
            return all(now[p] in (101, 102) for p in moved)

        wait_for("the failed dir's partitions to get new leaders", moved_off)
        acked = {p: len(producing.acked_at[p]) for p in partitions}
        wait_for(
            "producing past the move on every partition",
            lambda: all(len(producing.acked_at[p]) >= acked[p] + 100 for p in partitions),
        )
        assert all(leaders()[p] == 103 for p in kept), leaders()
    assert not producing.errors, producing.errors[:5]
    assert broker.is_running(), broker.log_tail()
    for p in moved:
        assert 103 not in partition_metadata(cluster, topic, p).isrs
    for p in partitions:
        sent = producing.acked_at[p]
        read = consume_values(cluster.running_bootstrap_servers, topic, p, len(sent), WAIT_S)
        lost = set(sent) - set(read)
        assert not lost, f"{len(lost)} acknowledged records lost from {topic}-{p}"
    # Repaired and restarted, 103 recovers the failed dir's logs and rejoins their ISRs.
    broker.stop()
    filler.unlink()
    broker.launch()
    broker.wait_ready()
    wait_for(
        "103 back in every ISR",
        lambda: all(103 in partition_metadata(cluster, topic, p).isrs for p in partitions),
    )
    assert_no_lost_task_anywhere(cluster)


def test_a_full_metadata_log_dir_on_a_voter_halts_it_and_the_quorum_goes_on(
    cluster: Cluster,
) -> None:
    controller = cluster.controller(3)
    mount = Path(controller.props["log.dirs"])
    filler = fill(mount)
    fatal = halted(controller)  # a follower appends fetched records, a leader its own
    assert str(mount) in fatal[0] and "No space left on device" in fatal[0], fatal[0]
    assert cluster.leader_id() in (1, 2)
    topic = "after-a-voter-halted"
    created = admin_module.NewTopic(topic, num_partitions=1, replication_factor=1)
    client = admin(cluster.running_bootstrap_servers)
    client.create_topics([created], operation_timeout=30)[topic].result(timeout=60)
    filler.unlink()
    controller.launch()
    controller.wait_ready()
    wait_caught_up(cluster, controller)
    assert_no_lost_task_anywhere(cluster)
