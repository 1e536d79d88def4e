"""``sparklog consumer-groups``: kafka-consumer-groups.sh over the wire.

    sparklog consumer-groups --bootstrap-server B --list [--state [S,...]] [--type [T,...]]
    sparklog consumer-groups --bootstrap-server B --describe (--group G | --all-groups)
        [--offsets | --members [--verbose] | --state]
    sparklog consumer-groups --bootstrap-server B --reset-offsets --group G
        (--topic T[:P,P] | --all-topics) --to-earliest|--to-latest|--to-current|--to-offset N|
        --shift-by N|--to-datetime YYYY-MM-DDTHH:mm:SS.sss [--dry-run | --execute]
    sparklog consumer-groups --bootstrap-server B --delete --group G [--group G2]
    sparklog consumer-groups --bootstrap-server B --delete-offsets --group G --topic T[:P,P]

Classic groups are described with DescribeGroups (15), KIP-848 consumer groups with
ConsumerGroupDescribe (69): which one is the group's type from ListGroups (16, v5). Committed
offsets come from OffsetFetch (9) at the coordinator, log-end offsets from ListOffsets (2) at
each leader; LAG is their difference. Columns and messages follow Kafka 4.x's
ConsumerGroupCommand (blank line, then ``%-Ns`` columns at least 15 wide; ``-`` for a missing
value). Resetting and deleting offsets live in :mod:`sparklog.cli.consumer_groups_reset`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from sparklog.cli.admin_client import (
    LATEST,
    AdminClient,
    CliError,
    TopicPartition,
    kafka_error,
)
from sparklog.cli.consumer_groups_reset import delete_offsets, reset_offsets
from sparklog.cli.group_tool_args import (
    GroupToolHelp,
    add_group_tool_args,
    report_deletions,
    run_group_tool,
)
from sparklog.client.connection import KafkaConnection
from sparklog.client.groups import (
    GroupDescription,
    Member,
    committed_offsets,
    describe_group,
    list_groups,
    state_name,
)
from sparklog.protocol.errors import ErrorCode


def add_consumer_groups_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "consumer-groups",
        help="list, describe, reset offsets of and delete consumer groups "
        "(kafka-consumer-groups.sh)",
        description="List, describe (members, offsets, lag, state), reset offsets of, and "
        "delete consumer groups; classic and KIP-848 groups alike.",
    )
    spec = add_group_tool_args(
        parser,
        GroupToolHelp(
            listing="list the groups",
            reset="reset committed offsets",
            delete_offsets="delete --group's offsets of --topic",
            all_groups="every group",
            offsets="describe: offsets and lag",
            verbose="describe --members: assignments",
            topic="reset/delete-offsets: T or T:P,P",
            all_topics="reset: every committed topic",
            execute="commit the new offsets",
        ),
    )
    parser.add_argument(
        "--type", nargs="?", const="", default=None, help="list: filter by types (classic,consumer)"
    )
    spec.add_argument("--to-current", action="store_true", help="reset to the committed offset")
    spec.add_argument("--shift-by", type=int, help="move the committed offset by N (clamped)")
    parser.set_defaults(run=run_consumer_groups)


def _list(admin: AdminClient, args: argparse.Namespace) -> None:
    states = [s for s in (args.state or "").split(",") if s.strip()]
    types = [t for t in (args.type or "").split(",") if t.strip()]
    listed = list_groups(admin, [s.strip() for s in states], [t.strip() for t in types])
    groups = sorted(
        (g for g in listed if g["protocol_type"] in ("consumer", "")),
        key=lambda g: g["group_id"],
    )
    with_state, with_type = args.state is not None, args.type is not None
    if not with_state and not with_type:
        for group in groups:
            print(group["group_id"])
        return
    width = max([15, *(len(g["group_id"]) for g in groups)]) + 10
    columns = ["GROUP"] + (["TYPE"] if with_type else []) + (["STATE"] if with_state else [])
    rows = [
        [g["group_id"]]
        + ([g.get("group_type", "classic").capitalize()] if with_type else [])
        + ([state_name(g.get("group_state", ""))] if with_state else [])
        for g in groups
    ]
    for row in [columns, *rows]:
        print(f"{row[0]:<{width}}" + "".join(f" {cell:<20}" for cell in row[1:]))


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


def _print_table(header: Sequence[str], rows: list[list[str]], fixed: dict[int, int]) -> None:
    """Kafka's ``%-Ns`` columns: width max(15, longest) unless fixed; the last is unpadded."""
    widths = [
        fixed.get(i, max([15, len(header[i]), *(len(r[i]) for r in rows)]))
        for i in range(len(header))
    ]
    print()
    for row in [list(header), *rows]:
        cells = [f"{cell:<{widths[i]}}" for i, cell in enumerate(row[:-1])] + [row[-1]]
        print(" ".join(cells))


def _describe_offsets(admin: AdminClient, group: GroupDescription) -> None:
    committed = committed_offsets(admin, group.group_id)
    owner: dict[TopicPartition, Member] = {tp: m for m in group.members for tp in m.assignment}
    partitions = sorted(set(committed) | set(owner))
    ends = admin.list_offsets(partitions, LATEST) if partitions else {}
    rows = []
    for tp in partitions:
        current = committed.get(tp)
        end_offset, error = ends.get(tp, (-1, 0))
        end = end_offset if error == 0 and end_offset >= 0 else None
        lag = end - current if end is not None and current is not None else None
        member = owner.get(tp)
        rows.append(
            [
                group.group_id,
                tp[0],
                str(tp[1]),
                _cell(current),
                _cell(end),
                _cell(lag),
                member.member_id if member else "-",
                (member.host or "-") if member else "-",
                member.client_id if member else "-",
            ]
        )
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
              "CONSUMER-ID", "HOST", "CLIENT-ID"]  # fmt: skip
    _print_table(header, rows, {2: 10, 3: 15, 4: 15, 5: 15})


def _assignment_text(partitions: list[TopicPartition]) -> str:
    """Kafka's ``topic:0,1;other:2`` (topics sorted, partitions sorted), ``-`` for none."""
    by_topic: dict[str, list[int]] = {}
    for topic, p in partitions:
        by_topic.setdefault(topic, []).append(p)
    text = ";".join(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(by_topic.items()))
    return text or "-"


def _describe_members(group: GroupDescription, verbose: bool) -> None:
    """Kafka's printMembers: ``%-Ns`` columns with a trailing space after #PARTITIONS;
    GROUP-INSTANCE-ID only when a member has one; --verbose adds the epochs and the current
    and target assignments."""
    members = sorted(group.members, key=lambda m: m.member_id)
    with_instance = any(m.instance_id for m in members)

    def width(floor: int, values: list[str]) -> int:
        return max([floor, *(len(v) for v in values)])

    group_w = width(15, [group.group_id])
    id_w = width(15, [m.member_id for m in members])
    instance_w = width(17, [m.instance_id or "" for m in members])
    host_w = width(15, [m.host for m in members])
    client_w = width(15, [m.client_id for m in members])
    current_w = width(20, [_assignment_text(m.assignment) for m in members])
    target_w = width(20, [_assignment_text(m.target) for m in members])

    def line(cells: list[str], extra: list[str]) -> str:
        head = [f"{cells[0]:<{group_w}}", f"{cells[1]:<{id_w}}"]
        if with_instance:
            head.append(f"{cells[2]:<{instance_w}}")
        head += [f"{cells[3]:<{host_w}}", f"{cells[4]:<{client_w}}", f"{cells[5]:<15}"]
        text = " ".join(head) + " "
        if verbose:
            text += f"{extra[0]:<15} {extra[1]:<{current_w}} {extra[2]:<15} {extra[3]:<{target_w}}"
        return text

    print()
    header = ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    print(
        line(header, ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"])
    )
    for m in members:
        cells = [group.group_id, m.member_id, m.instance_id or "", m.host, m.client_id,
                 str(len(m.assignment))]  # fmt: skip
        extra = [_cell(m.epoch), _assignment_text(m.assignment), _cell(m.target_epoch),
                 _assignment_text(m.target)]  # fmt: skip
        print(line(cells, extra))


def _describe_state(group: GroupDescription) -> None:
    header = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    row = [group.group_id, group.coordinator, group.assignor or "-", group.state,
           str(len(group.members))]  # fmt: skip
    _print_table(header, [row], {1: max(25, len(group.coordinator)), 2: 20, 3: 20})


def _groups(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    if args.all_groups:
        return sorted(g["group_id"] for g in list_groups(admin))
    if not args.group:
        raise CliError("Option [describe] takes one of these options: [all-groups], [group]")
    return list(args.group)


def _describe(admin: AdminClient, args: argparse.Namespace) -> int:
    """Kafka's shouldPrintMemberState: a missing group is an ``Error:`` on stdout; the
    no-members and rebalancing notices go to stderr, so stdout holds only the tables."""
    status = 0
    for group_id in _groups(admin, args):
        group = describe_group(admin, group_id)
        if group is None or group.state == "Dead":
            print(f"\nError: Consumer group '{group_id}' does not exist.")
            status = 1
            continue
        if group.state == "Empty":
            print(f"\nConsumer group '{group_id}' has no active members.", file=sys.stderr)
        elif group.state != "Stable":
            print(f"\nWarning: Consumer group '{group_id}' is rebalancing.", file=sys.stderr)
        if args.members:
            if group.members:
                _describe_members(group, args.verbose)
        elif args.state is not None:
            _describe_state(group)
        else:
            _describe_offsets(admin, group)
    return status


def _delete(admin: AdminClient, args: argparse.Namespace) -> int:
    groups = _groups(admin, args)
    failures: dict[str, str] = {}
    by_coordinator: dict[int, tuple[KafkaConnection, list[str]]] = {}
    for group_id in groups:
        conn = admin.coordinator(group_id)
        by_coordinator.setdefault(id(conn), (conn, []))[1].append(group_id)
    for conn, ids in by_coordinator.values():
        response = conn.request("DeleteGroups", {"groups_names": ids})
        for result in response["results"]:
            if result["error_code"]:
                failures[result["group_id"]] = _delete_reason(result["error_code"])
    return report_deletions(groups, failures, "consumer", "Group")


def _delete_reason(code: int) -> str:
    if code == ErrorCode.NON_EMPTY_GROUP:
        return "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty."
    if code == ErrorCode.GROUP_ID_NOT_FOUND:
        return (
            "org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist."
        )
    return kafka_error(code)


def run_consumer_groups(args: argparse.Namespace) -> int:
    return run_group_tool(args, _list, _describe, _delete, reset_offsets, delete_offsets)
