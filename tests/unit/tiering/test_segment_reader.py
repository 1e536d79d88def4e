"""The one reader of segment objects: row-group pruning, range reads, offset-for-timestamp."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparklog.tiering.segment_reader import (
    first_at_or_after,
    open_segment,
    parquet_file,
    read_rows,
    row_groups,
)
from sparklog.tiering.store import open_store
from sparklog.tiering.transcode import segment_to_parquet
from tests.unit.tiering.helpers import write_segment


@pytest.fixture
def segment(tmp_path: Path) -> pq.ParquetFile:
    """1,000 records (offset o has timestamp 1000 + o) in 10 row groups of 100 rows."""
    path, _ = write_segment(tmp_path, 0, 1_000, per_batch=10)
    data, _ = segment_to_parquet(path, row_group_rows=100)
    assert isinstance(data, bytes)
    return parquet_file(data)


class Counting:
    def __init__(self) -> None:
        self.groups: list[int] = []

    def __call__(self, parquet: pq.ParquetFile, index: int, columns: list[str]) -> pa.Table:
        self.groups.append(index)
        return parquet.read_row_group(index, columns=columns)


def test_a_timestamp_inside_the_segment_reads_one_row_group(segment: pq.ParquetFile) -> None:
    assert segment.metadata.num_row_groups == 10
    reads = Counting()
    assert first_at_or_after(segment, 1_555, read_group=reads) == (1_555, 555)
    assert reads.groups == [5]
    reads = Counting()
    assert first_at_or_after(segment, 1_100, 700, skip_control=True, read_group=reads) == (
        1_700,
        700,
    )
    assert reads.groups == [7]


def test_no_late_enough_record_reads_nothing(segment: pq.ParquetFile) -> None:
    reads = Counting()
    assert first_at_or_after(segment, 2_000, read_group=reads) is None
    assert first_at_or_after(segment, 0, 1_000, read_group=reads) is None
    assert reads.groups == []


def test_row_groups_by_statistics(segment: pq.ParquetFile) -> None:
    meta = segment.metadata
    assert row_groups(meta, "offset", 150, 320) == [1, 2, 3]
    assert row_groups(meta, "timestamp", 1_950) == [9]
    # Columns after the nested headers are found by leaf path.
    assert row_groups(meta, "batch_last_offset", 995) == [9]
    with pytest.raises(KeyError, match="not a sparklog segment"):
        row_groups(meta, "nope")


def test_read_rows_reads_the_range_only(segment: pq.ParquetFile) -> None:
    tables = list(read_rows(segment, 150, 320, ["offset", "is_control"]))
    assert len(tables) == 3
    offsets = pa.concat_tables(tables).column("offset").to_pylist()
    assert offsets == list(range(150, 320))


def test_open_segment_reads_through_the_store(tmp_path: Path) -> None:
    path, _ = write_segment(tmp_path, 0, 50)
    segment_to_parquet(path, out=str(tmp_path / "s.parquet"))
    store = open_store(f"file://{tmp_path}")
    with open_segment(store, "s.parquet") as parquet:
        assert first_at_or_after(parquet, 1_020) == (1_020, 20)
