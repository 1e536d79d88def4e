"""``sparklog tiering ls|describe`` against file:// and moto S3 stores."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from sparklog.cli.tiering_tool import add_tiering_parser, run_tiering
from sparklog.tiering.metadata import RemoteLogSegmentState
from sparklog.tiering.rlmm import RemoteLogMetadataManager
from sparklog.tiering.rsm import RemoteStorageManager
from sparklog.tiering.store import open_store
from tests.conftest import MotoS3
from tests.unit.tiering.helpers import TOPIC_ID, segment_metadata, write_segment


def run(argv: list[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="sparklog")
    add_tiering_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["tiering", *argv])
    out, err = io.StringIO(), io.StringIO()
    status = run_tiering(args, out, err)
    return status, out.getvalue(), err.getvalue()


def fill(url: str, options: dict[str, object], tmp_path: Path) -> None:
    store = open_store(url, options)
    rsm = RemoteStorageManager(store, cluster_id="c1")
    rlmm = RemoteLogMetadataManager(store)
    for base in (0, 40):
        path, end = write_segment(tmp_path, base, 40)
        metadata, data = segment_metadata(path, base, end)
        rlmm.add_remote_log_segment_metadata(metadata)
        rlmm.update_remote_log_segment_metadata(
            metadata.remote_log_segment_id,
            RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
            copied=rsm.copy_log_segment_data(metadata, data),
        )


def test_ls_and_describe_file_store(tmp_path: Path) -> None:
    url = f"file://{tmp_path}/remote"
    fill(url, {}, tmp_path)
    status, out, err = run(["ls", "--store", url])
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].split() == [
        "TOPIC",
        "TOPIC_ID",
        "PARTITION",
        "SEGMENTS",
        "OFFSETS",
        "RECORDS",
        "BYTES",
    ]
    assert lines[1].split()[:6] == ["orders", TOPIC_ID, "0", "2", "0..79", "80"]
    status, out, err = run(["describe", "--store", url, "--topic", "orders"])
    assert status == 0, err
    assert f"TopicId: {TOPIC_ID}" in out and "ManifestVersion: 2" in out
    assert out.count("COPY_SEGMENT_FINISHED") == 2
    assert "0@0" in out


def test_ls_s3_store_with_endpoint_flags(moto_s3: MotoS3, tmp_path: Path) -> None:
    url = f"s3://{moto_s3.new_bucket()}/tiered"
    fill(url, moto_s3.options(), tmp_path)
    flags = [
        "--store",
        url,
        "--s3-endpoint",
        moto_s3.endpoint_url,
        "--s3-access-key-id",
        "testing",
        "--s3-secret-access-key",
        "testing",
        "--s3-region",
        "us-east-1",
    ]
    status, out, err = run(["ls", *flags])
    assert status == 0, err
    assert "orders" in out and "0..79" in out
    status, out, err = run(["describe", *flags, "--topic", "orders", "--partition", "0"])
    assert status == 0, err
    assert "LogStartOffset: 0" in out


def test_errors_say_what_to_fix(tmp_path: Path) -> None:
    status, _, err = run(["ls", "--store", f"file://{tmp_path}/nothing"])
    assert status == 1 and "not a sparklog tiered store" in err and "--store" in err
    url = f"file://{tmp_path}/remote"
    fill(url, {}, tmp_path)
    status, _, err = run(["describe", "--store", url, "--topic", "missing"])
    assert status == 1 and "missing" in err and "orders" in err
    status, _, err = run(["describe", "--store", url, "--topic", "orders", "--partition", "7"])
    assert status == 1 and "orders-7" in err and "[0]" in err
    status, _, err = run(["ls", "--store", "nosuch://x"])
    assert status == 1 and "nosuch" in err
    status, _, err = run(["ls", "--store", url, "--s3-endpoint", "http://x"])
    assert status == 1 and "s3://" in err
