"""The runnable jobs in ``jobs/``, as users run them (``python jobs/x.py``, in a subprocess).

- ``--help`` of every job works and documents the flags a user needs.
- The backfill job with a moto S3 server: a node tiers a topic to S3, is stopped, and the job
  reads the topic's history from the store alone into Parquet; the dataset equals what
  librdkafka read from the same offsets while the node was up.
- The stream job twice with one checkpoint (available-now, rate-limited): every record once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import MotoS3
from tests.integration.ck_helpers import create_topic
from tests.integration.node_harness import Node
from tests.integration.tiering_support import (
    consume_confluent,
    file_store,
    make_records,
    node_overrides,
    now_ms,
    produce,
    s3_store,
    tiering_state,
    topic_configs,
    wait_until,
)
from tests.spark.support import REPO, SPARK_MARKS

pytestmark = SPARK_MARKS
JOB_TIMEOUT_S = 300


def _job(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run(
        [sys.executable, str(REPO / "jobs" / name), *args],
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT_S,
        env=env,
        cwd=REPO,
        check=False,
    )


@pytest.mark.parametrize(
    ("job", "flags"),
    [
        ("stream_to_parquet.py", ["--checkpoint", "--trigger", "--max-offsets-per-trigger"]),
        ("backfill.py", ["--store-url", "--s3-endpoint", "--output", "--subscribe"]),
        ("quickstart.py", ["--records", "--data-dir"]),
    ],
)
def test_help(job: str, flags: list[str]) -> None:
    done = _job(job, "--help")
    assert done.returncode == 0, done.stderr
    for flag in flags:
        assert flag in done.stdout, (flag, done.stdout)


def test_bad_flags_exit_with_a_usage_error() -> None:
    done = _job("backfill.py", "--subscribe", "t", "--output", "/tmp/x")
    assert done.returncode == 2
    assert "--store-url" in done.stderr


@pytest.mark.timeout(600)
def test_backfill_from_s3_with_the_node_down(tmp_path: Path, moto_s3: MotoS3) -> None:
    topic, total = "backfill-s3", 20_000
    store = s3_store(moto_s3, f"s3://{moto_s3.new_bucket()}/tiered")
    node = Node(tmp_path / "node", node_overrides(store, moto_s3))
    node.start()
    try:
        create_topic(node, topic, 1, topic_configs())
        produce(node, topic, make_records(total, now_ms() - 60_000, seed=11))
        wait_until(
            "two tiered segments",
            lambda: len(store.finished(topic)) >= 2,
            90.0,
            lambda: tiering_state(node, store, topic),
        )
        consumed = consume_confluent(node, topic, 0, total)
    finally:
        node.stop()
    tiered_end = store.finished(topic)[-1]["end_offset"] + 1
    out = tmp_path / "history"
    done = _job(
        "backfill.py",
        "--store-url",
        store.url,
        "--s3-endpoint",
        moto_s3.endpoint_url,
        "--s3-access-key-id",
        "testing",
        "--s3-secret-access-key",
        "testing",
        "--s3-region",
        "us-east-1",
        "--subscribe",
        topic,
        "--include-headers",
        "--output",
        str(out),
        "--master",
        "local[2]",
    )
    assert done.returncode == 0, done.stdout + done.stderr[-5000:]
    assert f"holds {tiered_end} records" in done.stdout, done.stdout
    assert f"{topic}-0: offsets 0..{tiered_end - 1}, {tiered_end} records" in done.stdout
    table = pq.read_table(out).sort_by("offset")
    assert table.column("offset").to_pylist() == list(range(tiered_end))
    want = [rec for _, rec in consumed[:tiered_end]]
    assert table.column("key").to_pylist() == [r.key for r in want]
    assert table.column("value").to_pylist() == [r.value for r in want]
    headers = [
        tuple((h["key"], h["value"]) for h in hs or ()) for hs in table["headers"].to_pylist()
    ]
    assert headers == [r.headers for r in want]


@pytest.mark.timeout(600)
def test_stream_job_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    topic = "job-stream"
    store = file_store(f"file://{tmp_path / 'store'}")
    node = Node(tmp_path / "node", node_overrides(store, None))
    node.start()
    try:
        create_topic(node, topic, 1, topic_configs())
        produce(node, topic, make_records(5000, now_ms(), seed=3))
        args = [
            "--bootstrap-servers",
            node.bootstrap,
            "--subscribe",
            topic,
            "--store-url",
            store.url,
            "--output",
            str(tmp_path / "out"),
            "--checkpoint",
            str(tmp_path / "checkpoint"),
            "--max-offsets-per-trigger",
            "2000",
            "--master",
            "local[2]",
        ]
        first = _job("stream_to_parquet.py", *args)
        assert first.returncode == 0, first.stdout + first.stderr[-5000:]
        assert "5000 records in 3 micro-batches" in first.stdout, first.stdout
        produce(node, topic, make_records(1000, now_ms(), seed=4, first=5000))
        second = _job("stream_to_parquet.py", *args)
        assert second.returncode == 0, second.stdout + second.stderr[-5000:]
        assert "1000 records in 1 micro-batches" in second.stdout, second.stdout
        assert "{'job-stream': {'0': 6000}}" in second.stdout
    finally:
        node.stop()
    offsets = pq.read_table(tmp_path / "out", columns=["offset"]).column("offset").to_pylist()
    assert sorted(offsets) == list(range(6000))
