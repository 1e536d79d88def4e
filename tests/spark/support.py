"""Shared set-up of the Spark test modules: a node (optionally tiering to a ``file://`` store),
a local[2] SparkSession with the ``sparklog`` source registered, source readers and row
conversion.

Each test module still owns its module-scoped fixture (one node and one SparkSession per
module); these helpers only build and tear down the pieces. The context managers always undo
what they did, so a failing set-up step never leaves a node process or a JVM behind.
pyspark is imported lazily: this module must import without it (conftest skips collection).
"""

from __future__ import annotations

import calendar
import os
import shutil
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.integration.node_harness import Node
from tests.integration.tiering_support import (
    Rec,
    StoreView,
    file_store,
    fully_tiered,
    node_overrides,
    tiering_state,
    wait_until,
)

SPARK_MARKS = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java on PATH"),
]

REPO = Path(__file__).resolve().parents[2]


def tiering_store(base: Path) -> StoreView:
    """The ``file://`` object store under ``base`` that a tiering node writes to."""
    return file_store(f"file://{base / 'store'}")


@contextmanager
def running_node(base: Path, store: StoreView | None = None) -> Iterator[Node]:
    """A started node in ``base/node``, tiering to ``store`` when given; closed on exit."""
    node = Node(base / "node", node_overrides(store, None) if store is not None else None)
    node.start()
    try:
        yield node
    finally:
        node.close()


@contextmanager
def spark_session(app_name: str, *, utc: bool = True) -> Iterator[Any]:
    """A local[2] SparkSession with the ``sparklog`` source registered; stopped on exit.

    ``utc`` sets the session time zone, which decides how naive timestamps come back.
    """
    from pyspark.sql import SparkSession

    from sparklog.connector import SparklogDataSource

    # Python workers must run this interpreter and import this checkout.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    paths = (str(REPO), os.environ.get("PYTHONPATH"))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    if utc:
        builder = builder.config("spark.sql.session.timeZone", "UTC")
    spark = builder.getOrCreate()
    try:
        spark.dataSource.register(SparklogDataSource)
        yield spark
    finally:
        spark.stop()


def wait_tiering_at_rest(node: Node, store: StoreView, topic: str) -> None:
    """Waits until every closed segment of ``topic`` is tiered, two at least.

    Tiering must be at rest: a segment tiered between planning and reading would be a race
    of its own, not what the tests are about.
    """
    wait_until(
        "every closed segment tiered, two at least",
        lambda: fully_tiered(node, store, topic) and len(store.finished(topic)) >= 2,
        90.0,
        lambda: tiering_state(node, store, topic),
    )


def batch_reader(spark: Any, options: Mapping[str, str]) -> Any:
    """``spark.read.format("sparklog")`` with ``options`` set (not loaded yet)."""
    reader = spark.read.format("sparklog")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


def timestamp_ms(stamp: datetime) -> int:
    """Epoch milliseconds of a naive timestamp Spark returned in a UTC session."""
    return calendar.timegm(stamp.utctimetuple()) * 1000 + stamp.microsecond // 1000


def optional_bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def spark_rec(key: Any, value: Any, headers: Any, stamp: datetime) -> Rec:
    """A Spark row's key, value, headers (None for none) and timestamp as a ``Rec``."""
    return Rec(
        optional_bytes(key),
        optional_bytes(value),
        tuple((h["key"], optional_bytes(h["value"])) for h in headers or ()),
        timestamp_ms(stamp),
    )


def spark_rows(df: Any) -> list[tuple[int, Rec]]:
    """(offset, record) pairs of a loaded frame, ordered by partition and offset; a frame
    without a ``headers`` column gives records without headers."""
    rows = df.orderBy("partition", "offset").collect()
    result = []
    for row in rows:
        fields = row.asDict()
        rec = spark_rec(fields["key"], fields["value"], fields.get("headers"), fields["timestamp"])
        result.append((fields["offset"], rec))
    return result
