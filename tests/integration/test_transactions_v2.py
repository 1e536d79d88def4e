"""Transactions version 2 (KIP-890 part 2) and version 1 on one 3 + 3 cluster.

The cluster is formatted with the default release (4.0), which finalizes
``transaction.version=2``. Over real sockets, with the project's codec, the test speaks the
request sequence of a Java 4.x producer with transactions version 2:
FindCoordinator -> InitProducerId v5 -> Produce v12 straight to the leaders of partitions on
different brokers (no AddPartitionsToTxn: each leader adds its partition) -> TxnOffsetCommit
v5 (no AddOffsetsToTxn) -> EndTxn v5, which answers the bumped epoch the next transaction
uses; the second transaction is aborted, and a batch at the epoch before the bump is fenced.
A read_committed consumer (confluent-kafka) sees exactly the committed records, the group
sees the committed offset. On the same cluster a librdkafka producer (transactions version 1:
AddPartitionsToTxn, EndTxn v3) commits and aborts, its batches verified by the leaders.
Last, ``sparklog features downgrade``/``upgrade`` of transaction.version switch the same
requests between version 1 and version 2 semantics on the running cluster.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import confluent_kafka.admin
import pytest

from sparklog.client.connection import KafkaConnection
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.record_codec import RecordInput, build_batch
from tests.integration.cluster_harness import Cluster, cli, running_cluster, wait_until
from tests.integration.test_transactions_cluster import (
    PARTITIONS,
    create_topic,
    describe_txn,
    find_coordinator,
    full_isr_leaders,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SETTINGS = {
    "default.replication.factor": 3,
    "min.insync.replicas": 2,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 3,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "transaction.state.log.num.partitions": 3,
}
RETRIABLE = {
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.CONCURRENT_TRANSACTIONS,
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT,
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("tv2")
    with running_cluster(root, controllers=3, brokers=3, overrides=SETTINGS) as cluster:
        yield cluster


def call(cluster: Cluster, node_id: int, api: str, body: dict[str, Any], version: int) -> Any:
    with KafkaConnection.connect(cluster.broker(node_id).address, timeout_s=15) as conn:
        return conn.request(api, body, version)


def retry(what: str, send: Any, code_of: Any, timeout_s: float = 60.0) -> Any:
    """Send until the answer is not a retriable error (as the Java producer retries)."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = send()
        code = ErrorCode(code_of(answer))
        if code not in RETRIABLE or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


class Tv2Producer:
    """The requests of a Java 4.x transactional producer with transactions version 2."""

    def __init__(self, cluster: Cluster, transactional_id: str, topic: str) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.topic = topic
        self.coordinator = find_coordinator(cluster, transactional_id)
        self.sequences: dict[int, int] = {}
        answer = retry(
            "InitProducerId",
            lambda: call(
                cluster,
                self.coordinator,
                "InitProducerId",
                {
                    "transactional_id": transactional_id,
                    "transaction_timeout_ms": 60_000,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
                5,
            ),
            lambda a: a["error_code"],
        )
        assert answer["error_code"] == 0, answer
        self.producer_id: int = answer["producer_id"]
        self.epoch: int = answer["producer_epoch"]

    def produce(
        self, leader: int, partition: int, values: list[str], epoch: int | None = None
    ) -> int:
        """Produce v12 to the partition's leader; the partition's error code."""
        epoch = self.epoch if epoch is None else epoch
        batch = build_batch(
            [RecordInput(None, v.encode()) for v in values],
            producer_id=self.producer_id,
            producer_epoch=epoch,
            base_sequence=self.sequences.get(partition, 0),
            is_transactional=True,
        )
        body = {
            "transactional_id": self.transactional_id,
            "acks": -1,
            "timeout_ms": 30_000,
            "topic_data": [
                {"name": self.topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        }

        def code_of(answer: Any) -> int:
            return int(answer["responses"][0]["partition_responses"][0]["error_code"])

        answer = retry("Produce", lambda: call(self.cluster, leader, "Produce", body, 12), code_of)
        code = code_of(answer)
        if code == 0:
            self.sequences[partition] = self.sequences.get(partition, 0) + len(values)
        return code

    def commit_offsets(self, group: str, partition: int, offset: int) -> int:
        group_coordinator = find_coordinator(self.cluster, group, 0)
        body = {
            "transactional_id": self.transactional_id,
            "group_id": group,
            "producer_id": self.producer_id,
            "producer_epoch": self.epoch,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": self.topic,
                    "partitions": [
                        {
                            "partition_index": partition,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        }
        answer = retry(
            "TxnOffsetCommit",
            lambda: call(self.cluster, group_coordinator, "TxnOffsetCommit", body, 5),
            lambda a: a["topics"][0]["partitions"][0]["error_code"],
        )
        return int(answer["topics"][0]["partitions"][0]["error_code"])

    def end(self, commit: bool) -> dict[str, Any]:
        body = {
            "transactional_id": self.transactional_id,
            "producer_id": self.producer_id,
            "producer_epoch": self.epoch,
            "committed": commit,
        }
        answer: dict[str, Any] = retry(
            "EndTxn",
            lambda: call(self.cluster, self.coordinator, "EndTxn", body, 5),
            lambda a: a["error_code"],
        )
        if answer["error_code"] == 0:
            # Java's TV2 producer takes the id and epoch the coordinator answers; a new epoch
            # starts every partition at sequence 0
            self.producer_id, self.epoch = answer["producer_id"], answer["producer_epoch"]
            self.sequences.clear()
        return answer


def read_committed(cluster: Cluster, topic: str, count: int) -> list[str]:
    """Every value read_committed sees, read until ``count`` arrived and a second more."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"check-{uuid.uuid4()}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 0,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    values: list[str] = []
    deadline = time.monotonic() + 60
    quiet_until: float | None = None
    try:
        while time.monotonic() < deadline:
            if len(values) >= count:
                quiet_until = quiet_until or time.monotonic() + 1.0
                if time.monotonic() > quiet_until:
                    break
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            values.append((msg.value() or b"").decode())
    finally:
        consumer.close()
    return sorted(values)


def test_feature_is_finalized_and_advertised(cluster: Cluster) -> None:
    body = call(
        cluster,
        cluster.brokers[0].node_id,
        "ApiVersions",
        {"client_software_name": "test", "client_software_version": "1"},
        3,
    )
    finalized = {f["name"]: f["max_version_level"] for f in body["finalized_features"]}
    supported = {f["name"]: f["max_version"] for f in body["supported_features"]}
    assert finalized["transaction.version"] == 2 and supported["transaction.version"] == 2
    ranges = {a["api_key"]: a["max_version"] for a in body["api_keys"]}
    assert ranges[0] >= 12 and ranges[26] == 5 and ranges[28] == 5


def test_java_tv2_sequence_and_librdkafka_tv1_on_one_cluster(cluster: Cluster) -> None:
    topic = "tv2-out"
    leaders = create_topic(cluster, topic)
    assert len(set(leaders.values())) >= 2, leaders  # partitions on different brokers
    producer = Tv2Producer(cluster, "tv2-producer", topic)
    pid, epoch = producer.producer_id, producer.epoch

    # transaction 1: committed, with the group's offset
    for partition, leader in leaders.items():
        assert producer.produce(leader, partition, [f"c1-{partition}-{i}" for i in range(3)]) == 0
    assert producer.commit_offsets("tv2-group", 0, 42) == 0
    described = describe_txn(cluster, "tv2-producer")
    # every partition (and the offsets partition) joined without AddPartitionsToTxn
    joined = {(t["topic"], p) for t in described["topics"] for p in t["partitions"]}
    assert {(topic, p) for p in leaders} <= joined and described["transaction_state"] == "Ongoing"
    assert any(t == "__consumer_offsets" for t, _ in joined), joined
    answer = producer.end(commit=True)
    assert (answer["error_code"], answer["producer_id"], answer["producer_epoch"]) == (
        0,
        pid,
        epoch + 1,
    )

    # transaction 2: aborted, at the bumped epoch
    for partition, leader in leaders.items():
        assert producer.produce(leader, partition, [f"a2-{partition}"]) == 0
    answer = producer.end(commit=False)
    assert (answer["error_code"], answer["producer_epoch"]) == (0, epoch + 2)

    # a straggler of transaction 1 (epoch before the bump) is fenced by the markers
    leader0 = leaders[0]
    assert producer.produce(leader0, 0, ["zombie"], epoch=epoch) == ErrorCode.INVALID_PRODUCER_EPOCH

    # transaction 3: committed after the abort
    assert producer.produce(leader0, 0, ["c3-0"]) == 0
    assert producer.end(commit=True)["producer_epoch"] == epoch + 3

    expected = sorted([f"c1-{p}-{i}" for p in leaders for i in range(3)] + ["c3-0"])
    assert read_committed(cluster, topic, len(expected)) == expected
    group = confluent_kafka.Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "tv2-group", "log_level": 0}
    )
    try:
        [committed] = group.committed([confluent_kafka.TopicPartition(topic, 0)], timeout=30)
        assert committed.offset == 42
    finally:
        group.close()

    # librdkafka: transactions version 1 on the same cluster, commit then abort
    v1_topic = "tv1-out"
    create_topic(cluster, v1_topic)
    ck = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "transactional.id": "tv1-producer",
            "log_level": 0,
        }
    )
    ck.init_transactions(30)
    ck.begin_transaction()
    for i in range(6):
        ck.produce(v1_topic, f"v1-c-{i}".encode(), partition=i % PARTITIONS)
    ck.commit_transaction(30)
    ck.begin_transaction()
    for i in range(6):
        ck.produce(v1_topic, f"v1-a-{i}".encode(), partition=i % PARTITIONS)
    ck.flush(30)
    ck.abort_transaction(30)
    assert read_committed(cluster, v1_topic, 6) == sorted(f"v1-c-{i}" for i in range(6))
    v1 = describe_txn(cluster, "tv1-producer")
    # version 1: the epoch InitProducerId gave stays
    assert (v1["transaction_state"], v1["producer_epoch"]) == ("CompleteAbort", 0)


def finalized_everywhere(cluster: Cluster, level: int) -> bool:
    """Every broker's ApiVersions shows transaction.version finalized at ``level``."""
    for broker in cluster.brokers:
        body = call(
            cluster,
            broker.node_id,
            "ApiVersions",
            {"client_software_name": "test", "client_software_version": "1"},
            3,
        )
        levels = {f["name"]: f["max_version_level"] for f in body["finalized_features"]}
        if levels.get("transaction.version", 0) != level:
            return False
    return True


def test_transaction_version_follows_the_finalized_level(cluster: Cluster) -> None:
    """`sparklog features downgrade` to transaction.version 1: the same v5/v12 requests get
    version 1 semantics (a Produce v12 to a partition never added is TRANSACTION_ABORTABLE,
    EndTxn v5 keeps the epoch); `features upgrade` back to 2 turns the bump on again."""
    topic = "tv-toggle"
    leaders = create_topic(cluster, topic)
    server = ("--bootstrap-server", cluster.bootstrap_servers)
    out = cli("features", *server, "downgrade", "--feature", "transaction.version=1")
    assert "transaction.version was downgraded to 1." in out, out
    wait_until("transaction.version 1 on every broker", lambda: finalized_everywhere(cluster, 1))
    producer = Tv2Producer(cluster, "tv-toggle-producer", topic)
    epoch = producer.epoch
    partition, leader = next(iter(leaders.items()))
    # version 1: the leader only verifies, and the client never added the partition
    assert producer.produce(leader, partition, ["v1"]) == ErrorCode.TRANSACTION_ABORTABLE
    add = {
        "v3_and_below_transactional_id": producer.transactional_id,
        "v3_and_below_producer_id": producer.producer_id,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": topic, "partitions": [partition]}],
    }
    call(cluster, producer.coordinator, "AddPartitionsToTxn", add, 3)
    assert producer.produce(leader, partition, ["v1"]) == 0
    assert producer.end(commit=True)["producer_epoch"] == epoch  # no bump

    out = cli("features", *server, "upgrade", "--feature", "transaction.version=2")
    assert "transaction.version was upgraded to 2." in out, out
    wait_until("transaction.version 2 on every broker", lambda: finalized_everywhere(cluster, 2))
    assert "FinalizedVersionLevel: 2" in next(
        line
        for line in cli("features", *server, "describe").splitlines()
        if "transaction.version" in line
    )
    assert producer.produce(leader, partition, ["v2"]) == 0  # added by the leader
    assert producer.end(commit=True)["producer_epoch"] == epoch + 1


def live_leaders(cluster: Cluster, topic: str) -> dict[int, int] | None:
    """Partition -> leader, once every partition is led by a running broker."""
    running = {b.node_id for b in cluster.brokers if b.is_running()}
    client = confluent_kafka.admin.AdminClient(
        {"bootstrap.servers": cluster.running_bootstrap_servers, "log_level": 0}
    )
    found = client.list_topics(topic=topic, timeout=5).topics.get(topic)
    if found is None or found.error is not None or len(found.partitions) != PARTITIONS:
        return None
    leaders = {index: int(p.leader) for index, p in found.partitions.items()}
    return leaders if set(leaders.values()) <= running else None


def produce_everywhere(producer: Tv2Producer, cluster: Cluster, name: str) -> list[str]:
    """One record to every partition at its current leader (a Java producer refreshes its
    metadata on NOT_LEADER_OR_FOLLOWER the same way); the values written."""
    written: list[str] = []
    for partition in range(PARTITIONS):
        value = f"{name}-{partition}"
        deadline = time.monotonic() + 60
        while True:
            leaders = wait_until(
                "every partition led by a running broker",
                lambda: live_leaders(cluster, producer.topic),
                60,
                tolerate=(confluent_kafka.KafkaException,),
            )
            try:
                code = producer.produce(leaders[partition], partition, [value])
            except OSError:
                code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            if code == 0 or time.monotonic() > deadline:
                break
        assert code == 0, (partition, ErrorCode(code))
        written.append(value)
    return written


def test_tv2_transactions_survive_sigkill_of_a_leader_and_of_the_coordinator(
    cluster: Cluster,
) -> None:
    """Transactions version 2 under SIGKILL: (1) the leader of a partition in an open
    transaction (which it added itself) dies before EndTxn v5; the commit's marker reaches the
    new leader. (2) The coordinator dies right after answering EndTxn v5 (PrepareCommit durable,
    markers maybe unsent): the new coordinator finishes the commit from __transaction_state,
    and the producer goes on at the epoch EndTxn answered. read_committed sees exactly the
    committed transactions' records, each once."""
    topic = "tv2-kill"
    tid = "tv2-kill-producer"
    leaders = create_topic(cluster, topic)
    producer = Tv2Producer(cluster, tid, topic)
    epoch = producer.epoch
    committed: list[str] = []

    # (1) a partition leader other than the coordinator dies with the transaction open
    written = produce_everywhere(producer, cluster, "t1")
    victim = cluster.broker(next(b for b in leaders.values() if b != producer.coordinator))
    victim.kill()
    answer = producer.end(commit=True)
    assert (answer["error_code"], answer["producer_epoch"]) == (0, epoch + 1), answer
    committed += written
    wait_until(
        "transaction 1 complete",
        lambda: describe_txn(cluster, tid)["transaction_state"] == "CompleteCommit",
        60,
        tolerate=(OSError, ConnectionError),
    )
    victim.launch()
    victim.wait_ready()
    wait_until("a full ISR again", lambda: full_isr_leaders(cluster, topic), 90)

    # (2) the coordinator dies right after EndTxn v5 answers
    written = produce_everywhere(producer, cluster, "t2")
    answer = producer.end(commit=True)
    assert (answer["error_code"], answer["producer_epoch"]) == (0, epoch + 2), answer
    committed += written
    old_coordinator = cluster.broker(producer.coordinator)
    old_coordinator.kill()
    # until the controller fences the dead broker, FindCoordinator still names it
    producer.coordinator = wait_until(
        "a new transaction coordinator",
        lambda: (found := find_coordinator(cluster, tid)) != old_coordinator.node_id and found,
        60,
    )
    wait_until(
        "transaction 2 completed by the new coordinator",
        lambda: describe_txn(cluster, tid)["transaction_state"] == "CompleteCommit",
        60,
        tolerate=(OSError, ConnectionError),
    )

    # the producer goes on with the new coordinator: an abort, then a commit
    produce_everywhere(producer, cluster, "a3")
    assert producer.end(commit=False)["producer_epoch"] == epoch + 3
    committed += produce_everywhere(producer, cluster, "t4")
    assert producer.end(commit=True)["producer_epoch"] == epoch + 4
    old_coordinator.launch()
    old_coordinator.wait_ready()
    wait_until("a full ISR again", lambda: full_isr_leaders(cluster, topic), 90)
    assert read_committed(cluster, topic, len(committed)) == sorted(committed)
