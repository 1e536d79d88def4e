"""Helpers for the tiered-storage integration tests: the record set, producing it, reading it
back with two client libraries, raw ListOffsets, and a view of the object store that uses only
fsspec, json and pyarrow (what a reader without brokers has).

The store view deliberately does not use ``sparklog.tiering``: the tests check the layout
contract of ``tiering/layout.py`` from the outside, so a bug shared by writer and reader code
cannot hide itself. Every wait is a bounded polling loop that fails with the state it saw.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from confluent_kafka import TopicPartition

from sparklog.client.connection import KafkaConnection
from tests.conftest import MotoS3
from tests.integration.ck_helpers import make_consumer, make_producer
from tests.integration.node_harness import Node

Headers = tuple[tuple[str, bytes | None], ...]

# Kafka's ListOffsets specs (KIP-405 / KIP-1005).
LATEST = -1
EARLIEST = -2
EARLIEST_LOCAL = -4
LATEST_TIERED = -5

SEGMENT_BYTES = 1_048_576  # the minimum segment.bytes: many segments roll
FINISHED = "COPY_SEGMENT_FINISHED"


@dataclass(frozen=True, slots=True)
class Rec:
    """One record as produced and as every reader must return it."""

    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int


def make_records(count: int, base_ts: int, seed: int, first: int = 0) -> list[Rec]:
    """``count`` records with random (incompressible) 100-200 byte values, so segments roll at
    the byte size the test expects. A few have a null key, a null value or no headers."""
    rng = random.Random(seed)
    records = []
    for i in range(first, first + count):
        key = None if i % 7919 == 11 else b"key-%07d" % i
        value = None if i % 4999 == 3 else rng.randbytes(rng.randint(100, 200))
        headers: Headers = (
            () if i % 1000 == 7 else (("seq", b"%d" % i), ("rand", rng.randbytes(8)), ("e", b""))
        )
        records.append(Rec(key, value, headers, base_ts + i // 10))
    return records


def now_ms() -> int:
    return int(time.time() * 1000)


# confluent-kafka producer settings for a fast bulk produce.
BULK_PRODUCER = {
    "linger.ms": 20,
    "batch.num.messages": 10_000,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
}


def produce(node: Node, topic: str, records: Sequence[Rec]) -> None:
    produce_with(make_producer(node, **BULK_PRODUCER), topic, records)


def produce_with(producer: Any, topic: str, records: Sequence[Rec]) -> None:
    """Produce ``records`` to partition 0 with a confluent-kafka ``producer``; every record
    must be acknowledged."""
    for i, rec in enumerate(records):
        while True:
            try:
                producer.produce(
                    topic,
                    partition=0,
                    key=rec.key,
                    value=rec.value,
                    headers=list(rec.headers) or None,
                    timestamp=rec.timestamp,
                )
                break
            except BufferError:
                producer.poll(0.05)
        if i % 5000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    assert remaining == 0, f"{remaining} records were not acknowledged"


def _normalize(raw: Sequence[tuple[str, bytes | None]] | None) -> Headers:
    return tuple((k, None if v is None else bytes(v)) for k, v in raw or ())


def check_records(
    label: str, got: Sequence[tuple[int, Rec]], want: Sequence[Rec], first_offset: int = 0
) -> None:
    """``got`` is (offset, record) pairs; they must be ``want`` at dense offsets from
    ``first_offset``, with identical keys, values, headers and timestamps."""
    offsets = [offset for offset, _ in got]
    expected_offsets = list(range(first_offset, first_offset + len(want)))
    if offsets != expected_offsets:
        missing = sorted(set(expected_offsets) - set(offsets))[:5]
        raise AssertionError(
            f"{label}: {len(offsets)} offsets, expected {len(want)} dense from {first_offset};"
            f" first missing {missing}, first seen {offsets[:3]}"
        )
    for (offset, rec), wanted in zip(got, want, strict=True):
        assert rec == wanted, f"{label}: offset {offset} differs:\n got {rec}\nwant {wanted}"


def consume_confluent(
    node: Node, topic: str, start: int, count: int, deadline_s: float = 120.0
) -> list[tuple[int, Rec]]:
    consumer = make_consumer(node, **{"fetch.max.bytes": 8_388_608})
    return consume_with(consumer, topic, start, count, deadline_s)


def consume_with(
    consumer: Any, topic: str, start: int, count: int, deadline_s: float = 120.0
) -> list[tuple[int, Rec]]:
    """(offset, record) pairs of partition 0 from ``start`` with a confluent-kafka
    ``consumer`` (closed on return): ``count`` records, and none after them."""
    got: list[tuple[int, Rec]] = []
    try:
        consumer.assign([TopicPartition(topic, 0, start)])
        deadline = time.monotonic() + deadline_s
        while len(got) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                if msg.error() is not None:
                    raise AssertionError(f"confluent consumer error: {msg.error()}")
                rec = Rec(msg.key(), msg.value(), _normalize(msg.headers()), msg.timestamp()[1])
                got.append((msg.offset(), rec))
        assert len(got) >= count, f"confluent: {len(got)} of {count} records in {deadline_s}s"
        for msg in consumer.consume(num_messages=100, timeout=0.5):
            raise AssertionError(f"confluent: unexpected record at offset {msg.offset()}")
    finally:
        consumer.close()
    return got


def consume_kafka_python(
    node: Node, topic: str, start: int, count: int, deadline_s: float = 180.0
) -> list[tuple[int, Rec]]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=node.bootstrap,
        enable_auto_commit=False,
        group_id=None,
        auto_offset_reset="none",
        fetch_max_bytes=8_388_608,
        max_partition_fetch_bytes=4_194_304,
        check_crcs=True,  # remote batches are re-encoded: their CRCs must hold
    )
    got: list[tuple[int, Rec]] = []
    try:
        tp = KTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, start)
        deadline = time.monotonic() + deadline_s
        while len(got) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500, max_records=20_000).values():
                for r in records:
                    rec = Rec(r.key, r.value, _normalize(r.headers), r.timestamp)
                    got.append((r.offset, rec))
        assert len(got) >= count, f"kafka-python: {len(got)} of {count} records in {deadline_s}s"
        extra = consumer.poll(timeout_ms=500)
        assert not any(extra.values()), "kafka-python: records beyond what was produced"
    finally:
        consumer.close()
    return got


def list_offset(node: Node, topic: str, spec: int) -> tuple[int, int]:
    """(error_code, offset) of a ListOffsets request for partition 0 at ``spec`` (a special
    value or a timestamp), at the highest version both sides speak (v9+ knows -5)."""
    with KafkaConnection.connect(node.bootstrap, timeout_s=30.0) as conn:
        response = conn.request(
            "ListOffsets",
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": spec}
                        ],
                    }
                ],
                "timeout_ms": 30_000,
            },
        )
    partition = response["topics"][0]["partitions"][0]
    return int(partition["error_code"]), int(partition["offset"])


def wait_until(
    what: str, condition: Callable[[], bool], timeout_s: float, state: Callable[[], object]
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}: {state()}")
        time.sleep(0.2)


@dataclass
class StoreView:
    """The tiered store seen through plain fsspec (the layout contract, from outside)."""

    url: str
    options: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # for a subprocess reading the store

    def __post_init__(self) -> None:
        self._dirs: dict[str, str] = {}
        extra = {} if self.url.startswith("file://") else {"use_listings_cache": False}
        self.fs, self.root = fsspec.core.url_to_fs(
            self.url, skip_instance_cache=True, **extra, **self.options
        )

    def _invalidate(self) -> None:
        self.fs.invalidate_cache()

    def partition_dirs(self, topic: str) -> list[str]:
        self._invalidate()
        found = self.fs.glob(f"{self.root}/topics/{topic}/*/0/manifest.json")
        return sorted(path.rsplit("/", 1)[0] for path in found)

    def partition_dir(self, topic: str) -> str | None:
        # A topic keeps its id for a test's lifetime: remember it (fewer LISTs per poll).
        if topic in self._dirs:
            return self._dirs[topic]
        dirs = self.partition_dirs(topic)
        assert len(dirs) <= 1, f"{topic} has several topic ids in the store: {dirs}"
        if dirs:
            self._dirs[topic] = dirs[0]
        return dirs[0] if dirs else None

    def manifest(self, topic: str) -> dict[str, Any] | None:
        base = self.partition_dir(topic)
        if base is None:
            return None
        # One GET: the manifest is replaced while we read, and a ranged read of an object
        # that changed under it fails (s3fs pins the ETag).
        doc: dict[str, Any] = json.loads(self.fs.cat_file(f"{base}/manifest.json"))
        return doc

    def finished(self, topic: str) -> list[dict[str, Any]]:
        manifest = self.manifest(topic)
        if manifest is None:
            return []
        return [s for s in manifest["segments"] if s["state"] == FINISHED]

    def segment_objects(self, topic: str) -> list[str]:
        """Names (not paths) of every object under the partition's ``segments/``."""
        base = self.partition_dir(topic)
        if base is None:
            return []
        self._invalidate()
        try:
            return sorted(p.rsplit("/", 1)[-1] for p in self.fs.find(f"{base}/segments"))
        except FileNotFoundError:
            return []

    def read_parquet(self, topic: str, segment: dict[str, Any]) -> pa.Table:
        base = self.partition_dir(topic)
        with self.fs.open(f"{base}/{segment['path']}", "rb") as f:
            return pq.read_table(f)


def file_store(url: str) -> StoreView:
    return StoreView(url)


def s3_store(moto: MotoS3, url: str) -> StoreView:
    env = {
        "AWS_ENDPOINT_URL": moto.endpoint_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    return StoreView(url, moto.options(), env)


def backend_store(
    backend: str, root: Path, request: pytest.FixtureRequest
) -> tuple[StoreView, MotoS3 | None]:
    """The store of ``backend``: ``"s3"``, a new bucket of the ``moto_s3`` fixture (returned
    too, for :func:`node_overrides`), else a ``file://`` store under ``root``."""
    if backend == "s3":
        moto: MotoS3 = request.getfixturevalue("moto_s3")
        return s3_store(moto, f"s3://{moto.new_bucket()}/tiered"), moto
    return file_store(f"file://{root}/remote"), None


def node_overrides(store: StoreView, moto: MotoS3 | None) -> dict[str, object]:
    props: dict[str, object] = {
        "remote.log.storage.system.enable": "true",
        "remote.log.manager.task.interval.ms": 300,
        "log.retention.check.interval.ms": 300,
        "sparklog.remote.storage.url": store.url,
    }
    if moto is not None:
        props.update(
            {
                "sparklog.remote.storage.s3.endpoint.url": moto.endpoint_url,
                "sparklog.remote.storage.s3.access.key.id": "testing",
                "sparklog.remote.storage.s3.secret.access.key": "testing",
                "sparklog.remote.storage.s3.region": "us-east-1",
            }
        )
    return props


def topic_configs(**extra: str) -> dict[str, str]:
    configs = {
        "remote.storage.enable": "true",
        "segment.bytes": str(SEGMENT_BYTES),
        "local.retention.bytes": "1",  # keep only the active segment once the rest is copied
        "retention.ms": "-1",
    }
    configs.update(extra)
    return configs


def local_bases(node: Node, topic: str) -> list[int]:
    return [int(path.stem) for path in node.segment_files(topic, 0)]


def fully_tiered(node: Node, store: StoreView, topic: str) -> bool:
    """Every closed segment is copied and deleted locally: only the active segment is left,
    and the manifest's last segment ends right before it."""
    bases = local_bases(node, topic)
    finished = store.finished(topic)
    return len(bases) == 1 and bool(finished) and finished[-1]["end_offset"] + 1 == bases[0]


def tiering_state(node: Node, store: StoreView, topic: str) -> str:
    finished = store.finished(topic)
    last = finished[-1]["end_offset"] if finished else None
    return f"local segments {local_bases(node, topic)}; {len(finished)} tiered, last end {last}"


def wait_fully_tiered(
    node: Node, store: StoreView, topic: str, what: str = "every closed segment to be tiered"
) -> None:
    """Wait (up to 120 s) until :func:`fully_tiered`; on timeout the error shows the
    :func:`tiering_state`."""
    wait_until(
        what,
        lambda: fully_tiered(node, store, topic),
        120.0,
        lambda: tiering_state(node, store, topic),
    )


def check_manifest_matches_store(store: StoreView, topic: str) -> tuple[set[str], set[str]]:
    """Structural checks of one partition's manifest against the objects in the store.

    Asserts: entries sorted by base offset, contiguous (no gap, no overlap) from the first one,
    each naming a parquet, leader-epoch and snapshot object that exist. Returns (segment ids in
    the manifest, segment ids of objects the manifest does not name)."""
    manifest = store.manifest(topic)
    assert manifest is not None, f"{topic} has no manifest"
    segments = manifest["segments"]
    for a, b in itertools.pairwise(segments):
        assert b["base_offset"] == a["end_offset"] + 1, (
            f"manifest segments not contiguous: [{a['base_offset']}, {a['end_offset']}] then"
            f" [{b['base_offset']}, {b['end_offset']}]"
        )
    names = set(store.segment_objects(topic))
    ids = {s["segment_id"] for s in segments}
    for s in segments:
        stem = s["path"].rsplit("/", 1)[-1].removesuffix(".parquet")
        assert stem.endswith(s["segment_id"]) and int(stem[:20]) == s["base_offset"], s["path"]
        for suffix in (".parquet", ".leader-epoch-checkpoint", ".snapshot"):
            assert stem + suffix in names, f"manifest names {stem}{suffix}, not in the store"
        assert s["record_count"] == s["end_offset"] - s["base_offset"] + 1, s
    others = {name[21:43] for name in names if name[21:43] not in ids}
    return ids, others
