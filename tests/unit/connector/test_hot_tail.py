"""The native plan's driver-side hot tail (``connector/hot_tail.py``) without Spark or a broker:
``read_hot`` is replaced by a fake, so these check what the module adds: the Parquet files hold
exactly the batches' rows in the tier's columns, a second read of a range reuses its file, and it
declines (None, no file left behind) off a local master, above its offset or byte limits, or
when the cache is full."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparklog.connector import hot_tail
from sparklog.connector.planning import HotPiece
from sparklog.connector.schema import build_batch


def _piece(partition: int, start: int, end: int) -> HotPiece:
    return HotPiece("t", partition, start, end, "localhost:9092", b"\x01" * 16)


def _batch(piece: HotPiece) -> pa.RecordBatch:
    count = piece.end - piece.start
    return build_batch(
        topic=piece.topic,
        partition=piece.partition,
        offsets=pa.array(range(piece.start, piece.end), pa.int64()),
        keys=pa.array([b"k%d" % i for i in range(count)], pa.binary()),
        values=pa.array([b"v" * 50] * count, pa.binary()),
        timestamps_ms=pa.array([1_700_000_000_000 + i for i in range(count)], pa.int64()),
        timestamp_types=pa.array([0] * count, pa.int32()),
        headers=None,
        include_headers=False,
    )


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[HotPiece]]:
    """The pieces the fake ``read_hot`` was asked for; the cache starts and ends empty."""
    asked: list[HotPiece] = []

    def fake_read_hot(piece: HotPiece) -> Iterator[pa.RecordBatch]:
        asked.append(piece)
        if piece.end > piece.start:
            yield _batch(piece)

    monkeypatch.setattr(hot_tail, "read_hot", fake_read_hot)
    hot_tail.clear()
    yield asked
    hot_tail.clear()


def test_files_hold_the_rows_and_a_second_read_reuses_them(reads: list[HotPiece]) -> None:
    pieces = [_piece(0, 10, 20), _piece(1, 0, 0), _piece(2, 5, 8)]
    tails = hot_tail.materialise(pieces, local_master=True)
    assert tails is not None and len(tails) == 2  # the empty piece has no file
    for tail, piece in zip(tails, (pieces[0], pieces[2]), strict=True):
        assert (tail.topic, tail.partition, tail.start, tail.end) == (
            piece.topic,
            piece.partition,
            piece.start,
            piece.end,
        )
        assert tail.size_bytes == os.path.getsize(tail.path)
        table = pq.read_table(tail.path)
        assert table.schema.equals(hot_tail.TAIL_SCHEMA)
        batch = _batch(piece)
        assert table.column("offset").to_pylist() == batch.column("offset").to_pylist()
        assert table.column("key").to_pylist() == batch.column("key").to_pylist()
        assert table.column("value").to_pylist() == batch.column("value").to_pylist()
        millis = [t.timestamp() * 1000 for t in batch.column("timestamp").to_pylist()]
        assert table.column("timestamp").to_pylist() == millis
        assert table.column("timestamp_type").to_pylist() == [0] * batch.num_rows
    assert hot_tail.materialise(pieces, local_master=True) == tails
    assert len(reads) == 3  # each piece read once
    # Another range of a partition is another file.
    again = hot_tail.materialise([_piece(0, 10, 21)], local_master=True)
    assert again is not None and again[0] not in tails


def test_declines_off_a_local_master_and_above_the_offset_limit(
    reads: list[HotPiece], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert hot_tail.materialise([_piece(0, 0, 5)], local_master=False) is None
    monkeypatch.setattr(hot_tail, "MAX_OFFSETS", 4)
    assert hot_tail.materialise([_piece(0, 0, 5)], local_master=True) is None
    assert reads == []


def test_over_the_byte_budget_it_declines_and_leaves_no_file(
    reads: list[HotPiece], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(hot_tail, "MAX_BYTES", _batch(_piece(0, 0, 100)).nbytes * 3 // 2)
    written = hot_tail.materialise([_piece(0, 0, 100)], local_master=True)
    assert written is not None
    directory = os.path.dirname(written[0].path)
    before = set(os.listdir(directory))
    assert hot_tail.materialise([_piece(1, 0, 100), _piece(2, 0, 100)], True) is None
    assert set(os.listdir(directory)) == before
    # A full cache declines too, without reading.
    monkeypatch.setattr(hot_tail, "CACHE_BYTES", 1)
    asked = len(reads)
    assert hot_tail.materialise([_piece(3, 0, 10)], local_master=True) is None
    assert len(reads) == asked
