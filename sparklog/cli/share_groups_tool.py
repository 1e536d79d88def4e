"""``sparklog share-groups``: kafka-share-groups.sh over the wire (KIP-932 share groups).

    sparklog share-groups --bootstrap-server B --list [--state [S,...]]
    sparklog share-groups --bootstrap-server B --describe (--group G | --all-groups)
        [--offsets | --members [--verbose] | --state]
    sparklog share-groups --bootstrap-server B --reset-offsets --group G
        (--topic T[:P,P] | --all-topics) --to-earliest|--to-latest|--to-offset N|
        --to-datetime YYYY-MM-DDTHH:mm:SS.sss [--dry-run | --execute]
    sparklog share-groups --bootstrap-server B --delete --group G [--group G2]
    sparklog share-groups --bootstrap-server B --delete-offsets --group G --topic T

Groups come from ListGroups (16, type ``share``) on every broker; members from
ShareGroupDescribe (77) and start offsets from DescribeShareGroupOffsets (90) at the group's
coordinator; LAG is the share-partition lag that DescribeShareGroupOffsets v1 answers (KIP-1226:
the partition's high watermark minus the start offset minus the records past it whose delivery
is complete), ``-`` when the coordinator has none, as Kafka 4.2's kafka-share-groups.sh prints
it. Resetting (AlterShareGroupOffsets,
91) and deleting offsets (DeleteShareGroupOffsets, 92) need the group to be empty.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, cast

from sparklog.cli.admin_client import (
    EARLIEST,
    LATEST,
    AdminClient,
    CliError,
    TopicPartition,
    kafka_error,
)
from sparklog.cli.consumer_groups_reset import parse_datetime_ms
from sparklog.cli.consumer_groups_tool import _print_table
from sparklog.cli.group_tool_args import (
    GroupToolHelp,
    add_group_tool_args,
    report_deletions,
    run_group_tool,
)
from sparklog.client.groups import list_groups, node_id_of, state_name
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    DescribeShareGroupOffsetsRequestGroupsTopics,
    DescribeShareGroupOffsetsResponse,
    ListGroupsResponseGroups,
    ShareGroupDescribeResponse,
    ShareGroupDescribeResponseGroups,
)


def add_share_groups_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "share-groups",
        help="list, describe, reset offsets of and delete share groups (kafka-share-groups.sh)",
        description="List, describe (members, start offsets, lag, state), reset offsets of, "
        "and delete KIP-932 share groups.",
    )
    add_group_tool_args(
        parser,
        GroupToolHelp(
            listing="list the share groups",
            reset="reset start offsets",
            delete_offsets="delete --group's state for --topic",
            all_groups="every share group",
            offsets="describe: start offsets and lag",
            verbose="describe --members: epochs",
            topic="reset/delete: T or T:P,P",
            all_topics="reset: every topic with state",
            execute="reset the offsets",
        ),
    )
    parser.set_defaults(run=run_share_groups)


def _share_groups(
    admin: AdminClient, states: list[str] | None = None
) -> list[ListGroupsResponseGroups]:
    listed = list_groups(admin, states, ["share"])
    return sorted(
        (g for g in listed if str(g.get("group_type", "")).lower() == "share"),
        key=lambda g: g["group_id"],
    )


def _list(admin: AdminClient, args: argparse.Namespace) -> None:
    states = [s.strip() for s in (args.state or "").split(",") if s.strip()]
    groups = _share_groups(admin, states)
    if args.state is None:
        for group in groups:
            print(group["group_id"])
        return
    width = max([15, *(len(g["group_id"]) for g in groups)]) + 10
    print(f"{'GROUP':<{width}} STATE")
    for g in groups:
        print(f"{g['group_id']:<{width}} {state_name(g.get('group_state', ''))}")


def _describe_group(admin: AdminClient, group_id: str) -> ShareGroupDescribeResponseGroups | None:
    answer = admin.coordinator(group_id).request(
        "ShareGroupDescribe", {"group_ids": [group_id], "include_authorized_operations": False}
    )
    group = cast("ShareGroupDescribeResponse", answer)["groups"][0]
    if group["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND:
        return None
    if group["error_code"]:
        raise CliError(f"describing {group_id}: {kafka_error(group['error_code'])}")
    return group


def start_offsets(
    admin: AdminClient, group_id: str, topics: list[str] | None = None
) -> dict[TopicPartition, tuple[int, int, int]]:
    """(start offset, leader epoch, lag) per share-partition the group has state for; the lag
    is -1 when the coordinator answered none (DescribeShareGroupOffsets v0 has no lag)."""
    wanted: list[DescribeShareGroupOffsetsRequestGroupsTopics] | None = None
    if topics is not None:
        layout = admin.topic_partitions(topics)
        wanted = [
            {"topic_name": t, "partitions": [p["partition_index"] for p in layout.get(t, [])]}
            for t in topics
        ]
    answer = admin.coordinator(group_id).request(
        "DescribeShareGroupOffsets", {"groups": [{"group_id": group_id, "topics": wanted}]}
    )
    group = cast("DescribeShareGroupOffsetsResponse", answer)["groups"][0]
    if group["error_code"]:
        raise CliError(f"describing offsets of {group_id}: {kafka_error(group['error_code'])}")
    return {
        (t["topic_name"], p["partition_index"]): (
            p["start_offset"],
            p["leader_epoch"],
            p.get("lag", -1),
        )
        for t in group["topics"]
        for p in t["partitions"]
        if p["error_code"] == 0
    }


def _describe_offsets(admin: AdminClient, group_id: str) -> None:
    offsets = start_offsets(admin, group_id)
    rows = []
    for (topic, index), (start, epoch, lag) in sorted(offsets.items()):
        rows.append(
            [
                group_id,
                topic,
                str(index),
                "-" if epoch < 0 else str(epoch),
                "-" if start < 0 else str(start),
                "-" if lag < 0 else str(lag),
            ]
        )
    header = ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"]
    _print_table(header, rows, {})


def _describe_members(group: ShareGroupDescribeResponseGroups, verbose: bool) -> None:
    header = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    header += ["MEMBER-EPOCH"] if verbose else []
    header += ["ASSIGNMENT"]
    rows = []
    for m in sorted(group["members"], key=lambda m: m["member_id"]):
        parts = [
            f"{t['topic_name']}:{','.join(str(p) for p in t['partitions'])}"
            for t in m["assignment"]["topic_partitions"]
        ]
        count = sum(len(t["partitions"]) for t in m["assignment"]["topic_partitions"])
        row = [group["group_id"], m["member_id"], m["client_host"] or "-", m["client_id"] or "-"]
        row += [str(count)] + ([str(m["member_epoch"])] if verbose else [])
        row += [";".join(parts) or "-"]
        rows.append(row)
    _print_table(header, rows, {})


def _groups(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    if args.all_groups:
        return [g["group_id"] for g in _share_groups(admin)]
    if not args.group:
        raise CliError("Option [describe] takes one of these options: [all-groups], [group]")
    return list(args.group)


def _describe(admin: AdminClient, args: argparse.Namespace) -> int:
    status = 0
    for group_id in _groups(admin, args):
        group = _describe_group(admin, group_id)
        if group is None:
            print(f"\nError: Share group '{group_id}' does not exist.")
            status = 1
            continue
        if group["group_state"] == "Empty":
            print(f"\nShare group '{group_id}' has no active members.", file=sys.stderr)
        if args.members:
            if group["members"]:
                _describe_members(group, args.verbose)
        elif args.state is not None:
            conn = admin.coordinator(group_id)
            coordinator = f"{conn.host}:{conn.port}  ({node_id_of(admin, conn)})"
            row = [group_id, coordinator, group["group_state"], str(len(group["members"]))]
            _print_table(["GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS"], [row], {})
        else:
            _describe_offsets(admin, group_id)
    return status


def _reset_targets(
    admin: AdminClient, args: argparse.Namespace, group_id: str
) -> dict[TopicPartition, int]:
    if args.all_topics:
        partitions = list(start_offsets(admin, group_id))
    elif args.topic:
        partitions = []
        for topic_spec in args.topic:
            name, _, indexes = topic_spec.partition(":")
            layout = admin.topic_partitions([name]).get(name)
            if layout is None:
                raise CliError(f"Topic {name} does not exist.")
            chosen = [int(i) for i in indexes.split(",")] if indexes else None
            partitions += [
                (name, p["partition_index"])
                for p in layout
                if chosen is None or p["partition_index"] in chosen
            ]
    else:
        raise CliError("Option [reset-offsets] takes one of these options: [all-topics], [topic]")
    if args.to_earliest:
        spec: Any = EARLIEST
    elif args.to_latest:
        spec = LATEST
    elif args.to_datetime is not None:
        spec = parse_datetime_ms(args.to_datetime)
    elif args.to_offset is not None:
        low = admin.list_offsets(partitions, EARLIEST)
        high = admin.list_offsets(partitions, LATEST)
        return {tp: min(max(args.to_offset, low[tp][0]), high[tp][0]) for tp in sorted(partitions)}
    else:
        raise CliError(
            "Option [reset-offsets] needs one of [to-earliest], [to-latest], [to-offset], "
            "[to-datetime]"
        )
    found = admin.list_offsets(partitions, spec)
    latest = admin.list_offsets(partitions, LATEST) if spec not in (EARLIEST, LATEST) else {}
    return {
        tp: found[tp][0] if found[tp][0] >= 0 else latest.get(tp, (0, 0))[0]
        for tp in sorted(partitions)
    }


def _reset(admin: AdminClient, args: argparse.Namespace) -> int:
    if len(args.group) != 1:
        raise CliError("Option [reset-offsets] takes exactly one [group]")
    group_id = args.group[0]
    group = _describe_group(admin, group_id)
    if group is not None and group["members"]:
        raise CliError(
            f"Share group '{group_id}' is not empty: its members must leave before its offsets "
            "are reset."
        )
    targets = _reset_targets(admin, args, group_id)
    if args.execute:
        by_topic: dict[str, list[dict[str, int]]] = {}
        for (topic, index), offset in targets.items():
            by_topic.setdefault(topic, []).append(
                {"partition_index": index, "start_offset": offset}
            )
        response = admin.coordinator(group_id).request(
            "AlterShareGroupOffsets",
            {
                "group_id": group_id,
                "topics": [{"topic_name": t, "partitions": p} for t, p in by_topic.items()],
            },
        )
        if response["error_code"]:
            raise CliError(kafka_error(response["error_code"], response.get("error_message")))
        for topic in response["responses"]:
            for p in topic["partitions"]:
                if p["error_code"]:
                    raise CliError(
                        f"resetting {topic['topic_name']}-{p['partition_index']}: "
                        f"{kafka_error(p['error_code'])}"
                    )
    rows = [[group_id, t, str(i), str(o)] for (t, i), o in targets.items()]
    _print_table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], rows, {})
    return 0


def _delete(admin: AdminClient, args: argparse.Namespace) -> int:
    groups = _groups(admin, args)
    failures: dict[str, str] = {}
    for group_id in groups:
        response = admin.coordinator(group_id).request("DeleteGroups", {"groups_names": [group_id]})
        for result in response["results"]:
            if result["error_code"] == ErrorCode.NON_EMPTY_GROUP:
                failures[group_id] = "The group is not empty."
            elif result["error_code"]:
                failures[group_id] = kafka_error(result["error_code"])
    return report_deletions(groups, failures, "share", "Share group")


def _delete_offsets(admin: AdminClient, args: argparse.Namespace) -> int:
    if len(args.group) != 1 or not args.topic:
        raise CliError("Option [delete-offsets] takes exactly one [group] and [topic]s")
    group_id = args.group[0]
    response = admin.coordinator(group_id).request(
        "DeleteShareGroupOffsets",
        {"group_id": group_id, "topics": [{"topic_name": t.partition(":")[0]} for t in args.topic]},
    )
    if response["error_code"]:
        raise CliError(kafka_error(response["error_code"], response.get("error_message")))
    rows = [
        [t["topic_name"], "Successful" if not t["error_code"] else kafka_error(t["error_code"])]
        for t in response["responses"]
    ]
    _print_table(["TOPIC", "STATUS"], rows, {})
    return 1 if any(t["error_code"] for t in response["responses"]) else 0


def run_share_groups(args: argparse.Namespace) -> int:
    return run_group_tool(args, _list, _describe, _delete, _reset, _delete_offsets)
