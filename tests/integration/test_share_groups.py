"""KIP-932 share groups with confluent-kafka's ShareConsumer (librdkafka's share consumer).

One node with share groups enabled, an acquisition lock of 5 s and a delivery count limit of 3.
Every test first waits until its group's share-partition exists (``share.auto.offset.reset`` is
``latest``, Kafka's default: warm-up records are produced until a member receives one), then
produces the records it checks:

- three members of one group on a single partition each get records, and every record is
  delivered exactly once with implicit acknowledgement;
- explicit acknowledgement: a RELEASEd record comes back with delivery count 2, a REJECTed one
  never comes back, ACCEPTed ones never come back;
- a member that closes holding unacknowledged records, and one that stalls past the lock
  duration, have their records delivered to another member;
- a record released on every delivery is archived after the delivery count limit.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")
from confluent_kafka import AcknowledgeType, ShareConsumer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    ResourceType,
)

from sparklog.cli.admin_client import LATEST
from sparklog.cli.admin_client import AdminClient as SparklogAdmin
from sparklog.cli.metrics_tool import fetch_metrics
from tests.integration.ck_helpers import (
    admin_for,
    create_topic,
    make_producer,
    wait_for_partitions,
)
from tests.integration.cli_support import tool
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node, free_port

pytestmark = pytest.mark.integration

LOCK_MS = 5000
DELIVERY_LIMIT = 3
DEADLINE_S = 90.0
WARMUP = b"warmup"


@pytest.fixture(scope="module")
def share_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    factory = NodeFactory(tmp_path_factory.mktemp("share-node"))
    try:
        node = factory.create(
            {
                "group.share.record.lock.duration.ms": LOCK_MS,
                "group.share.delivery.count.limit": DELIVERY_LIMIT,
                "group.share.heartbeat.interval.ms": 1000,
                "sparklog.metrics.listener": f"127.0.0.1:{free_port()}",
                "share.coordinator.snapshot.update.records.per.snapshot": 10,
                "share.coordinator.state.topic.prune.interval.ms": 1,
            },
            start=False,
        )
        # Share groups on as Kafka 4.2 turns them on: a 4.2 cluster finalizes share.version=1
        # at format (ShareVersion SV_1 bootstraps from metadata.version 4.2-IV0).
        node.release_version = "4.2"
        node.start()
        yield node
    finally:
        factory.close()


def share_consumer(node: Node, group: str, topic: str, explicit: bool = False) -> Any:
    consumer = ShareConsumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit" if explicit else "implicit",
        }
    )
    consumer.subscribe([topic])
    return consumer


@contextmanager
def closing(consumers: list[Any]) -> Iterator[list[Any]]:
    try:
        yield consumers
    finally:
        for c in consumers:
            with contextlib.suppress(Exception):  # a consumer the test closed already
                c.close()


def produce(node: Node, topic: str, values: list[bytes]) -> None:
    producer = make_producer(node)
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(30) == 0


def records(consumer: Any, timeout_s: float = 0.2) -> list[Any]:
    out = []
    for msg in consumer.poll(timeout_s):
        assert msg.error() is None, msg.error()
        out.append(msg)
    return out


def acknowledge_all(consumer: Any, msgs: list[Any], ack: Any = None) -> None:
    for msg in msgs:
        consumer.acknowledge(msg, ack if ack is not None else AcknowledgeType.ACCEPT)


def warm_up(node: Node, topic: str, consumers: list[Any], explicit: bool = False) -> None:
    """Produce warm-up records until a member receives one: the share-partition then exists
    and every record produced afterwards is the group's."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        assert time.monotonic() < deadline, "no member received a warm-up record"
        produce(node, topic, [WARMUP])
        got = False
        for c in consumers:
            msgs = records(c, 0.5)
            if explicit:
                acknowledge_all(c, msgs)
            got = got or any(m.value() == WARMUP for m in msgs)
        if got:
            return


def test_members_share_one_partition_each_record_once(share_node: Node) -> None:
    """Rounds of 300 records until every member has received some (members join and fetch at
    their own pace, so how many rounds that takes is not fixed), then every record produced
    must have been delivered exactly once."""
    topic = unique_topic("share-once")
    create_topic(share_node, topic, 1)
    group = unique_topic("sg")
    with closing([share_consumer(share_node, group, topic) for _ in range(3)]) as consumers:
        warm_up(share_node, topic, consumers)
        wanted: list[bytes] = []
        delivered: dict[bytes, int] = {}
        by_member: dict[int, int] = {i: 0 for i in range(len(consumers))}
        deadline = time.monotonic() + DEADLINE_S

        def poll_all(timeout_s: float) -> None:
            for i, c in enumerate(consumers):
                for msg in records(c, timeout_s):
                    if msg.value() != WARMUP:
                        delivered[msg.value()] = delivered.get(msg.value(), 0) + 1
                        by_member[i] += 1

        while len(wanted) < 3000 or not all(by_member.values()):
            assert time.monotonic() < deadline, f"members got {by_member}"
            batch = [f"r{i}".encode() for i in range(len(wanted), len(wanted) + 300)]
            produce(share_node, topic, batch)
            wanted += batch
            poll_all(0.1)
        while len(delivered) < len(wanted):
            assert time.monotonic() < deadline, f"{len(wanted) - len(delivered)} never delivered"
            poll_all(0.2)
        # Poll on a while: nothing accepted comes back.
        settle = time.monotonic() + 3
        while time.monotonic() < settle:
            for c in consumers:
                for msg in records(c):
                    assert msg.value() == WARMUP, f"{msg.value()!r} delivered again"
    assert set(delivered) == set(wanted)
    assert [v for v, n in delivered.items() if n != 1] == []
    assert all(n > 0 for n in by_member.values()), by_member


def test_partitions_added_to_a_subscribed_topic_are_assigned(share_node: Node) -> None:
    """KIP-1101: the topic's metadata hash changes when partitions are added, so the group
    coordinator bumps the group epoch and assigns the new partition at the next heartbeat;
    records produced to it are then delivered."""
    topic = unique_topic("share-grow")
    create_topic(share_node, topic, 1)
    group = unique_topic("sg")
    with closing([share_consumer(share_node, group, topic)]) as consumers:
        warm_up(share_node, topic, consumers)
        with SparklogAdmin(share_node.bootstrap) as admin:
            before = share_group(admin, group)
        admin_client = admin_for(share_node)
        admin_client.create_partitions([NewPartitions(topic, 2)])[topic].result(30)
        wait_for_partitions(share_node, topic, 2)
        producer = make_producer(share_node)
        deadline = time.monotonic() + DEADLINE_S
        seen: set[int] = set()
        while 1 not in seen:
            assert time.monotonic() < deadline, f"partition 1 never assigned (saw {seen})"
            producer.produce(topic, value=b"grow", partition=1)
            producer.flush(30)
            seen |= {m.partition() for m in records(consumers[0], 0.5)}
        with SparklogAdmin(share_node.bootstrap) as admin:
            after = share_group(admin, group)
    assert after["group_epoch"] > before["group_epoch"], (before, after)
    (member,) = after["members"]
    assert member["assignment"]["topic_partitions"][0]["partitions"] == [0, 1], after


def share_group(admin: SparklogAdmin, group: str) -> dict[str, Any]:
    described: dict[str, Any] = admin.coordinator(group).request(
        "ShareGroupDescribe", {"group_ids": [group], "include_authorized_operations": False}
    )["groups"][0]
    return described


def test_explicit_accept_release_reject(share_node: Node) -> None:
    topic = unique_topic("share-explicit")
    create_topic(share_node, topic, 1)
    group = unique_topic("sg")
    with closing([share_consumer(share_node, group, topic, explicit=True)]) as (consumer,):
        warm_up(share_node, topic, [consumer], explicit=True)
        produce(share_node, topic, [b"release-me", b"reject-me", b"accept-me"])
        seen: list[tuple[bytes, int]] = []
        deadline = time.monotonic() + DEADLINE_S
        while (b"release-me", 2) not in seen:
            assert time.monotonic() < deadline, f"seen {seen}"
            msgs = records(consumer)
            for msg in msgs:
                seen.append((msg.value(), msg.delivery_count()))
                if msg.value() == b"release-me" and msg.delivery_count() == 1:
                    consumer.acknowledge(msg, AcknowledgeType.RELEASE)
                elif msg.value() == b"reject-me":
                    consumer.acknowledge(msg, AcknowledgeType.REJECT)
                else:
                    consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
            if msgs:
                consumer.commit_sync()
        settle = time.monotonic() + 3
        while time.monotonic() < settle:
            msgs = records(consumer)
            seen += [(m.value(), m.delivery_count()) for m in msgs]
            acknowledge_all(consumer, msgs)
    values = [v for v, _ in seen if v != WARMUP]
    assert values.count(b"reject-me") == 1
    assert values.count(b"accept-me") == 1
    assert [c for v, c in seen if v == b"release-me"] == [1, 2]


def test_closed_or_stalled_member_records_go_to_another(share_node: Node) -> None:
    topic = unique_topic("share-redeliver")
    create_topic(share_node, topic, 1)
    group = unique_topic("sg")
    holder = share_consumer(share_node, group, topic, explicit=True)
    other = share_consumer(share_node, group, topic)
    with closing([holder, other]):
        warm_up(share_node, topic, [holder], explicit=True)
        for case in ("close", "stall"):
            wanted = {f"{case}-{i}".encode() for i in range(5)}
            produce(share_node, topic, sorted(wanted))
            held: list[Any] = []
            deadline = time.monotonic() + DEADLINE_S
            while not held:
                assert time.monotonic() < deadline, f"{case}: the holder got nothing"
                held = [m for m in records(holder) if m.value() in wanted]
            if case == "close":
                holder.close()  # unacknowledged: released when its share session closes
            # else: the holder never polls again; its locks expire after LOCK_MS
            redelivered: dict[bytes, int] = {}
            while not {m.value() for m in held} <= set(redelivered):
                assert time.monotonic() < deadline, f"{case}: redelivered only {redelivered}"
                for msg in records(other):
                    redelivered[msg.value()] = msg.delivery_count()
            assert all(redelivered[m.value()] == 2 for m in held), redelivered
            if case == "close":
                holder = share_consumer(share_node, group, topic, explicit=True)
        # The stalled holder's locks timed out (the closed one's were released, not timed out).
        metrics = fetch_metrics(share_node.properties["sparklog.metrics.listener"])
        tags = f"group={group},topic={topic},partition=0"
        prefix = "kafka.server:type=SharePartitionMetrics,name="
        timeouts = metrics[f"{prefix}AcquisitionLockTimeoutPerSec,{tags}"]
        assert timeouts["Count"] >= len(held), (timeouts, held)
        batches = metrics[f"{prefix}InFlightBatchMessageCount,{tags}"]
        assert batches["Count"] > 0 and batches["Max"] >= 1, batches


def test_delivery_count_limit_archives_a_record(share_node: Node) -> None:
    topic = unique_topic("share-limit")
    create_topic(share_node, topic, 1)
    group = unique_topic("sg")
    with closing([share_consumer(share_node, group, topic, explicit=True)]) as (consumer,):
        warm_up(share_node, topic, [consumer], explicit=True)
        produce(share_node, topic, [b"poison", b"after"])
        counts: list[int] = []
        deadline = time.monotonic() + DEADLINE_S
        after_seen = False
        quiet_until = None
        while quiet_until is None or time.monotonic() < quiet_until:
            assert time.monotonic() < deadline, f"poison deliveries {counts}"
            msgs = records(consumer)
            for msg in msgs:
                if msg.value() == b"poison":
                    counts.append(msg.delivery_count())
                    consumer.acknowledge(msg, AcknowledgeType.RELEASE)
                else:
                    after_seen = after_seen or msg.value() == b"after"
                    consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
            if msgs:
                consumer.commit_sync()
            if quiet_until is None and len(counts) >= DELIVERY_LIMIT and after_seen:
                quiet_until = time.monotonic() + 3  # a further delivery would show by then
    assert counts == list(range(1, DELIVERY_LIMIT + 1))


def test_share_groups_tool_lists_describes_resets_and_deletes(share_node: Node) -> None:
    topic = unique_topic("share-cli")
    create_topic(share_node, topic, 2)
    group = unique_topic("sg")
    bootstrap = share_node.bootstrap
    consumers = [share_consumer(share_node, group, topic, explicit=True) for _ in range(2)]
    with closing(consumers):
        warm_up(share_node, topic, consumers, explicit=True)
        produce(share_node, topic, [f"c{i}".encode() for i in range(40)])
        accepted = 0
        deadline = time.monotonic() + DEADLINE_S
        while accepted < 10:
            assert time.monotonic() < deadline, "nothing consumed"
            for c in consumers:
                msgs = records(c)
                acknowledge_all(c, msgs)
                accepted += len(msgs)
                if msgs:
                    c.commit_sync()
        listed = tool(bootstrap, "share-groups", "--list")
        assert listed.status == 0 and group in listed.out.split(), listed.out
        members = tool(bootstrap, "share-groups", "--describe", "--group", group, "--members")
        assert members.status == 0, members.err
        rows = [line.split() for line in members.out.splitlines() if line.startswith(group)]
        assert len(rows) == 2, members.out
        with SparklogAdmin(bootstrap) as admin:  # DescribeGroups is for classic groups
            described_classic = admin.coordinator(group).request(
                "DescribeGroups", {"groups": [group], "include_authorized_operations": False}
            )["groups"][0]
        assert described_classic["error_code"] == 69, described_classic  # GROUP_ID_NOT_FOUND
        assert described_classic["error_message"] == f"Group {group} is not a classic group."
        refused = tool(bootstrap, "share-groups", "--reset-offsets", "--group", group,
                       "--topic", topic, "--to-earliest", "--execute")  # fmt: skip
        assert refused.status == 1 and "not empty" in refused.err, refused.err
    described = tool(bootstrap, "share-groups", "--describe", "--group", group)
    assert described.status == 0, described.err
    offsets = {
        int(row[2]): (int(row[4]), int(row[5]))
        for row in (line.split() for line in described.out.splitlines())
        if row and row[0] == group and row[1] == topic
    }
    assert set(offsets) == {0, 1}, described.out
    assert all(start > 0 for start, _lag in offsets.values()), described.out
    # LAG (KIP-1226, DescribeShareGroupOffsets v1): high watermark - start offset - records past
    # it whose delivery is complete; the accepted ones are complete, released ones are not.
    assert sum(lag for _start, lag in offsets.values()) == 40 - accepted, described.out
    with SparklogAdmin(bootstrap) as admin:
        v0 = admin.coordinator(group).request(
            "DescribeShareGroupOffsets",
            {"groups": [{"group_id": group, "topics": None}]},
            version=0,
        )["groups"][0]["topics"][0]["partitions"]
    assert all(p["lag"] == -1 and p["start_offset"] > 0 for p in v0), v0  # v0: no Lag
    deadline = time.monotonic() + DEADLINE_S
    while (
        tool(bootstrap, "share-groups", "--describe", "--group", group, "--state").out.count(
            "Empty"
        )
        == 0
    ):
        assert time.monotonic() < deadline, "the members never left"
        time.sleep(0.5)
    reset = tool(bootstrap, "share-groups", "--reset-offsets", "--group", group,
                 "--topic", topic, "--to-earliest", "--execute")  # fmt: skip
    assert reset.status == 0, reset.err
    after = tool(bootstrap, "share-groups", "--describe", "--group", group)
    starts = [
        int(row[4])
        for row in (line.split() for line in after.out.splitlines())
        if row and row[0] == group and row[1] == topic
    ]
    assert starts == [0, 0], after.out
    lags = [
        int(row[5])
        for row in (line.split() for line in after.out.splitlines())
        if row and row[0] == group and row[1] == topic
    ]
    with SparklogAdmin(bootstrap) as admin:
        ends = admin.list_offsets([(topic, 0), (topic, 1)], LATEST)
    # from a reset start offset nothing is complete: the lag is the whole partition
    assert lags == [ends[(topic, 0)][0], ends[(topic, 1)][0]], (after.out, ends)
    # The reset takes effect: a new member gets the accepted records again.
    with closing([share_consumer(share_node, group, topic)]) as (again,):
        seen: set[bytes] = set()
        deadline = time.monotonic() + DEADLINE_S
        while len({v for v in seen if v.startswith(b"c")}) < 40:
            assert time.monotonic() < deadline, f"after the reset only {len(seen)} delivered"
            seen |= {m.value() for m in records(again)}
    deadline = time.monotonic() + DEADLINE_S
    while True:
        deleted = tool(bootstrap, "share-groups", "--delete", "--group", group)
        if deleted.status == 0:
            break
        assert time.monotonic() < deadline, deleted.out
        time.sleep(0.5)
    assert f"('{group}') was successful" in deleted.out
    assert group not in tool(bootstrap, "share-groups", "--list").out.split()


def set_group_configs(node: Node, group: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    resource = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
            for k, v in configs.items()
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def test_group_configs_earliest_and_read_committed(share_node: Node) -> None:
    """share.auto.offset.reset=earliest (set with IncrementalAlterConfigs on the GROUP) reads
    what was produced before the group existed; share.isolation.level=read_committed never
    hands out a record of an aborted transaction."""
    topic = unique_topic("share-configs")
    create_topic(share_node, topic, 1)
    group = unique_topic("sg")
    set_group_configs(
        share_node,
        group,
        {"share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed"},
    )
    produce(share_node, topic, [f"before-{i}".encode() for i in range(5)])
    txn = make_producer(
        share_node,
        **{"transactional.id": unique_topic("txn"), "enable.idempotence": True, "acks": "all"},
    )
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(5):
        txn.produce(topic, value=f"aborted-{i}".encode())
    txn.abort_transaction(30)
    txn.begin_transaction()
    for i in range(5):
        txn.produce(topic, value=f"committed-{i}".encode())
    txn.commit_transaction(30)
    wanted = {f"before-{i}".encode() for i in range(5)} | {
        f"committed-{i}".encode() for i in range(5)
    }
    seen: list[bytes] = []
    with closing([share_consumer(share_node, group, topic)]) as (consumer,):
        deadline = time.monotonic() + DEADLINE_S
        while not wanted <= set(seen):
            assert time.monotonic() < deadline, f"seen only {seen}"
            seen += [m.value() for m in records(consumer)]
        settle = time.monotonic() + 3
        while time.monotonic() < settle:
            seen += [m.value() for m in records(consumer)]
    assert sorted(seen) == sorted(wanted), seen
    # The consumer's close sent its acknowledgements: Kafka's share metrics count them.
    metrics = fetch_metrics(share_node.properties["sparklog.metrics.listener"])
    fetches = metrics[
        f"kafka.server:type=BrokerTopicMetrics,name=TotalShareFetchRequestsPerSec,topic={topic}"
    ]
    assert fetches["Count"] > 0, fetches
    accepted = metrics[
        "kafka.server:type=ShareGroupMetrics,name=RecordAcknowledgementsPerSec,ackType=Accept"
    ]
    assert accepted["Count"] >= len(wanted), accepted
    groups = metrics["kafka.server:type=group-coordinator-metrics,protocol=share,name=group-count"]
    assert groups["Value"] >= 1, groups
    window = metrics[
        "kafka.server:type=SharePartitionMetrics,name=InFlightMessageCount,"
        f"group={group},topic={topic},partition=0"
    ]
    assert window["Value"] == 0, window  # everything acknowledged: nothing in flight


def test_share_apis_are_off_until_share_version_is_finalized(node: Node, share_node: Node) -> None:
    """A node formatted without ``--feature share.version=1`` neither advertises nor serves
    the share-group APIs (UNSUPPORTED_VERSION, as Kafka's isShareGroupProtocolEnabled gate)
    until ``features upgrade`` finalizes it; ``features disable`` removes it again."""
    hello = {"client_software_name": "sparklog-test", "client_software_version": "0"}
    heartbeat = {
        "group_id": "g",
        "member_id": "m",
        "member_epoch": 0,
        "rack_id": None,
        "subscribed_topic_names": ["t"],
    }
    with SparklogAdmin(node.bootstrap) as admin:
        versions = admin.request("ApiVersions", hello, version=3)
        assert not {a["api_key"] for a in versions["api_keys"]} & {76, 77, 78, 79}
        assert "share.version" in {f["name"] for f in versions["supported_features"]}
        assert "share.version" not in {f["name"] for f in versions["finalized_features"]}
        refused = admin.request("ShareGroupHeartbeat", heartbeat, version=1)
        assert refused["error_code"] == 35, refused  # UNSUPPORTED_VERSION
    # UpdateFeatures (kafka-features.sh upgrade) turns them on without a restart, disable off.
    upgraded = tool(node.bootstrap, "features", "upgrade", "--feature", "share.version=1")
    assert (upgraded.status, upgraded.out.strip()) == (0, "share.version was upgraded to 1.")
    with SparklogAdmin(node.bootstrap) as admin:
        deadline = time.monotonic() + 30
        while admin.request("ShareGroupHeartbeat", heartbeat, version=1)["error_code"] == 35:
            assert time.monotonic() < deadline, "share.version=1 never reached the broker"
            time.sleep(0.1)
    disabled = tool(node.bootstrap, "features", "disable", "--feature", "share.version")
    assert (disabled.status, disabled.out.strip()) == (0, "share.version was disabled.")
    with SparklogAdmin(share_node.bootstrap) as admin:
        versions = admin.request("ApiVersions", hello, version=3)
        assert {76, 77, 78, 79} <= {a["api_key"] for a in versions["api_keys"]}
        finalized = {f["name"]: f["max_version_level"] for f in versions["finalized_features"]}
        assert finalized["share.version"] == 1
