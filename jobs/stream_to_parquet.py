"""Structured Streaming job: a topic's records into a Parquet dataset, with a checkpoint.

Reads with the ``sparklog`` format (cold offsets from the tiered store when --store-url is
given, the rest from the brokers) and appends every micro-batch to --output. The checkpoint
directory records the offsets of every batch, so running the job again with the same
--checkpoint continues where the last run stopped, and each record lands in the output once.

  python jobs/stream_to_parquet.py --bootstrap-servers localhost:9092 --subscribe orders \\
      --output /data/orders --checkpoint /data/orders-checkpoint --trigger available-now
  spark-submit jobs/stream_to_parquet.py ...   (same flags)

--trigger available-now reads what is there when the run starts (in batches of at most
--max-offsets-per-trigger offsets) and exits; processing-time runs a batch every --interval
until interrupted (Ctrl-C) or --run-seconds pass.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from common import add_store_flags, add_topic_flags, source_options, spark_session

__all__ = ["StreamResult", "main", "parser", "run"]


@dataclass(frozen=True, slots=True)
class StreamResult:
    batches: int
    rows: int
    last_offsets: dict[str, Any]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stream_to_parquet.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--bootstrap-servers", help="kafka.bootstrap.servers (host:port,...)")
    add_topic_flags(p)
    add_store_flags(p, required=False)
    p.add_argument("--output", required=True, help="Parquet dataset directory (or URL)")
    p.add_argument("--checkpoint", required=True, help="checkpoint directory (or URL)")
    p.add_argument(
        "--trigger",
        choices=("available-now", "processing-time"),
        default="available-now",
        help="available-now: read what exists, then exit (default); processing-time: keep going",
    )
    p.add_argument(
        "--interval", default="10 seconds", help="processing-time interval (default 10 seconds)"
    )
    p.add_argument(
        "--run-seconds",
        type=float,
        help="with processing-time, stop after this many seconds (default: until Ctrl-C)",
    )
    p.add_argument(
        "--max-offsets-per-trigger", type=int, help="maxOffsetsPerTrigger: offsets per batch"
    )
    p.add_argument(
        "--starting-offsets",
        default="earliest",
        help="startingOffsets of a new query: earliest (default), latest or JSON",
    )
    p.add_argument(
        "--read-from",
        choices=("both", "brokers", "store"),
        default="both",
        help="sparklog.read.from (default both: store for tiered offsets, brokers for the rest)",
    )
    p.add_argument("--partition-by", help="comma-separated output partition columns")
    return p


def run(args: argparse.Namespace, spark: Any | None = None) -> StreamResult:
    spark = spark or spark_session("sparklog-stream-to-parquet", args.master)
    options = source_options(args)
    options["startingOffsets"] = args.starting_offsets
    options["sparklog.read.from"] = args.read_from
    if args.max_offsets_per_trigger is not None:
        options["maxOffsetsPerTrigger"] = str(args.max_offsets_per_trigger)
    reader = spark.readStream.format("sparklog")
    for key, value in options.items():
        reader = reader.option(key, value)
    writer = (
        reader.load()
        .writeStream.format("parquet")
        .option("path", args.output)
        .option("checkpointLocation", args.checkpoint)
    )
    if args.partition_by:
        writer = writer.partitionBy(*[c.strip() for c in args.partition_by.split(",")])
    if args.trigger == "available-now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=args.interval)
    query = writer.start()
    try:
        if args.trigger == "available-now":
            query.awaitTermination()
        elif args.run_seconds is not None:
            query.awaitTermination(args.run_seconds)
        else:
            query.awaitTermination()
    except KeyboardInterrupt:
        print("interrupted: stopping the query", file=sys.stderr)
    finally:
        if query.isActive:
            query.stop()
    if query.exception() is not None:
        raise SystemExit(f"the streaming query failed: {query.exception()}")
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    last = progress[-1]["sources"][0]["endOffset"] if progress else "{}"
    return StreamResult(
        len(progress),
        sum(int(p["numInputRows"]) for p in progress),
        json.loads(last) if isinstance(last, str) else dict(last),
    )


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.read_from != "store" and not args.bootstrap_servers:
        raise SystemExit("--bootstrap-servers is required unless --read-from store")
    started = time.monotonic()
    result = run(args)
    print(
        f"stream_to_parquet: {result.rows} records in {result.batches} micro-batches"
        f" ({time.monotonic() - started:.1f}s) -> {args.output}; offsets now {result.last_offsets}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
