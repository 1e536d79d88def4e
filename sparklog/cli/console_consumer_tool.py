"""``sparklog console-consumer``: kafka-console-consumer.sh, a topic's records to stdout.

Where it starts: ``--partition P --offset N|earliest|latest`` reads one partition from there;
otherwise every partition of ``--topic``, from the log start with ``--from-beginning`` and from
the end without it. With ``--group G`` it starts from G's committed offsets (partitions G has
not committed start as above) and commits what it printed when it stops: it reads as a
standalone member (it does not join G's rebalances), so G must have no other active member.

It stops after ``--max-messages`` records, or after ``--timeout-ms`` without a record, or on
Ctrl-C, then prints ``Processed a total of N messages`` on stderr as Kafka does.

Formatting is Kafka's DefaultMessageFormatter, set with ``--property``: ``print.timestamp``
(``CreateTime:ms``), ``print.partition`` (``Partition:P``), ``print.offset`` (``Offset:N``),
``print.headers`` (``k:v,k2:v2`` or ``NO_HEADERS``), ``print.key``, ``print.value`` (default
true), separated by ``key.separator`` (TAB); ``line.separator``, ``headers.separator``,
``headers.key.separator``, ``null.literal`` as in Kafka.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from typing import Any

from sparklog.cli.admin_client import (
    EARLIEST,
    LATEST,
    CliError,
    TopicPartition,
    add_connection_args,
    command_security,
    open_admin,
    read_command_config,
    run_tool,
)
from sparklog.cli.console_producer_tool import add_property_args, parse_properties
from sparklog.client.consumer import ConsumedRecord, FetchError, PartitionReader
from sparklog.client.groups import committed_offsets


def add_console_consumer_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "console-consumer",
        help="print a topic's records (kafka-console-consumer.sh)",
        description="Read records of a topic and print them, formatted as Kafka does.",
    )
    add_connection_args(parser)
    parser.add_argument("--topic", required=True, help="the topic to read")
    parser.add_argument("--partition", type=int, help="read only this partition")
    parser.add_argument("--offset", default=None, help="with --partition: N, earliest or latest")
    parser.add_argument("--from-beginning", action="store_true", help="start at the log start")
    parser.add_argument("--max-messages", type=int, help="stop after this many records")
    parser.add_argument("--timeout-ms", type=int, help="stop after this long without a record")
    parser.add_argument("--group", help="start from and commit to this group's offsets")
    parser.add_argument(
        "--isolation-level",
        choices=("read_uncommitted", "read_committed"),
        default="read_uncommitted",
        help="read_committed skips aborted transactions and stops at the LSO",
    )
    add_property_args(parser)
    parser.set_defaults(run=run_console_consumer)


class Formatter:
    """Kafka's DefaultMessageFormatter."""

    def __init__(self, props: Mapping[str, str]) -> None:
        def flag(name: str, default: bool = False) -> bool:
            return props.get(name, str(default)).lower() == "true"

        self.print_timestamp = flag("print.timestamp")
        self.print_partition = flag("print.partition")
        self.print_offset = flag("print.offset")
        self.print_headers = flag("print.headers")
        self.print_key = flag("print.key")
        self.print_value = flag("print.value", True)
        self.key_separator = props.get("key.separator", "\t")
        self.line_separator = props.get("line.separator", "\n")
        self.headers_separator = props.get("headers.separator", ",")
        self.header_key_separator = props.get("headers.key.separator", ":")
        self.null_literal = props.get("null.literal", "null")

    def _text(self, data: bytes | None) -> str:
        return self.null_literal if data is None else data.decode("utf-8", errors="replace")

    def format(self, record: ConsumedRecord) -> str:
        parts: list[str] = []
        if self.print_timestamp:
            kind = "LogAppendTime" if record.timestamp_type == 1 else "CreateTime"
            parts.append(f"{kind}:{record.timestamp}")
        if self.print_partition:
            parts.append(f"Partition:{record.partition}")
        if self.print_offset:
            parts.append(f"Offset:{record.offset}")
        if self.print_headers:
            headers = self.headers_separator.join(
                f"{k}{self.header_key_separator}{self._text(v)}" for k, v in record.headers
            )
            parts.append(headers or "NO_HEADERS")
        if self.print_key:
            parts.append(self._text(record.key))
        if self.print_value:
            parts.append(self._text(record.value))
        return self.key_separator.join(parts) + self.line_separator


def _start_positions(
    args: argparse.Namespace, reader: PartitionReader
) -> dict[TopicPartition, int]:
    partitions = reader.partitions_for(args.topic)
    if not partitions:
        raise CliError(f"Topic {args.topic} does not exist (or has no leader yet)")
    if args.partition is not None:
        if args.partition not in partitions:
            raise CliError(f"Partition {args.partition} of {args.topic} does not exist")
        tp = (args.topic, args.partition)
        spec = args.offset or ("earliest" if args.from_beginning else "latest")
        if spec in ("earliest", "latest"):
            found = reader.list_offsets([tp], EARLIEST if spec == "earliest" else LATEST)
            return {tp: found[tp]}
        try:
            return {tp: int(spec)}
        except ValueError:
            raise CliError(f"--offset must be a number, earliest or latest; got {spec}") from None
    if args.offset is not None:
        raise CliError("The partition is required when offset is specified.")
    tps = [(args.topic, p) for p in partitions]
    starts = reader.list_offsets(tps, EARLIEST if args.from_beginning else LATEST)
    if args.group:
        with open_admin(args) as admin:
            committed = committed_offsets(admin, args.group)
        starts.update({tp: committed[tp] for tp in tps if tp in committed})
    return starts


def _commit(args: argparse.Namespace, positions: Mapping[TopicPartition, int]) -> None:
    from sparklog.cli.consumer_groups_reset import commit_offsets

    with open_admin(args) as admin:
        commit_offsets(admin, args.group, dict(positions))


def run_console_consumer(args: argparse.Namespace) -> int:
    processed = 0

    def body() -> int:
        nonlocal processed
        settings = read_command_config(args.command_config)
        formatter = Formatter(parse_properties(args.property))
        isolation = 1 if args.isolation_level == "read_committed" else 0
        with PartitionReader(
            args.bootstrap_server,
            client_id=settings.get("client.id", "console-consumer"),
            isolation_level=isolation,
            security=command_security(settings),
        ) as reader:
            starts = _start_positions(args, reader)
            reader.assign(starts)
            last_record = time.monotonic()
            try:
                while args.max_messages is None or processed < args.max_messages:
                    before = {tp: reader.position(tp) for tp in starts}
                    records = reader.poll()
                    for index, record in enumerate(records):
                        sys.stdout.write(formatter.format(record))
                        processed += 1
                        if args.max_messages is not None and processed >= args.max_messages:
                            # Stopped inside the round: positions (committed with --group) are
                            # those of the records printed, not of everything fetched.
                            for tp, offset in before.items():
                                reader.seek(tp, offset)
                            for done in records[: index + 1]:
                                reader.seek((done.topic, done.partition), done.offset + 1)
                            break
                    sys.stdout.flush()
                    if records:
                        last_record = time.monotonic()
                    elif (
                        args.timeout_ms is not None
                        and (time.monotonic() - last_record) * 1000 >= args.timeout_ms
                    ):
                        break
            except FetchError as exc:
                raise CliError(str(exc)) from None
            except KeyboardInterrupt:
                pass
            finally:
                if args.group:
                    _commit(args, {tp: reader.position(tp) for tp in starts})
        return 0

    status = run_tool("ERROR ", body)
    print(f"Processed a total of {processed} messages", file=sys.stderr)
    return status
