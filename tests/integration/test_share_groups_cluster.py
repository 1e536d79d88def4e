"""Share groups survive SIGKILL of the share-partition leader and of the share coordinator
(RF 3, ``min.insync.replicas=2``): afterwards every record was accepted at least once, and no
record whose acceptance the broker confirmed was delivered again (KIP-932's at-least-once).

Two share consumers in explicit mode accept every record they get and ``commit_sync``; a record
counts as accepted when the commit for its partition came back without an error. While they
consume, the leader of the topic's partition is SIGKILLed and restarted, then the leader of the
``__share_group_state`` partition that holds the share-partition's state, then the group
coordinator (the leader of the group's ``__consumer_offsets`` partition): the new coordinator
replays the group's membership, so ShareGroupDescribe shows the same members with the same
epochs after the kill as before it (no member rejoined).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")
import contextlib

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer, TopicCollection
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from sparklog.client.admin import AdminClient as SparklogAdmin
from sparklog.coordinator.coordinator import partition_for
from tests.integration.cluster_harness import (
    REPLICATED_FAILOVER,
    Cluster,
    partition_metadata,
    running_cluster,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

STATE_PARTITIONS = 3
OFFSETS_PARTITIONS = 3
SETTINGS = {
    **REPLICATED_FAILOVER,
    "offsets.topic.num.partitions": OFFSETS_PARTITIONS,
    "group.share.record.lock.duration.ms": 5000,
    "group.share.heartbeat.interval.ms": 1000,
    "share.coordinator.state.topic.num.partitions": STATE_PARTITIONS,
    "share.coordinator.state.topic.replication.factor": 3,
    "share.coordinator.state.topic.min.isr": 2,
    # Snapshots and pruning often, so recovery reads a pruned log.
    "share.coordinator.snapshot.update.records.per.snapshot": 10,
    "share.coordinator.state.topic.prune.interval.ms": 1,
}
SHARE_ON = {"share.version": 1}
TOPIC = "work"
GROUP = "queue"
RECORDS = 900
DEADLINE_S = 240.0
WARMUP = b"warmup"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    # Share groups on as Kafka turns them on: share.version finalized by the controller.
    with running_cluster(
        tmp_path, controllers=1, brokers=3, overrides=SETTINGS, bootstrap_features=SHARE_ON
    ) as cluster:
        yield cluster


class Ledger:
    """What the consumers saw: deliveries, and the records whose acceptance was confirmed."""

    def __init__(self) -> None:
        self.accepted: set[bytes] = set()
        self.delivered_after_accept: list[tuple[bytes, int]] = []
        self.deliveries = 0

    def consume(self, consumer: Any) -> None:
        msgs = [m for m in consumer.poll(0.2) if m.error() is None]
        if not msgs:
            return
        for msg in msgs:
            self.deliveries += 1
            if msg.value() in self.accepted and msg.value() != WARMUP:
                self.delivered_after_accept.append((msg.value(), msg.delivery_count()))
            consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
        try:
            results = consumer.commit_sync(30)
        except Exception:
            return
        failed = {(tp.topic, tp.partition) for tp, error in results.items() if error is not None}
        for msg in msgs:
            if (msg.topic(), msg.partition()) not in failed:
                self.accepted.add(msg.value())


def producer(cluster: Cluster) -> Any:
    return Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "log_level": 0})


def share_consumer(cluster: Cluster) -> Any:
    consumer = ShareConsumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": GROUP,
            "share.acknowledgement.mode": "explicit",
            "log_level": 0,
        }
    )
    consumer.subscribe([TOPIC])
    return consumer


def state_partition_leader(cluster: Cluster, topic_id: str) -> int:
    index = partition_for(f"{GROUP}:{topic_id}:0", STATE_PARTITIONS)
    return int(partition_metadata(cluster, "__share_group_state", index).leader)


def group_coordinator(cluster: Cluster) -> int:
    index = partition_for(GROUP, OFFSETS_PARTITIONS)
    return int(partition_metadata(cluster, "__consumer_offsets", index).leader)


def membership(cluster: Cluster, count: int = 2) -> tuple[int, dict[str, int]] | None:
    """(group epoch, member id -> member epoch) from the group coordinator, once ``count``
    members all hold the group epoch; None until then (or while the coordinator moves)."""
    with SparklogAdmin(cluster.running_bootstrap_servers) as admin:
        group = admin.coordinator(GROUP).request(
            "ShareGroupDescribe", {"group_ids": [GROUP], "include_authorized_operations": False}
        )["groups"][0]
    if group["error_code"] != 0:
        return None
    epochs = {m["member_id"]: m["member_epoch"] for m in group["members"]}
    if len(epochs) != count or set(epochs.values()) != {group["group_epoch"]}:
        return None
    return group["group_epoch"], epochs


def join_and_leave(cluster: Cluster, ledger: Ledger) -> None:
    """A third member joins (ShareGroupDescribe shows three at one epoch), then leaves."""
    extra = share_consumer(cluster)

    def three() -> Any:
        ledger.consume(extra)
        return membership(cluster, 3)

    try:
        wait_until("a third member", three, tolerate=(Exception,))
    finally:
        extra.close()


def kill_and_restart(
    cluster: Cluster, broker_id: int, consumers: list[Any], ledger: Ledger
) -> None:
    node = cluster.broker(broker_id)
    node.kill()
    # Keep consuming while it is down, then bring it back (min.insync.replicas=2 needs it
    # before the next kill).
    until = time.monotonic() + 8
    while time.monotonic() < until:
        for c in consumers:
            ledger.consume(c)
    node.launch()
    node.wait_ready()


def test_share_group_survives_leader_and_share_coordinator_kills(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(60)
    wait_until("the topic's leader", lambda: partition_metadata(cluster, TOPIC).leader >= 0)
    prod = producer(cluster)
    consumers = [share_consumer(cluster) for _ in range(2)]
    ledger = Ledger()
    try:
        # The share-partition starts at the log end (share.auto.offset.reset=latest): wait
        # until a member receives a warm-up record before producing the checked ones.
        deadline = time.monotonic() + DEADLINE_S
        while WARMUP not in ledger.accepted:
            assert time.monotonic() < deadline, "no warm-up record accepted"
            prod.produce(TOPIC, value=WARMUP)
            prod.flush(30)
            for c in consumers:
                ledger.consume(c)
        topic_id = str(admin.describe_topics(TopicCollection([TOPIC]))[TOPIC].result(30).topic_id)
        wanted: set[bytes] = set()
        kills: list[str] = []
        victims = ("share-partition leader", "share coordinator", "group coordinator", None)
        members_before = members_after = None
        for phase, victim in enumerate(victims):
            batch = {f"m{phase}-{i}".encode() for i in range(RECORDS // 3)}
            for value in sorted(batch):
                prod.produce(TOPIC, value=value)
            assert prod.flush(60) == 0
            wanted |= batch
            # Kill in the middle of the phase's records; after the last phase, take them all.
            target = len(wanted) - (RECORDS // 6 if victim else 0)
            while len(ledger.accepted & wanted) < target:
                assert time.monotonic() < deadline, (
                    f"{len(wanted - ledger.accepted)} records never accepted after kills {kills}"
                )
                for c in consumers:
                    ledger.consume(c)
            if victim == "share-partition leader":
                broker_id = int(partition_metadata(cluster, TOPIC).leader)
            elif victim == "share coordinator":
                broker_id = state_partition_leader(cluster, topic_id)
            elif victim == "group coordinator":
                broker_id = group_coordinator(cluster)
                # A third member joins and leaves first, so the group epoch passes 2, all two
                # members rejoining from scratch would reach: a rejoin after the kill shows.
                join_and_leave(cluster, ledger)
                members_before = wait_until(
                    "a stable share group", lambda: membership(cluster), tolerate=(Exception,)
                )
                assert members_before[0] > 2, members_before
            else:
                break
            kills.append(f"{victim} {broker_id}")
            kill_and_restart(cluster, broker_id, consumers, ledger)
            if victim == "group coordinator":
                members_after = wait_until(
                    "the new coordinator's members",
                    lambda: membership(cluster),
                    tolerate=(Exception,),
                )
        # Go on polling a while: nothing accepted may come back.
        settle = time.monotonic() + 8
        while time.monotonic() < settle:
            for c in consumers:
                ledger.consume(c)
    finally:
        for c in consumers:
            with contextlib.suppress(Exception):
                c.close()
    print(f"kills: {kills}; deliveries: {ledger.deliveries}; accepted: {len(ledger.accepted)}")
    assert len(kills) == 3, kills
    # The same members with the same epochs: none rejoined after the coordinator moved.
    print(f"members before the group coordinator's kill: {members_before}; after: {members_after}")
    assert members_after == members_before
    assert wanted <= ledger.accepted
    assert ledger.delivered_after_accept == []
    # Everything was accepted, so the share-partition lag (DescribeShareGroupOffsets v1,
    # KIP-1226) is 0: the group coordinator reads the delivery complete count the leader wrote
    # from the share coordinator and the high watermark from the partition leader.
    end = wait_until("the lag to reach 0", lambda: share_lag(cluster), tolerate=(Exception,))
    assert end[1] == 0 and end[0] > RECORDS, end


def share_lag(cluster: Cluster) -> tuple[int, int] | None:
    """(start offset, lag) of the share-partition once the lag is 0, else None."""
    with SparklogAdmin(cluster.running_bootstrap_servers) as admin:
        group = admin.coordinator(GROUP).request(
            "DescribeShareGroupOffsets", {"groups": [{"group_id": GROUP, "topics": None}]}
        )["groups"][0]
    part = group["topics"][0]["partitions"][0]
    if group["error_code"] or part["error_code"] or part["lag"] != 0:
        return None
    return part["start_offset"], part["lag"]
