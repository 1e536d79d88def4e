"""Consumer groups with kafka-python against a real sparklog node.

Three consumers share a 6-partition topic, one leaves and another joins; every record is
consumed at least once and the committed offsets reach the end of every partition; they
survive a SIGKILL of the node.

Each consumer polls in a loop on a thread of its own, as applications run kafka-python.
Polling several consumers in turn from one thread does not work with kafka-python 3.0.12: a
join that completes while its consumer is not inside ``poll()`` is thrown away on the next
poll (``join_group_async`` starts a new JoinGroup when the cached join task is already done),
and when that consumer is the group leader its JoinGroup in the Stable state starts a new
rebalance, as it would against Apache Kafka, over and over.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("kafka")
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as Errors
from kafka.admin import KafkaAdminClient

from tests.integration.ck_helpers import create_topic
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node

pytestmark = pytest.mark.integration

PARTITIONS = 6
DEADLINE_S = 60.0


def produce(node: Node, topic: str, start: int, count: int) -> set[str]:
    producer = KafkaProducer(bootstrap_servers=node.bootstrap)
    for i in range(start, start + count):
        producer.send(topic, value=f"v{i}".encode(), partition=i % PARTITIONS)
    producer.flush(30)
    producer.close()
    return {f"v{i}" for i in range(start, start + count)}


def consumer(node: Node, group: str, topic: str) -> Any:
    return KafkaConsumer(
        topic,
        bootstrap_servers=node.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=10000,
        heartbeat_interval_ms=500,
    )


class PollingMember:
    """One consumer polling on its own thread; it commits what it polled, and closes (leaving
    the group) on that thread when stopped. ``seen`` is shared between members."""

    def __init__(self, node: Node, group: str, topic: str, seen: set[str], lock: Any) -> None:
        self.consumer = consumer(node, group, topic)
        self.seen = seen
        self.lock = lock
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._close_on_exit = True
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                batches = self.consumer.poll(timeout_ms=100)
                values = {r.value.decode() for records in batches.values() for r in records}
                if values:
                    with self.lock:
                        self.seen.update(values)
                    # A rebalance may take the partitions first: their next owner polls
                    # again from the last commit (at least once, as the test expects).
                    with contextlib.suppress(
                        Errors.CommitFailedError, Errors.RebalanceInProgressError
                    ):
                        self.consumer.commit()
        except BaseException as exc:  # surfaced by the test through check()
            self.error = exc
        finally:
            if self._close_on_exit:
                self.consumer.close(autocommit=False)

    def assignment(self) -> list[int]:
        return [tp.partition for tp in self.consumer.assignment()]

    def check(self) -> None:
        if self.error is not None:
            raise AssertionError(f"consumer thread failed: {self.error!r}") from self.error

    def stop(self, *, close: bool = True) -> None:
        """Stop polling; with ``close`` the consumer leaves the group, else it stays open."""
        self._close_on_exit = close
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), "consumer thread did not stop"
        self.check()


def wait_for(
    members: list[PollingMember], what: Callable[[], str], condition: Callable[[], bool]
) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        for m in members:
            m.check()
        assert time.monotonic() < deadline, what()
        time.sleep(0.05)


def settle(members: list[PollingMember]) -> None:
    def owned() -> list[int]:
        return sorted(p for m in members for p in m.assignment())

    wait_for(
        members,
        lambda: f"assignment never settled: {owned()}",
        lambda: owned() == list(range(PARTITIONS)) and all(m.assignment() for m in members),
    )


def consumed(members: list[PollingMember], wanted: set[str], seen: set[str], lock: Any) -> None:
    def missing() -> list[str]:
        with lock:
            return sorted(wanted - seen)

    wait_for(members, lambda: f"missing {missing()[:20]}", lambda: not missing())


def committed(node: Node, group: str, topic: str) -> dict[int, int]:
    admin = KafkaAdminClient(bootstrap_servers=node.bootstrap)
    try:
        offsets = admin.list_group_offsets({group: None})[group]
        return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic}
    finally:
        admin.close()


def test_three_consumers_share_then_one_leaves_and_one_joins(node_factory: NodeFactory) -> None:
    node = node_factory.create({"group.initial.rebalance.delay.ms": 0})
    topic = unique_topic("kp-grp")
    group = unique_topic("g")
    create_topic(node, topic, PARTITIONS)
    wanted = produce(node, topic, 0, 300)
    seen: set[str] = set()
    lock = threading.Lock()
    members = [PollingMember(node, group, topic, seen, lock) for _ in range(3)]
    try:
        settle(members)
        consumed(members, wanted, seen, lock)
        members.pop().stop()  # commits nothing more, sends LeaveGroup
        wanted |= produce(node, topic, 300, 300)
        members.append(PollingMember(node, group, topic, seen, lock))
        settle(members)
        consumed(members, wanted, seen, lock)
        wait_for(
            members,
            lambda: f"offsets not committed: {committed(node, group, topic)}",
            lambda: committed(node, group, topic) == {p: 100 for p in range(PARTITIONS)},
        )
        admin = KafkaAdminClient(bootstrap_servers=node.bootstrap)
        try:
            deadline = time.monotonic() + DEADLINE_S
            while (described := admin.describe_groups([group])[group])["group_state"] != "Stable":
                assert time.monotonic() < deadline, described
                time.sleep(0.05)
            assert described["protocol_data"] == "range"
            owned = sorted(
                p
                for m in described["members"]
                for a in m["member_assignment"]["assigned_partitions"]
                for p in a["partitions"]
            )
            assert owned == list(range(PARTITIONS))
            assert {
                "group_id": group,
                "protocol_type": "consumer",
                "group_state": "Stable",
            }.items() <= (next(g for g in admin.list_groups() if g["group_id"] == group).items())
            # an active group keeps the offsets of topics it subscribes to, and cannot be deleted
            subscribed = admin.delete_group_offsets(group, [TopicPartition(topic, 0)])
            assert subscribed[TopicPartition(topic, 0)] is Errors.GroupSubscribedToTopicError
            assert dict(admin.delete_groups([group])) == {group: "NonEmptyGroupError"}
            while members:
                members.pop().stop()
            removed = admin.delete_group_offsets(group, [TopicPartition(topic, 0)])
            assert removed[TopicPartition(topic, 0)] is Errors.NoError
            assert committed(node, group, topic) == {p: 100 for p in range(1, PARTITIONS)}
            assert dict(admin.delete_groups([group])) == {group: "OK"}
            assert committed(node, group, topic) == {}
            assert dict(admin.delete_groups([group])) == {group: "GroupIdNotFoundError"}
        finally:
            admin.close()
    finally:
        for m in members:
            m.stop()


def test_committed_offsets_survive_sigkill(node_factory: NodeFactory) -> None:
    node = node_factory.create({"group.initial.rebalance.delay.ms": 0})
    topic = unique_topic("kp-restart")
    group = unique_topic("g")
    create_topic(node, topic, PARTITIONS)
    produce(node, topic, 0, 60)
    seen: set[str] = set()
    member = PollingMember(node, group, topic, seen, threading.Lock())
    settle([member])
    member.stop(close=False)
    c = member.consumer
    from kafka.structs import OffsetAndMetadata

    c.commit({TopicPartition(topic, p): OffsetAndMetadata(3 + p, "", -1) for p in range(6)})
    c.close(autocommit=False)
    node.restart(graceful=False)
    assert committed(node, group, topic) == {p: 3 + p for p in range(PARTITIONS)}
