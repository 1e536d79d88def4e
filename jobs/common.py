"""Shared by the Spark jobs in ``jobs/``: command-line flags for the topic and the tiered store,
and a SparkSession with the ``sparklog`` format registered.

Driver-only code: the jobs import it as a sibling module (``python jobs/x.py`` and
``spark-submit jobs/x.py`` both put ``jobs/`` first on ``sys.path``). Executors need only the
installed ``sparklog`` package.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_store_flags", "add_topic_flags", "source_options", "spark_session"]

REPO = Path(__file__).resolve().parents[1]


def add_topic_flags(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--subscribe", help="comma-separated topics (Spark's subscribe)")
    which.add_argument("--subscribe-pattern", help="a Java-style regex of topic names")
    which.add_argument("--assign", help='JSON partitions, e.g. {"orders":[0,1]}')
    parser.add_argument(
        "--include-headers", action="store_true", help="add the headers column (includeHeaders)"
    )
    parser.add_argument(
        "--isolation-level",
        choices=("read_uncommitted", "read_committed"),
        default="read_uncommitted",
        help="kafka.isolation.level: read up to the high watermark or the last stable offset",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other source option, e.g. --option minPartitions=8 (repeatable)",
    )
    parser.add_argument(
        "--master", help="Spark master (default: spark-submit's, or local[*] under python)"
    )


def add_store_flags(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument(
        "--store-url",
        required=required,
        help="the tiered store the brokers write (sparklog.remote.storage.url), e.g."
        " file:///var/lib/sparklog-remote or s3://bucket/prefix",
    )
    parser.add_argument("--s3-endpoint", help="S3 endpoint override (MinIO, moto)")
    parser.add_argument("--s3-access-key-id", help="S3 access key id (default: AWS chain)")
    parser.add_argument("--s3-secret-access-key", help="S3 secret access key")
    parser.add_argument("--s3-region", help="S3 region")


def source_options(args: argparse.Namespace) -> dict[str, str]:
    """The ``sparklog`` source options the flags of :func:`add_topic_flags` /
    :func:`add_store_flags` stand for."""
    options: dict[str, str] = {}
    for flag, name in (
        ("subscribe", "subscribe"),
        ("subscribe_pattern", "subscribePattern"),
        ("assign", "assign"),
        ("store_url", "sparklog.store.url"),
        ("s3_endpoint", "sparklog.store.s3.endpoint.url"),
        ("s3_access_key_id", "sparklog.store.s3.access.key.id"),
        ("s3_secret_access_key", "sparklog.store.s3.secret.access.key"),
        ("s3_region", "sparklog.store.s3.region"),
        ("bootstrap_servers", "kafka.bootstrap.servers"),
    ):
        value = getattr(args, flag, None)
        if value:
            options[name] = value
    options["includeHeaders"] = "true" if args.include_headers else "false"
    options["kafka.isolation.level"] = args.isolation_level
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--option expects KEY=VALUE, got {item!r}")
        options[key] = value
    return options


def spark_session(app_name: str, master: str | None = None) -> Any:
    """A SparkSession (UTC, workers on this interpreter) with ``sparklog`` registered."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SystemExit("Spark needs Java 17+: install a JDK (java on PATH or JAVA_HOME)")
    # Workers must run this interpreter (it has pyarrow and sparklog), not whatever python3 is.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p
    )
    from pyspark.sql import SparkSession

    from sparklog.connector import SparklogDataSource

    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if master:
        builder = builder.master(master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark.dataSource.register(SparklogDataSource)
    return spark
