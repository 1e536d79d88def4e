"""``sparklog log-dirs``: kafka-log-dirs.sh --describe, over DescribeLogDirs (35).

    sparklog log-dirs --bootstrap-server B --describe [--broker-list 1,2] [--topic-list t1,t2]

Asks each broker (all of them by default) for its log directories and prints Kafka's lines:
``Querying brokers for log directories information``, ``Received log directory information
from brokers 1,2`` and one JSON document ``{"brokers": [{"broker": 1, "logDirs":
[{"partitions": [{"partition": "t-0", "size": N, "offsetLag": 0, "isFuture": false}],
"error": null, "logDir": "/path"}]}], "version": 1}``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from sparklog.cli.admin_client import CliError, add_connection_args, open_admin, run_tool
from sparklog.protocol.errors import error_name


def add_log_dirs_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "log-dirs",
        help="describe brokers' log directories (kafka-log-dirs.sh)",
        description="Print every log directory of the brokers with its partitions and sizes.",
    )
    add_connection_args(parser)
    parser.add_argument("--describe", action="store_true", required=True, help="describe them")
    parser.add_argument("--broker-list", help="broker ids, comma-separated (default: all)")
    parser.add_argument("--topic-list", help="topics, comma-separated (default: all)")
    parser.set_defaults(run=run_log_dirs)


def _error_class(code: int) -> str | None:
    if code == 0:
        return None
    return f"org.apache.kafka.common.errors.{error_name(code).title().replace('_', '')}Exception"


def run_log_dirs(args: argparse.Namespace) -> int:
    def body() -> int:
        topics = [t.strip() for t in (args.topic_list or "").split(",") if t.strip()]
        with open_admin(args) as admin:
            live = sorted(b["node_id"] for b in admin.metadata([])["brokers"])
            if args.broker_list:
                try:
                    wanted = [int(b) for b in args.broker_list.split(",") if b.strip()]
                except ValueError:
                    raise CliError("--broker-list expects broker ids: 1,2,3") from None
                missing = sorted(set(wanted) - set(live))
                if missing:
                    raise CliError(
                        f"ERROR: The given brokers do not exist from --broker-list: "
                        f"{','.join(map(str, missing))}. Current existent brokers: "
                        f"{','.join(map(str, live))}"
                    )
            else:
                wanted = live
            print("Querying brokers for log directories information")
            request_topics = None
            if topics:
                layout = admin.topic_partitions(topics)
                request_topics = [
                    {"topic": t, "partitions": [p["partition_index"] for p in ps]}
                    for t, ps in layout.items()
                ]
            brokers = []
            for broker_id in wanted:
                response = admin.broker(broker_id).request(
                    "DescribeLogDirs", {"topics": request_topics}
                )
                brokers.append(
                    {
                        "broker": broker_id,
                        "logDirs": [
                            {
                                "partitions": [
                                    {
                                        "partition": f"{t['name']}-{p['partition_index']}",
                                        "size": p["partition_size"],
                                        "offsetLag": p["offset_lag"],
                                        "isFuture": p["is_future_key"],
                                    }
                                    for t in result["topics"]
                                    for p in t["partitions"]
                                ],
                                "error": _error_class(result["error_code"]),
                                "logDir": result["log_dir"],
                            }
                            for result in response["results"]
                        ],
                    }
                )
        print(f"Received log directory information from brokers {','.join(map(str, wanted))}")
        print(json.dumps({"brokers": brokers, "version": 1}, separators=(",", ":")))
        return 0

    return run_tool("", body)
