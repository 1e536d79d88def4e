"""Tiered storage across crashes and retention, on a real node.

- SIGKILL during uploads, in a loop: each round produces more records, watches the store until
  an upload is in flight (objects of a segment the manifest does not name yet) and kills the
  node right then. After each kill the manifest and the store agree (every entry's objects
  exist, entries contiguous and non-overlapping); after each restart the partition load has
  removed the orphans of the killed upload; at the end the store holds exactly what the
  manifest names and every record is readable once, with dense offsets.
- Retention across tiers: records older than a ``retention.ms`` set after they were tiered
  disappear from the manifest and the store, and the earliest offset (-2, the manifest's
  ``log_start_offset``, what a consumer resetting to earliest gets) moves to the first kept
  segment, while the local log is untouched; then a ``retention.bytes`` of half the log
  deletes the oldest remote segments down to that bound and no further.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)

from tests.integration.ck_helpers import admin_for, create_topic, make_consumer
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node
from tests.integration.tiering_support import (
    EARLIEST,
    EARLIEST_LOCAL,
    Rec,
    StoreView,
    backend_store,
    check_manifest_matches_store,
    check_records,
    consume_confluent,
    fully_tiered,
    list_offset,
    make_records,
    node_overrides,
    now_ms,
    produce,
    tiering_state,
    topic_configs,
    wait_fully_tiered,
    wait_until,
)

pytestmark = pytest.mark.integration

KILL_ROUNDS = 5
RECORDS_PER_ROUND = 25_000  # ~4 MB: a few segments to upload per round
INFLIGHT_WAIT_S = 20.0
HOUR_MS = 3_600_000


def wait_for_inflight_upload(node: Node, store: StoreView, topic: str) -> bool:
    """Poll until the store holds objects of a segment its manifest does not name (a copy in
    flight). False if the round's uploads all finished unobserved.

    On S3 the window between an object's PUT and the manifest's is a few requests long, so the
    loop lists only, and re-reads the manifest only when an unknown segment id shows up."""
    deadline = time.monotonic() + INFLIGHT_WAIT_S
    named: set[str] = set()
    next_idle_check = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        ids = {name[21:43] for name in store.segment_objects(topic)}
        if not ids <= named:
            manifest = store.manifest(topic)  # after the listing: it may name them by now
            named = {s["segment_id"] for s in manifest["segments"]} if manifest else set()
            if not ids <= named:
                return True
        if time.monotonic() > next_idle_check:
            if fully_tiered(node, store, topic):
                return False
            next_idle_check = time.monotonic() + 0.5
        time.sleep(0.001)
    return False


def started_log(node: Node) -> str:
    """The node's log since its latest start."""
    text = node.log_path.read_text(errors="replace")
    return text.rpartition(f"=== start #{node.starts} ")[2]


@pytest.mark.parametrize("backend", ["file", "s3"])
def test_sigkill_during_uploads_loses_and_duplicates_nothing(
    backend: str, node_factory: NodeFactory, request: pytest.FixtureRequest
) -> None:
    store, moto = backend_store(backend, node_factory.root, request)
    node = node_factory.create(node_overrides(store, moto))
    topic = unique_topic("tier-kill")
    create_topic(node, topic, 1, topic_configs())
    base_ts = now_ms() - HOUR_MS
    produced: list[Rec] = []
    kills_mid_upload = 0
    for round_ in range(KILL_ROUNDS):
        records = make_records(RECORDS_PER_ROUND, base_ts, seed=round_, first=len(produced))
        produce(node, topic, records)
        produced += records
        if wait_for_inflight_upload(node, store, topic):
            kills_mid_upload += 1
        node.kill()

        # A crashed node leaves a consistent store: nothing named is missing.
        _named, orphans = check_manifest_matches_store(store, topic)
        finished = store.finished(topic)
        assert finished and finished[-1]["end_offset"] < len(produced)

        node.start()
        wait_until(
            "the restarted node to load the partition's remote state",
            lambda: f"Loaded remote state of {topic}-0" in started_log(node),
            60.0,
            lambda: started_log(node)[-2000:],
        )
        # The load deleted the killed upload's objects (a new copy may already be running,
        # but always of a segment after the manifest's last one).
        _named, unnamed = check_manifest_matches_store(store, topic)
        assert not (orphans & unnamed), f"round {round_}: orphans survived the load: {orphans}"
        names = store.segment_objects(topic)  # before the manifest: a copy may finish between
        manifest = store.manifest(topic)
        assert manifest is not None
        named = {s["segment_id"] for s in manifest["segments"]}
        last_end = max((s["end_offset"] for s in manifest["segments"]), default=-1)
        for name in names:
            if name[21:43] not in named:
                assert int(name[:20]) > last_end, f"round {round_}: stale object {name}"

    assert kills_mid_upload >= 1, "no kill landed while an upload was in flight"
    wait_fully_tiered(
        node, store, topic, "every closed segment to be tiered after the last restart"
    )
    _named, unnamed = check_manifest_matches_store(store, topic)
    assert not unnamed, f"objects the manifest does not name: {unnamed}"

    # Every tiered offset is in exactly one Parquet object.
    offsets: list[int] = []
    for segment in store.finished(topic):
        offsets += store.read_parquet(topic, segment).column("offset").to_pylist()
    assert offsets == list(range(store.finished(topic)[-1]["end_offset"] + 1))

    got = consume_confluent(node, topic, 0, len(produced))
    check_records("after kills", got, produced)


def all_segment_ids(store: StoreView, topic: str) -> list[str]:
    """Every manifest entry, DELETE_SEGMENT_STARTED ones included."""
    manifest = store.manifest(topic)
    return [] if manifest is None else [s["segment_id"] for s in manifest["segments"]]


def _set_topic_config(node: Node, topic: str, name: str, value: int) -> None:
    admin = admin_for(node)
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry(name, str(value), incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(30)


@pytest.mark.parametrize("backend", ["file", "s3"])
def test_retention_ms_deletes_remote_segments_and_moves_earliest(
    backend: str, node_factory: NodeFactory, request: pytest.FixtureRequest
) -> None:
    store, moto = backend_store(backend, node_factory.root, request)
    node = node_factory.create(node_overrides(store, moto))
    topic = unique_topic("tier-retention")
    create_topic(node, topic, 1, topic_configs())
    old = make_records(30_000, now_ms() - 2 * HOUR_MS, seed=1)
    new_ts = now_ms() - 60_000
    new = make_records(30_000, new_ts, seed=2, first=len(old))
    produce(node, topic, old + new)
    wait_fully_tiered(node, store, topic)
    before = store.finished(topic)
    doomed = [s for s in before if s["max_timestamp"] < new_ts]
    kept = [s for s in before if s["max_timestamp"] >= new_ts]
    assert len(doomed) >= 3 and kept, f"{len(doomed)} old and {len(kept)} new segments"
    assert list_offset(node, topic, EARLIEST) == (0, 0)
    earliest_local = list_offset(node, topic, EARLIEST_LOCAL)

    _set_topic_config(
        node, topic, "retention.ms", HOUR_MS
    )  # the old half is 2 h old, the new half 1 min
    expected_start = kept[0]["base_offset"]
    wait_until(
        "expired remote segments to leave the manifest",
        lambda: (
            all_segment_ids(store, topic) == [s["segment_id"] for s in kept]
            and list_offset(node, topic, EARLIEST) == (0, expected_start)
        ),
        60.0,
        lambda: (list_offset(node, topic, EARLIEST), store.manifest(topic)),
    )
    manifest = store.manifest(topic)
    assert manifest is not None
    assert [s["segment_id"] for s in manifest["segments"]] == [s["segment_id"] for s in kept]
    assert manifest["log_start_offset"] == expected_start
    gone = {s["segment_id"] for s in doomed}
    left = [name for name in store.segment_objects(topic) if name[21:43] in gone]
    assert not left, f"objects of deleted segments remain: {left}"
    _named, unnamed = check_manifest_matches_store(store, topic)
    assert not unnamed

    assert list_offset(node, topic, EARLIEST) == (0, expected_start)
    assert list_offset(node, topic, EARLIEST_LOCAL) == earliest_local
    records = old + new
    got = consume_confluent(node, topic, expected_start, len(records) - expected_start)
    check_records("after retention", got, records[expected_start:], expected_start)
    # A consumer positioned below the new start is reset to it.
    consumer = make_consumer(node, **{"auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        msg = consumer.consume(1, timeout=30)[0]
        assert msg.error() is None and msg.offset() == expected_start
    finally:
        consumer.close()

    # retention.bytes bounds the whole log too: local bytes plus remote bytes below the local
    # log start. Kafka deletes the oldest remote segment while the rest still reaches the bound.
    def total_bytes() -> int:
        local = sum(path.stat().st_size for path in node.segment_files(topic, 0))
        return local + sum(int(s["segment_bytes"]) for s in store.finished(topic))

    def settled() -> bool:
        remaining = store.finished(topic)
        if len(remaining) != len(all_segment_ids(store, topic)):
            return False  # a deletion is under way
        return bool(remaining) and total_bytes() - remaining[0]["segment_bytes"] < limit

    limit = total_bytes() // 2
    assert not settled()
    _set_topic_config(node, topic, "retention.bytes", limit)
    wait_until(
        "retention.bytes to delete the oldest remote segments",
        settled,
        60.0,
        lambda: (total_bytes(), limit, tiering_state(node, store, topic)),
    )
    assert total_bytes() >= limit, "retention.bytes deleted more than it had to"
    # The broker moves its log start offset just after the manifest changes.
    new_start = store.finished(topic)[0]["base_offset"]
    wait_until(
        "earliest to follow the deleted segments",
        lambda: list_offset(node, topic, EARLIEST) == (0, new_start),
        30.0,
        lambda: (list_offset(node, topic, EARLIEST), new_start),
    )
