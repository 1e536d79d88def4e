"""``sparklog transactions``: kafka-transactions.sh's list, describe, describe-producers,
find-hanging and abort (the last three in :mod:`sparklog.cli.transactions_producers`).

    sparklog transactions --bootstrap-server B list
    sparklog transactions --bootstrap-server B describe --transactional-id ID

``list`` asks every broker (each coordinates some transactional ids) with ListTransactions
(66); ``describe`` asks the id's coordinator with DescribeTransactions (65). Both print
Kafka's table: columns padded to their longest cell, each followed by a TAB; so do
describe-producers and find-hanging. abort prints nothing when it succeeds, as Kafka's.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from sparklog.cli.admin_client import (
    CliError,
    add_connection_args,
    kafka_error,
    open_admin,
    run_tool,
)
from sparklog.cli.transactions_producers import (
    HANGING_HEADERS,
    PRODUCERS_HEADERS,
    abort,
    add_producer_subcommands,
    describe_producers,
    find_hanging,
)

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = (
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions",
)


def add_transactions_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "transactions",
        help="list, describe, find hanging and abort transactions (kafka-transactions.sh)",
        description="List transactional ids, describe one's current transaction, describe a "
        "partition's producers, find hanging transactions and abort one.",
    )
    add_connection_args(parser)
    commands = parser.add_subparsers(dest="transactions_command", required=True)
    commands.add_parser("list", help="list transactional ids and their states")
    describe = commands.add_parser("describe", help="describe one transactional id")
    describe.add_argument("--transactional-id", required=True, help="the transactional id")
    add_producer_subcommands(commands)
    parser.set_defaults(run=run_transactions)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Kafka's ToolsUtils.prettyPrintTable: left-aligned columns, each followed by a TAB."""
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    for row in [headers, *rows]:
        print("".join(f"{cell:<{widths[i]}}\t" for i, cell in enumerate(row)))


def _list(args: argparse.Namespace) -> int:
    rows: list[list[str]] = []
    with open_admin(args) as admin:
        for broker in sorted(admin.metadata([])["brokers"], key=lambda b: b["node_id"]):
            response = admin.broker(broker["node_id"]).request(
                "ListTransactions", {"state_filters": [], "producer_id_filters": []}
            )
            if response["error_code"]:
                raise CliError(f"broker {broker['node_id']}: {kafka_error(response['error_code'])}")
            rows += [
                [
                    t["transactional_id"],
                    str(broker["node_id"]),
                    str(t["producer_id"]),
                    t["transaction_state"],
                ]
                for t in response["transaction_states"]
            ]
    print_table(LIST_HEADERS, sorted(rows))
    return 0


def _describe(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        coordinator = admin.coordinator(args.transactional_id, key_type=1)
        response = coordinator.request(
            "DescribeTransactions", {"transactional_ids": [args.transactional_id]}
        )
        coordinator_id = next(
            (
                b["node_id"]
                for b in admin.metadata([])["brokers"]
                if b["host"] == coordinator.host and b["port"] == coordinator.port
            ),
            -1,
        )
    state = response["transaction_states"][0]
    if state["error_code"]:
        raise CliError(
            f"Failed to describe transaction {args.transactional_id}: "
            f"{kafka_error(state['error_code'])}"
        )
    start = state["transaction_start_time_ms"]
    duration = str(int(time.time() * 1000) - start) if start >= 0 else "None"
    partitions = ",".join(
        f"{t['topic']}-{p}" for t in state["topics"] for p in sorted(t["partitions"])
    )
    row = [str(coordinator_id), state["transactional_id"], str(state["producer_id"]),
           str(state["producer_epoch"]), state["transaction_state"],
           str(state["transaction_timeout_ms"]), str(start) if start >= 0 else "None", duration,
           partitions]  # fmt: skip
    print_table(DESCRIBE_HEADERS, [row])
    return 0


def run_transactions(args: argparse.Namespace) -> int:
    def body() -> int:
        command = args.transactions_command
        if command == "list":
            return _list(args)
        if command == "describe":
            return _describe(args)
        with open_admin(args) as admin:
            if command == "describe-producers":
                print_table(PRODUCERS_HEADERS, describe_producers(admin, args))
            elif command == "find-hanging":
                print_table(HANGING_HEADERS, find_hanging(admin, args))
            else:
                abort(admin, args)
        return 0

    return run_tool("", body)
