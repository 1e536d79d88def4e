"""The PySpark data source `sparklog` (imported as ``sparklog.connector``).

A drop-in for Spark's Kafka source and sink (same schema, same options), registered under the
short name ``sparklog``: Spark 4 finds it through the top-level ``pyspark_sparklog`` module,
or ``spark.dataSource.register(SparklogDataSource)``.

- Batch reads (:mod:`.source`) and Structured Streaming micro-batches (:mod:`.stream`, with
  admission control in :mod:`.admission`) execute one plan (:mod:`.planning`, offsets from
  :mod:`.offsets`): cold pieces read straight from the tiered object store by executors
  (:mod:`.cold`, also with the brokers down), hot pieces from the partition leaders up to the
  high watermark or the last stable offset (:mod:`.hot`: the brokers' gRPC hot read service,
  or Kafka Fetch), decoded into Arrow batches (:mod:`.arrow_decode`).
- The sink (:mod:`.sink`) writes ``df.write`` / ``df.writeStream`` rows with Spark's Kafka sink
  columns through the Kafka protocol.

- The fast batch path (:mod:`.native`): ``sparklog.connector.read(spark).option(...).load()``
  takes the same options and reads the tiered ranges with Spark's own Parquet scan, unioned
  with the hot tail read by the data source (or, under a local master, read once on the
  driver and scanned as Parquet too: :mod:`.hot_tail`).

Nothing here imports pyspark until the data source is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .native import read
    from .source import SparklogDataSource

__all__ = ["SparklogDataSource", "read"]


def __getattr__(name: str) -> Any:
    # pyspark is an optional dependency: import it only when the data source is asked for.
    if name == "SparklogDataSource":
        from .source import SparklogDataSource

        return SparklogDataSource
    if name == "read":
        from .native import read

        return read
    raise AttributeError(name)
