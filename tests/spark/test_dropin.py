"""``format("sparklog")`` resolves in a fresh Python process with no ``register`` call: Spark 4's
lookup of installed Python data sources finds the top-level ``pyspark_sparklog`` module.

Two ways a user's process gets the package, each tested in a fresh process that never imports
sparklog itself (it reads a hand-written store, store only, in batch and resolves a stream over
it):
- the README's install mode, ``pip install -e .`` (a setuptools editable install), into a
  fresh virtual environment that borrows the project venv's dependencies: Spark's lookup lists
  modules with ``pkgutil.iter_modules``, which sees only ``sys.path`` entries, not the import
  hook a non-flat editable install would add (the bug this test keeps fixed);
- the checkout on ``PYTHONPATH`` (what a regular install puts on ``sys.path``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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


def _editable_venv(base: Path) -> Path:
    """A fresh venv with sparklog installed as the README does (``pip install -e``), its other
    dependencies borrowed from the project venv through a ``.pth`` line; its interpreter."""
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    borrowed = [p for p in sys.path if p.endswith("site-packages")]
    (Path(site) / "_borrowed.pth").write_text("\n".join(borrowed) + "\n")
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
    subprocess.run(
        [*install, "--no-deps", "--no-build-isolation", "-e", str(REPO)],
        capture_output=True,
        check=True,
        timeout=300,
    )
    return python


@pytest.mark.parametrize("install", ["editable", "pythonpath"])
def test_format_resolves_without_registration(tmp_path: Path, install: str) -> None:
    store = StoreBuilder(tmp_path / "store")
    store.add_partition("dropin", 0, [[Row(o, 1_000 + o) for o in range(25)]])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if install == "editable":
        python = str(_editable_venv(tmp_path))
    else:
        python = sys.executable
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p
        )
    env["PYSPARK_PYTHON"] = python
    done = subprocess.run(
        [python, "-c", CHILD, store.url],
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
