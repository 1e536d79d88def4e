"""Transactional data and markers on a real node, read by confluent-kafka (issue 5).

Transactional batches are produced over the wire with a producer id from InitProducerId, and
COMMIT/ABORT markers are written with WriteTxnMarkers (API 27), as a transaction coordinator on
another node would. A confluent-kafka consumer with ``isolation.level=read_committed`` must see
only committed records and stop at the last stable offset; ``read_uncommitted`` sees every data
record; ListOffsets(latest, read_committed) answers the LSO; the LSO survives a SIGKILL.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from sparklog.client.connection import KafkaConnection
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.record_codec import build_batch
from tests.integration.ck_helpers import create_topic, make_consumer
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node

pytestmark = pytest.mark.integration


@pytest.fixture
def node(node_factory: NodeFactory) -> Node:
    """A node whose leaders append transactional batches without asking a coordinator
    (``transaction.partition.verification.enable=false``, as in Kafka): these tests play the
    coordinator themselves (WriteTxnMarkers by hand), so no coordinator knows their ids."""
    return node_factory.create({"transaction.partition.verification.enable": False})


class TxnClient:
    """Drives one partition through the wire like a producer plus a coordinator."""

    def __init__(self, node: Node, topic: str) -> None:
        self.conn = KafkaConnection.connect(node.bootstrap)
        self.topic = topic
        self.sequences: dict[int, int] = {}

    def close(self) -> None:
        self.conn.close()

    def producer_id(self) -> int:
        response = self.conn.request(
            "InitProducerId", {"transactional_id": None, "transaction_timeout_ms": 60_000}
        )
        assert response["error_code"] == 0, response
        pid = int(response["producer_id"])
        self.sequences[pid] = 0
        return pid

    def produce(self, values: list[bytes], pid: int = -1) -> int:
        kw: dict[str, Any] = {}
        if pid >= 0:
            kw = dict(
                producer_id=pid,
                producer_epoch=0,
                base_sequence=self.sequences[pid],
                is_transactional=True,
            )
            self.sequences[pid] += len(values)
        now = int(time.time() * 1000)
        records = build_batch([(b"k", v, (), now) for v in values], **kw)
        response = self.conn.request(
            "Produce",
            {
                "transactional_id": "it-txn" if pid >= 0 else None,
                "acks": -1,
                "timeout_ms": 10_000,
                "topic_data": [
                    {
                        "name": self.topic,
                        "partition_data": [{"index": 0, "records": records}],
                    }
                ],
            },
            version=9,
        )
        part = response["responses"][0]["partition_responses"][0]
        assert part["error_code"] == 0, part
        return int(part["base_offset"])

    def marker(self, pid: int, committed: bool, epoch: int = 0, topic: str | None = None) -> int:
        response = self.conn.request(
            "WriteTxnMarkers",
            {
                "markers": [
                    {
                        "producer_id": pid,
                        "producer_epoch": epoch,
                        "transaction_result": committed,
                        "topics": [{"name": topic or self.topic, "partition_indexes": [0]}],
                        "coordinator_epoch": 0,
                    }
                ]
            },
        )
        [result] = response["markers"]
        assert result["producer_id"] == pid
        return int(result["topics"][0]["partitions"][0]["error_code"])

    def latest(self, isolation_level: int) -> int:
        response = self.conn.request(
            "ListOffsets",
            {
                "replica_id": -1,
                "isolation_level": isolation_level,
                "topics": [
                    {
                        "name": self.topic,
                        "partitions": [{"partition_index": 0, "timestamp": -1}],
                    }
                ],
            },
        )
        part = response["topics"][0]["partitions"][0]
        assert part["error_code"] == 0, part
        return int(part["offset"])

    def fetch_committed(self) -> dict[str, Any]:
        response = self.conn.request(
            "Fetch",
            {
                "replica_id": -1,
                "max_wait_ms": 0,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "isolation_level": 1,
                "topics": [
                    {
                        "topic": self.topic,
                        "partitions": [
                            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                        ],
                    }
                ],
            },
            version=11,
        )
        part: dict[str, Any] = response["responses"][0]["partitions"][0]
        assert part["error_code"] == 0, part
        return part


def consume_values(node: Node, topic: str, isolation: str, expected: int) -> list[bytes]:
    """Everything a consumer from offset 0 delivers: ``expected`` values, then a quiet spell."""
    consumer = make_consumer(node, **{"isolation.level": isolation})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        quiet_until: float | None = None
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                if len(values) >= expected:
                    quiet_until = quiet_until or time.monotonic() + 1.5
                    if time.monotonic() > quiet_until:
                        break
                continue
            assert msg.error() is None, msg.error()
            values.append(msg.value())
        return values
    finally:
        consumer.close()


def test_read_committed_sees_only_committed_records(node: Node) -> None:
    topic = unique_topic("txn")
    create_topic(node, topic, 1)
    client = TxnClient(node, topic)
    try:
        p1, p2 = client.producer_id(), client.producer_id()
        client.produce([b"c0", b"c1"], p1)  # 0-1
        client.produce([b"x0"], p2)  # 2, aborted below
        client.produce([b"plain0"])  # 3
        client.produce([b"c2"], p1)  # 4
        assert client.marker(p1, committed=True) == ErrorCode.NONE  # 5
        client.produce([b"x1", b"x2"], p2)  # 6-7
        assert client.marker(p2, committed=False) == ErrorCode.NONE  # 8
        client.produce([b"x3"], p1)  # 9
        assert client.marker(p1, committed=False) == ErrorCode.NONE  # 10
        open_first = client.produce([b"o0"], p2)  # 11, left open
        client.produce([b"plain1"])  # 12, above the LSO

        assert open_first == 11
        assert client.latest(0) == 13
        assert client.latest(1) == open_first

        fetched = client.fetch_committed()
        assert fetched["high_watermark"] == 13
        assert fetched["last_stable_offset"] == open_first
        aborted = {(a["producer_id"], a["first_offset"]) for a in fetched["aborted_transactions"]}
        assert aborted == {(p2, 2), (p1, 9)}

        committed = [b"c0", b"c1", b"plain0", b"c2"]
        assert consume_values(node, topic, "read_committed", len(committed)) == committed
        everything = [b"c0", b"c1", b"x0", b"plain0", b"c2", b"x1", b"x2", b"x3", b"o0", b"plain1"]
        assert consume_values(node, topic, "read_uncommitted", len(everything)) == everything

        # Fenced and misdirected markers get the errors a coordinator expects.
        assert client.marker(p1, committed=True, epoch=-5) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert client.marker(p2, True, topic="no-such-topic") == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
        assert client.latest(1) == open_first

        # The LSO and the aborted ranges survive a crash.
        node.kill()
        node.start()
        client.close()
        client = TxnClient(node, topic)
        deadline = time.monotonic() + 30
        while client.latest(0) < 13 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert client.latest(1) == open_first
        assert consume_values(node, topic, "read_committed", len(committed)) == committed

        # Committing the open transaction releases it and everything after it.
        assert client.marker(p2, committed=True) == ErrorCode.NONE
        assert client.latest(1) == client.latest(0) == 14
        released = [*committed, b"o0", b"plain1"]
        assert consume_values(node, topic, "read_committed", len(released)) == released
    finally:
        client.close()


def test_a_parked_read_committed_fetch_wakes_when_the_lso_moves(node: Node) -> None:
    topic = unique_topic("txn-wake")
    create_topic(node, topic, 1)
    client = TxnClient(node, topic)
    consumer = make_consumer(node, **{"isolation.level": "read_committed"})
    try:
        pid = client.producer_id()
        client.produce([b"t0"], pid)
        consumer.assign([TopicPartition(topic, 0, 0)])
        assert consumer.poll(1.0) is None  # parked: nothing is stable yet
        assert client.marker(pid, committed=True) == ErrorCode.NONE
        msg = None
        deadline = time.monotonic() + 20
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
        assert msg is not None and msg.error() is None
        assert msg.value() == b"t0"
    finally:
        consumer.close()
        client.close()
