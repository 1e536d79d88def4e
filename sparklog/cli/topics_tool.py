"""``sparklog topics``: kafka-topics.sh's create / list / describe / alter / delete.

Output follows kafka-topics.sh so scripts written for Kafka keep working; a failed command prints
``Error while executing topic command : <reason>`` and exits with status 1. As in Kafka,
``--topic`` is a regular expression for list, describe, alter and delete; ``--if-exists`` and
``--if-not-exists`` make a missing or existing topic no error. A create of 1,000 partitions or
more prints its progress on stderr (stdout keeps Kafka's lines).
"""

from __future__ import annotations

import argparse
import base64
import re
import sys
import threading
import time
from typing import Any, cast

from sparklog.cli.admin_client import AdminClient, CliError, add_tool_parser, open_admin
from sparklog.protocol.errors import ErrorCode, ProtocolError
from sparklog.protocol.message_types import (
    CreateTopicsRequest,
    CreateTopicsRequestTopicsConfigs,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponseNextCursor,
    DescribeTopicPartitionsResponseTopicsPartitions,
    ListPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponseTopicsPartitions,
    MetadataResponse,
    MetadataResponseTopics,
)


class TopicCommandError(Exception):
    pass


def _check(code: int, message: str | None, what: str) -> None:
    if code != 0:
        name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
        raise TopicCommandError(message or f"{what} failed: {name}")


def _configs(items: list[str]) -> list[CreateTopicsRequestTopicsConfigs]:
    configs: list[CreateTopicsRequestTopicsConfigs] = []
    for item in items:
        if "=" not in item:
            raise TopicCommandError(f"--config expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        configs.append({"name": key.strip(), "value": value.strip()})
    return configs


_PROGRESS_FROM_PARTITIONS = 1000
_TICK_S = 2.0


class _Ticker:
    """Prints ``what ... (Ns)`` to stderr every few seconds while a blocking call runs."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        started = time.monotonic()
        while not self._done.wait(_TICK_S):
            print(f"{self._what} ({time.monotonic() - started:.0f}s)", file=sys.stderr, flush=True)

    def __enter__(self) -> _Ticker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


def _create(admin: AdminClient, args: argparse.Namespace) -> None:
    if args.if_not_exists and args.topic in admin.topic_partitions([args.topic]):
        return
    large = args.partitions >= _PROGRESS_FROM_PARTITIONS
    if large:
        print(
            f"Creating topic {args.topic} with {args.partitions} partitions...",
            file=sys.stderr,
            flush=True,
        )
    body: CreateTopicsRequest = {
        "topics": [
            {
                "name": args.topic,
                "num_partitions": args.partitions,
                "replication_factor": args.replication_factor,
                "assignments": [],
                "configs": _configs(args.config),
            }
        ],
        "timeout_ms": 120000 if large else 30000,
        "validate_only": False,
    }
    if large:
        with _Ticker("... waiting for the controller to create the partitions"):
            response = admin.request("CreateTopics", body)
    else:
        response = admin.request("CreateTopics", body)
    result = response["topics"][0]
    if result["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
        return
    _check(result["error_code"], result.get("error_message"), f"Creating topic {args.topic}")
    if large:
        _wait_for_leaders(admin, args.topic, args.partitions)
    print(f"Created topic {args.topic}.")


def _wait_for_leaders(admin: AdminClient, topic: str, count: int) -> None:
    """Progress of a large create until every partition has a leader (bounded: 120 s)."""
    deadline = time.monotonic() + 120.0
    reported = -1
    while True:
        partitions = admin.topic_partitions([topic]).get(topic, [])
        led = sum(1 for p in partitions if p["leader_id"] >= 0)
        if led != reported:
            print(f"{led}/{count} partitions have a leader", file=sys.stderr, flush=True)
            reported = led
        if led >= count or time.monotonic() > deadline:
            return
        time.sleep(1.0)


def _name(topic: MetadataResponseTopics) -> str:
    """A listed topic's name (null only for a topic asked for by id, which this tool never
    does)."""
    return topic["name"] or ""


def _matching(admin: AdminClient, args: argparse.Namespace) -> list[MetadataResponseTopics]:
    """Metadata of the topics ``--topic`` names (a regular expression, as in Kafka's
    TopicFilter.IncludeList), all topics without it; internal ones dropped on request."""
    metadata = cast("MetadataResponse", admin.metadata(None))
    topics = [t for t in metadata["topics"] if t["error_code"] == 0]
    if args.topic:
        try:
            pattern = re.compile(args.topic)
        except re.error as exc:
            raise TopicCommandError(f"--topic {args.topic!r} is not a valid regex: {exc}") from None
        topics = [t for t in topics if pattern.fullmatch(_name(t))]
    if args.exclude_internal:
        topics = [t for t in topics if not t.get("is_internal")]
    if args.topic and not topics and not args.if_exists and not args.list:
        raise TopicCommandError(f"Topic '{args.topic}' does not exist as expected")
    return sorted(topics, key=_name)


def _list(admin: AdminClient, args: argparse.Namespace) -> None:
    for topic in _matching(admin, args):
        print(_name(topic))


_DEFAULT_CONFIG = 5  # DescribeConfigs config_source: ConfigEntry.isDefault() in Kafka's admin


def _ids(nodes: list[int] | None) -> str:
    return ",".join(map(str, nodes or []))


def _topic_configs(admin: AdminClient, names: list[str]) -> dict[str, tuple[str, int]]:
    """Topic -> (``k=v,...`` of its configs that are not defaults, TopicCommand's Configs:;
    its min.insync.replicas, for the --under-min-isr / --at-min-isr filters)."""
    response = admin.request(
        "DescribeConfigs",
        {
            "resources": [
                {"resource_type": 2, "resource_name": name, "configuration_keys": None}
                for name in names
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    out: dict[str, tuple[str, int]] = {}
    for result in response["results"]:
        _check(result["error_code"], result.get("error_message"), "Describing configs")
        configs = sorted(result["configs"], key=lambda c: c["name"])
        overrides = ",".join(
            f"{c['name']}={c['value']}"
            for c in configs
            if c.get("config_source", -1) != _DEFAULT_CONFIG
        )
        min_isr = next((c["value"] for c in configs if c["name"] == "min.insync.replicas"), "1")
        out[result["resource_name"]] = (overrides, int(min_isr or 1))
    return out


_Partition = DescribeTopicPartitionsResponseTopicsPartitions


def _partitions_with_elr(admin: AdminClient, names: list[str]) -> dict[str, list[_Partition]]:
    """DescribeTopicPartitions (paged by its cursor) as Kafka's admin uses it: the ELR fields."""
    out: dict[str, list[_Partition]] = {name: [] for name in names}
    cursor: DescribeTopicPartitionsResponseNextCursor | None = None
    while True:
        answer = admin.request(
            "DescribeTopicPartitions",
            {
                "topics": [{"name": name} for name in names],
                "response_partition_limit": 2000,
                "cursor": cursor,
            },
        )
        response = cast("DescribeTopicPartitionsResponse", answer)
        for topic in response["topics"]:
            if topic["error_code"] == 0 and topic["name"] in out:
                out[topic["name"]].extend(topic["partitions"])
        cursor = response.get("next_cursor")
        if cursor is None:
            return out


def _reassignments(
    admin: AdminClient,
) -> dict[tuple[str, int], ListPartitionReassignmentsResponseTopicsPartitions]:
    answer = admin.request("ListPartitionReassignments", {"timeout_ms": 30000, "topics": None})
    response = cast("ListPartitionReassignmentsResponse", answer)
    if response["error_code"]:
        return {}  # TopicCommand, too, describes without them when it cannot list them
    return {
        (topic["name"], p["partition_index"]): p
        for topic in response["topics"]
        for p in topic["partitions"]
    }


def _describe(admin: AdminClient, args: argparse.Namespace) -> None:
    """TopicCommand.TopicDescription / PartitionDescription lines: a topic line (TopicId,
    PartitionCount, ReplicationFactor, Configs of non-defaults), then one line a partition
    (Leader ``none`` when leaderless, Adding/Removing Replicas during a reassignment, Elr and
    LastKnownElr from DescribeTopicPartitions, ``N/A`` from a broker without that API).

    TopicCommand.DescribeOptions: --under-replicated-partitions, --under-min-isr-partitions,
    --at-min-isr-partitions and --unavailable-partitions print only the partitions they select
    (and no topic line); --topics-with-overrides prints only the topic lines of topics with a
    non-default config."""
    topics = _matching(admin, args)
    if not topics:
        return
    names = [_name(topic) for topic in topics]
    configs = _topic_configs(admin, names)
    live = {b["node_id"] for b in admin.metadata([])["brokers"]}
    filters = (
        args.under_replicated_partitions,
        args.under_min_isr_partitions,
        args.at_min_isr_partitions,
        args.unavailable_partitions,
    )
    describe_configs = not any(filters)
    describe_partitions = not args.topics_with_overrides
    with_elr = (
        _partitions_with_elr(admin, names)
        if admin.conn.versions.get(75) is not None
        # Metadata's partitions: the same fields but the ELR ones (read as absent: N/A)
        else {_name(t): cast("list[_Partition]", t["partitions"]) for t in topics}
    )
    moving = _reassignments(admin)
    for topic in topics:
        name = _name(topic)
        partitions = sorted(with_elr[name], key=lambda p: p["partition_index"])
        first = moving.get((name, partitions[0]["partition_index"])) if partitions else None
        rf = len(partitions[0]["replica_nodes"]) if partitions else 0
        if first is not None:
            rf -= len(first["adding_replicas"])
        topic_id = base64.urlsafe_b64encode(bytes(topic["topic_id"])).decode().rstrip("=")
        overrides, min_isr = configs.get(name, ("", 1))
        if describe_configs and (not args.topics_with_overrides or overrides):
            print(
                f"Topic: {name}\tTopicId: {topic_id}\tPartitionCount: {len(partitions)}"
                f"\tReplicationFactor: {rf}\tConfigs: {overrides}"
            )
        for p in partitions if describe_partitions else ():
            move = moving.get((name, p["partition_index"]))
            if any(filters) and not _selected(p, move, min_isr, live, filters):
                continue
            leader = p["leader_id"] if p["leader_id"] >= 0 else "none"
            line = (
                f"\tTopic: {name}\tPartition: {p['partition_index']}\tLeader: {leader}"
                f"\tReplicas: {_ids(p['replica_nodes'])}\tIsr: {_ids(p['isr_nodes'])}"
            )
            if move is not None:
                line += (
                    f"\tAdding Replicas: {_ids(move['adding_replicas'])}"
                    f"\tRemoving Replicas: {_ids(move['removing_replicas'])}"
                )
            for label, value in (
                ("Elr", p.get("eligible_leader_replicas")),
                ("LastKnownElr", p.get("last_known_elr")),
            ):
                line += f"\t{label}: {'N/A' if value is None else _ids(value)}"
            print(line)


def _selected(
    partition: _Partition,
    move: ListPartitionReassignmentsResponseTopicsPartitions | None,
    min_isr: int,
    live: set[int],
    filters: tuple[bool, bool, bool, bool],
) -> bool:
    """TopicCommand.DescribeOptions.shouldPrintPartition for the requested filters."""
    under_replicated, under_min_isr, at_min_isr, unavailable = filters
    isr = len(partition["isr_nodes"])
    rf = len(partition["replica_nodes"]) - (len(move["adding_replicas"]) if move else 0)
    leader = int(partition["leader_id"])
    return (
        (under_replicated and rf - isr > 0)
        or (under_min_isr and (leader < 0 or isr < min_isr))
        or (at_min_isr and isr == min_isr)
        or (unavailable and (leader < 0 or leader not in live))
    )


def _delete(admin: AdminClient, args: argparse.Namespace) -> None:
    for topic in _matching(admin, args):
        name = _name(topic)
        response = admin.request(
            "DeleteTopics",
            {"topic_names": [name], "topics": [{"name": name}], "timeout_ms": 30000},
        )
        result = response["responses"][0]
        _check(result["error_code"], result.get("error_message"), f"Deleting topic {name}")


def _alter(admin: AdminClient, args: argparse.Namespace) -> None:
    if args.partitions < 0:
        raise TopicCommandError("--alter needs --partitions N (the new partition count)")
    if args.config:
        raise TopicCommandError(
            "--alter changes the partition count only; change configs with "
            "`sparklog configs --alter --entity-type topics --entity-name T --add-config k=v`"
        )
    for topic in _matching(admin, args):
        response = admin.request(
            "CreatePartitions",
            {
                "topics": [{"name": _name(topic), "count": args.partitions, "assignments": None}],
                "timeout_ms": 30000,
                "validate_only": False,
            },
        )
        result = response["results"][0]
        _check(result["error_code"], result.get("error_message"), f"Altering {topic['name']}")


def add_topics_parser(sub: Any) -> None:
    topics = add_tool_parser(
        sub,
        "topics",
        "create, list, describe, alter and delete topics (kafka-topics.sh)",
        "Create, list, describe, alter (partition count) and delete topics.",
        [
            ("--create", "create --topic"),
            ("--list", "list topics (--topic: a regex)"),
            ("--describe", "describe topics"),
            ("--alter", "raise --topic's --partitions"),
            ("--delete", "delete --topic"),
        ],
    )
    topics.add_argument(
        "--topic", help="the topic; with --list/--describe/--alter/--delete a regular expression"
    )
    topics.add_argument("--partitions", type=int, default=-1, help="partition count")
    topics.add_argument("--replication-factor", type=int, default=-1, help="replicas each")
    topics.add_argument(
        "--config", action="append", metavar="KEY=VALUE", default=[], help="a topic config"
    )
    topics.add_argument(
        "--if-exists",
        action="store_true",
        help="with --alter/--describe/--delete: no error if it is absent",
    )
    topics.add_argument(
        "--if-not-exists", action="store_true", help="with --create: no error if it exists"
    )
    topics.add_argument("--exclude-internal", action="store_true", help="leave internal topics out")
    for flag, what in (
        ("--under-replicated-partitions", "partitions whose ISR is smaller than their replicas"),
        ("--under-min-isr-partitions", "partitions whose ISR is below min.insync.replicas"),
        ("--at-min-isr-partitions", "partitions whose ISR is exactly min.insync.replicas"),
        ("--unavailable-partitions", "partitions whose leader is none or not a live broker"),
        ("--topics-with-overrides", "only the topic lines of topics with non-default configs"),
    ):
        topics.add_argument(flag, action="store_true", help=f"with --describe: {what}")
    topics.set_defaults(run=run_topics)


def run_topics(args: argparse.Namespace) -> int:
    try:
        if (args.create or args.delete or args.alter) and not args.topic:
            raise TopicCommandError("--topic is required with --create, --alter and --delete")
        with open_admin(args) as admin:
            if args.create:
                _create(admin, args)
            elif args.list:
                _list(admin, args)
            elif args.describe:
                _describe(admin, args)
            elif args.alter:
                _alter(admin, args)
            else:
                _delete(admin, args)
        return 0
    except (TopicCommandError, CliError) as exc:
        print(f"Error while executing topic command : {exc}", file=sys.stderr)
        return 1
    except (ConnectionError, ProtocolError) as exc:
        print(
            f"Error while executing topic command : {args.bootstrap_server} closed the "
            f"connection or answered badly ({exc})",
            file=sys.stderr,
        )
        return 1
    except OSError as exc:
        print(
            f"Error while executing topic command : cannot reach {args.bootstrap_server} "
            f"({exc.strerror or exc}); is a node listening there?",
            file=sys.stderr,
        )
        return 1
