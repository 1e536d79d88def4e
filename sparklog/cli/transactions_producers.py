"""``sparklog transactions`` describe-producers, find-hanging and abort (kafka-transactions.sh).

    sparklog transactions --bootstrap-server B describe-producers --topic T --partition P \\
        [--broker-id N]
    sparklog transactions --bootstrap-server B find-hanging (--broker-id N | --topic T \\
        [--partition P]) [--max-transaction-timeout MINUTES]
    sparklog transactions --bootstrap-server B abort --topic T --partition P \\
        (--start-offset O | --producer-id I --producer-epoch E --coordinator-epoch C)

Contract (Kafka's TransactionsCommand, same headers and messages):

- describe-producers sends DescribeProducers (61) to the partition's leader, or to
  ``--broker-id``'s replica; one row a producer, ``None`` for no open transaction.
- find-hanging asks DescribeProducers of every partition in scope (those with a replica on
  ``--broker-id``, or of ``--topic``), keeps the open transactions older than
  ``--max-transaction-timeout`` minutes (15 by default), maps their producer ids to
  transactional ids with ListTransactions on every broker, and reports those whose coordinator
  does not know the transaction or not this partition in it (DescribeTransactions).
- abort finds the producer whose open transaction starts at ``--start-offset`` (or takes the
  producer id, epoch and coordinator epoch as given; a negative coordinator epoch becomes 0)
  and sends WriteTxnMarkers (27) with an ABORT marker to the partition's leader.

A failure prints Kafka's message on stderr and exits 1 (:class:`CliError` through run_tool).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, cast

from sparklog.cli.admin_client import AdminClient, CliError, kafka_error
from sparklog.client.connection import KafkaConnection
from sparklog.protocol.message_types import (
    DescribeProducersResponse,
    DescribeProducersResponseTopicsPartitionsActiveProducers,
)

_Producer = DescribeProducersResponseTopicsPartitionsActiveProducers

PRODUCERS_HEADERS = (
    "ProducerId",
    "ProducerEpoch",
    "LatestCoordinatorEpoch",
    "LastSequence",
    "LastTimestamp",
    "CurrentTransactionStartOffset",
)
HANGING_HEADERS = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
)
_DEBUG = " Enable debug logging for additional detail."


def add_producer_subcommands(commands: Any) -> None:
    producers = commands.add_parser(
        "describe-producers", help="describe the states of active producers for a topic partition"
    )
    producers.add_argument(
        "--broker-id",
        type=int,
        help="optional broker id to describe the producer state on a specific replica",
    )
    producers.add_argument("--topic", required=True, help="topic name")
    producers.add_argument("--partition", type=int, required=True, help="partition number")
    hanging = commands.add_parser("find-hanging", help="find hanging transactions")
    hanging.add_argument("--broker-id", type=int, help="broker id to search for hanging ones")
    hanging.add_argument(
        "--max-transaction-timeout",
        type=int,
        default=15,
        help="maximum transaction timeout in minutes to limit the scope of the search (15)",
    )
    hanging.add_argument("--topic", help="topic name to limit search to")
    hanging.add_argument("--partition", type=int, help="partition number (needs --topic)")
    abort = commands.add_parser(
        "abort", help="abort a hanging transaction (requires administrative privileges)"
    )
    abort.add_argument("--topic", required=True, help="topic name")
    abort.add_argument("--partition", type=int, required=True, help="partition number")
    abort.add_argument("--start-offset", type=int, help="start offset of the transaction")
    abort.add_argument("--producer-id", type=int, help="producer id (brokers before 3.0)")
    abort.add_argument("--producer-epoch", type=int, help="producer epoch")
    abort.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")


def _leader(admin: AdminClient, topic: str, partition: int) -> int:
    for entry in admin.topic_partitions([topic]).get(topic, []):
        if entry["partition_index"] == partition and entry["leader_id"] >= 0:
            return int(entry["leader_id"])
    raise CliError(f"{kafka_error(3)}: This server does not host this topic-partition.")


def _producers(
    conn: KafkaConnection, partitions: list[tuple[str, int]]
) -> dict[tuple[str, int], list[_Producer]]:
    """DescribeProducers of ``partitions`` on one broker; a partition error raises."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    answer = conn.request(
        "DescribeProducers",
        {"topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]},
    )
    response = cast("DescribeProducersResponse", answer)
    out: dict[tuple[str, int], list[_Producer]] = {}
    for answered in response["topics"]:
        for p in answered["partitions"]:
            if p["error_code"]:
                raise CliError(kafka_error(p["error_code"], p.get("error_message")))
            out[(answered["name"], p["partition_index"])] = list(p["active_producers"])
    return out


def _start(state: _Producer) -> int:
    return int(state["current_txn_start_offset"])


def describe_producers(admin: AdminClient, args: argparse.Namespace) -> list[list[str]]:
    where = f"broker {args.broker_id}" if args.broker_id is not None else "leader"
    name = f"{args.topic}-{args.partition}"
    try:
        broker = (
            args.broker_id
            if args.broker_id is not None
            else _leader(admin, args.topic, args.partition)
        )
        states = _producers(admin.broker(broker), [(args.topic, args.partition)])
    except CliError as exc:
        raise CliError(
            f"Failed to describe producers for partition {name} on {where}: {exc}.{_DEBUG}"
        ) from None
    return [
        [
            str(s["producer_id"]),
            str(s["producer_epoch"]),
            str(s["coordinator_epoch"]),
            str(s["last_sequence"]),
            str(s["last_timestamp"]),
            str(_start(s)) if _start(s) >= 0 else "None",
        ]
        for s in states.get((args.topic, args.partition), [])
    ]


def _in_scope(admin: AdminClient, args: argparse.Namespace) -> dict[int, list[tuple[str, int]]]:
    """Leader (or ``--broker-id``) -> the partitions find-hanging searches there."""
    if args.topic is not None and args.partition is not None:
        partitions = [(args.topic, args.partition)]
        metadata = admin.topic_partitions([args.topic])
    else:
        metadata = admin.topic_partitions([args.topic] if args.topic is not None else None)
        partitions = [
            (topic, p["partition_index"])
            for topic, entries in sorted(metadata.items())
            for p in entries
            if args.broker_id is None or args.broker_id in p["replica_nodes"]
        ]
    leaders = {(t, p["partition_index"]): p["leader_id"] for t, ps in metadata.items() for p in ps}
    out: dict[int, list[tuple[str, int]]] = {}
    for tp in partitions:
        broker = args.broker_id if args.broker_id is not None else leaders.get(tp, -1)
        if broker < 0:
            raise CliError(f"Failed to describe producers for {tp[0]}-{tp[1]}: no leader.")
        out.setdefault(broker, []).append(tp)
    return out


def _transactional_ids(admin: AdminClient, producer_ids: set[int]) -> dict[int, str]:
    found: dict[int, str] = {}
    for broker in admin.metadata([])["brokers"]:
        response = admin.broker(broker["node_id"]).request(
            "ListTransactions", {"state_filters": [], "producer_id_filters": sorted(producer_ids)}
        )
        if response["error_code"]:
            raise CliError(
                f"Failed to list transactions for {len(producer_ids)} producers: "
                f"{kafka_error(response['error_code'])}.{_DEBUG}"
            )
        for listing in response["transaction_states"]:
            if listing["producer_id"] in producer_ids:
                found[int(listing["producer_id"])] = listing["transactional_id"]
    return found


def _described_partitions(admin: AdminClient, transactional_id: str) -> set[tuple[str, int]] | None:
    """The partitions of the id's ongoing transaction; None when the coordinator has no id."""
    response = admin.coordinator(transactional_id, key_type=1).request(
        "DescribeTransactions", {"transactional_ids": [transactional_id]}
    )
    state = response["transaction_states"][0]
    if state["error_code"] == 105:  # TRANSACTIONAL_ID_NOT_FOUND
        return None
    if state["error_code"]:
        raise CliError(
            f"Failed to describe 1 transactions: {kafka_error(state['error_code'])}.{_DEBUG}"
        )
    return {(t["topic"], p) for t in state["topics"] for p in t["partitions"]}


def find_hanging(admin: AdminClient, args: argparse.Namespace) -> list[list[str]]:
    if args.topic is None and args.broker_id is None:
        raise CliError(
            "The `find-hanging` command requires either --topic or --broker-id to limit the "
            "scope of the search"
        )
    if args.partition is not None and args.topic is None:
        raise CliError("The --partition argument requires --topic to be provided")
    max_ms = args.max_transaction_timeout * 60_000
    candidates: list[tuple[tuple[str, int], _Producer]] = []
    for broker, partitions in _in_scope(admin, args).items():
        try:
            states = _producers(admin.broker(broker), partitions)
        except CliError as exc:
            # Kafka prints the Optional it holds: Optional[101] or Optional.empty
            scope = "Optional.empty" if args.broker_id is None else f"Optional[{args.broker_id}]"
            raise CliError(
                f"Failed to describe producers for {len(partitions)} partitions on broker "
                f"{scope}: {exc}.{_DEBUG}"
            ) from None
        now_ms = int(time.time() * 1000)
        for tp, producers in states.items():
            candidates += [
                (tp, s)
                for s in producers
                if _start(s) >= 0 and now_ms - int(s["last_timestamp"]) > max_ms
            ]
    hanging = []
    if candidates:
        ids = _transactional_ids(admin, {int(s["producer_id"]) for _, s in candidates})
        described: dict[str, set[tuple[str, int]] | None] = {}
        for tp, state in candidates:
            transactional_id = ids.get(int(state["producer_id"]))
            if transactional_id is not None and transactional_id not in described:
                described[transactional_id] = _described_partitions(admin, transactional_id)
            in_txn = described.get(transactional_id) if transactional_id else None
            if in_txn is None or tp not in in_txn:
                hanging.append((tp, state))
    now_ms = int(time.time() * 1000)
    return [
        [
            topic,
            str(partition),
            str(s["producer_id"]),
            str(s["producer_epoch"]),
            str(s["coordinator_epoch"]),
            str(_start(s)),
            str(s["last_timestamp"]),
            str((now_ms - int(s["last_timestamp"])) // 60_000),
        ]
        for (topic, partition), s in hanging
    ]


def abort(admin: AdminClient, args: argparse.Namespace) -> None:
    name = f"{args.topic}-{args.partition}"
    if args.start_offset is None and args.producer_id is None:
        raise CliError(
            "The transaction to abort must be identified either with --start-offset (for "
            "brokers on 3.0 or above) or with --producer-id, --producer-epoch, and "
            "--coordinator-epoch (for older brokers)"
        )
    leader = _leader(admin, args.topic, args.partition)
    if args.start_offset is None:
        if args.producer_epoch is None:
            raise CliError("Missing required argument --producer-epoch")
        if args.coordinator_epoch is None:
            raise CliError("Missing required argument --coordinator-epoch")
        producer_id, epoch = args.producer_id, args.producer_epoch
        coordinator_epoch = max(args.coordinator_epoch, 0)
    else:
        try:
            states = _producers(admin.broker(leader), [(args.topic, args.partition)])
        except CliError as exc:
            raise CliError(
                f"Failed to validate producer state for partition {name}: {exc}.{_DEBUG}"
            ) from None
        found = next(
            (
                s
                for s in states.get((args.topic, args.partition), [])
                if _start(s) == args.start_offset
            ),
            None,
        )
        if found is None:
            raise CliError(
                f"Could not find any open transactions starting at offset {args.start_offset} "
                f"on partition {name}"
            )
        producer_id, epoch = int(found["producer_id"]), int(found["producer_epoch"])
        coordinator_epoch = max(int(found["coordinator_epoch"]), 0)
    spec = (
        f"AbortTransactionSpec(topicPartition={name}, producerId={producer_id}, "
        f"producerEpoch={epoch}, coordinatorEpoch={coordinator_epoch})"
    )
    response = admin.broker(leader).request(
        "WriteTxnMarkers",
        {
            "markers": [
                {
                    "producer_id": producer_id,
                    "producer_epoch": epoch,
                    "transaction_result": False,
                    "topics": [{"name": args.topic, "partition_indexes": [args.partition]}],
                    "coordinator_epoch": coordinator_epoch,
                }
            ]
        },
    )
    for marker in response["markers"]:
        for topic in marker["topics"]:
            for p in topic["partitions"]:
                if p["error_code"]:
                    raise CliError(
                        f"Failed to abort transaction {spec}: {kafka_error(p['error_code'])}."
                        f"{_DEBUG}"
                    )
