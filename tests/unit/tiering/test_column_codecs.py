"""Per-column codecs of segment objects: record bytes that do not compress are written
uncompressed, anything compressible keeps zstd; either way the object rebuilds the segment
byte for byte and readers see the same rows."""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparklog.protocol.record_codec import build_batch
from sparklog.tiering.column_codecs import column_codecs, compression_option
from sparklog.tiering.layout import PARQUET_SCHEMA
from sparklog.tiering.parquet_batches import parquet_to_batches
from sparklog.tiering.transcode import segment_to_parquet


def _segment(value: object, records: int = 600, per_batch: int = 100) -> bytes:
    out = b""
    for base in range(0, records, per_batch):
        batch = [
            (b"k%05d" % i, value(i), (), 1_700_000_000_000 + i)  # type: ignore[operator]
            for i in range(base, base + per_batch)
        ]
        out += build_batch(batch, base_offset=base, compression=4)
    return out


def _codecs(parquet: bytes) -> dict[str, str]:
    group = pq.ParquetFile(pa.BufferReader(parquet)).metadata.row_group(0)
    return {
        group.column(i).path_in_schema: group.column(i).compression
        for i in range(group.num_columns)
    }


rng = random.Random(5)
KINDS = {
    "random": (lambda i: rng.randbytes(700), "UNCOMPRESSED"),
    "hex": (lambda i: rng.randbytes(350).hex().encode(), "ZSTD"),
    "json": (
        lambda i: b'{"id":%d,"event":"click","user":"u-%d","tags":["a","b"]}' % (i, i % 7),
        "ZSTD",
    ),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_values_codec_follows_their_compressibility(kind: str) -> None:
    make, expected = KINDS[kind]
    segment = _segment(make)
    parquet, _ = segment_to_parquet(segment)
    assert isinstance(parquet, bytes)
    chosen = _codecs(parquet)
    assert chosen["value"] == expected
    # Every other column keeps zstd (the layout's default), nested ones included.
    assert {c for path, c in chosen.items() if path not in ("key", "value")} == {"ZSTD"}
    # Readers see the layout's schema and the same rows; the segment rebuilds byte for byte.
    assert pq.read_table(pa.BufferReader(parquet)).schema.equals(PARQUET_SCHEMA)
    assert parquet_to_batches(parquet, 0, 1 << 40) == segment
    if kind == "random":
        # Incompressible data: the object is no bigger than the (zstd) segment's records.
        assert len(parquet) <= len(segment) * 1.02


def test_column_codecs_of_empty_and_null_columns() -> None:
    empty = PARQUET_SCHEMA.empty_table()
    assert column_codecs(empty) == {"key": "zstd", "value": "zstd"}
    nulls = pa.table({"key": pa.nulls(10, pa.binary()), "value": [os.urandom(10_000)] * 10})
    # Ten copies of one random value: the repeats compress.
    assert column_codecs(nulls) == {"key": "zstd", "value": "zstd"}
    fresh = pa.table(
        {"key": pa.nulls(10, pa.binary()), "value": [os.urandom(10_000) for _ in range(10)]}
    )
    assert column_codecs(fresh) == {"key": "zstd", "value": "none"}
    option = compression_option(PARQUET_SCHEMA, {"value": "none"})
    assert option["value"] == "none"
    assert option["headers.list.element.value"] == "zstd"
    assert len(option) == 17
