"""The replica comparison reads raw segments: complete batches below an offset, torn tails not."""

from __future__ import annotations

import struct
from pathlib import Path

from tests.chaos.probes import partition_dirs, segment_batches, split_partition_dir_name


def batch(base_offset: int, records: int, filler: bytes = b"x") -> bytes:
    """A batch-shaped blob: header fields the reader uses, the rest filler (61 bytes minimum)."""
    body = struct.pack(">ibihiqqqhii", 0, 2, 0, 0, records - 1, 0, 0, 0, 0, 0, 0) + filler * 20
    return struct.pack(">qi", base_offset, len(body)) + body


def test_complete_batches_below_the_bound_and_the_end_of_the_valid_log(tmp_path: Path) -> None:
    partition = tmp_path / "chaos-queue-1"
    partition.mkdir()
    first, second, third = batch(0, 3), batch(3, 2), batch(5, 4)
    (partition / "00000000000000000000.log").write_bytes(first + second)
    (partition / "00000000000000000005.log").write_bytes(third + b"\xff" * 7)  # torn tail
    batches, end = segment_batches(partition, below=5)
    assert batches == [first, second]
    assert end == 9
    batches, end = segment_batches(partition, below=100)
    assert batches == [first, second, third]
    (partition / "00000000000000000005.log").write_bytes(third[:-3])  # the last batch cut short
    assert segment_batches(partition, below=100) == ([first, second], 5)


def test_partition_dirs_are_named_topic_dash_partition(tmp_path: Path) -> None:
    for name in ("chaos-txn-0", "__consumer_offsets-2", "not-a-partition", "meta.properties"):
        (tmp_path / name).mkdir()
    assert sorted(partition_dirs(tmp_path)) == ["__consumer_offsets-2", "chaos-txn-0"]
    assert split_partition_dir_name("chaos-txn-0") == ("chaos-txn", 0)
