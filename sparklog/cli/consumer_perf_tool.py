"""``sparklog consumer-perf-test``: kafka-consumer-perf-test.sh's read and report.

    sparklog consumer-perf-test --bootstrap-server B --topic T --messages N [--timeout MS]
        [--from-latest] [--show-detailed-stats [--reporting-interval MS]] [--hide-header]

Reads every partition of T from its start (``--from-latest``: its end) until N records or
``--timeout`` ms without a record, then prints Kafka's header (``start.time, end.time,
data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms,
fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec``) and one line of figures. With
``--show-detailed-stats`` a line per interval comes first (Kafka's detailed header); without
it a progress line goes to stderr every 5 s. There is no group rebalance: rebalance.time.ms
is 0. A read that times out before N records says so on stderr, as Kafka's does.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from typing import Any

from sparklog.cli.admin_client import (
    EARLIEST,
    LATEST,
    CliError,
    add_connection_args,
    command_security,
    read_command_config,
    run_tool,
)
from sparklog.client.consumer import FetchError, PartitionReader

_PROGRESS_EVERY_S = 5.0
_MB = 1024 * 1024
_COLUMNS = (
    "data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, "
    "fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)


def add_consumer_perf_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "consumer-perf-test",
        help="measure consume throughput (kafka-consumer-perf-test.sh)",
        description="Read --messages records of --topic and report rates.",
    )
    add_connection_args(parser)
    parser.add_argument("--topic", required=True, help="the topic to read")
    parser.add_argument("--messages", type=int, required=True, help="records to read")
    parser.add_argument("--timeout", type=int, default=10000, help="ms without a record to stop")
    parser.add_argument("--from-latest", action="store_true", help="start at the log end")
    parser.add_argument("--fetch-size", type=int, default=1 << 20, help="bytes per partition")
    parser.add_argument("--show-detailed-stats", action="store_true", help="a line per interval")
    parser.add_argument("--reporting-interval", type=int, default=5000, help="ms per line")
    parser.add_argument("--hide-header", action="store_true", help="print no header line")
    parser.add_argument("--date-format", default="%Y-%m-%d %H:%M:%S:%f", help="strftime format")
    parser.add_argument("--group", default="perf-consumer", help="accepted for compatibility")
    parser.set_defaults(run=run_consumer_perf)


def _when(fmt: str, at: float) -> str:
    text = datetime.fromtimestamp(at).strftime(fmt)
    # Kafka's SimpleDateFormat prints milliseconds (SSS); strftime's %f is microseconds.
    return text[:-3] if fmt.endswith("%f") else text


def run_consumer_perf(args: argparse.Namespace) -> int:
    def body() -> int:
        settings = read_command_config(args.command_config)
        with PartitionReader(
            args.bootstrap_server,
            client_id=settings.get("client.id", "perf-consumer"),
            partition_max_bytes=args.fetch_size,
            security=command_security(settings),
        ) as reader:
            partitions = reader.partitions_for(args.topic)
            if not partitions:
                raise CliError(f"Topic {args.topic} does not exist (or has no leader yet)")
            tps = [(args.topic, p) for p in partitions]
            reader.assign(reader.list_offsets(tps, LATEST if args.from_latest else EARLIEST))
            if args.show_detailed_stats and not args.hide_header:
                print("time, threadId, " + _COLUMNS)
            start = time.time()
            count = size = 0
            last_record = report_at = time.monotonic()
            last_count = last_size = 0
            while count < args.messages:
                try:
                    records = reader.poll()
                except FetchError as exc:
                    raise CliError(str(exc)) from None
                now = time.monotonic()
                for record in records[: args.messages - count]:
                    count += 1
                    size += len(record.value or b"") + len(record.key or b"")
                if records:
                    last_record = now
                elif (now - last_record) * 1000 >= args.timeout:
                    print(
                        f"WARNING: Exiting before consuming the expected number of messages: "
                        f"timeout ({args.timeout} ms) exceeded. You can use the --timeout option "
                        "to increase the timeout.",
                        file=sys.stderr,
                    )
                    break
                interval = args.reporting_interval / 1000 if args.show_detailed_stats else (
                    _PROGRESS_EVERY_S
                )  # fmt: skip
                if now - report_at >= interval:
                    elapsed = now - report_at
                    mb = (size - last_size) / _MB
                    if args.show_detailed_stats:
                        print(
                            f"{_when(args.date_format, time.time())}, 0, {size / _MB:.4f}, "
                            f"{mb / elapsed:.4f}, {count}, {(count - last_count) / elapsed:.4f}, "
                            f"0, {elapsed * 1000:.0f}, {mb / elapsed:.4f}, "
                            f"{(count - last_count) / elapsed:.4f}",
                            flush=True,
                        )
                    else:
                        print(f"{count}/{args.messages} records read", file=sys.stderr, flush=True)
                    report_at, last_count, last_size = now, count, size
            end = time.time()
        elapsed_s = max(end - start, 1e-9)
        mb = size / _MB
        if not args.show_detailed_stats:
            if not args.hide_header:
                print("start.time, end.time, " + _COLUMNS)
            print(
                f"{_when(args.date_format, start)}, {_when(args.date_format, end)}, {mb:.4f}, "
                f"{mb / elapsed_s:.4f}, {count}, {count / elapsed_s:.4f}, 0, "
                f"{elapsed_s * 1000:.0f}, {mb / elapsed_s:.4f}, {count / elapsed_s:.4f}"
            )
        return 0

    return run_tool("Error: ", body)
