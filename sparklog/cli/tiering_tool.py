"""``sparklog tiering ls|describe``: what a tiered store holds, read with only its URL.

    sparklog tiering ls --store s3://bucket/prefix [--s3-endpoint URL] [...]
    sparklog tiering describe --store URL --topic T [--partition P] [--topic-id ID]
                              [--bootstrap-server HOST:PORT [--command-config FILE]]

``ls`` prints one line per partition (topic, topic id, partition, segment count, offset range,
record count, bytes); ``describe`` prints a partition's manifest as a table (every partition of
the topic when ``--partition`` is left out); with ``--bootstrap-server`` it also prints each
partition's copy lag as its leader reports it (:mod:`sparklog.cli.tiering_lag`: committed
offsets above the highest tiered one, with the high watermark and earliest local offset);
``--command-config`` holds Kafka's client security keys for a secured cluster.
S3 credentials come from the flags, else s3fs's
usual chain (AWS_* environment variables, ~/.aws, an instance role). Nothing is written.

Errors (a store that cannot be opened or read, a topic or partition that is not there) print
one line saying what to fix and exit with status 1. ``main.py`` wires the parser through
:func:`add_tiering_parser`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from sparklog.cli.admin_client import CliError, command_security, read_command_config
from sparklog.cli.tiering_lag import LagError, copy_lag

__all__ = ["add_tiering_parser", "run_tiering"]


def add_tiering_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``tiering`` to the ``sparklog`` command's subparsers; sets ``run`` to
    :func:`run_tiering`."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "tiering", help="inspect a tiered-storage store (no broker needed)"
    )
    sub = parser.add_subparsers(dest="tiering_command", required=True)
    ls = sub.add_parser("ls", help="list topics and partitions with their tiered segments")
    describe = sub.add_parser("describe", help="print a partition's manifest as a table")
    for command in (ls, describe):
        command.add_argument(
            "--store",
            required=True,
            help="the store URL (sparklog.remote.storage.url), e.g. s3://bucket/prefix",
        )
        command.add_argument("--s3-endpoint", help="S3 endpoint override (MinIO, moto)")
        command.add_argument("--s3-access-key-id", help="S3 access key id")
        command.add_argument("--s3-secret-access-key", help="S3 secret access key")
        command.add_argument("--s3-region", help="S3 region")
    describe.add_argument("--topic", required=True, help="the topic")
    describe.add_argument("--partition", type=int, help="one partition (default: all)")
    describe.add_argument("--topic-id", help="a topic id, when the name was re-used")
    describe.add_argument(
        "--bootstrap-server", help="HOST:PORT of a broker: also print each partition's copy lag"
    )
    describe.add_argument(
        "--command-config",
        metavar="FILE",
        help="client settings for --bootstrap-server (security.protocol, sasl.*, ssl.*)",
    )
    parser.set_defaults(run=run_tiering)
    return parser


def _open_reader(args: argparse.Namespace) -> Any:
    from sparklog.tiering.config import s3_storage_options
    from sparklog.tiering.reader import TieredStoreReader

    options: dict[str, Any] = {}
    if str(args.store).startswith(("s3://", "s3a://")):
        options = s3_storage_options(
            args.s3_endpoint, args.s3_access_key_id, args.s3_secret_access_key, args.s3_region
        )
    elif args.s3_endpoint or args.s3_access_key_id or args.s3_secret_access_key:
        raise ValueError(f"--s3-* flags apply to s3:// stores, not {args.store}")
    return TieredStoreReader.open(args.store, options)


def _table(rows: list[list[str]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        out.write("\n")


def _ls(reader: Any, out: TextIO) -> None:
    if reader.cluster_id() is None:
        raise LookupError(
            f"{reader.store.url} is not a sparklog tiered store (no _sparklog.json): check"
            " --store (nothing has been tiered there yet, or the URL is wrong)"
        )
    topics = reader.list_topics()
    if not topics:
        out.write(f"No tiered topics in {reader.store.url}\n")
        return
    rows = [["TOPIC", "TOPIC_ID", "PARTITION", "SEGMENTS", "OFFSETS", "RECORDS", "BYTES"]]
    for topic in topics:
        for topic_id in reader.topic_ids(topic):
            for partition in reader.list_partitions(topic, topic_id):
                manifest = reader.read_manifest(topic, partition, topic_id)
                segments = manifest.finished_segments
                if segments:
                    low = max(segments[0].base_offset, manifest.log_start_offset)
                    offsets = f"{low}..{segments[-1].end_offset}"
                else:
                    offsets = "-"
                rows.append(
                    [
                        topic,
                        topic_id,
                        str(partition),
                        str(len(segments)),
                        offsets,
                        str(sum(s.record_count for s in segments)),
                        str(sum(s.size_bytes for s in segments)),
                    ]
                )
    _table(rows, out)


def _describe(reader: Any, args: argparse.Namespace, out: TextIO) -> None:
    topic_id = args.topic_id or reader.topic_ids(args.topic)[0]
    partitions = (
        [args.partition]
        if args.partition is not None
        else reader.list_partitions(args.topic, topic_id)
    )
    lags = {}
    if getattr(args, "bootstrap_server", None):
        config = read_command_config(args.command_config)
        security = command_security(config, args.command_config or "--command-config")
        found = copy_lag(args.bootstrap_server, args.topic, partitions, security)
        lags = {lag.partition: lag for lag in found}
    for partition in partitions:
        manifest = reader.read_manifest(args.topic, partition, topic_id)
        out.write(
            f"Topic: {manifest.topic}  TopicId: {manifest.topic_id}  Partition:"
            f" {manifest.partition}  ManifestVersion: {manifest.version}  LogStartOffset:"
            f" {manifest.log_start_offset}  Segments: {len(manifest.segments)}\n"
        )
        lag = lags.get(partition)
        if lag is not None:
            out.write(
                f"CopyLag: {lag.lag_offsets} offsets  Leader: {lag.leader}  HighWatermark:"
                f" {lag.high_watermark}  HighestTieredOffset: {lag.highest_tiered}"
                f"  EarliestLocalOffset: {lag.earliest_local}\n"
            )
        rows = [
            [
                "SEGMENT_ID",
                "BASE",
                "END",
                "RECORDS",
                "FIRST_TS",
                "MAX_TS",
                "BYTES",
                "LOG_BYTES",
                "EPOCHS",
                "STATE",
                "BROKER",
                "PATH",
            ]
        ]
        for s in manifest.segments:
            rows.append(
                [
                    s.segment_id,
                    str(s.base_offset),
                    str(s.end_offset),
                    str(s.record_count),
                    str(s.first_timestamp),
                    str(s.max_timestamp),
                    str(s.size_bytes),
                    str(s.segment_bytes),
                    ",".join(f"{e}@{o}" for e, o in s.leader_epochs) or "-",
                    s.state,
                    str(s.broker_id),
                    s.path,
                ]
            )
        _table(rows, out)


def run_tiering(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run ``tiering ls`` / ``tiering describe``; returns the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        from sparklog.tiering.rsm import RemoteStorageError
        from sparklog.tiering.store import StoreError
    except ImportError as exc:
        err.write(
            f"Error: sparklog tiering needs pyarrow and fsspec ({exc}):"
            " pip install sparklog (they are core dependencies; reinstall it)\n"
        )
        return 1
    try:
        reader = _open_reader(args)
        if args.tiering_command == "ls":
            _ls(reader, out)
        else:
            _describe(reader, args, out)
    except (StoreError, RemoteStorageError) as exc:
        err.write(f"Error: {exc}\nCheck --store and the S3 flags or credentials.\n")
        return 1
    except (LookupError, ValueError) as exc:
        err.write(f"Error: {exc.args[0] if exc.args else exc}\n")
        return 1
    except OSError as exc:
        err.write(f"Error: cannot reach {args.bootstrap_server}: {exc}\n")
        return 1
    except (LagError, CliError) as exc:
        err.write(f"Error: {exc}\n")
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (``python -m sparklog.cli.tiering_tool``)."""
    parser = argparse.ArgumentParser(prog="sparklog")
    add_tiering_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return run_tiering(args)


if __name__ == "__main__":
    sys.exit(main())
