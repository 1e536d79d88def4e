"""``sparklog reassign-partitions``: kafka-reassign-partitions.sh over the wire (KIP-455).

    sparklog reassign-partitions --bootstrap-server HOST:PORT --reassignment-json-file F \\
        (--execute [--additional] | --verify | --cancel)
    sparklog reassign-partitions --bootstrap-server HOST:PORT --list
    sparklog reassign-partitions --bootstrap-server HOST:PORT --generate \\
        --topics-to-move-json-file F --broker-list 1,2,3     (see reassign_generate)

The file is Kafka's reassignment JSON: ``{"version": 1, "partitions": [{"topic": "t",
"partition": 0, "replicas": [1, 2, 3]}, ...]}`` (``log_dirs`` is accepted; only ``"any"``).

- ``--execute`` prints the current assignment of those partitions (save it to roll back), then
  sends AlterPartitionReassignments (45). It refuses while any of them is being reassigned
  unless ``--additional`` is given.
- ``--verify`` reports, per partition, whether the reassignment is completed, still in
  progress, or over with another replica set (ListPartitionReassignments 46 + Metadata).
- ``--cancel`` cancels the reassignments of the file's partitions (null replicas).
- ``--list`` shows every reassignment in progress: replicas, adding and removing.

Output follows the Kafka tool. A usage error, a bad file or a refused partition prints what is
wrong and exits with status 1.
"""

from __future__ import annotations

import argparse
import json
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
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestTopicsPartitions,
    AlterPartitionReassignmentsResponse,
)

TopicPartition = tuple[str, int]


class ReassignError(CliError):
    pass


def add_reassign_partitions_parser(sub: Any) -> None:
    parser = add_tool_parser(
        sub,
        "reassign-partitions",
        "move partition replicas between brokers (kafka-reassign-partitions.sh)",
        "Start, verify, cancel and list partition reassignments.",
    )
    parser.add_argument(
        "--reassignment-json-file",
        help='{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}',
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--execute", action="store_true", help="start the reassignment")
    action.add_argument("--verify", action="store_true", help="report its progress")
    action.add_argument("--cancel", action="store_true", help="cancel it")
    action.add_argument("--list", action="store_true", help="list reassignments in progress")
    action.add_argument(
        "--generate", action="store_true", help="propose moving topics onto --broker-list"
    )
    parser.add_argument(
        "--topics-to-move-json-file", help='with --generate: {"topics":[{"topic":"t"}],"version":1}'
    )
    parser.add_argument("--broker-list", help="with --generate: the brokers to use, e.g. 1,2,3")
    parser.add_argument(
        "--preserve-throttles",
        action="store_true",
        help="with --verify: do not clear the reassignment throttles when it is done",
    )
    parser.add_argument(
        "--additional",
        action="store_true",
        help="with --execute: start even if some partitions are being reassigned",
    )
    parser.set_defaults(run=run_reassign_partitions)


def parse_reassignment(text: str, source: str) -> dict[TopicPartition, list[int]]:
    """Kafka's reassignment JSON -> target replicas per partition, in file order."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReassignError(f"{source} is not valid JSON: {exc}") from None
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise ReassignError(f'{source}: expected {{"version": 1, "partitions": [...]}}')
    if not entries:
        raise ReassignError("Partition reassignment list cannot be empty")
    targets: dict[TopicPartition, list[int]] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ReassignError(f"{source}: each partition must be a JSON object")
        topic, partition, replicas = (
            entry.get("topic"),
            entry.get("partition"),
            entry.get("replicas"),
        )
        if not isinstance(topic, str) or not isinstance(partition, int):
            raise ReassignError(f"{source}: each partition needs a topic and a partition number")
        if not isinstance(replicas, list) or not all(isinstance(r, int) for r in replicas):
            raise ReassignError(f"{source}: {topic}-{partition} needs a list of broker ids")
        if len(set(replicas)) != len(replicas):
            raise ReassignError(
                f"Partition replica lists may not contain duplicate entries: {topic}-{partition} "
                f"contains {','.join(map(str, replicas))}"
            )
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None and (
            not isinstance(log_dirs, list)
            or len(log_dirs) != len(replicas)
            or any(d != "any" for d in log_dirs)
        ):
            raise ReassignError(
                f'{topic}-{partition}: log_dirs must list "any" once per replica '
                "(moving replicas between log directories is not supported)"
            )
        key = (topic, partition)
        if key in targets:
            raise ReassignError(
                f"Partition reassignment contained duplicate topic partitions: {topic}-{partition}"
            )
        targets[key] = list(replicas)
    return targets


def _error(code: int, message: str | None) -> str:
    name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
    return f"{name}: {message}" if message else name


def _by_topic(partitions: list[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return grouped


def current_replicas(
    conn: KafkaConnection, partitions: list[TopicPartition]
) -> dict[TopicPartition, list[int]]:
    """Replica lists from Metadata; a missing topic or partition is an error, as in Kafka."""
    topics = sorted({t for t, _ in partitions})
    metadata = conn.request(
        "Metadata",
        {
            "topics": [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    found: dict[TopicPartition, list[int]] = {}
    for topic in metadata["topics"]:
        if topic["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise ReassignError(f"Topic {topic['name']} not found")
        for p in topic["partitions"]:
            found[(topic["name"], p["partition_index"])] = list(p["replica_nodes"])
    for topic_name, partition in partitions:
        if (topic_name, partition) not in found:
            raise ReassignError(f"Unable to find partition: {topic_name}-{partition}")
    return found


def ongoing(
    conn: KafkaConnection, partitions: list[TopicPartition] | None
) -> dict[TopicPartition, dict[str, list[int]]]:
    response = conn.request(
        "ListPartitionReassignments",
        {
            "timeout_ms": 30000,
            "topics": (
                None
                if partitions is None
                else [
                    {"name": t, "partition_indexes": ps} for t, ps in _by_topic(partitions).items()
                ]
            ),
        },
    )
    if response["error_code"]:
        raise ReassignError(_error(response["error_code"], response.get("error_message")))
    return {
        (topic["name"], p["partition_index"]): {
            "replicas": list(p["replicas"]),
            "adding": list(p["adding_replicas"]),
            "removing": list(p["removing_replicas"]),
        }
        for topic in response["topics"]
        for p in topic["partitions"]
    }


def alter(conn: KafkaConnection, targets: dict[TopicPartition, list[int] | None]) -> list[str]:
    """Send AlterPartitionReassignments; the ``t-p: reason`` of every refused partition."""
    grouped: dict[str, list[AlterPartitionReassignmentsRequestTopicsPartitions]] = {}
    for (topic, partition), replicas in targets.items():
        grouped.setdefault(topic, []).append({"partition_index": partition, "replicas": replicas})
    request: AlterPartitionReassignmentsRequest = {
        "timeout_ms": 30000,
        "allow_replication_factor_change": True,  # the declared default
        "topics": [{"name": t, "partitions": ps} for t, ps in grouped.items()],
    }
    answer = conn.request("AlterPartitionReassignments", request)
    response = cast("AlterPartitionReassignmentsResponse", answer)
    if response["error_code"]:
        raise ReassignError(_error(response["error_code"], response.get("error_message")))
    return [
        f"{topic['name']}-{p['partition_index']}: {_error(p['error_code'], p.get('error_message'))}"
        for topic in response["responses"]
        for p in topic["partitions"]
        if p["error_code"]
    ]


def assignment_json(assignment: dict[TopicPartition, list[int]]) -> str:
    partitions = [
        {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
        for (t, p), r in sorted(assignment.items())
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def _names(partitions: list[TopicPartition]) -> str:
    return ",".join(f"{t}-{p}" for t, p in partitions)


def execute(
    conn: KafkaConnection, targets: dict[TopicPartition, list[int]], additional: bool
) -> None:
    partitions = list(targets)
    current = current_replicas(conn, partitions)
    if not additional and ongoing(conn, None):
        raise ReassignError(
            "Cannot execute because there is an existing partition assignment. Use --additional "
            "to override this and create a new partition assignment in addition to the "
            "existing one."
        )
    print("Current partition replica assignment\n")
    print(assignment_json({tp: current[tp] for tp in partitions}))
    print("\nSave this to use as the --reassignment-json-file option during rollback")
    refused = alter(conn, dict(targets))
    if refused:
        raise ReassignError("Error reassigning partition(s):\n" + "\n".join(refused))
    # ReassignPartitionsCommand: "reassignment" for one partition, "reassignments" for more.
    plural = "" if len(partitions) == 1 else "s"
    print(f"Successfully started partition reassignment{plural} for {_names(sorted(partitions))}")


_TOPIC_THROTTLES = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)


def clear_throttles(conn: KafkaConnection, targets: dict[TopicPartition, list[int]]) -> None:
    """ReassignPartitionsCommand.clearAllThrottles once nothing is moving: the two lines it
    prints, and the topic-level throttle configs deleted (IncrementalAlterConfigs DELETE).
    This service has no broker-level throttle rates, so there is nothing to delete there."""
    brokers = {b["node_id"] for b in conn.request("Metadata", {"topics": []})["brokers"]}
    brokers.update(b for replicas in targets.values() for b in replicas)
    print(
        f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} "
        + ",".join(map(str, sorted(brokers)))
    )
    topics = sorted({topic for topic, _ in targets})
    print(
        f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} "
        + ",".join(topics)
    )
    response = conn.request(
        "IncrementalAlterConfigs",
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": topic,
                    "configs": [
                        {"name": key, "config_operation": 1, "value": None}
                        for key in _TOPIC_THROTTLES
                    ],
                }
                for topic in topics
            ],
            "validate_only": False,
        },
    )
    for result in response["responses"]:
        if result["error_code"]:
            raise ReassignError(_error(result["error_code"], result.get("error_message")))


def verify(
    conn: KafkaConnection, targets: dict[TopicPartition, list[int]], preserve_throttles: bool
) -> None:
    partitions = sorted(targets)
    in_progress = ongoing(conn, partitions)
    current = current_replicas(conn, partitions)
    print("Status of partition reassignment:")
    for topic, partition in partitions:
        name = f"{topic}-{partition}"
        if (topic, partition) in in_progress:
            print(f"Reassignment of partition {name} is still in progress.")
        elif current[(topic, partition)] == targets[(topic, partition)]:
            print(f"Reassignment of partition {name} is completed.")
        else:
            have = ",".join(map(str, current[(topic, partition)]))
            want = ",".join(map(str, targets[(topic, partition)]))
            print(
                f"There is no active reassignment of partition {name}, but replica set is "
                f"{have} rather than {want}."
            )
    if not in_progress and not preserve_throttles:
        clear_throttles(conn, targets)


def cancel(conn: KafkaConnection, targets: dict[TopicPartition, list[int]]) -> None:
    partitions = list(targets)
    refused = alter(conn, {tp: None for tp in partitions})
    if refused:
        raise ReassignError("Error cancelling partition reassignment(s):\n" + "\n".join(refused))
    plural = "" if len(partitions) == 1 else "s"
    print(
        f"Successfully cancelled partition reassignment{plural} for: {_names(sorted(partitions))}"
    )


def list_reassignments(conn: KafkaConnection) -> None:
    in_progress = ongoing(conn, None)
    if not in_progress:
        print("No partition reassignments found.")
        return
    print("Current partition reassignments:")
    for (topic, partition), state in sorted(in_progress.items()):
        print(
            f"{topic}-{partition}: replicas: {','.join(map(str, state['replicas']))}. "
            f"adding: {','.join(map(str, state['adding']))}. "
            f"removing: {','.join(map(str, state['removing']))}."
        )


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise ReassignError(f"Cannot read {path}: {exc.strerror or exc}") from None


def _run_generate(args: argparse.Namespace) -> int:
    from sparklog.cli.reassign_generate import generate, parse_broker_list, parse_topics_to_move

    if not args.topics_to_move_json_file or not args.broker_list:
        raise ReassignError("--generate needs --topics-to-move-json-file and --broker-list")
    text = _read(args.topics_to_move_json_file)
    topics = parse_topics_to_move(text, args.topics_to_move_json_file)
    brokers = parse_broker_list(args.broker_list)
    with open_admin(args) as admin:
        generate(admin.conn, topics, brokers)
    return 0


def run_reassign_partitions(args: argparse.Namespace) -> int:
    def body() -> int:
        if not (args.execute or args.verify or args.cancel or args.list or args.generate):
            raise ReassignError(
                "Command must include exactly one action: --execute, --verify, --cancel, "
                "--list, --generate"
            )
        if args.generate:
            return _run_generate(args)
        if args.additional and not args.execute:
            raise ReassignError("--additional is only valid with --execute")
        targets: dict[TopicPartition, list[int]] = {}
        if not args.list:
            if not args.reassignment_json_file:
                raise ReassignError("Missing required argument --reassignment-json-file")
            text = _read(args.reassignment_json_file)
            targets = parse_reassignment(text, args.reassignment_json_file)
        with open_admin(args) as admin:
            conn = admin.conn
            if args.execute:
                execute(conn, targets, args.additional)
            elif args.verify:
                verify(conn, targets, args.preserve_throttles)
            elif args.cancel:
                cancel(conn, targets)
            else:
                list_reassignments(conn)
        return 0

    return run_admin_tool(args, body)
