"""read_committed Fetch of tiered offsets skips aborted transactions (KIP-405 transaction index).

One real node with tiering to a ``file://`` store. A transactional producer writes committed
and aborted transactions between non-transactional records, including an aborted transaction
whose data lies in segments that are tiered and whose ABORT marker lies segments later (the
remote search must go on past the segment it serves from); then every closed segment is tiered
and deleted locally. Consumers reading from offset 0 are therefore served by the broker's
remote fetch, with only the remote ``.txnindex`` objects (and the active segment's local index)
to find the aborts: read_committed consumers (confluent-kafka and kafka-python) must read
exactly the read_uncommitted records minus the aborted ones.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import TopicPartition

from sparklog.tiering.layout import parse_txn_index
from tests.integration.ck_helpers import (
    create_topic,
    end_transaction,
    make_consumer,
    make_producer,
    transactional_producer,
)
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node
from tests.integration.tiering_support import (
    StoreView,
    file_store,
    fully_tiered,
    node_overrides,
    tiering_state,
    topic_configs,
    wait_until,
)

pytestmark = pytest.mark.integration

TRANSACTIONS = 9
PER_TXN = 300
PLAIN_BETWEEN = 40
VALUE_BYTES = 700
LONG_TXN_RECORDS = 200
FILLER_RECORDS = 3_500  # > 2 segments of 1 MiB written while the long transaction is open

Row = tuple[int, bytes | None]  # offset, value


@dataclass
class Run:
    node: Node
    store: StoreView
    topic: str
    committed: int
    aborted: int


def _value(tag: bytes, n: int) -> bytes:
    return tag + b"%06d-" % n + os.urandom(VALUE_BYTES)


def _produce(node: Node, topic: str) -> tuple[int, int]:
    """Returns (records a read_committed consumer reads, aborted data records)."""
    txn = transactional_producer(node, "tiered-txn", 120_000)
    plain = make_producer(node)
    committed = aborted = 0
    n = 0
    for t in range(TRANSACTIONS):
        abort = t % 3 == 1
        txn.begin_transaction()
        for _ in range(PER_TXN):
            txn.produce(topic, value=_value(b"A" if abort else b"C", n), partition=0)
            n += 1
        end_transaction(txn, abort)
        if abort:
            aborted += PER_TXN
        else:
            committed += PER_TXN
        for _ in range(PLAIN_BETWEEN):
            plain.produce(topic, value=_value(b"P", n), partition=0)
            n += 1
        assert plain.flush(30) == 0
        committed += PLAIN_BETWEEN
    # A long transaction: its data, then segments of other records, then its ABORT marker.
    txn.begin_transaction()
    for _ in range(LONG_TXN_RECORDS):
        txn.produce(topic, value=_value(b"A", n), partition=0)
        n += 1
    assert txn.flush(30) == 0
    for _ in range(FILLER_RECORDS):
        plain.produce(topic, value=_value(b"P", n), partition=0)
        n += 1
    assert plain.flush(30) == 0
    txn.abort_transaction(30)
    aborted += LONG_TXN_RECORDS
    committed += FILLER_RECORDS
    # Roll past the marker, so it is tiered too and only the remote indexes know the abort.
    for _ in range(1_600):
        plain.produce(topic, value=_value(b"P", n), partition=0)
        n += 1
    assert plain.flush(30) == 0
    committed += 1_600
    return committed, aborted


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    base = tmp_path_factory.mktemp("tiered-txn")
    store = file_store(f"file://{base / 'store'}")
    factory = NodeFactory(base)
    try:
        node = factory.create(node_overrides(store, None))
        topic = unique_topic("tiered-txn")
        create_topic(node, topic, 1, topic_configs())
        committed, aborted = _produce(node, topic)
        wait_until(
            "every closed segment tiered, three at least",
            lambda: fully_tiered(node, store, topic) and len(store.finished(topic)) >= 3,
            120.0,
            lambda: tiering_state(node, store, topic),
        )
        yield Run(node, store, topic, committed, aborted)
    finally:
        factory.close()


def _consume_confluent(run: Run, isolation: str, count: int) -> list[Row]:
    consumer = make_consumer(
        run.node, **{"isolation.level": isolation, "fetch.max.bytes": 8_388_608}
    )
    rows: list[Row] = []
    try:
        consumer.assign([TopicPartition(run.topic, 0, 0)])
        deadline = time.monotonic() + 120
        while len(rows) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                if msg.error() is not None:
                    raise AssertionError(f"confluent consumer error: {msg.error()}")
                rows.append((msg.offset(), msg.value()))
        # Anything beyond ``count`` (an aborted record shown after all) must show up too.
        for msg in consumer.consume(num_messages=10_000, timeout=1.0):
            rows.append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    return rows


def _consume_kafka_python(run: Run, count: int) -> list[Row]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=run.node.bootstrap,
        enable_auto_commit=False,
        group_id=None,
        auto_offset_reset="none",
        isolation_level="read_committed",
        fetch_max_bytes=8_388_608,
        max_partition_fetch_bytes=4_194_304,
    )
    rows: list[Row] = []
    try:
        tp = KTopicPartition(run.topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        deadline = time.monotonic() + 180
        while len(rows) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500, max_records=20_000).values():
                rows.extend((r.offset, r.value) for r in records)
        for records in consumer.poll(timeout_ms=1_000).values():
            rows.extend((r.offset, r.value) for r in records)
    finally:
        consumer.close()
    return rows


def _aborted(row: Row) -> bool:
    return row[1] is not None and row[1].startswith(b"A")


def test_every_tiered_segment_has_a_transaction_index(run: Run) -> None:
    base = run.store.partition_dir(run.topic)
    names = set(run.store.segment_objects(run.topic))
    entries = 0
    for segment in run.store.finished(run.topic):
        stem = segment["path"].rsplit("/", 1)[-1].removesuffix(".parquet")
        assert f"{stem}.txnindex" in names, f"no .txnindex for {stem}"
        data = run.store.fs.cat_file(f"{base}/segments/{stem}.txnindex")
        entries += len(parse_txn_index(data))
    # Every abort was tiered (the last one before the final roll).
    assert entries == TRANSACTIONS // 3 + 1


def test_read_committed_consumers_skip_aborted_tiered_records(run: Run) -> None:
    uncommitted = _consume_confluent(run, "read_uncommitted", run.committed + run.aborted)
    assert len(uncommitted) == run.committed + run.aborted
    assert sum(1 for row in uncommitted if _aborted(row)) == run.aborted
    tiered_end = run.store.finished(run.topic)[-1]["end_offset"] + 1
    assert all(row[0] < tiered_end for row in uncommitted if _aborted(row))
    expected = [row for row in uncommitted if not _aborted(row)]

    confluent = _consume_confluent(run, "read_committed", run.committed)
    assert [row[0] for row in confluent if _aborted(row)] == []
    assert confluent == expected

    kafka_python = _consume_kafka_python(run, run.committed)
    assert [row[0] for row in kafka_python if _aborted(row)] == []
    assert kafka_python == expected


def test_remote_segment_deletion_removes_its_transaction_index(run: Run) -> None:
    """After the reads of ``run.topic``: retention drops its oldest tiered segments, index
    objects included."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )

    from tests.integration.ck_helpers import admin_for

    first = run.store.finished(run.topic)[0]
    stem = first["path"].rsplit("/", 1)[-1].removesuffix(".parquet")
    assert f"{stem}.txnindex" in run.store.segment_objects(run.topic)
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        run.topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin = admin_for(run.node)  # kept referenced: the futures die with the client
    admin.incremental_alter_configs([resource])[resource].result(30)
    wait_until(
        "the first tiered segment deleted",
        lambda: (
            not any(name.startswith(stem[:43]) for name in run.store.segment_objects(run.topic))
        ),
        60.0,
        lambda: run.store.segment_objects(run.topic),
    )


def test_abort_marker_in_the_local_segment_hides_tiered_data(run: Run) -> None:
    """The remote search continues into the local log: the transaction's data is tiered (and
    gone locally), its ABORT marker is in the active segment."""
    topic = unique_topic("tiered-txn-local-marker")
    create_topic(run.node, topic, 1, topic_configs())
    plain = make_producer(run.node)
    for n in range(100):
        plain.produce(topic, value=_value(b"P", n), partition=0)
    assert plain.flush(30) == 0
    txn = transactional_producer(run.node, "tiered-txn", 120_000)
    txn.begin_transaction()
    for n in range(3_200):  # > 2 segments
        txn.produce(topic, value=_value(b"A", n), partition=0)
    assert txn.flush(30) == 0
    txn.abort_transaction(30)
    wait_until(
        "the transaction's closed segments tiered",
        lambda: fully_tiered(run.node, run.store, topic) and len(run.store.finished(topic)) >= 2,
        60.0,
        lambda: tiering_state(run.node, run.store, topic),
    )
    local = Run(run.node, run.store, topic, 100, 3_200)
    uncommitted = _consume_confluent(local, "read_uncommitted", 3_300)
    assert len(uncommitted) == 3_300
    assert _consume_confluent(local, "read_committed", 100) == uncommitted[:100]
    assert _consume_kafka_python(local, 100) == uncommitted[:100]
