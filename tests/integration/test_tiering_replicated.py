"""Tiered storage with replication factor 3 (3 controllers + 3 brokers, each its own process):
leader failover mid-copy and followers rebuilt from the store (KIP-405).

One scenario, in order, on a tiered topic with 1 MiB segments and ``local.retention.bytes=1``
(every copied segment leaves the local disks of all three replicas):

1. Records are produced with ``acks=all`` while the leader copies segments; the leader is
   SIGKILLed while an upload is in flight (objects of a segment the manifest does not name).
2. The new leader continues tiering from where the store ends: the manifest stays contiguous
   (no gap, no overlap), its newer entries are written by the new leader, nothing is uploaded
   twice (every offset is in exactly one Parquet object) and the killed upload's orphans are
   deleted.
3. A consumer from offset 0 (served from the store by the new leader, then from its disk) and
   a store-only read (pyarrow over the manifest's objects, no broker) see every record once,
   with its key, value, headers and timestamp.
4. The killed broker comes back as a follower; a follower whose partition directory was wiped
   restarts, rebuilds its state from the store (it does not copy the whole log: its local log
   starts above 0) and ends with the leader's leader-epoch cache, in the ISR.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparklog.storage.checkpoint import read_epoch_checkpoint
from tests.integration.cluster_harness import (
    FAST_REPLICATION,
    Cluster,
    ClusterNode,
    cli,
    create_topic,
    partition_metadata,
    running_cluster,
    wait_until,
)
from tests.integration.tiering_support import (
    Rec,
    StoreView,
    check_manifest_matches_store,
    check_records,
    file_store,
    make_records,
    now_ms,
    topic_configs,
)

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TOPIC = "tiered-rf3"
SETTINGS: dict[str, object] = {
    **FAST_REPLICATION,
    "remote.log.storage.system.enable": "true",
    "remote.log.manager.task.interval.ms": 300,
    "log.retention.check.interval.ms": 300,
}
WAIT_S = 120.0
FIRST = 20_000  # ~3 MB: a few segments tiered before the kill
DURING = 60_000  # produced while the leader is killed
AFTER = 15_000  # produced to the new leader


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> StoreView:
    return file_store(f"file://{tmp_path_factory.mktemp('store')}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, store: StoreView) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("tiered-rf3")
    overrides = {**SETTINGS, "sparklog.remote.storage.url": store.url}
    with running_cluster(root, controllers=3, brokers=3, overrides=overrides) as cluster:
        create_topic(cluster, TOPIC, config=topic_configs(**{"min.insync.replicas": "2"}))
        yield cluster


def leader_of(cluster: Cluster) -> int:
    def leader() -> int:
        found = int(partition_metadata(cluster, TOPIC).leader)
        return found if found >= 0 else 0

    return int(wait_until("a leader", leader, WAIT_S, interval_s=0.25, tolerate=(Exception,)))


def produce(cluster: Cluster, records: list[Rec], errors: list[Any], pause_s: float = 0.0) -> None:
    """Produce with acks=all, sleeping ``pause_s`` every 1,000 records."""
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 20,
            "message.timeout.ms": 120_000,
            "queue.buffering.max.messages": 1_000_000,
            "log_level": 0,
        }
    )

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for i, rec in enumerate(records):
        if pause_s and i % 1000 == 999:
            producer.poll(pause_s)
        while True:
            try:
                producer.produce(
                    TOPIC,
                    partition=0,
                    key=rec.key,
                    value=rec.value,
                    headers=list(rec.headers) or None,
                    timestamp=rec.timestamp,
                    on_delivery=report,
                )
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(180) == 0, "records left unacknowledged"


def consume(cluster: Cluster, count: int) -> list[tuple[int, Rec]]:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.running_bootstrap_servers,
            "group.id": f"check-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
            "fetch.max.bytes": 8_388_608,
            "log_level": 0,
        }
    )
    got: list[tuple[int, Rec]] = []
    try:
        consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + WAIT_S
        while len(got) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                assert msg.error() is None, f"consumer error: {msg.error()}"
                headers = tuple(
                    (k, None if v is None else bytes(v)) for k, v in msg.headers() or ()
                )
                got.append((msg.offset(), Rec(msg.key(), msg.value(), headers, msg.timestamp()[1])))
        for msg in consumer.consume(num_messages=100, timeout=1.0):
            raise AssertionError(f"unexpected record at offset {msg.offset()}")
    finally:
        consumer.close()
    return got


def inflight_upload(store: StoreView) -> bool:
    """The store holds objects of a segment its manifest does not name (a copy in flight)."""
    ids = {name[21:43] for name in store.segment_objects(TOPIC)}
    manifest = store.manifest(TOPIC)
    named = {s["segment_id"] for s in manifest["segments"]} if manifest else set()
    return not ids <= named


def partition_dir(node: ClusterNode) -> Path:
    return node.workdir / "data" / f"{TOPIC}-0"


def local_bases(node: ClusterNode) -> list[int]:
    return sorted(int(p.stem) for p in partition_dir(node).glob("*.log"))


def epochs(node: ClusterNode) -> list[tuple[int, int]]:
    return read_epoch_checkpoint(str(partition_dir(node) / "leader-epoch-checkpoint"))


def fully_tiered(node: ClusterNode, store: StoreView) -> bool:
    bases = local_bases(node)
    finished = store.finished(TOPIC)
    return len(bases) == 1 and bool(finished) and finished[-1]["end_offset"] + 1 == bases[0]


def test_failover_mid_copy_then_follower_rebuilt_from_the_store(
    cluster: Cluster, store: StoreView
) -> None:
    base_ts = now_ms() - 3_600_000
    produced = make_records(FIRST, base_ts, seed=1)
    errors: list[Any] = []
    produce(cluster, produced, errors)
    wait_until("two tiered segments", lambda: len(store.finished(TOPIC)) >= 2, WAIT_S)

    # 1. Kill the leader while a copy is in flight, with more records on the way.
    old_leader = cluster.broker(leader_of(cluster))
    more = make_records(DURING, base_ts, seed=2, first=FIRST)
    producer = threading.Thread(target=produce, args=(cluster, more, errors, 0.1))
    producer.start()
    time.sleep(1.0)
    deadline = time.monotonic() + 60.0
    while not inflight_upload(store) and time.monotonic() < deadline:
        time.sleep(0.002)
    mid_copy = inflight_upload(store)
    old_leader.kill()
    mid_produce = producer.is_alive()
    finished_at_kill = store.finished(TOPIC)
    producer.join(240)
    assert not producer.is_alive() and not errors, f"produce failed: {errors[:3]}"
    produced += more
    assert mid_copy, "no upload was in flight before the kill"
    assert mid_produce, "the producer was done before the kill"
    after = make_records(AFTER, base_ts, seed=3, first=len(produced))
    produce(cluster, after, errors)  # in the new leader's epoch
    assert not errors, f"produce failed: {errors[:3]}"
    produced += after

    # 2. The new leader continues tiering from where the store ends.
    new_leader = cluster.broker(
        wait_until(
            "a new leader",
            lambda: (lid := leader_of(cluster)) != old_leader.node_id and lid,
            WAIT_S,
            interval_s=0.25,
            tolerate=(Exception,),
        )
    )
    wait_until(
        "the new leader to tier every closed segment",
        lambda: fully_tiered(new_leader, store),
        WAIT_S,
        interval_s=0.5,
    )
    _named, unnamed = check_manifest_matches_store(store, TOPIC)  # contiguous, objects exist
    assert not unnamed, f"objects no manifest entry names (orphans left): {unnamed}"
    finished = store.finished(TOPIC)
    assert len(finished) > len(finished_at_kill)
    assert {s["broker_id"] for s in finished[len(finished_at_kill) :]} == {new_leader.node_id}

    # 3. Every record exactly once: in the store alone, and through the new leader from 0.
    tiered: list[tuple[int, Rec]] = []
    for segment in finished:
        table = store.read_parquet(TOPIC, segment).to_pylist()
        for row in table:
            headers = tuple((h["key"], h["value"]) for h in row["headers"] or ())
            tiered.append((row["offset"], Rec(row["key"], row["value"], headers, row["timestamp"])))
    end = finished[-1]["end_offset"] + 1
    check_records("store-only read", tiered, produced[:end])
    check_records("consumer from 0", consume(cluster, len(produced)), produced)

    # The new leader's remote-storage metrics (Kafka's names; meters with rates) and the copy
    # lag as `sparklog tiering describe` shows it.
    btm = "kafka.server:type=BrokerTopicMetrics,name="
    assert new_leader.metric(btm + "RemoteCopyBytesPerSec", "Count") > 0
    assert new_leader.metric(btm + "RemoteCopyBytesPerSec", "OneMinuteRate") > 0
    assert new_leader.metric(btm + "RemoteFetchRequestsPerSec", "Count") > 0
    assert new_leader.metric(btm + "RemoteCopyErrorsPerSec", "Count") == 0
    assert new_leader.metric(btm + "RemoteCopyLagSegments") == 0
    described = cli(
        "tiering",
        "describe",
        "--store",
        store.url,
        "--topic",
        TOPIC,
        "--bootstrap-server",
        cluster.running_bootstrap_servers.split(",")[0],
    )
    tiered_end = store.finished(TOPIC)[-1]["end_offset"]
    assert f"HighestTieredOffset: {tiered_end}" in described, described
    assert f"HighWatermark: {len(produced)}" in described, described

    # 4. The old leader rejoins; a follower with a wiped partition directory rebuilds from
    # the store and ends with the leader's epoch cache.
    old_leader.launch()
    old_leader.wait_ready()
    others = (new_leader.node_id, old_leader.node_id)
    follower = next(b for b in cluster.brokers if b.node_id not in others)
    follower.kill()
    shutil.rmtree(partition_dir(follower))
    follower.launch()
    follower.wait_ready()
    wait_until(
        "the wiped follower back in the ISR",
        lambda: (
            follower.node_id in partition_metadata(cluster, TOPIC).isrs
            and len(partition_metadata(cluster, TOPIC).isrs) == 3
        ),
        WAIT_S,
        interval_s=0.5,
        tolerate=(Exception,),
    )
    assert "from remote segment" in follower.log_path.read_text(errors="replace")
    assert follower.metric(btm + "BuildRemoteLogAuxStateRequestsPerSec", "Count") >= 1
    assert local_bases(follower)[0] > 0, "the follower copied the whole log from the leader"
    deadline = time.monotonic() + 30.0
    while epochs(follower) != epochs(new_leader) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert epochs(follower) == epochs(new_leader)
    assert len(epochs(new_leader)) >= 2, epochs(new_leader)
