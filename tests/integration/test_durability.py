"""Durability under crashes, checked by killing the node with SIGKILL (never by close()).

(a) Every record whose delivery report said OK (acks=1, flush per message) is present after a
    SIGKILL mid-stream and a restart: at the offset the report named, in order, offsets dense.
(b) A torn or garbage-extended active segment (what a crash mid-write leaves) does not stop the
    node: after restart the partition holds a prefix of what was produced and takes new writes.
(c) SIGTERM is a clean shutdown that loses nothing.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from tests.integration.ck_helpers import (
    CLIENT_TIMEOUT_S,
    consume_exactly,
    create_topic,
    make_consumer,
    make_producer,
)
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node

pytestmark = pytest.mark.integration

ACKED_BEFORE_KILL = 3_000


def read_partition(node: Node, topic: str) -> list[tuple[int, bytes]]:
    """Every (offset, value) of partition 0 from the log start to the high watermark."""
    consumer = make_consumer(node, **{"auto.offset.reset": "error"})
    try:
        low, high = consumer.get_watermark_offsets(
            TopicPartition(topic, 0), timeout=CLIENT_TIMEOUT_S
        )
        assert low == 0, f"log start moved to {low}"
        if high == 0:
            return []
        consumer.assign([TopicPartition(topic, 0, 0)])
        records = consume_exactly(consumer, high)
    finally:
        consumer.close()
    offsets = [record.offset for record in records]
    assert offsets == list(range(high)), "offsets are not dense from 0 to the high watermark"
    return [(record.offset, record.value or b"") for record in records]


class NumberedProducer(threading.Thread):
    """Produces b"0", b"1", ... to partition 0 and records each acknowledged (offset, value)."""

    def __init__(self, node: Node, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        # retries=0: a retried batch could be written twice, and this test is about loss.
        self.producer = make_producer(
            node,
            **{"linger.ms": 1, "retries": 0, "message.timeout.ms": 5_000, "acks": 1},
        )
        self.acked: list[tuple[int, int]] = []
        self.failed = 0
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.append((msg.offset(), int(msg.value())))
        else:
            self.failed += 1

    def run(self) -> None:
        try:
            sequence = 0
            while not self.stopping.is_set():
                try:
                    self.producer.produce(
                        self.topic,
                        value=b"%d" % sequence,
                        partition=0,
                        on_delivery=self._on_delivery,
                    )
                    sequence += 1
                except BufferError:
                    self.producer.poll(0.05)
                self.producer.poll(0)
            self.producer.flush(20)
        except BaseException as exc:
            self.error = exc


@pytest.mark.timeout(240)
def test_acknowledged_records_survive_sigkill(node_factory: NodeFactory) -> None:
    node = node_factory.create({"log.flush.interval.messages": 1})
    topic = unique_topic("dur-acks")
    create_topic(node, topic, 1, {"flush.messages": "1"})

    producer = NumberedProducer(node, topic)
    producer.start()
    deadline = time.monotonic() + 90
    while len(producer.acked) < ACKED_BEFORE_KILL:
        assert time.monotonic() < deadline, f"only {len(producer.acked)} acks in 90s"
        assert producer.is_alive(), f"producer died: {producer.error!r}"
        time.sleep(0.01)
    node.kill()
    time.sleep(0.5)  # the producer keeps sending into the dead node
    producer.stopping.set()
    producer.join(timeout=40)
    assert not producer.is_alive(), "producer did not finish after the node died"
    assert producer.error is None, repr(producer.error)
    acked = sorted(producer.acked)

    node.start()
    log = read_partition(node, topic)
    values = [int(value) for _, value in log]
    assert values == sorted(set(values)), "log holds duplicates or is out of order"
    for offset, sequence in acked:
        assert offset < len(log), f"acknowledged offset {offset} lost (log ends at {len(log)})"
        assert values[offset] == sequence, f"offset {offset}: {values[offset]} != acked {sequence}"
    # Sequence numbers acknowledged must form a prefix of the stream with no holes.
    assert [sequence for _, sequence in acked] == list(range(len(acked)))


def produce_values(node: Node, topic: str, values: list[bytes]) -> None:
    producer = make_producer(node, **{"linger.ms": 0})
    for start in range(0, len(values), 50):
        for value in values[start : start + 50]:
            producer.produce(topic, value=value, partition=0)
        assert producer.flush(30) == 0  # many small batches, like a live stream


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("seed", "mode"),
    [(1, "truncate+garbage"), (2, "truncate+garbage"), (3, "garbage"), (4, "truncate")],
)
def test_torn_active_segment_recovers_to_a_prefix(
    node_factory: NodeFactory, seed: int, mode: str
) -> None:
    rng = random.Random(seed)
    node = node_factory.create()
    topic = unique_topic("dur-torn")
    create_topic(node, topic, 1)
    produced = [b"rec-%05d-" % index + b"x" * rng.randrange(0, 200) for index in range(2_000)]
    produce_values(node, topic, produced)
    node.kill()

    segments = node.segment_files(topic, 0)
    assert segments, f"no segment files under {node.partition_dir(topic, 0)}"
    active = segments[-1]
    size = active.stat().st_size
    cut = size if mode == "garbage" else rng.randrange(0, size + 1)
    garbage = b"" if mode == "truncate" else rng.randbytes(rng.randrange(1, 5_000))
    with active.open("r+b") as segment:
        segment.truncate(cut)
        segment.seek(cut)
        segment.write(garbage)

    node.start()
    log = read_partition(node, topic)
    kept = [value for _, value in log]
    assert kept == produced[: len(kept)], "recovered log is not a prefix of what was produced"
    if mode == "garbage":
        assert len(kept) == len(produced), "appending garbage must not lose intact records"

    extra = [b"after-%d" % index for index in range(10)]
    produce_values(node, topic, extra)
    after = read_partition(node, topic)
    assert [value for _, value in after] == kept + extra


def test_sigterm_loses_nothing(node: Node) -> None:
    topic = unique_topic("dur-clean")
    create_topic(node, topic, 1)
    produced = [b"clean-%d" % index for index in range(500)]
    produce_values(node, topic, produced)
    assert node.stop() == 0, "SIGTERM must be a clean exit"
    node.start()
    assert [value for _, value in read_partition(node, topic)] == produced
