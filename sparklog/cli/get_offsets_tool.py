"""``sparklog get-offsets``: kafka-get-offsets.sh (GetOffsetShell) over ListOffsets (2).

    sparklog get-offsets --bootstrap-server B [--topic REGEX] [--partitions 0,2-4]
        [--time -1|-2|-3|-4|-5|latest|earliest|max-timestamp|earliest-local|latest-tiered|MS]
    sparklog get-offsets --bootstrap-server B --topic-partitions 't1:0-2,t2,t3:1'

Prints ``topic:partition:offset`` per partition, sorted, as Kafka does; an offset that does not
exist (no record at or after the time) prints as an empty field. ``--time``: -1 latest (the
default), -2 earliest, -3 the offset of the largest timestamp, -4 earliest local (KIP-405),
-5 latest tiered (KIP-1005), or a timestamp in ms (the first offset at or after it).
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from sparklog.cli.admin_client import (
    AdminClient,
    CliError,
    TopicPartition,
    add_connection_args,
    kafka_error,
    open_admin,
    run_tool,
)

TIME_NAMES = {
    "latest": -1,
    "earliest": -2,
    "max-timestamp": -3,
    "earliest-local": -4,
    "latest-tiered": -5,
}


def add_get_offsets_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "get-offsets",
        help="print partition offsets by time (kafka-get-offsets.sh)",
        description="Print topic:partition:offset for the offset spec --time.",
    )
    add_connection_args(parser)
    parser.add_argument("--topic", help="a topic name or regular expression (default: all)")
    parser.add_argument("--partitions", help="partition ids and ranges: 0,2-4 (default: all)")
    parser.add_argument("--topic-partitions", help="'t1:0-2,t2,t3:1' (instead of the above)")
    parser.add_argument(
        "--time",
        default="-1",
        help="-1/latest, -2/earliest, -3/max-timestamp, -4/earliest-local, "
        "-5/latest-tiered, or a timestamp in ms (default -1)",
    )
    parser.add_argument(
        "--exclude-internal-topics", action="store_true", help="leave internal topics out"
    )
    parser.set_defaults(run=run_get_offsets)


def parse_time(text: str) -> int:
    value = TIME_NAMES.get(text.strip().lower())
    if value is not None:
        return value
    try:
        value = int(text)
    except ValueError:
        raise CliError(
            f"Malformed time argument {text}. Please use -1 or latest / -2 or earliest / "
            "-3 or max-timestamp / -4 or earliest-local / -5 or latest-tiered, or a specific "
            "timestamp in ms."
        ) from None
    if value < -5:
        raise CliError(f"Malformed time argument {text}: below -5 only timestamps >= 0 exist")
    return value


def parse_partition_set(text: str) -> set[int]:
    """``0,2-4`` -> {0, 2, 3, 4}."""
    out: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if match is None:
            raise CliError(f"Invalid partition filter {part!r}: use ids and ranges like 0,2-4")
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        out.update(range(low, high + 1))
    return out


def _selected(admin: AdminClient, args: argparse.Namespace) -> list[TopicPartition]:
    topics = [t for t in admin.metadata(None)["topics"] if t["error_code"] == 0]
    if args.exclude_internal_topics:
        topics = [t for t in topics if not t.get("is_internal")]
    filters: list[tuple[str, set[int] | None]] = []
    if args.topic_partitions:
        if args.topic or args.partitions:
            raise CliError("--topic-partitions cannot be used with --topic or --partitions")
        for spec in re.split(r",(?![\d-]+(?:,|$))", args.topic_partitions):
            name, _, parts = spec.partition(":")
            filters.append((name.strip(), parse_partition_set(parts) if parts else None))
    else:
        parts = parse_partition_set(args.partitions) if args.partitions else None
        filters.append((args.topic or ".*", parts))
    chosen: set[TopicPartition] = set()
    for pattern_text, parts in filters:
        try:
            pattern = re.compile(pattern_text)
        except re.error as exc:
            raise CliError(f"{pattern_text!r} is not a valid regex: {exc}") from None
        for topic in topics:
            if pattern.fullmatch(topic["name"]):
                chosen.update(
                    (topic["name"], p["partition_index"])
                    for p in topic["partitions"]
                    if parts is None or p["partition_index"] in parts
                )
    if not chosen and args.topic and not any(re.fullmatch(args.topic, t["name"]) for t in topics):
        raise CliError("Could not match any topic-partitions with the specified filters")
    return sorted(chosen)


def run_get_offsets(args: argparse.Namespace) -> int:
    def body() -> int:
        spec = parse_time(args.time)
        with open_admin(args) as admin:
            partitions = _selected(admin, args)
            found = admin.list_offsets(partitions, spec)
        for topic, index in partitions:
            offset, error = found[(topic, index)]
            if error:
                raise CliError(f"{topic}-{index}: {kafka_error(error)}")
            print(f"{topic}:{index}:{offset if offset >= 0 else ''}")
        return 0

    return run_tool("Error occurred: ", body)
