"""Planning without Spark or a broker: offset resolution (earliest, latest, specific offsets,
timestamps, strategies), data loss versus transaction gaps, splitting, and the store-only plan
with the cold reader over a hand-written tiered store."""

from __future__ import annotations

import itertools
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.connector import cold, planning
from sparklog.connector.cold import read_cold
from sparklog.connector.options import OptionError, SourceOptions, parse_options
from sparklog.connector.planning import (
    NO_MATCH,
    ColdObject,
    ColdPiece,
    DataLossError,
    HotPiece,
    PartitionRange,
    partition_states,
    plan,
    plan_ranges,
    resolve_range,
    split_pieces,
    store_offset_for_timestamp,
)
from sparklog.connector.schema import arrow_schema
from sparklog.tiering.reader import TieredStoreReader

from .store_builder import Row, StoreBuilder

TOPIC = "events"


def _options(**options: str) -> SourceOptions:
    return parse_options({"kafka.bootstrap.servers": "h:1", "subscribe": TOPIC, **options})


# --- resolve_range: pure ----------------------------------------------------------------------


def test_defaults_read_earliest_to_latest() -> None:
    assert resolve_range(_options(), TOPIC, 0, 5, 50) == PartitionRange(TOPIC, 0, 5, 50)
    assert resolve_range(_options(), TOPIC, 0, 7, 7) is None


def test_specific_offsets_and_cut_at_latest() -> None:
    opts = _options(startingOffsets='{"events":{"0":10}}', endingOffsets='{"events":{"0":99}}')
    assert resolve_range(opts, TOPIC, 0, 0, 50) == PartitionRange(TOPIC, 0, 10, 50)
    opts = _options(startingOffsets='{"events":{"0":-2}}', endingOffsets='{"events":{"0":-1}}')
    assert resolve_range(opts, TOPIC, 0, 3, 50) == PartitionRange(TOPIC, 0, 3, 50)


def test_streaming_latest_start_is_empty() -> None:
    opts = parse_options({"kafka.bootstrap.servers": "h:1", "subscribe": TOPIC}, streaming=True)
    assert resolve_range(opts, TOPIC, 0, 0, 50) is None


def test_data_loss_fails_naming_what_is_gone() -> None:
    opts = _options(startingOffsets='{"events":{"0":4}}')
    with pytest.raises(DataLossError) as info:
        resolve_range(opts, TOPIC, 0, 10, 50)
    text = str(info.value)
    assert "offsets [4, 10) of events-0 were requested" in text
    assert "the earliest available offset is 10" in text
    assert "failOnDataLoss" in text


def test_data_loss_skips_ahead_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    opts = _options(startingOffsets='{"events":{"0":4}}', failOnDataLoss="false")
    with caplog.at_level(logging.WARNING, logger="sparklog.connector.offsets"):
        assert resolve_range(opts, TOPIC, 0, 10, 50) == PartitionRange(TOPIC, 0, 10, 50)
    assert "offsets [4, 10) of events-0 are gone" in caplog.text
    opts = _options(
        startingOffsets='{"events":{"0":1}}',
        endingOffsets='{"events":{"0":5}}',
        failOnDataLoss="false",
    )
    assert resolve_range(opts, TOPIC, 0, 10, 50) is None


def test_resolved_start_beyond_end_fails() -> None:
    opts = _options(startingOffsets='{"events":{"0":80}}')
    with pytest.raises(OptionError, match="The resolved start offset 80 is greater than the"):
        resolve_range(opts, TOPIC, 0, 0, 50)


def test_timestamps_resolve_through_the_looked_up_offsets() -> None:
    opts = _options(startingTimestamp="1000", endingTimestamp="2000")
    assert resolve_range(opts, TOPIC, 0, 0, 50, 12, 40) == PartitionRange(TOPIC, 0, 12, 40)
    # An ending timestamp no record reaches means latest.
    assert resolve_range(opts, TOPIC, 0, 0, 50, 12, NO_MATCH) == PartitionRange(TOPIC, 0, 12, 50)


def test_starting_timestamp_without_match() -> None:
    opts = _options(startingTimestamp="1000")
    with pytest.raises(
        OptionError,
        match=r"No offset matched from request of topic-partition events-0 and timestamp 1000\.",
    ):
        resolve_range(opts, TOPIC, 0, 0, 50, NO_MATCH)
    opts = _options(startingTimestamp="1000", startingOffsetsByTimestampStrategy="latest")
    assert resolve_range(opts, TOPIC, 0, 0, 50, NO_MATCH) is None
    opts = _options(startingOffsetsByTimestamp='{"events":{"0":77}}')
    with pytest.raises(OptionError, match="events-0 and timestamp 77"):
        resolve_range(opts, TOPIC, 0, 0, 50, NO_MATCH)


# --- split_pieces -----------------------------------------------------------------------------


def _hot(start: int, end: int, partition: int = 0) -> HotPiece:
    return HotPiece(TOPIC, partition, start, end, "h:1")


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(1, 500), min_size=1, max_size=5),
    st.one_of(st.none(), st.integers(1, 200)),
    st.one_of(st.none(), st.integers(1, 40)),
)
def test_split_keeps_coverage_and_honours_limits(
    sizes: list[int], max_records: int | None, min_partitions: int | None
) -> None:
    pieces: list[Any] = []
    for partition, size in enumerate(sizes):
        pieces.append(_hot(100, 100 + size, partition))
    out = split_pieces(pieces, max_records, min_partitions)
    for partition, size in enumerate(sizes):
        mine = [p for p in out if p.partition == partition]
        assert mine[0].start == 100 and mine[-1].end == 100 + size
        assert all(a.end == b.start for a, b in itertools.pairwise(mine))
        assert all(p.end > p.start for p in mine)
    if max_records is not None:
        assert all(p.end - p.start <= max_records for p in out)
    if min_partitions is not None:
        assert len(out) >= min(min_partitions, sum(sizes))


# --- store-only planning and the cold reader ----------------------------------------------------


def _rows() -> list[Row]:
    rows = []
    for offset in range(30):
        # Timestamps rise by 10 ms per offset, except offset 12 which is far ahead.
        timestamp = 5000 if offset == 12 else 1000 + offset * 10
        control = offset in (18, 23)
        aborted = 14 <= offset <= 17  # a transaction aborted by the marker at 18
        rows.append(Row(offset, timestamp, control=control, aborted=aborted))
    return rows


@pytest.fixture
def store(tmp_path: Path) -> StoreBuilder:
    builder = StoreBuilder(tmp_path / "store")
    rows = _rows()
    builder.add_partition(TOPIC, 0, [rows[0:10], rows[10:20], rows[20:30]])
    builder.add_partition(TOPIC, 1, [rows[0:10]], log_start_offset=4)
    builder.add_partition("other", 0, [rows[0:5]])
    return builder


def _store_options(store: StoreBuilder, **options: str) -> SourceOptions:
    strategy = {} if {"assign", "subscribePattern"} & set(options) else {"subscribe": TOPIC}
    return parse_options(
        {
            **strategy,
            "sparklog.read.from": "store",
            "sparklog.store.url": store.url,
            **options,
        }
    )


def _read(pieces: list[Any]) -> list[tuple[int, int]]:
    got: list[tuple[int, int]] = []
    for piece in pieces:
        assert isinstance(piece, ColdPiece)
        for batch in read_cold(piece):
            offsets = batch.column("offset").to_pylist()
            got.extend((piece.partition, o) for o in offsets)
    return got


def test_store_plan_covers_the_tiered_offsets(store: StoreBuilder) -> None:
    pieces = plan(_store_options(store))
    assert all(isinstance(p, ColdPiece) for p in pieces)
    # One piece per partition: its consecutive objects are merged, read in order.
    p0 = [p for p in pieces if isinstance(p, ColdPiece) and p.partition == 0]
    assert [(p.start, p.end) for p in p0] == [(0, 30)]
    assert [(o.start, o.end) for o in p0[0].objects] == [(0, 10), (10, 20), (20, 30)]
    p1 = [p for p in pieces if isinstance(p, ColdPiece) and p.partition == 1]
    assert [(p.start, p.end) for p in p1] == [(4, 10)]
    assert [(o.start, o.end) for o in p1[0].objects] == [(4, 10)]


def _filter_free(pieces: list[Any]) -> dict[tuple[int, int], bool]:
    return {
        (p.partition, o.start): o.filter_free
        for p in pieces
        if isinstance(p, ColdPiece)
        for o in p.objects
    }


def test_whole_objects_without_rows_to_drop_are_filter_free(store: StoreBuilder) -> None:
    # events-0: [0,10) clean, [10,20) an aborted transaction and its marker, [20,30) a marker;
    # events-1 starts at its log start offset 4, inside its only object.
    uncommitted = _filter_free(plan(_store_options(store)))
    assert uncommitted == {(0, 0): True, (0, 10): False, (0, 20): False, (1, 4): False}
    read_committed = {"kafka.isolation.level": "read_committed"}
    committed = _filter_free(plan(_store_options(store, **read_committed)))
    assert committed == uncommitted
    cut = _filter_free(plan(_store_options(store, endingOffsets='{"events":{"0":5,"1":-1}}')))
    assert cut == {(0, 0): False, (1, 4): False}


def test_aborted_rows_matter_only_under_read_committed(tmp_path: Path) -> None:
    builder = StoreBuilder(tmp_path / "s")
    builder.add_partition(TOPIC, 0, [[Row(o, 1, aborted=o == 3) for o in range(8)]])
    builder.add_partition("legacy", 0, [[Row(o, 1) for o in range(8)]], counts=False)
    options = {"sparklog.read.from": "store", "sparklog.store.url": builder.url}
    for isolation, free in (("read_uncommitted", True), ("read_committed", False)):
        opts = parse_options({**options, "subscribe": TOPIC, "kafka.isolation.level": isolation})
        assert _filter_free(plan(opts)) == {(0, 0): free}
    # A manifest without counts says nothing: its objects are always filtered.
    legacy = parse_options({**options, "subscribe": "legacy"})
    assert _filter_free(plan(legacy)) == {(0, 0): False}


def test_planning_reads_each_manifest_once(
    store: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sparklog.tiering.layout import Manifest

    reads: list[int] = []
    parse = Manifest.from_bytes

    def counted(data: bytes) -> Any:
        manifest = parse(data)
        reads.append(manifest.partition)
        return manifest

    monkeypatch.setattr(Manifest, "from_bytes", staticmethod(counted))
    plan(_store_options(store))
    assert sorted(reads) == [0, 1]


def test_transaction_gaps_are_not_data_loss(store: StoreBuilder) -> None:
    everything = set(range(30))
    uncommitted = _read(plan(_store_options(store, assign='{"events":[0]}')))
    assert [o for _, o in uncommitted] == sorted(everything - {18, 23})
    committed = _read(
        plan(
            _store_options(
                store,
                assign='{"events":[0]}',
                **{"kafka.isolation.level": "read_committed"},
            )
        )
    )
    assert [o for _, o in committed] == sorted(everything - {14, 15, 16, 17, 18, 23})
    # A range that holds only invisible offsets plans and reads fine: no rows, no error.
    only_gap = _read(
        plan(
            _store_options(
                store,
                startingOffsets='{"events":{"0":14,"1":4}}',
                endingOffsets='{"events":{"0":19,"1":5}}',
                **{"kafka.isolation.level": "read_committed"},
            )
        )
    )
    assert only_gap == [(1, 4)]


def test_store_data_loss_both_ways(store: StoreBuilder) -> None:
    starting = '{"events":{"0":0,"1":0}}'
    with pytest.raises(DataLossError, match=r"offsets \[0, 4\) of events-1 were requested"):
        plan(_store_options(store, startingOffsets=starting))
    pieces = plan(_store_options(store, startingOffsets=starting, failOnDataLoss="false"))
    assert [(p.start, p.end) for p in pieces if p.partition == 1] == [(4, 10)]


def test_specific_offsets_must_name_every_partition(store: StoreBuilder) -> None:
    with pytest.raises(OptionError, match="you must specify all TopicPartitions") as info:
        plan(_store_options(store, startingOffsets='{"events":{"0":0}}'))
    assert "Specified: {events-0} Assigned: {events-0, events-1}" in str(info.value)
    with pytest.raises(OptionError, match="If endingOffsetsByTimestamp contains specific"):
        plan(_store_options(store, endingOffsetsByTimestamp='{"events":{"0":1,"2":1}}'))


def test_store_timestamps(store: StoreBuilder) -> None:
    reader = TieredStoreReader.open(store.url)
    manifest = store.manifests[(TOPIC, 0)]
    assert store_offset_for_timestamp(reader, manifest, 0) == 0
    assert store_offset_for_timestamp(reader, manifest, 1105) == 11
    # Offset 12 (ts 5000) is the first whose timestamp reaches 1125, as ListOffsets answers.
    assert store_offset_for_timestamp(reader, manifest, 1125) == 12
    assert store_offset_for_timestamp(reader, manifest, 1131) == 12
    assert store_offset_for_timestamp(reader, manifest, 5001) is None
    # Below the log start nothing is found even where a timestamp would match.
    assert store_offset_for_timestamp(reader, store.manifests[(TOPIC, 1)], 0) == 4


def test_store_timestamp_strategies(store: StoreBuilder) -> None:
    opts = {"assign": '{"events":[0]}'}
    pieces = plan(_store_options(store, startingTimestamp="1050", endingTimestamp="1105", **opts))
    assert [(p.start, p.end) for p in pieces] == [(5, 11)]
    # No record reaches the ending timestamp: the read ends at latest.
    pieces = plan(_store_options(store, startingTimestamp="1105", endingTimestamp="6000", **opts))
    assert [(p.start, p.end) for p in pieces] == [(11, 30)]
    with pytest.raises(OptionError, match="No offset matched from request of topic-partition"):
        plan(_store_options(store, startingTimestamp="9999", **opts))
    late = _store_options(
        store, startingTimestamp="9999", startingOffsetsByTimestampStrategy="latest", **opts
    )
    assert plan(late) == []
    by_partition = _store_options(
        store,
        startingOffsetsByTimestamp='{"events":{"0":1195,"1":1050}}',
        endingOffsetsByTimestamp='{"events":{"0":99999,"1":1070}}',
    )
    # Offset 12 carries ts 5000: the first record at or after 1195 in offset order.
    assert [(p.partition, p.start, p.end) for p in plan(by_partition)] == [
        (0, 12, 30),
        (1, 5, 7),
    ]


def test_store_plan_with_pattern_and_splitting(store: StoreBuilder) -> None:
    pieces = plan(_store_options(store, subscribePattern="ev.*", maxRecordsPerPartition="4"))
    assert {p.topic for p in pieces} == {TOPIC}
    assert all(p.end - p.start <= 4 for p in pieces)
    pieces = plan(_store_options(store, minPartitions="12"))
    assert len(pieces) >= 12
    offsets = [offset for partition, offset in _read(pieces) if partition == 0]
    assert offsets == sorted(set(range(30)) - {18, 23})


def test_cold_reader_headers_and_schema(store: StoreBuilder) -> None:
    pieces = plan(_store_options(store, includeHeaders="true", assign='{"events":[0]}'))
    batch = next(read_cold(pieces[0]))  # type: ignore[arg-type]
    assert batch.schema.names[-1] == "headers"
    assert batch.column("headers").null_count == batch.num_rows
    assert batch.column("key").to_pylist()[:2] == [b"k0", b"k1"]
    assert batch.column("timestamp").to_pylist()[0].timestamp() == 1.0


def test_cold_object_deleted_after_planning(store: StoreBuilder) -> None:
    pieces = plan(_store_options(store, assign='{"events":[0]}'))
    store.object_path(TOPIC, 0, 0).unlink()
    with pytest.raises(DataLossError, match=r"offsets \[0, 10\) of events-0 are gone"):
        list(read_cold(pieces[0]))  # type: ignore[arg-type]
    lenient = plan(_store_options(store, assign='{"events":[0]}', failOnDataLoss="false"))
    # The manifest still names the object: the plan is the same, the read skips it.
    assert _read(lenient)[0] == (0, 10)


def test_partition_states_and_plan_ranges_for_streams(store: StoreBuilder) -> None:
    opts = parse_options(
        {
            "subscribe": TOPIC,
            "sparklog.read.from": "store",
            "sparklog.store.url": store.url,
            "startingTimestamp": "1105",
            "startingOffsetsByTimestampStrategy": "latest",
        },
        streaming=True,
    )
    states = partition_states(opts)
    assert sorted(states) == [(TOPIC, 0), (TOPIC, 1)]
    first, second = states[(TOPIC, 0)], states[(TOPIC, 1)]
    assert (first.earliest, first.latest, first.starting, first.leader) == (0, 30, 11, None)
    # No record of partition 1 is that late: the strategy says latest.
    assert (second.earliest, second.latest, second.starting) == (4, 10, 10)
    unresolved = partition_states(opts, resolve_starting=False)
    assert unresolved[(TOPIC, 0)].starting == 0
    pieces = plan_ranges(
        opts, states, [PartitionRange(TOPIC, 0, 8, 12), PartitionRange(TOPIC, 1, 5, 5)]
    )
    assert [(p.partition, p.start, p.end) for p in pieces] == [(0, 8, 12)]
    assert isinstance(pieces[0], ColdPiece)
    assert [(o.start, o.end) for o in pieces[0].objects] == [(8, 10), (10, 12)]


# --- merged cold pieces: byte cap, splitting, reading across objects ---------------------------


def _cold(objects: list[tuple[int, int]], partition: int = 0) -> ColdPiece:
    return ColdPiece(
        TOPIC,
        partition,
        objects[0][0],
        objects[-1][1],
        tuple(ColdObject(f"o{a}", a, b, 10) for a, b in objects),
        "file:///nowhere",
    )


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(1, 60), min_size=1, max_size=6),
    st.one_of(st.none(), st.integers(1, 70)),
    st.one_of(st.none(), st.integers(1, 30)),
)
def test_split_cold_pieces_keep_exactly_the_objects_they_need(
    sizes: list[int], max_records: int | None, min_partitions: int | None
) -> None:
    bounds = list(itertools.accumulate([50, *sizes]))
    objects = list(itertools.pairwise(bounds))
    out = split_pieces([_cold(objects)], max_records, min_partitions)
    assert out[0].start == bounds[0] and out[-1].end == bounds[-1]
    assert all(a.end == b.start for a, b in itertools.pairwise(out))
    for piece in out:
        assert isinstance(piece, ColdPiece)
        needed = [(a, b) for a, b in objects if a < piece.end and b > piece.start]
        assert [(o.start, o.end) for o in piece.objects] == needed
    if max_records is not None:
        assert all(p.end - p.start <= max_records for p in out)


def test_merged_pieces_respect_the_byte_cap(
    store: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = [s.size_bytes for s in store.manifests[(TOPIC, 0)].finished_segments]
    # Room for two objects, not three: partition 0 becomes two pieces.
    monkeypatch.setattr(planning, "COLD_PIECE_BYTES", sizes[0] + sizes[1])
    pieces = plan(_store_options(store, assign='{"events":[0]}'))
    assert [(p.start, p.end) for p in pieces] == [(0, 20), (20, 30)]
    monkeypatch.setattr(planning, "COLD_PIECE_BYTES", 1)
    pieces = plan(_store_options(store, assign='{"events":[0]}'))
    assert [(p.start, p.end) for p in pieces] == [(0, 10), (10, 20), (20, 30)]


def test_read_across_objects_in_small_batches(
    store: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cold, "BATCH_ROWS", 4)
    pieces = plan(
        _store_options(store, assign='{"events":[0]}', startingOffsets='{"events":{"0":3}}')
    )
    assert len(pieces) == 1 and isinstance(pieces[0], ColdPiece)
    batches = list(read_cold(pieces[0]))
    assert all(0 < b.num_rows <= 4 for b in batches)
    assert all(b.schema == arrow_schema(False) for b in batches)
    offsets = [o for b in batches for o in b.column("offset").to_pylist()]
    assert offsets == sorted(set(range(3, 30)) - {18, 23})
    assert [k for b in batches for k in b.column("key").to_pylist()] == [
        b"k%d" % o for o in offsets
    ]
    assert {t for b in batches for t in b.column("topic").to_pylist()} == {TOPIC}
    assert {p for b in batches for p in b.column("partition").to_pylist()} == {0}


def test_deleted_middle_object_of_a_merged_piece(store: StoreBuilder) -> None:
    store.object_path(TOPIC, 0, 1).unlink()
    strict = plan(_store_options(store, assign='{"events":[0]}'))
    with pytest.raises(DataLossError, match=r"offsets \[10, 20\) of events-0 are gone"):
        _read(strict)
    lenient = plan(_store_options(store, assign='{"events":[0]}', failOnDataLoss="false"))
    assert [o for _, o in _read(lenient)] == sorted(set(range(30)) - set(range(10, 20)) - {23})
