"""Remote fetch cursors: consecutive fetches that resume a cursor return exactly the batches
fresh fetches return (every record once, in order, whatever the byte limits); a fetch
elsewhere starts afresh; copies and deletes close a segment's cursors; the idle set is
bounded by count, bytes and age."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklog.protocol.records import iter_batches
from sparklog.tiering.fetch_cursor import FetchCursor, FetchCursors
from sparklog.tiering.layout import PARQUET_SUFFIX
from sparklog.tiering.rsm import RemoteStorageManager, segment_object_paths
from sparklog.tiering.store import open_store

from .helpers import segment_metadata, write_segment


def _last_offsets(records: bytes | memoryview) -> list[int]:
    return [header.last_offset for _, header in iter_batches(records)]


def _setup(tmp: Path) -> tuple[RemoteStorageManager, RemoteStorageManager, object]:
    path, end = write_segment(tmp, 100, 400, per_batch=7)
    metadata, data = segment_metadata(path, 100, end)
    store = open_store(f"file://{tmp}/store")
    rsm = RemoteStorageManager(store, cluster_id="c", row_group_rows=32)
    rsm.copy_log_segment_data(metadata, data)
    fresh = RemoteStorageManager(store, cluster_id="c", row_group_rows=32)
    return rsm, fresh, metadata


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(limits=st.lists(st.integers(1, 3000), min_size=1, max_size=40))
def test_resumed_fetches_equal_fresh_ones(tmp_path_factory: object, limits: list[int]) -> None:
    tmp = tmp_path_factory.mktemp("cursor")  # type: ignore[attr-defined]
    rsm, fresh, metadata = _setup(tmp)
    offset = 100
    for limit in limits:
        if offset > 499:
            break
        got = rsm.fetch_log_segment(metadata, offset, limit)  # type: ignore[arg-type]
        # A new RSM has no cursor: what a fetch from scratch returns.
        fresh._cursors = FetchCursors(max_cursors=0)
        expected = fresh.fetch_log_segment(metadata, offset, limit)  # type: ignore[arg-type]
        assert got == expected
        offset = _last_offsets(got)[-1] + 1


def test_a_fetch_elsewhere_starts_afresh_and_delete_closes(tmp_path: Path) -> None:
    rsm, fresh, metadata = _setup(tmp_path)
    first = rsm.fetch_log_segment(metadata, 100, 500)  # type: ignore[arg-type]
    assert len(rsm._cursors) == 1
    # Back to an earlier offset (a consumer seeking): no cursor there, same answer as fresh.
    again = rsm.fetch_log_segment(metadata, 110, 500)  # type: ignore[arg-type]
    assert again == fresh.fetch_log_segment(metadata, 110, 500)  # type: ignore[arg-type]
    assert _last_offsets(again)[0] >= 110 > _last_offsets(first)[0] - 7
    assert len(rsm._cursors) == 2
    rsm.delete_log_segment_data(metadata)  # type: ignore[arg-type]
    assert len(rsm._cursors) == 0


def test_idle_cursors_are_bounded() -> None:
    closed: list[int] = []

    def cursor(i: int) -> FetchCursor:
        batch = bytes(8) + bytes(15) + (0).to_bytes(4, "big")  # base 0, lastOffsetDelta 0
        made = FetchCursor(iter([batch, batch]), lambda: closed.append(i))
        made.read(1)
        return made

    cursors = FetchCursors(max_cursors=2, idle_s=1000.0)
    for i in range(3):
        cursors.put(f"p{i}", None, cursor(i))
    assert len(cursors) == 2 and closed == [0]
    assert cursors.take("p1", 1, None) is not None
    stale = FetchCursors(max_cursors=5, idle_s=0.0)
    stale.put("a", None, cursor(10))
    stale.put("b", None, cursor(11))
    assert len(stale) == 1 and closed[-1] == 10
    heavy = FetchCursors(max_cursors=5, idle_s=1000.0, max_bytes=100)
    for i, weight in enumerate([60, 30, 50]):
        made = cursor(20 + i)
        made.weight = weight
        heavy.put(f"h{i}", None, made)
    assert len(heavy) == 2 and closed[-1] == 20  # 60 + 30 + 50 > 100: the oldest goes
    assert heavy.take("h1", 1, None) is not None
    spent = cursor(12)
    spent.read(1 << 20)  # reads the rest: nothing left to keep
    stale.put("c", None, spent)
    assert closed[-1] == 12


def _batch(base: int) -> bytes:
    return base.to_bytes(8, "big") + bytes(15) + (0).to_bytes(4, "big") + b"x" * 10


def test_read_ahead_keeps_the_order_and_defers_errors() -> None:
    def batches() -> Iterator[bytes]:
        yield from (_batch(i) for i in range(5))
        raise ValueError("damaged row group")

    cursor = FetchCursor(batches(), lambda: None)
    assert cursor.read(1) == _batch(0)
    cursor.read_ahead(2 * len(_batch(0)))
    cursor.read_ahead(1 << 20)  # reaches the error: kept, not raised here
    assert cursor.read(3 * len(_batch(0))) == _batch(1) + _batch(2) + _batch(3)
    assert cursor.read(1) == _batch(4)
    with pytest.raises(ValueError, match="damaged"):
        cursor.read(1)


def test_a_prefetched_segment_serves_the_fetch_that_follows(tmp_path: Path) -> None:
    rsm, fresh, metadata = _setup(tmp_path)
    opened: list[int] = []
    open_cursor = rsm._open_cursor

    def counting(path: str, start: int, to: int | None, codec: int | None) -> FetchCursor:
        opened.append(start)
        return open_cursor(path, start, to, codec)

    rsm._open_cursor = counting  # type: ignore[method-assign,assignment]
    rsm.prefetch_log_segment(metadata, 150, 600)  # type: ignore[arg-type]
    deadline = time.monotonic() + 30
    while not rsm._cursors.has(_parquet_path(metadata), 150, (None, None)):
        assert time.monotonic() < deadline, "the prefetch never listed its cursor"
        time.sleep(0.01)
    got = rsm.fetch_log_segment(metadata, 150, 600)  # type: ignore[arg-type]
    assert got == fresh.fetch_log_segment(metadata, 150, 600)  # type: ignore[arg-type]
    assert opened == [150]  # the fetch took the prefetched cursor, opened nothing


def _parquet_path(metadata: object) -> str:
    return segment_object_paths(metadata)[PARQUET_SUFFIX]  # type: ignore[arg-type]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.lists(st.integers(1, 3000), min_size=1, max_size=30),
    again=st.lists(st.integers(1, 3000), min_size=1, max_size=30),
)
def test_cached_chunks_equal_fresh_fetches(
    tmp_path_factory: object, first: list[int], again: list[int]
) -> None:
    """A second pass over the segment (other byte limits) served from the chunk cache
    returns what fresh fetches return: whole batches, every record once, in order."""
    tmp = tmp_path_factory.mktemp("chunks")  # type: ignore[attr-defined]
    path, end = write_segment(tmp, 100, 400, per_batch=7)
    metadata, data = segment_metadata(path, 100, end)
    store = open_store(f"file://{tmp}/store")
    rsm = RemoteStorageManager(
        store, cluster_id="c", row_group_rows=32, fetched_chunk_bytes=1 << 20
    )
    rsm.copy_log_segment_data(metadata, data)
    fresh = RemoteStorageManager(store, cluster_id="c", row_group_rows=32)
    fresh._cursors = FetchCursors(max_cursors=0)
    for limits in (first, again):
        offset = 100
        for limit in limits:
            if offset > 499:
                break
            got = rsm.fetch_log_segment(metadata, offset, limit)
            assert got == fresh.fetch_log_segment(metadata, offset, limit)
            offset = _last_offsets(got)[-1] + 1
    assert rsm._chunks.held_bytes > 0


def test_chunk_cache_is_bounded_and_dropped_by_a_copy(tmp_path: Path) -> None:
    path, end = write_segment(tmp_path, 100, 400, per_batch=7)
    metadata, data = segment_metadata(path, 100, end)
    rsm = RemoteStorageManager(
        open_store(f"file://{tmp_path}/store"),
        cluster_id="c",
        row_group_rows=32,
        fetched_chunk_bytes=1200,
    )
    rsm.copy_log_segment_data(metadata, data)
    offset = 100
    while offset <= 499:
        got = rsm.fetch_log_segment(metadata, offset, 500)
        assert 0 < rsm._chunks.held_bytes <= 1200
        offset = _last_offsets(got)[-1] + 1
    # The last chunks are held; the first were evicted (a fetch there encodes afresh).
    assert not rsm._chunks.has(segment_object_paths(metadata)[PARQUET_SUFFIX], 100, (None, None))
    assert (
        rsm._chunks.get(segment_object_paths(metadata)[PARQUET_SUFFIX], 100, (None, None), 1)
        is None
    )
    rsm.copy_log_segment_data(metadata, data)
    assert rsm._chunks.held_bytes == 0
    off = RemoteStorageManager(open_store(f"file://{tmp_path}/store"), cluster_id="c")
    off.fetch_log_segment(metadata, 100, 500)
    assert off._chunks.held_bytes == 0  # 0 bytes: nothing kept
