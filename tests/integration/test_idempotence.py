"""Idempotent producer through node crashes (issue 5).

A confluent-kafka producer with ``enable.idempotence=true`` sends a numbered stream to one
partition while the node is SIGKILLed and restarted several times. Batches in flight at a kill
were possibly written but not acknowledged; the producer retries them with the same producer
id and sequences, and the restarted node (its producer state rebuilt from snapshots and log
replay) must answer them as duplicates with their original offsets. Afterwards: every record
is acknowledged, the log holds each number exactly once and in order, and each acknowledged
offset holds the number acknowledged there.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.integration.ck_helpers import create_topic, make_producer
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node
from tests.integration.test_durability import read_partition

pytestmark = pytest.mark.integration

TOTAL = 20_000
KILLS = 3
# ~3 MB in all: with 1 MiB segments, rolls (and producer-state snapshots) happen between kills.
PADDING = b":" + b"x" * 140


def number(value: bytes) -> int:
    return int(value.split(b":", 1)[0])


class IdempotentStream(threading.Thread):
    """Produces numbers 0 .. TOTAL-1 idempotently and records each delivery report."""

    def __init__(self, node: Node, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.acked: dict[int, int] = {}  # value -> offset
        self.errors: list[str] = []
        self.fatal: str | None = None
        self.sent = 0
        self.error: BaseException | None = None
        self.producer = make_producer(
            node,
            **{
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 2,
                "batch.num.messages": 200,
                "message.timeout.ms": 120_000,
                "retry.backoff.ms": 50,
                "socket.timeout.ms": 5_000,
                "error_cb": self._on_error,
            },
        )

    def _on_error(self, err: Any) -> None:
        # A duplicate answered as a gap desynchronises librdkafka's idempotence: fatal.
        if err.fatal():
            self.fatal = str(err)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        # Runs on the producing thread; the test thread only reads sizes (atomic under the GIL).
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked[number(msg.value())] = msg.offset()

    @property
    def acked_count(self) -> int:
        return len(self.acked)

    def run(self) -> None:
        try:
            while self.sent < TOTAL and self.fatal is None and not self.errors:
                try:
                    self.producer.produce(
                        self.topic,
                        value=b"%d" % self.sent + PADDING,
                        partition=0,
                        on_delivery=self._on_delivery,
                    )
                    self.sent += 1
                except BufferError:
                    self.producer.poll(0.05)
                self.producer.poll(0)
            remaining = self.producer.flush(5 if self.fatal or self.errors else 120)
            if remaining:
                self.errors.append(f"{remaining} messages still queued after flush")
        except BaseException as exc:
            self.error = exc


@pytest.mark.timeout(360)
def test_idempotent_producer_through_sigkill_leaves_no_duplicates(
    node_factory: NodeFactory,
) -> None:
    node = node_factory.create()
    topic = unique_topic("idem")
    # flush.messages=1: each answer waits for an fsync, so a kill often lands between the
    # write of a batch and its acknowledgement, which makes the producer retry a written batch.
    create_topic(node, topic, 1, {"segment.bytes": str(1024 * 1024), "flush.messages": "1"})
    stream = IdempotentStream(node, topic)
    stream.start()
    for kill in range(KILLS):
        target = (kill + 1) * TOTAL // (KILLS + 2)
        deadline = time.monotonic() + 90
        while stream.acked_count < target:
            assert time.monotonic() < deadline, f"only {stream.acked_count} acks in 90s"
            assert stream.fatal is None, stream.fatal
            assert not stream.errors, stream.errors[:5]
            assert stream.is_alive() or stream.sent == TOTAL, f"producer died: {stream.error!r}"
            time.sleep(0.005)
        node.kill()  # with batches in flight: some written, none of them answered
        time.sleep(0.3)
        node.start()
    stream.join(timeout=150)
    assert stream.fatal is None, stream.fatal
    assert not stream.is_alive(), "producer did not finish"
    assert stream.error is None, repr(stream.error)
    assert stream.errors == [], stream.errors[:5]
    assert sorted(stream.acked) == list(range(TOTAL)), "some records were never acknowledged"

    log = read_partition(node, topic)
    values = [number(value) for _, value in log]
    assert len(values) == len(set(values)), "the log holds duplicates"
    assert values == list(range(TOTAL)), "the log has gaps or is out of order"
    for value, offset in stream.acked.items():
        assert values[offset] == value, f"acked offset {offset} holds {values[offset]}, not {value}"
