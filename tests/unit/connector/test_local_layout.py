"""``connector/local_layout.py`` without Spark: links under ``partition=N`` directories point at
the given files, the same files reuse one directory, and only local paths are accepted."""

from __future__ import annotations

import os
from pathlib import Path

from sparklog.connector.local_layout import local_path, partition_layout


def test_links_per_partition_and_reuse(tmp_path: Path) -> None:
    files = {}
    for partition in (0, 1):
        paths = []
        for index in range(2):
            path = (
                tmp_path / f"p{partition}" / "seg.parquet"
                if index == 0
                else tmp_path / f"x{partition}"
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"%d-%d" % (partition, index))
            paths.append(str(path))
        files[partition] = paths
    base, links = partition_layout(files)
    assert base.startswith("file://") and len(links) == 4
    for url, (partition, target) in zip(
        links, [(p, t) for p, ts in files.items() for t in ts], strict=True
    ):
        link = url.removeprefix("file://")
        assert os.path.dirname(link) == f"{base.removeprefix('file://')}/partition={partition}"
        assert os.path.realpath(link) == os.path.realpath(target)
        assert not os.path.basename(link).startswith(("_", "."))
    assert partition_layout(files) == (base, links)
    other_base, _ = partition_layout({0: files[0]})
    assert other_base != base


def test_local_path() -> None:
    assert local_path("file:///tmp/a%20b/x.parquet") == "/tmp/a b/x.parquet"
    assert local_path("file:/tmp/x") == "/tmp/x"
    assert local_path("/tmp/x") == "/tmp/x"
    assert local_path("s3a://bucket/x") is None
    assert local_path("file://host/x") is None
    assert local_path("relative/x") is None
