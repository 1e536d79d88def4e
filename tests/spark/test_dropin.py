"""``format("sparklog")`` resolves in a fresh Python process with no ``register`` call: Spark 4's
lookup of installed Python data sources finds the top-level ``pyspark_sparklog`` module.

The child process gets what any user's process gets (the venv's interpreter for the workers and
the checkout on ``PYTHONPATH``, as an installed package would be on ``sys.path``) and nothing
else: it never imports sparklog itself. It reads a hand-written store (store only) in batch and
resolves a stream over it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.spark.support import REPO, SPARK_MARKS
from tests.unit.connector.store_builder import Row, StoreBuilder

pytestmark = SPARK_MARKS

CHILD = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession

    url = sys.argv[1]
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    assert "sparklog" not in sys.modules
    options = {"subscribe": "dropin", "sparklog.read.from": "store", "sparklog.store.url": url}
    count = spark.read.format("sparklog").options(**options).load().count()
    stream = spark.readStream.format("sparklog").options(**options).load()
    print("RESULT", count, stream.isStreaming, ",".join(stream.columns))
    spark.stop()
    """
)


def test_format_resolves_without_registration(tmp_path: Path) -> None:
    store = StoreBuilder(tmp_path / "store")
    store.add_partition("dropin", 0, [[Row(o, 1_000 + o) for o in range(25)]])
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD, store.url],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    assert lines[0] == ("RESULT 25 True key,value,topic,partition,offset,timestamp,timestampType")
