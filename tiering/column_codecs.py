"""Per-column Parquet codecs of a segment object: zstd everywhere, except that a record-bytes
column (``key``, ``value``) whose data does not compress is written uncompressed.

Contract:

- :func:`column_codecs` judges ``key`` and ``value`` of a segment's first rows: it compresses
  a sample (the first values up to :data:`SAMPLE_BYTES`) with zstd at level 1, the level the
  writer uses, and names ``"none"`` for a column whose sample shrinks by less than
  :data:`MIN_SAVING` (random, encrypted or already-compressed payloads), ``"zstd"`` otherwise
  (text, JSON, hex: anything with redundancy keeps its compression, so such an object is not
  bigger). The store size of incompressible data is the same either way (zstd stores what it
  cannot compress as raw blocks); writing it uncompressed saves the compressor's CPU on
  transcode and the decompressor's on every remote fetch.
- Parquet's codec is per column chunk and every reader handles each: the object's schema and
  layout are unchanged (:mod:`.layout`), only the column chunks' codec fields differ.
- :class:`LazyWriter` opens the real writer at its first ``write_table``, with the codecs
  judged on that table, so the choice costs one sample per segment and no second pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sparklog.protocol import compression as codecs

__all__ = ["MIN_SAVING", "SAMPLE_BYTES", "LazyWriter", "column_codecs", "compression_option"]

#: Bytes of a column's first values that are test-compressed.
SAMPLE_BYTES = 64 << 10
#: A column is compressed when zstd saves at least this fraction of its sample.
MIN_SAVING = 0.05
_JUDGED = ("key", "value")


def _leaf_paths(field_type: pa.DataType, path: str) -> list[str]:
    if pa.types.is_list(field_type) or pa.types.is_large_list(field_type):
        return _leaf_paths(field_type.value_type, f"{path}.list.element")
    if pa.types.is_struct(field_type):
        return [
            leaf for child in field_type for leaf in _leaf_paths(child.type, f"{path}.{child.name}")
        ]
    return [path]


def compression_option(schema: pa.Schema, chosen: Mapping[str, str]) -> dict[str, str]:
    """The writer's ``compression`` argument: every leaf column of ``schema`` (Parquet's
    dotted paths) zstd unless ``chosen`` names its codec (a dict must name every column:
    those it leaves out are written uncompressed)."""
    return {
        leaf: chosen.get(leaf, "zstd")
        for field in schema
        for leaf in _leaf_paths(field.type, field.name)
    }


def _sample(array: pa.Array | pa.ChunkedArray) -> bytes:
    """The first non-null values of ``array``, joined, about :data:`SAMPLE_BYTES` long."""
    rows = 64
    while True:
        values = [v for v in array.slice(0, rows).to_pylist() if v is not None]
        sample = b"".join(values)
        if len(sample) >= SAMPLE_BYTES or rows >= len(array):
            return sample[:SAMPLE_BYTES]
        rows *= 4


def column_codecs(table: pa.Table) -> dict[str, str]:
    """``{"key": codec, "value": codec}`` for ``table`` (see the module docstring)."""
    chosen: dict[str, str] = {}
    for name in _JUDGED:
        sample = _sample(table.column(name))
        if not sample:
            chosen[name] = "zstd"
            continue
        packed = len(codecs.compress(codecs.ZSTD, sample, 1))
        chosen[name] = "zstd" if packed <= len(sample) * (1 - MIN_SAVING) else "none"
    return chosen


class LazyWriter:
    """A ParquetWriter opened by ``open_writer(codecs)`` at the first ``write_table``, with
    :func:`column_codecs` of that table."""

    def __init__(self, open_writer: Callable[[Mapping[str, str]], pq.ParquetWriter]) -> None:
        self._open = open_writer
        self._writer: pq.ParquetWriter | None = None
        self.codecs: dict[str, str] = {}

    def write_table(self, table: pa.Table, row_group_size: int) -> None:
        if self._writer is None:
            self.codecs = column_codecs(table)
            self._writer = self._open(self.codecs)
        self._writer.write_table(table, row_group_size=row_group_size)

    def add_key_value_metadata(self, metadata: dict[str, Any]) -> None:
        if self._writer is None:
            raise ValueError("nothing written yet")
        self._writer.add_key_value_metadata(metadata)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
