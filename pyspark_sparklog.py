"""Drop-in registration of the ``sparklog`` data source (no ``register`` call needed).

Spark 4 looks up installed Python data sources when a session first resolves a format
(``pyspark/sql/worker/lookup_data_sources.py``): every importable top-level module named
``pyspark_*`` that exposes ``DefaultSource`` is registered under ``DefaultSource.name()``. This
module is that entry for ``sparklog``, so ``spark.read.format("sparklog")`` and
``spark.readStream.format("sparklog")`` work in a fresh session once the package is installed.
``spark.dataSource.register(SparklogDataSource)`` keeps working (same class).

Contract: importing this module imports pyspark (the lookup runs in a pyspark worker) and
nothing of the broker.
"""

from __future__ import annotations

from sparklog.connector.source import SparklogDataSource as DefaultSource

__all__ = ["DefaultSource"]
