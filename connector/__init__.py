"""The PySpark data source `sparklog` (imported as ``sparklog.connector``).

Batch reads with Spark's Kafka source schema and options: cold offset ranges straight from the
tiered object store, hot ranges from brokers, honouring the high watermark and the last stable
offset. ``from sparklog.connector import SparklogDataSource``;
``spark.dataSource.register(SparklogDataSource)``. Streaming, the sink and the gRPC hot-read
service are not built yet (see the connector issue).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .source import SparklogDataSource

__all__ = ["SparklogDataSource"]


def __getattr__(name: str) -> Any:
    # pyspark is an optional dependency: import it only when the data source is asked for.
    if name == "SparklogDataSource":
        from .source import SparklogDataSource

        return SparklogDataSource
    raise AttributeError(name)
