"""Tiered storage on a real node, against a ``file://`` store and a moto S3 server.

One run per backend (a module fixture): 200,000 records with keys, headers and timestamps go to
a topic with 1 MiB segments and ``local.retention.bytes=1``; the test waits until every closed
segment is in the manifest and deleted locally. Then: confluent-kafka and kafka-python read
every record from offset 0 (most of it through remote fetch); each Parquet object opened with
plain pyarrow holds one row per record at contiguous offsets; ListOffsets answers -2 / -4 / -5
and timestamps in the remote range as Kafka 4.x does; and with the node stopped, the README's
pyarrow + fsspec snippet and ``sparklog tiering ls|describe`` read the store.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.compute as pc
import pytest

from tests.integration.ck_helpers import create_topic
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import REPO_ROOT, Node
from tests.integration.tiering_support import (
    EARLIEST,
    EARLIEST_LOCAL,
    LATEST,
    LATEST_TIERED,
    Rec,
    StoreView,
    backend_store,
    check_manifest_matches_store,
    check_records,
    consume_confluent,
    consume_kafka_python,
    list_offset,
    make_records,
    node_overrides,
    now_ms,
    produce,
    topic_configs,
    wait_fully_tiered,
)

pytestmark = pytest.mark.integration

RECORDS = 200_000
README_SNIPPET_MARK = "<!-- tested: tests/integration/test_tiering.py -->"


@dataclass(frozen=True, slots=True)
class TieredRun:
    node: Node
    store: StoreView
    topic: str
    records: list[Rec]
    base_ts: int


@pytest.fixture(scope="module", params=["file", "s3"])
def tiered(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TieredRun]:
    root = tmp_path_factory.mktemp(f"tiering-{request.param}")
    store, moto = backend_store(request.param, root, request)
    factory = NodeFactory(root)
    try:
        node = factory.create(node_overrides(store, moto))
        topic = unique_topic("tiered")
        create_topic(node, topic, 1, topic_configs())
        base_ts = now_ms() - 3_600_000
        records = make_records(RECORDS, base_ts, seed=405)
        produce(node, topic, records)
        wait_fully_tiered(
            node, store, topic, "every closed segment to be tiered and deleted locally"
        )
        yield TieredRun(node, store, topic, records, base_ts)
    finally:
        factory.close()


def test_manifest_lists_segments_and_local_copies_are_gone(tiered: TieredRun) -> None:
    finished = tiered.store.finished(tiered.topic)
    # ~35 MB of records in 1 MiB segments.
    assert len(finished) >= 20, f"only {len(finished)} segments tiered"
    assert finished[0]["base_offset"] == 0
    _ids, others = check_manifest_matches_store(tiered.store, tiered.topic)
    assert not others, f"objects the manifest does not name: {others}"
    manifest = tiered.store.manifest(tiered.topic)
    assert manifest is not None and manifest["log_start_offset"] == 0
    first_local = tiered.node.segment_files(tiered.topic, 0)[0]
    assert int(first_local.stem) == finished[-1]["end_offset"] + 1


def test_confluent_consumer_reads_every_record_from_zero(tiered: TieredRun) -> None:
    got = consume_confluent(tiered.node, tiered.topic, 0, len(tiered.records))
    check_records("confluent-kafka", got, tiered.records)


def test_kafka_python_consumer_reads_every_record_from_zero(tiered: TieredRun) -> None:
    got = consume_kafka_python(tiered.node, tiered.topic, 0, len(tiered.records))
    check_records("kafka-python", got, tiered.records)


def test_parquet_objects_open_with_plain_pyarrow(tiered: TieredRun) -> None:
    finished = tiered.store.finished(tiered.topic)
    next_offset = 0
    for segment in finished:
        table = tiered.store.read_parquet(tiered.topic, segment)
        offsets = table.column("offset").to_pylist()
        assert table.num_rows == segment["record_count"]
        assert offsets == list(range(segment["base_offset"], segment["end_offset"] + 1))
        assert offsets[0] == next_offset, "segments leave a gap or overlap"
        next_offset = offsets[-1] + 1
        assert not pc.any(table.column("is_control")).as_py()
        # Spot-check the row content against what was produced.
        for row in (0, table.num_rows // 2, table.num_rows - 1):
            offset = offsets[row]
            want = tiered.records[offset]
            assert table.column("key")[row].as_py() == want.key
            assert table.column("value")[row].as_py() == want.value
            assert table.column("timestamp")[row].as_py() == want.timestamp
            headers = table.column("headers")[row].as_py() or []
            assert tuple((h["key"], h["value"]) for h in headers) == want.headers
    assert next_offset == finished[-1]["end_offset"] + 1


def test_list_offsets_earliest_local_and_latest_tiered(tiered: TieredRun) -> None:
    finished = tiered.store.finished(tiered.topic)
    highest_tiered = finished[-1]["end_offset"]
    node, topic = tiered.node, tiered.topic
    assert list_offset(node, topic, EARLIEST) == (0, 0)
    assert list_offset(node, topic, EARLIEST_LOCAL) == (0, highest_tiered + 1)
    assert list_offset(node, topic, LATEST_TIERED) == (0, highest_tiered)
    assert list_offset(node, topic, LATEST) == (0, len(tiered.records))
    # By timestamp, inside the remote range: record i has timestamp base_ts + i // 10.
    assert list_offset(node, topic, tiered.base_ts + 5) == (0, 50)
    middle = finished[len(finished) // 2]["base_offset"] + 3
    error, offset = list_offset(node, topic, tiered.base_ts + middle // 10)
    assert (error, offset) == (0, (middle // 10) * 10)


def readme_snippet() -> str:
    """The Python block after the tested-snippet marker in README.md."""
    text = (REPO_ROOT / "README.md").read_text()
    _, marker, rest = text.partition(README_SNIPPET_MARK)
    assert marker, f"README.md lost its tested snippet marker {README_SNIPPET_MARK}"
    match = re.search(r"```python\n(.*?)```", rest, re.S)
    assert match is not None, "no ```python block after the README marker"
    return match.group(1)


def test_readme_snippet_reads_the_store_with_the_node_stopped(tiered: TieredRun) -> None:
    node, topic = tiered.node, tiered.topic
    node.stop()
    try:
        env = {**os.environ, **tiered.store.env, "SPARKLOG_STORE": tiered.store.url}
        done = subprocess.run(
            [sys.executable, "-c", readme_snippet()],
            cwd=Path("/"),  # not the repo: the snippet must not need sparklog importable
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        end = tiered.store.finished(topic)[-1]["end_offset"]
        line = f"{topic}-0: {end + 1} records, offsets 0..{end}, first key key-0000000"
        assert line in done.stdout.splitlines(), done.stdout

        cli = [sys.executable, "-m", "sparklog.cli.main", "tiering"]
        s3 = tiered.store.env
        flags = []
        if s3:
            flags = ["--s3-endpoint", s3["AWS_ENDPOINT_URL"], "--s3-region", "us-east-1"]
            flags += ["--s3-access-key-id", "testing", "--s3-secret-access-key", "testing"]
        ls = subprocess.run(
            [*cli, "ls", "--store", tiered.store.url, *flags],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert ls.returncode == 0, ls.stderr
        row = next(r.split() for r in ls.stdout.splitlines() if r.startswith(topic))
        assert row[2:6] == ["0", str(len(tiered.store.finished(topic))), f"0..{end}", str(end + 1)]
        describe = subprocess.run(
            [*cli, "describe", "--store", tiered.store.url, "--topic", topic, *flags],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert describe.returncode == 0, describe.stderr
        assert "COPY_SEGMENT_FINISHED" in describe.stdout
    finally:
        node.start()  # later tests of this module may still use the node
