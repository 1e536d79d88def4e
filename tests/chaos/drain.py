"""The drain after the final heal: wait for the cluster to settle, then record its final state.

Contract: every function records what it found as an op of process ``final`` (the checker reads
nothing else) and is bounded in time; none hides a failure (a bound that runs out is recorded
as such, never retried silently).

- :func:`wait_isr_restored`: Metadata until every partition's ISR equals its replicas (``isr``
  op, ``not_restored`` lists the partitions that never got there).
- :func:`wait_no_open_transactions`: ListTransactions on every broker until none is Ongoing or
  Prepare* (``open_txns`` op).
- :func:`final_reads`: the end offsets with the AdminClient's ``list_offsets`` (latest, both
  isolation levels), then one fresh assign-mode consumer per isolation level reads every
  partition from the beginning up to them (``final_read`` ops with ``complete``).
- :func:`compare_replicas`: with the brokers stopped (SIGTERM), the raw bytes of every complete
  batch below the final high watermark of each partition are compared across its replicas
  (``replicas`` op, ``divergent`` lists the partitions that differ or fall short).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec

from tests.chaos import probes
from tests.chaos.history import History
from tests.chaos.runner import ChaosCluster

INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


def wait_isr_restored(
    cluster: ChaosCluster, history: History, topics: Sequence[str], timeout_s: float
) -> list[Any]:
    brokers = [b.address for b in cluster.brokers]
    deadline = time.monotonic() + timeout_s
    started = time.monotonic()
    not_restored: list[Any] = [["no metadata"]]
    while time.monotonic() < deadline:
        states = probes.partition_states(brokers, [*topics, *INTERNAL_TOPICS])
        not_restored = [
            [t, p, list(s.replicas), list(s.isr), s.leader]
            for (t, p), s in sorted(states.items())
            if sorted(s.replicas) != list(s.isr) or s.leader < 0
        ]
        if states and not not_restored:
            break
        time.sleep(0.5)
    history.record(
        "final",
        "info",
        "isr",
        {"not_restored": not_restored, "waited_s": round(time.monotonic() - started, 1)},
    )
    return not_restored


def wait_no_open_transactions(
    cluster: ChaosCluster, history: History, timeout_s: float
) -> list[dict[str, Any]]:
    brokers = [b.address for b in cluster.brokers]
    deadline = time.monotonic() + timeout_s
    started = time.monotonic()
    while True:
        listed, unreachable = probes.open_transactions(brokers)
        if (not listed and not unreachable) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    history.record(
        "final",
        "info",
        "open_txns",
        {
            "open": listed,
            "unreachable": unreachable,
            "waited_s": round(time.monotonic() - started, 1),
        },
    )
    return listed


def end_offsets(
    bootstrap: str, topics: Sequence[str], partitions: int, isolation: str
) -> dict[tuple[str, int], int]:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    level = (
        confluent_kafka.IsolationLevel.READ_COMMITTED
        if isolation == "read_committed"
        else confluent_kafka.IsolationLevel.READ_UNCOMMITTED
    )
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    wanted = {TopicPartition(t, p): latest for t in topics for p in range(partitions)}
    futures = admin.list_offsets(wanted, isolation_level=level, request_timeout=20)
    return {(tp.topic, tp.partition): int(f.result(timeout=30).offset) for tp, f in futures.items()}


def final_read(
    bootstrap: str,
    topics: Sequence[str],
    partitions: int,
    isolation: str,
    history: History,
    timeout_s: float,
) -> dict[tuple[str, int], int]:
    """Reads everything below the end offsets; returns those end offsets."""
    ends: dict[tuple[str, int], int] = {}
    error = None
    deadline = time.monotonic() + timeout_s
    while not ends and time.monotonic() < deadline:
        try:
            ends = end_offsets(bootstrap, topics, partitions, isolation)
        except confluent_kafka.KafkaException as exc:
            error = str(exc)
            time.sleep(1.0)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"chaos-final-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
            "log_level": 0,
        }
    )
    records: list[list[Any]] = []
    errors: list[str] = []
    positions = {tp: 0 for tp in ends}
    try:
        consumer.assign([TopicPartition(t, p, confluent_kafka.OFFSET_BEGINNING) for t, p in ends])
        while time.monotonic() < deadline:
            if all(positions[tp] >= end for tp, end in ends.items()):
                break
            for msg in consumer.consume(1000, 0.5):
                if msg.error() is not None:
                    errors.append(str(msg.error()))
                    continue
                tp = (msg.topic(), msg.partition())
                value = msg.value()
                records.append([tp[0], tp[1], msg.offset(), value.decode() if value else None])
            for tp in ends:
                got = consumer.position([TopicPartition(*tp)])[0].offset
                if got >= 0:
                    positions[tp] = got
    finally:
        consumer.close()
    complete = bool(ends) and all(positions[tp] >= end for tp, end in ends.items())
    history.record(
        "final",
        "info",
        "final_read",
        {
            "isolation": isolation,
            "complete": complete,
            "end_offsets": [[t, p, o] for (t, p), o in sorted(ends.items())],
            "positions": [[t, p, o] for (t, p), o in sorted(positions.items())],
            "errors": (errors[:20] + ([error] if error else [])),
            "records": records,
        },
    )
    return ends


def compare_replicas(
    cluster: ChaosCluster, history: History, high_watermarks: dict[tuple[str, int], int]
) -> list[Any]:
    """Stops the brokers cleanly, then compares each partition's replicas below its HW."""
    for broker in cluster.brokers:
        broker.terminate(timeout_s=30.0)
    divergent: list[Any] = []
    compared = 0
    by_partition: dict[str, dict[str, Any]] = {}
    for broker in cluster.brokers:
        for name, path in probes.partition_dirs(broker.data_dir).items():
            if not name.startswith("__cluster_metadata"):
                by_partition.setdefault(name, {})[broker.name] = path
    for name, replicas in sorted(by_partition.items()):
        topic_partition = probes.split_partition_dir_name(name)
        high_watermark = high_watermarks.get(topic_partition)
        if high_watermark is None:
            # The internal topics are compacted, and each replica cleans its own segments,
            # so their bytes may differ legitimately: only the workload topics compare.
            continue
        compared += 1
        logs = {
            node: probes.segment_batches(path, high_watermark) for node, path in replicas.items()
        }
        reference_node, (reference, _) = next(iter(logs.items()))
        for node, (batches, end) in logs.items():
            short = end < high_watermark
            if short or batches != reference:
                first_difference = next(
                    (i for i, (a, b) in enumerate(zip(batches, reference, strict=False)) if a != b),
                    min(len(batches), len(reference)),
                )
                divergent.append(
                    {
                        "partition": name,
                        "replica": node,
                        "against": reference_node,
                        "high_watermark": high_watermark,
                        "replica_end": end,
                        "batches": len(batches),
                        "reference_batches": len(reference),
                        "first_different_batch": first_difference,
                    }
                )
        if len(replicas) != len(cluster.brokers):
            divergent.append({"partition": name, "replicas_on_disk": sorted(replicas)})
    history.record("final", "info", "replicas", {"divergent": divergent, "compared": compared})
    return divergent
