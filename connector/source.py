"""``SparklogDataSource``: the ``sparklog`` format, a drop-in for Spark's Kafka source (batch).

Register with ``spark.dataSource.register(SparklogDataSource)``, then
``spark.read.format("sparklog").option("kafka.bootstrap.servers", ...).option("subscribe",
...).load()``. Options and schema are Spark's Kafka source's (see :mod:`.options`,
:mod:`.schema`); planning runs on the driver (:mod:`.planning`), and each input partition is
read on an executor from the object store (:mod:`.cold`) or from its leader (:mod:`.hot`),
yielding Arrow record batches. Options are validated when the reader is created, so a bad
option fails the query at analysis time with a message naming it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from .options import SourceOptions, parse_options
from .schema import spark_ddl

__all__ = ["SparklogDataSource", "SparklogReader"]


class SparklogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "sparklog"

    def schema(self) -> str:
        return spark_ddl(parse_options(self.options).include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return SparklogReader(parse_options(self.options))


class SparklogReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        from .planning import plan

        return plan(self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from .cold import read_cold
        from .hot import read_hot
        from .planning import ColdPiece, HotPiece

        if isinstance(partition, ColdPiece):
            yield from read_cold(partition)
        elif isinstance(partition, HotPiece):
            yield from read_hot(partition)
        else:
            raise TypeError(f"not a sparklog input partition: {partition!r}")
