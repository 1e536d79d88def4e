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
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

from .options import OptionError, SourceOptions, parse_options
from .schema import spark_ddl

__all__ = ["SparklogDataSource", "SparklogReader", "read_piece"]


def _include_headers(options: Mapping[str, str]) -> bool:
    raw = {str(k).lower(): str(v) for k, v in options.items()}.get("includeheaders", "false")
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
        return SparklogReader(parse_options(self.options))

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


class SparklogReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        from .planning import plan

        return plan(self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_piece(partition)
