"""``consumer-groups --reset-offsets`` and ``--delete-offsets`` (Kafka's ConsumerGroupCommand).

Reset rules, as in Kafka:
- only an inactive group (Empty, or no group yet) is reset; an active one is refused with the
  group's state;
- ``--topic T`` means every partition of T, ``--topic T:0,2`` those; ``--all-topics`` every
  partition the group has committed;
- the target is clamped into [log start, log end] with a warning (``--to-offset``,
  ``--shift-by``); ``--to-datetime`` takes the first offset whose timestamp is at or after it
  (the log end if there is none);
- without ``--execute`` nothing is committed (``--dry-run``, the default, with Kafka's warning
  when neither is given); ``--execute`` commits with OffsetCommit as an admin (generation -1,
  no member), which a consumer resuming later reads as its starting point.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from sparklog.cli.admin_client import (
    EARLIEST,
    LATEST,
    AdminClient,
    CliError,
    TopicPartition,
    kafka_error,
)
from sparklog.client.groups import committed_offsets, describe_group
from sparklog.protocol.errors import ErrorCode

_NO_ACTION_WARNING = (
    "WARN: No action will be performed as the --execute option is missing. In a future major "
    "release, the default behavior of this command will be to prompt the user before "
    "executing the reset rather than doing a dry run. You should add the --dry-run option "
    "explicitly if you are scripting this command and want to keep the current default "
    "behavior without prompting."
)


def parse_datetime_ms(text: str) -> int:
    """Kafka's --to-datetime formats: ``YYYY-MM-DDTHH:mm:SS[.sss][Z|+hh:mm]`` (UTC if none)."""
    value = text.strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise CliError(
            f"Error parsing timestamp {text!r}: use YYYY-MM-DDTHH:mm:SS.sss, optionally with Z "
            "or an offset such as +01:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _partitions(
    admin: AdminClient, args: argparse.Namespace, committed: dict[TopicPartition, int]
) -> list[TopicPartition]:
    if args.all_topics:
        return sorted(committed)
    if not args.topic:
        raise CliError("Option [reset-offsets] takes one of these options: [all-topics], [topic]")
    chosen: list[TopicPartition] = []
    for spec in args.topic:
        name, _, listed = spec.partition(":")
        if listed:
            try:
                chosen += [(name, int(p)) for p in listed.split(",") if p.strip()]
            except ValueError:
                raise CliError(f"--topic {spec!r}: partitions must be numbers (T:0,1)") from None
            continue
        layout = admin.topic_partitions([name])
        if name not in layout:
            raise CliError(f"Topic '{name}' does not exist")
        chosen += [(name, p["partition_index"]) for p in layout[name]]
    return sorted(set(chosen))


def _clamp(tp: TopicPartition, wanted: int, bounds: dict[TopicPartition, tuple[int, int]]) -> int:
    low, high = bounds[tp]
    if wanted > high:
        print(
            f"WARN: New offset ({wanted}) is higher than latest offset for topic partition "
            f"{tp[0]}-{tp[1]}. Value will be set to {high}",
            file=sys.stderr,
        )
        return high
    if wanted < low:
        print(
            f"WARN: New offset ({wanted}) is lower than earliest offset for topic partition "
            f"{tp[0]}-{tp[1]}. Value will be set to {low}",
            file=sys.stderr,
        )
        return low
    return wanted


def _offsets(admin: AdminClient, tps: list[TopicPartition], spec: int) -> dict[TopicPartition, int]:
    found = admin.list_offsets(tps, spec)
    out = {}
    for tp in tps:
        offset, error = found.get(tp, (-1, int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)))
        if error:
            raise CliError(f"listing offsets of {tp[0]}-{tp[1]}: {kafka_error(error)}")
        out[tp] = offset
    return out


def _targets(
    admin: AdminClient,
    args: argparse.Namespace,
    tps: list[TopicPartition],
    committed: dict[TopicPartition, int],
) -> dict[TopicPartition, int]:
    earliest = _offsets(admin, tps, EARLIEST)
    latest = _offsets(admin, tps, LATEST)
    bounds = {tp: (earliest[tp], latest[tp]) for tp in tps}
    if args.to_earliest:
        return earliest
    if args.to_latest:
        return latest
    if args.to_current:
        return {tp: committed.get(tp, latest[tp]) for tp in tps}
    if args.to_offset is not None:
        return {tp: _clamp(tp, args.to_offset, bounds) for tp in tps}
    if args.shift_by is not None:
        missing = [tp for tp in tps if tp not in committed]
        if missing:
            tp = missing[0]
            raise CliError(f"Expected a valid current offset for topic partition: {tp[0]}-{tp[1]}")
        return {tp: _clamp(tp, committed[tp] + args.shift_by, bounds) for tp in tps}
    if args.to_datetime is not None:
        at = parse_datetime_ms(args.to_datetime)
        found = admin.list_offsets(tps, at)
        return {
            tp: found[tp][0] if found[tp][1] == 0 and found[tp][0] >= 0 else latest[tp]
            for tp in tps
        }
    raise CliError(
        "Option [reset-offsets] takes one of these options: [to-datetime], [by-duration], "
        "[to-earliest], [to-latest], [shift-by], [from-file], [to-current], [to-offset]"
    )


def commit_offsets(admin: AdminClient, group_id: str, targets: dict[TopicPartition, int]) -> None:
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, p), offset in sorted(targets.items()):
        by_topic.setdefault(topic, []).append((p, offset))
    response = admin.coordinator(group_id).request(
        "OffsetCommit",
        {
            "group_id": group_id,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": p,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                        for p, offset in entries
                    ],
                }
                for topic, entries in by_topic.items()
            ],
        },
        version=8,
    )
    for topic in response["topics"]:
        for p in topic["partitions"]:
            if p["error_code"]:
                raise CliError(
                    f"committing {topic['name']}-{p['partition_index']} for group {group_id}: "
                    f"{kafka_error(p['error_code'])}"
                )


def reset_offsets(admin: AdminClient, args: argparse.Namespace) -> int:
    if not args.group:
        raise CliError("Option [reset-offsets] takes one of these options: [all-groups], [group]")
    if not args.execute and not args.dry_run:
        print(_NO_ACTION_WARNING, file=sys.stderr)
    status = 0
    planned: dict[str, dict[TopicPartition, int]] = {}
    for group_id in args.group:
        group = describe_group(admin, group_id)
        if group is not None and group.state not in ("Empty", "Dead"):
            print(
                f"Error: Assignments can only be reset if the group '{group_id}' is inactive, "
                f"but the current state is {group.state}.",
                file=sys.stderr,
            )
            status = 1
            continue
        committed = committed_offsets(admin, group_id) if group is not None else {}
        tps = _partitions(admin, args, committed)
        targets = _targets(admin, args, tps, committed) if tps else {}
        if args.execute and targets:
            commit_offsets(admin, group_id, targets)
        planned[group_id] = targets
    _print_plan(planned)
    return status


def _print_plan(planned: dict[str, dict[TopicPartition, int]]) -> None:
    """Kafka 4.x's printOffsetsToReset: one table for every group, GROUP and TOPIC at least
    15 wide, NEW-OFFSET unpadded; a blank line before it."""
    rows = [(g, t, p, o) for g, targets in planned.items() for (t, p), o in sorted(targets.items())]
    group_w = max([15, *(len(g) for g in planned)])
    topic_w = max([15, *(len(r[1]) for r in rows)])
    lines = (
        [f"{'GROUP':<{group_w}} {'TOPIC':<{topic_w}} {'PARTITION':<10} NEW-OFFSET"]
        if planned
        else []
    )
    lines += [f"{g:<{group_w}} {t:<{topic_w}} {p:<10} {o}" for g, t, p, o in rows]
    print("\n" + "\n".join(lines))


def delete_offsets(admin: AdminClient, args: argparse.Namespace) -> int:
    if len(args.group) != 1 or not args.topic:
        raise CliError("--delete-offsets needs one --group and at least one --topic")
    group_id = args.group[0]
    committed = committed_offsets(admin, group_id)
    wanted: dict[str, list[int]] = {}
    for spec in args.topic:
        name, _, listed = spec.partition(":")
        indexes = (
            [int(p) for p in listed.split(",") if p.strip()]
            if listed
            else sorted({p for t, p in committed if t == name})
            or [p["partition_index"] for p in admin.topic_partitions([name]).get(name, [])]
        )
        wanted.setdefault(name, []).extend(indexes)
    response = admin.coordinator(group_id).request(
        "OffsetDelete",
        {
            "group_id": group_id,
            "topics": [
                {"name": t, "partitions": [{"partition_index": p} for p in ps]}
                for t, ps in wanted.items()
            ],
        },
    )
    top = response["error_code"]
    if top == ErrorCode.GROUP_ID_NOT_FOUND:
        raise CliError(f"Consumer group '{group_id}' does not exist.")
    if top == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC:
        raise CliError(
            f"Deleting offsets of a consumer group '{group_id}' forbidden due to group "
            "subscribed to topics."
        )
    if top:
        raise CliError(f"Encounter some unknown error: {kafka_error(top)}")
    failed = any(p["error_code"] for t in response["topics"] for p in t["partitions"])
    if failed:
        print(f"Request failed for deleting offsets from group {group_id}.")
    else:
        print(f"Request succeed for deleting offsets from group {group_id}.")
    row = "{:<30} {:<15} {:<15}"
    lines = [row.format("TOPIC", "PARTITION", "STATUS")]
    for topic in response["topics"]:
        for p in topic["partitions"]:
            status = "Error: " + kafka_error(p["error_code"]) if p["error_code"] else "Successful"
            lines.append(row.format(topic["name"], p["partition_index"], status))
    print("\n" + "\n".join(lines))
    return 1 if failed else 0
