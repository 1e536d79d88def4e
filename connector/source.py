"""``SparklogDataSource``: the ``sparklog`` format, a drop-in for Spark's Kafka source and sink.

Register with ``spark.dataSource.register(SparklogDataSource)``, then
``spark.read.format("sparklog").option("kafka.bootstrap.servers", ...).option("subscribe",
...).load()``, ``spark.readStream.format("sparklog")...`` (:mod:`.stream`), or
``df.write.format("sparklog")`` / ``df.writeStream.format("sparklog")`` (:mod:`.sink`). Options
and schema are Spark's Kafka source's (see :mod:`.options`, :mod:`.schema`); planning runs on
the driver (:mod:`.planning`), and each input partition is read on an executor from the object
store (:mod:`.cold`) or from its leader (:mod:`.hot`), yielding Arrow record batches. Options
are validated when the reader or writer is created, so a bad option fails the query at analysis
time with a message naming it. ``schema()`` looks only at ``includeHeaders``: it cannot tell a
batch read from a stream, whose options differ.

No ``register`` call is needed where the top-level ``pyspark_sparklog`` module is importable:
Spark 4 registers its ``DefaultSource`` (this class) by itself. With
``spark.sql.python.filterPushdown.enabled=true`` the batch reader is
:class:`SparklogPushdownReader`, which narrows the plan with the query's filters on
``partition``, ``offset`` and ``timestamp`` (:mod:`.pushdown`); without it the reader does not
override ``pushFilters`` (pyspark would refuse the read). A reader given planned hot pieces by
the native batch plan (:mod:`.native`) reads exactly those.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    Filter,
    InputPartition,
)
from pyspark.sql.types import StructType

from .options import OptionError, SourceOptions, parse_options
from .schema import spark_ddl

if TYPE_CHECKING:
    from .pushdown import Restriction

__all__ = ["SparklogDataSource", "SparklogPushdownReader", "SparklogReader", "read_piece"]


def _raw(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def _include_headers(options: Mapping[str, str]) -> bool:
    raw = _raw(options).get("includeheaders", "false")
    if raw.strip().lower() not in ("true", "false"):
        raise OptionError(
            f"Invalid value '{raw}' for option 'includeHeaders', must be true or false"
        )
    return raw.strip().lower() == "true"


class SparklogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "sparklog"

    def schema(self) -> str:
        return spark_ddl(_include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        from .planning import hot_pieces_from_json

        options = parse_options(self.options)
        # Set only by the native batch plan (:mod:`.native`), which planned the pieces already.
        planned = _raw(self.options).get("sparklog.internal.hotpieces")
        pieces = None if planned is None else hot_pieces_from_json(planned)
        if pieces is None and _called_for_pushdown():
            return SparklogPushdownReader(options)
        return SparklogReader(options, pieces)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from .stream import SparklogStreamReader

        return SparklogStreamReader(parse_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from .sink import SparklogWriter, parse_sink_options

        return SparklogWriter(parse_sink_options(self.options, schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from .sink import SparklogStreamWriter, parse_sink_options

        # Output mode complete/update arrive as overwrite; Kafka has no such thing either.
        return SparklogStreamWriter(parse_sink_options(self.options, schema, False))


def read_piece(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """Executor side of every read (batch and stream): one planned piece as Arrow batches."""
    from .cold import read_cold
    from .hot import read_hot
    from .planning import ColdPiece, HotPiece

    if isinstance(partition, ColdPiece):
        yield from read_cold(partition)
    elif isinstance(partition, HotPiece):
        yield from read_hot(partition)
    elif getattr(partition, "value", object()) is None:
        return  # Spark's stand-in partition when a plan has no pieces
    else:
        raise TypeError(f"not a sparklog input partition: {partition!r}")


def _called_for_pushdown() -> bool:
    """True when Spark's filter-pushdown worker asks for the reader.

    pyspark runs ``reader()`` in ``data_source_pushdown_filters`` only when
    ``spark.sql.python.filterPushdown.enabled`` is true, and refuses a reader overriding
    ``pushFilters`` (DATA_SOURCE_PUSHDOWN_DISABLED) in ``plan_data_source_read`` when it is
    false; the planning worker has no session to read the setting from, so the caller tells.
    """
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.endswith("data_source_pushdown_filters.py"):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


class SparklogReader(DataSourceReader):
    """Plans in ``partitions()``, or reads the ``pieces`` it was given."""

    def __init__(self, options: SourceOptions, pieces: Sequence[InputPartition] | None = None):
        self.options = options
        self.pieces = pieces

    def partitions(self) -> Sequence[InputPartition]:
        from .planning import plan

        return list(self.pieces) if self.pieces is not None else plan(self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_piece(partition)


class SparklogPushdownReader(SparklogReader):
    """The batch reader when filter pushdown is on: filters on ``partition``, ``offset`` and
    ``timestamp`` narrow the plan (:mod:`.pushdown`); all of them are still returned to Spark
    as not handled, so the rows are filtered as without pushdown."""

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        self.restriction: Restriction | None = None

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        from .pushdown import restriction_of

        self.restriction = restriction_of(filters)
        return list(filters)

    def partitions(self) -> Sequence[InputPartition]:
        from .planning import plan

        return plan(self.options, self.restriction)
