"""``sparklog leader-election``: kafka-leader-election.sh over the wire (ElectLeaders, API 43).

    sparklog leader-election --bootstrap-server HOST:PORT --election-type PREFERRED|UNCLEAN \\
        (--all-topic-partitions | --topic T --partition P | --path-to-json-file F)

The JSON file is Kafka's: ``{"partitions": [{"topic": "t", "partition": 0}, ...]}``. Output
follows the Kafka tool: ``Successfully completed leader election (TYPE) for partitions ...``,
``Valid replica already elected for partitions ...`` and one ``Error completing leader
election (TYPE) for partition: t-p: <reason>`` line per failure, after which the command exits
with status 1. A usage error prints one line saying what to fix and exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, cast

from sparklog.cli.admin_client import (
    CliError,
    add_tool_parser,
    open_admin,
    run_admin_tool,
)
from sparklog.client.connection import KafkaConnection
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
)

ELECTION_TYPES = {"PREFERRED": 0, "UNCLEAN": 1}


class LeaderElectionError(CliError):
    pass


def add_leader_election_parser(sub: Any) -> None:
    parser = add_tool_parser(
        sub,
        "leader-election",
        "elect preferred or unclean leaders (kafka-leader-election.sh)",
        "Trigger leader election for topic partitions (ElectLeaders).",
    )
    parser.add_argument(
        "--election-type",
        help="PREFERRED: make the first replica lead where it is in sync; UNCLEAN: elect a "
        "leader (maybe an out-of-sync replica) for partitions that have none",
    )
    parser.add_argument(
        "--all-topic-partitions", action="store_true", help="every partition of every topic"
    )
    parser.add_argument("--topic", help="the topic (with --partition)")
    parser.add_argument("--partition", type=int, help="the partition (with --topic)")
    parser.add_argument(
        "--path-to-json-file",
        help='JSON file: {"partitions": [{"topic": "t", "partition": 0}, ...]}',
    )
    parser.set_defaults(run=run_leader_election)


def _targets(args: argparse.Namespace) -> list[ElectLeadersRequestTopicPartitions] | None:
    chosen = [
        bool(args.all_topic_partitions),
        args.topic is not None,
        args.path_to_json_file is not None,
    ]
    if sum(chosen) != 1:
        raise LeaderElectionError(
            "One and only one of the following options is required: --all-topic-partitions, "
            "--topic, --path-to-json-file"
        )
    if args.partition is not None and args.topic is None:
        raise LeaderElectionError("--partition requires --topic")
    if args.all_topic_partitions:
        return None
    if args.topic is not None:
        if args.partition is None:
            raise LeaderElectionError("Missing required option(s): --partition")
        return [{"topic": args.topic, "partitions": [args.partition]}]
    return _read_json_targets(args.path_to_json_file)


def _read_json_targets(path: str) -> list[ElectLeadersRequestTopicPartitions]:
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as exc:
        raise LeaderElectionError(f"Cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise LeaderElectionError(f"{path} is not valid JSON: {exc}") from None
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise LeaderElectionError(f'{path}: expected {{"partitions": [{{"topic": ..., ...}}]}}')
    by_topic: dict[str, list[int]] = {}
    seen: set[tuple[str, int]] = set()
    for entry in entries:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("topic"), str)
            or not isinstance(entry.get("partition"), int)
        ):
            raise LeaderElectionError(f"{path}: each partition needs a topic and a partition")
        key = (entry["topic"], entry["partition"])
        if key in seen:
            raise LeaderElectionError(
                f"Replica election data contains duplicate partitions: {key[0]}-{key[1]}"
            )
        seen.add(key)
        by_topic.setdefault(key[0], []).append(key[1])
    return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]


def _error_name(code: int, message: str | None) -> str:
    name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
    return f"{name}: {message}" if message else name


def elect(
    conn: KafkaConnection,
    election_type: str,
    targets: list[ElectLeadersRequestTopicPartitions] | None,
) -> int:
    """Send ElectLeaders and print the outcome as Kafka's tool does; the failure count."""
    request: ElectLeadersRequest = {
        "election_type": ELECTION_TYPES[election_type],
        "topic_partitions": targets,
        "timeout_ms": 30000,
    }
    response = cast("ElectLeadersResponse", conn.request("ElectLeaders", request))
    if response.get("error_code", 0):
        raise LeaderElectionError(
            f"Leader election failed: {_error_name(response['error_code'], None)}"
        )
    succeeded: list[str] = []
    not_needed: list[str] = []
    failed: list[tuple[str, str]] = []
    for topic in response["replica_election_results"]:
        for result in topic["partition_result"]:
            name = f"{topic['topic']}-{result['partition_id']}"
            code = result["error_code"]
            if code == 0:
                succeeded.append(name)
            elif code == ErrorCode.ELECTION_NOT_NEEDED:
                not_needed.append(name)
            else:
                failed.append((name, _error_name(code, result.get("error_message"))))
    if succeeded:
        print(
            f"Successfully completed leader election ({election_type}) for partitions "
            + ", ".join(succeeded)
        )
    if not_needed:
        print("Valid replica already elected for partitions " + ", ".join(not_needed))
    # LeaderElectionCommand prints nothing more when no partition needed an election, and
    # each failure on stdout (the "N replica(s) could not be elected" summary on stderr).
    for name, reason in failed:
        print(f"Error completing leader election ({election_type}) for partition: {name}: {reason}")
    return len(failed)


def run_leader_election(args: argparse.Namespace) -> int:
    def body() -> int:
        if args.election_type is None:
            raise LeaderElectionError("Missing required option(s): --election-type")
        election_type = str(args.election_type).upper()
        if election_type not in ELECTION_TYPES:
            raise LeaderElectionError(
                f"Invalid election type {args.election_type!r}: expected PREFERRED or UNCLEAN"
            )
        targets = _targets(args)
        with open_admin(args) as admin:
            failures = elect(admin.conn, election_type, targets)
        if failures:
            print(f"{failures} replica(s) could not be elected", file=sys.stderr)
            return 1
        return 0

    return run_admin_tool(args, body)
