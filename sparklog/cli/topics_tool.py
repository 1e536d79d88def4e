"""``sparklog topics``: kafka-topics.sh's create / list / describe / delete over the wire.

Output follows kafka-topics.sh so scripts written for Kafka keep working; a failed command prints
``Error while executing topic command : <reason>`` and exits with status 1.
"""

from __future__ import annotations

import argparse
import base64
import sys
from typing import Any

from sparklog.client.connection import KafkaConnection
from sparklog.protocol.errors import ErrorCode


class TopicCommandError(Exception):
    pass


def _check(code: int, message: str | None, what: str) -> None:
    if code != 0:
        name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
        raise TopicCommandError(message or f"{what} failed: {name}")


def _configs(items: list[str]) -> list[dict[str, Any]]:
    configs = []
    for item in items:
        if "=" not in item:
            raise TopicCommandError(f"--config expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        configs.append({"name": key.strip(), "value": value.strip()})
    return configs


def _create(conn: KafkaConnection, args: argparse.Namespace) -> None:
    response = conn.request(
        "CreateTopics",
        {
            "topics": [
                {
                    "name": args.topic,
                    "num_partitions": args.partitions,
                    "replication_factor": args.replication_factor,
                    "assignments": [],
                    "configs": _configs(args.config),
                }
            ],
            "timeout_ms": 30000,
            "validate_only": False,
        },
    )
    result = response["topics"][0]
    _check(result["error_code"], result.get("error_message"), f"Creating topic {args.topic}")
    print(f"Created topic {args.topic}.")


def _metadata(conn: KafkaConnection, topics: list[str] | None) -> Any:
    return conn.request(
        "Metadata",
        {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )


def _list(conn: KafkaConnection) -> None:
    for topic in sorted(_metadata(conn, None)["topics"], key=lambda t: t["name"]):
        print(topic["name"])


def _describe(conn: KafkaConnection, args: argparse.Namespace) -> None:
    metadata = _metadata(conn, [args.topic] if args.topic else None)
    for topic in sorted(metadata["topics"], key=lambda t: t["name"] or ""):
        _check(topic["error_code"], None, f"Describing topic {topic['name']}")
        partitions = sorted(topic["partitions"], key=lambda p: p["partition_index"])
        rf = len(partitions[0]["replica_nodes"]) if partitions else 0
        topic_id = base64.urlsafe_b64encode(bytes(topic["topic_id"])).decode().rstrip("=")
        print(
            f"Topic: {topic['name']}\tTopicId: {topic_id}\tPartitionCount: {len(partitions)}"
            f"\tReplicationFactor: {rf}"
        )
        for p in partitions:
            print(
                f"\tTopic: {topic['name']}\tPartition: {p['partition_index']}"
                f"\tLeader: {p['leader_id']}"
                f"\tReplicas: {','.join(map(str, p['replica_nodes']))}"
                f"\tIsr: {','.join(map(str, p['isr_nodes']))}"
            )


def _delete(conn: KafkaConnection, args: argparse.Namespace) -> None:
    response = conn.request(
        "DeleteTopics",
        {"topic_names": [args.topic], "topics": [{"name": args.topic}], "timeout_ms": 30000},
    )
    result = response["responses"][0]
    _check(result["error_code"], result.get("error_message"), f"Deleting topic {args.topic}")


def run_topics(args: argparse.Namespace) -> int:
    try:
        if (args.create or args.delete) and not args.topic:
            raise TopicCommandError("--topic is required with --create and --delete")
        with KafkaConnection.connect(args.bootstrap_server) as conn:
            if args.create:
                _create(conn, args)
            elif args.list:
                _list(conn)
            elif args.describe:
                _describe(conn, args)
            else:
                _delete(conn, args)
        return 0
    except TopicCommandError as exc:
        print(f"Error while executing topic command : {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(
            f"Error while executing topic command : cannot reach {args.bootstrap_server} "
            f"({exc.strerror or exc}); is a node listening there?",
            file=sys.stderr,
        )
        return 1
