"""Backfill job: a topic's history from the tiered object store alone into a Parquet dataset.

Reads with the native batch plan (``sparklog.connector.read``, the ``sparklog`` format's options)
and ``sparklog.read.from=store``: partitions, offsets and files come from the store's manifests,
so no broker is contacted and the brokers may be down, and Spark's own Parquet scan reads the
tiered objects (a store Spark's file systems cannot read, e.g. S3 without hadoop-aws, is read by
the ``sparklog`` data source instead). What is read is every finished tiered segment at or above
each partition's log start offset (records not yet tiered are not in the store).

  python jobs/backfill.py --store-url s3://bucket/sparklog --subscribe orders \\
      --output /data/orders-history [--s3-endpoint http://minio:9000 ...]
  spark-submit jobs/backfill.py ...   (same flags)

Prints what the output dataset then holds: its record count and each partition's offset range.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Any

from common import add_store_flags, add_topic_flags, source_options, spark_session

__all__ = ["BackfillResult", "main", "parser", "run"]


@dataclass(frozen=True, slots=True)
class BackfillResult:
    rows: int
    #: (topic, partition) -> (first offset, last offset, records)
    partitions: dict[tuple[str, int], tuple[int, int, int]]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="backfill.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_topic_flags(p)
    add_store_flags(p, required=True)
    p.add_argument("--output", required=True, help="Parquet dataset directory (or URL)")
    p.add_argument(
        "--mode",
        choices=("errorifexists", "overwrite", "append", "ignore"),
        default="errorifexists",
        help="what to do when --output exists (Spark save mode; default errorifexists)",
    )
    p.add_argument("--starting-offsets", help="startingOffsets: earliest (default) or JSON")
    p.add_argument("--ending-offsets", help="endingOffsets: latest (default) or JSON")
    p.add_argument("--partition-by", help="comma-separated output partition columns")
    return p


def run(args: argparse.Namespace, spark: Any | None = None) -> BackfillResult:
    spark = spark or spark_session("sparklog-backfill", args.master)
    options = source_options(args)
    options["sparklog.read.from"] = "store"
    if args.starting_offsets:
        options["startingOffsets"] = args.starting_offsets
    if args.ending_offsets:
        options["endingOffsets"] = args.ending_offsets
    from sparklog.connector import read

    df = read(spark).options(**options).load()
    writer = df.write.mode(args.mode)
    if args.partition_by:
        writer = writer.partitionBy(*[c.strip() for c in args.partition_by.split(",")])
    writer.parquet(args.output)
    from pyspark.sql import functions as F

    summary = (
        spark.read.parquet(args.output)
        .groupBy("topic", "partition")
        .agg(F.min("offset"), F.max("offset"), F.count("*"))
        .collect()
    )
    partitions = {(r[0], int(r[1])): (int(r[2]), int(r[3]), int(r[4])) for r in summary}
    return BackfillResult(sum(c for _, _, c in partitions.values()), partitions)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    started = time.monotonic()
    result = run(args)
    print(
        f"backfill from {args.store_url} done in {time.monotonic() - started:.1f}s;"
        f" {args.output} holds {result.rows} records"
    )
    for (topic, partition), (first, last, count) in sorted(result.partitions.items()):
        print(f"  {topic}-{partition}: offsets {first}..{last}, {count} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
