"""``sparklog console-producer``: kafka-console-producer.sh, lines of stdin (or ``--file``) to a
topic, one record per line.

Line parsing is Kafka's LineMessageReader, set with ``--property``:
``parse.key=true`` splits ``key<key.separator>value`` (separator default TAB);
``parse.headers=true`` reads ``h1:v1,h2:v2<headers.delimiter>`` first (delimiter TAB,
``headers.separator`` ",", ``headers.key.separator`` ":"; ``NO_HEADERS`` or an empty part means
none); ``null.marker=X`` turns a key or value equal to X into null; ``ignore.error=true`` keeps
going after a line without the separator. Records are produced with the client's default
partitioner (keyed records by murmur2), flushed at the end, each acknowledged before exit;
``--sync`` flushes after every line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from sparklog.cli.admin_client import (
    CliError,
    add_connection_args,
    command_security,
    read_command_config,
    run_tool,
)
from sparklog.client.producer import ProduceError, Producer, ProducerConfig


def add_property_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a reader/formatter property (repeatable)",
    )


def parse_properties(items: Iterable[str]) -> dict[str, str]:
    props = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise CliError(f"--property expects key=value, got {item!r}")
        props[key.strip()] = value
    return props


def add_console_producer_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "console-producer",
        help="produce lines of stdin or a file to a topic (kafka-console-producer.sh)",
        description="Read lines from stdin (or --file) and produce each as a record.",
    )
    add_connection_args(parser)
    parser.add_argument("--topic", required=True, help="the topic to produce to")
    parser.add_argument("--file", help="read lines from this file instead of stdin")
    add_property_args(parser)
    parser.add_argument(
        "--producer-property", action="append", default=[], metavar="KEY=VALUE",
        help="acks, compression.type, batch.size, client.id",
    )  # fmt: skip
    parser.add_argument("--request-required-acks", help="acks: -1/all or 1 (default all)")
    parser.add_argument("--compression-codec", help="none, gzip, snappy, lz4 or zstd")
    parser.add_argument("--sync", action="store_true", help="wait for each record's ack")
    parser.set_defaults(run=run_console_producer)


class LineReader:
    """Kafka's LineMessageReader: one line -> (key, value, headers)."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self.parse_key = props.get("parse.key", "false").lower() == "true"
        self.key_separator = props.get("key.separator", "\t")
        self.parse_headers = props.get("parse.headers", "false").lower() == "true"
        self.headers_delimiter = props.get("headers.delimiter", "\t")
        self.headers_separator = props.get("headers.separator", ",")
        self.header_key_separator = props.get("headers.key.separator", ":")
        self.null_marker = props.get("null.marker")
        self.ignore_error = props.get("ignore.error", "false").lower() == "true"

    def _bytes(self, text: str) -> bytes | None:
        return None if self.null_marker is not None and text == self.null_marker else text.encode()

    def parse(
        self, line: str, number: int
    ) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]:
        headers: list[tuple[str, bytes | None]] = []
        rest = line
        if self.parse_headers:
            part, sep, after = rest.partition(self.headers_delimiter)
            if not sep:
                if not self.ignore_error:
                    raise CliError(
                        f"No header key separator found in pair '{line}' on line number {number}"
                    )
            else:
                rest = after
                if part and part != "NO_HEADERS":
                    for pair in part.split(self.headers_separator):
                        name, has_value, value = pair.partition(self.header_key_separator)
                        headers.append((name, self._bytes(value) if has_value else None))
        key: bytes | None = None
        if self.parse_key:
            key_text, sep, value_text = rest.partition(self.key_separator)
            if not sep:
                if not self.ignore_error:
                    raise CliError(f"No key separator found on line number {number}: '{line}'")
                return None, self._bytes(rest), headers
            return self._bytes(key_text), self._bytes(value_text), headers
        return key, self._bytes(rest), headers


def _producer_config(args: argparse.Namespace) -> ProducerConfig:
    settings = read_command_config(args.command_config)
    settings.update(parse_properties(args.producer_property))
    if args.request_required_acks:
        settings["acks"] = args.request_required_acks
    if args.compression_codec:
        settings["compression.type"] = args.compression_codec
    acks = settings.get("acks", "all").strip().lower()
    try:
        return ProducerConfig(
            acks=-1 if acks in ("all", "-1") else int(acks),
            compression=settings.get("compression.type", "none"),
            batch_size=int(settings.get("batch.size", 16384)),
            client_id=settings.get("client.id", "console-producer"),
            security=command_security(settings),
        )
    except ValueError as exc:
        raise CliError(f"bad producer setting: {exc}") from None


def produce_lines(
    producer: Producer, topic: str, lines: TextIO, reader: LineReader, sync: bool
) -> int:
    count = 0
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n").rstrip("\r")
        key, value, headers = reader.parse(line, number)
        producer.send(topic, value, key=key, headers=headers)
        count += 1
        if sync:
            producer.flush()
    producer.flush()
    return count


def run_console_producer(args: argparse.Namespace) -> int:
    def body() -> int:
        reader = LineReader(parse_properties(args.property))
        config = _producer_config(args)
        with Producer(args.bootstrap_server, config) as producer:
            try:
                producer.partitions_for(args.topic)
            except ProduceError as exc:
                raise CliError(f"cannot produce to {args.topic}: {exc}") from None
            try:
                if args.file:
                    with open(args.file, encoding="utf-8") as source:
                        produce_lines(producer, args.topic, source, reader, args.sync)
                else:
                    produce_lines(producer, args.topic, sys.stdin, reader, args.sync)
            except ProduceError as exc:
                raise CliError(str(exc)) from None
        return 0

    return run_tool("ERROR ", body)
