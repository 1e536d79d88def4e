"""Spark test setup: the ``spark`` marker; without pyspark the modules are not collected (they
import the connector, which needs it), and without Java they skip with a reason."""

from __future__ import annotations

import importlib.util

import pytest

collect_ignore_glob = [] if importlib.util.find_spec("pyspark") else ["test_*.py"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: runs a local SparkSession (needs Java)")
