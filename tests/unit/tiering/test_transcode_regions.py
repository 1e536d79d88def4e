"""The transcoder's zero-copy path: a run's decompressed payloads share one region, keys and
values are written as binary_view arrays pointing into it, and the file is the layout's.

- ``decode_records(views=True)`` gives the same keys and values as the binary arrays, for
  every length around the 12-byte inline limit, nulls, and fields at the region's very end
  (where the overlapping word reads are redone byte by byte).
- Transcoding with tiny regions and runs (batches that do not fit, batches larger than a
  region, codec none mixed in) still rebuilds every segment byte for byte.
- The footer's Arrow schema is the layout's: readers get ``binary`` columns, never views.
- Copier threads transcoding at once keep their regions apart (distinct bytes per record).
"""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklog.protocol import compression as codecs
from sparklog.protocol.record_codec import RecordInput, build_batch
from sparklog.protocol.records import RECORDS_OFFSET, iter_batches
from sparklog.tiering import transcode
from sparklog.tiering.batch_decode import BatchRecords, decode_records
from sparklog.tiering.layout import HEADER_TYPE, PARQUET_SCHEMA
from sparklog.tiering.parquet_batches import parquet_to_batches
from sparklog.tiering.transcode import segment_to_parquet

from .test_transcode import BatchSpec, batch_spec, build_segment

_field = st.one_of(
    st.none(),
    st.integers(0, 30).map(lambda n: bytes(range(1, n + 1))),
    st.binary(max_size=40),
)
_records = st.lists(
    st.builds(RecordInput, key=_field, value=_field, headers=st.just(()), timestamp=st.just(5)),
    min_size=1,
    max_size=30,
)


def _region_batches(batches: list[bytes]) -> list[BatchRecords]:
    """The batches' decompressed records back to back in one buffer, as the transcoder
    lays a run out."""
    payloads = []
    for buf in batches:
        _, header = next(iter_batches(buf))
        payloads.append((header, codecs.decompress(header.compression, buf[RECORDS_OFFSET:])))
    region = b"".join(p for _, p in payloads)
    out = []
    pos = 0
    for header, payload in payloads:
        out.append(
            BatchRecords(
                payload=region,
                pos=pos,
                end=pos + len(payload),
                count=header.records_count,
                base_offset=header.base_offset,
                base_timestamp=header.base_timestamp,
                max_timestamp=header.max_timestamp,
                log_append=False,
            )
        )
        pos += len(payload)
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(_records, min_size=1, max_size=4), codec=st.sampled_from([1, 3, 4]))
def test_views_equal_binary_arrays(batches: list[list[RecordInput]], codec: int) -> None:
    built = []
    base = 0
    for records in batches:
        built.append(build_batch(records, base_offset=base, compression=codec))
        base += len(records)
    run = _region_batches(built)
    plain = decode_records(run, HEADER_TYPE)
    views = decode_records(run, HEADER_TYPE, views=True)
    assert views.keys.type == pa.binary_view() and views.values.type == pa.binary_view()
    views.keys.validate(full=True)
    views.values.validate(full=True)
    assert views.keys.cast(pa.binary()).equals(plain.keys)
    assert views.values.cast(pa.binary()).equals(plain.values)
    assert views.offsets.tolist() == plain.offsets.tolist()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(batch_spec(), min_size=1, max_size=8),
    region=st.integers(64, 4096),
    run_bytes=st.integers(1, 4096),
)
def test_tiny_regions_and_runs_rebuild_the_segment(
    specs: list[BatchSpec], region: int, run_bytes: int
) -> None:
    segment = build_segment(specs)
    with (
        mock.patch.object(transcode, "_REGION_BYTES", region),
        mock.patch.object(transcode, "_RUN_BYTES", run_bytes),
    ):
        data, stats = segment_to_parquet(segment, row_group_rows=3)
    assert isinstance(data, bytes)
    table = pq.read_table(pa.BufferReader(data))
    assert table.schema.equals(PARQUET_SCHEMA)
    assert table.num_rows == stats.record_count
    rebuilt = parquet_to_batches(data, 0, 1 << 30)
    if all(spec.timestamp_type == 0 for spec in specs):
        assert rebuilt == segment
    else:
        assert len(list(iter_batches(rebuilt))) == len(specs)


def test_the_footer_holds_the_layout_schema() -> None:
    records = [RecordInput(b"k%d" % i, b"v" * (i % 20), (), i) for i in range(300)]
    segment = build_batch(records, compression=codecs.ZSTD)
    segment += build_batch(records, base_offset=300)  # codec none: read in place, not viewed
    data, _ = segment_to_parquet(segment, row_group_rows=256)
    assert isinstance(data, bytes)
    parquet = pq.ParquetFile(pa.BufferReader(data))
    stored = parquet.metadata.metadata[b"ARROW:schema"]
    assert pa.ipc.read_schema(pa.py_buffer(base64.b64decode(stored))).equals(PARQUET_SCHEMA)
    assert parquet.schema_arrow.field("value").type == pa.binary()
    table = parquet.read()
    assert table.column("value").to_pylist() == [r.value for r in records] * 2
    # The same rows written from binary arrays make the same column chunks.
    sink = pa.BufferOutputStream()
    with transcode.open_parquet_writer(sink) as writer:
        writer.write_table(table, row_group_size=256)
    again = pq.ParquetFile(pa.BufferReader(sink.getvalue()))
    assert str(again.schema).split("\n", 1)[1] == str(parquet.schema).split("\n", 1)[1]
    for group in range(parquet.num_row_groups):
        for column in range(parquet.metadata.num_columns):
            ours = parquet.metadata.row_group(group).column(column)
            theirs = again.metadata.row_group(group).column(column)
            assert ours.total_compressed_size == theirs.total_compressed_size
            assert ours.statistics == theirs.statistics


def test_parallel_transcodes_keep_their_regions_apart() -> None:
    segments = []
    for seed in range(4):
        records = [
            RecordInput(b"%d" % i, b"%d-%d-" % (seed, i) * (5 + i % 7), (), i) for i in range(3000)
        ]
        segment = b""
        for base in range(0, 3000, 100):
            segment += build_batch(records[base : base + 100], base_offset=base, compression=4)
        segments.append(segment)
    with (
        mock.patch.object(transcode, "_RUN_BYTES", 20_000),
        ThreadPoolExecutor(4) as pool,
    ):
        results = list(
            pool.map(lambda s: segment_to_parquet(s, row_group_rows=500)[0], segments * 3)
        )
    for segment, data in zip(segments * 3, results, strict=True):
        assert isinstance(data, bytes)
        assert parquet_to_batches(data, 0, 1 << 30) == segment
