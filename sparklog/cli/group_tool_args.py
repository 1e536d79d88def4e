"""What ``sparklog consumer-groups`` and ``sparklog share-groups`` share: the options of
kafka-consumer-groups.sh / kafka-share-groups.sh that both tools take, and the report of a
``--delete``.

Contract: :func:`run_group_tool` runs the one action given; :func:`add_group_tool_args` adds
the action (exactly one of ``--list``, ``--describe``, ``--reset-offsets``, ``--delete``,
``--delete-offsets``), the group selection,
the describe views, ``--topic``/``--all-topics`` and the reset specs both tools have
(``--to-earliest``, ``--to-latest``, ``--to-offset``, ``--to-datetime``; the returned group
takes a tool's own), then ``--dry-run``/``--execute``. Help texts differ per tool
(:class:`GroupToolHelp`); option names and meanings are Kafka's.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparklog.cli.admin_client import AdminClient, add_connection_args, open_admin, run_tool

__all__ = ["GroupToolHelp", "add_group_tool_args", "report_deletions", "run_group_tool"]

Action = Callable[[AdminClient, argparse.Namespace], int]


@dataclass(frozen=True)
class GroupToolHelp:
    """The help texts that differ between the two group tools."""

    listing: str
    reset: str
    delete_offsets: str
    all_groups: str
    offsets: str
    verbose: str
    topic: str
    all_topics: str
    execute: str


def add_group_tool_args(parser: Any, texts: GroupToolHelp) -> Any:
    """Add the shared options to ``parser``; returns the reset-spec group (mutually
    exclusive) for the tool's own specs."""
    add_connection_args(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help=texts.listing)
    action.add_argument("--describe", action="store_true", help="describe --group")
    action.add_argument("--reset-offsets", action="store_true", help=texts.reset)
    action.add_argument("--delete", action="store_true", help="delete --group (empty groups)")
    action.add_argument("--delete-offsets", action="store_true", help=texts.delete_offsets)
    parser.add_argument("--group", action="append", default=[], help="the group (repeatable)")
    parser.add_argument("--all-groups", action="store_true", help=texts.all_groups)
    parser.add_argument("--offsets", action="store_true", help=texts.offsets)
    parser.add_argument("--members", action="store_true", help="describe: the members")
    parser.add_argument(
        "--state",
        nargs="?",
        const="",
        default=None,
        help="describe: the group's state; list: filter by states (comma-separated)",
    )
    parser.add_argument("--verbose", action="store_true", help=texts.verbose)
    parser.add_argument("--topic", action="append", default=[], help=texts.topic)
    parser.add_argument("--all-topics", action="store_true", help=texts.all_topics)
    spec = parser.add_mutually_exclusive_group()
    spec.add_argument("--to-earliest", action="store_true", help="reset to the log start")
    spec.add_argument("--to-latest", action="store_true", help="reset to the log end")
    spec.add_argument("--to-offset", type=int, help="reset to this offset (clamped)")
    spec.add_argument(
        "--to-datetime", help="reset to the first offset at or after YYYY-MM-DDTHH:mm:SS.sss[Z]"
    )
    run = parser.add_mutually_exclusive_group()
    run.add_argument("--dry-run", action="store_true", help="only show the new offsets (default)")
    run.add_argument("--execute", action="store_true", help=texts.execute)
    return spec


def report_deletions(groups: list[str], failures: dict[str, str], kind: str, failed_as: str) -> int:
    """Print kafka-*-groups.sh's outcome of ``--delete`` (``kind``: "consumer" or "share";
    ``failed_as``: how a failed group is named); the exit status."""
    succeeded = [g for g in groups if g not in failures]
    if succeeded:
        names = ", ".join(f"'{g}'" for g in succeeded)
        print(f"Deletion of requested {kind} groups ({names}) was successful.")
    if failures:
        print(f"Deletion of some {kind} groups failed:")
        for group_id, reason in failures.items():
            print(f"* {failed_as} '{group_id}' could not be deleted due to: {reason}")
        return 1
    return 0


def run_group_tool(
    args: argparse.Namespace,
    listing: Callable[[AdminClient, argparse.Namespace], None],
    describe: Action,
    delete: Action,
    reset: Action,
    delete_offsets: Action,
) -> int:
    """Run the action ``args`` names against the cluster; the exit status."""

    def body() -> int:
        with open_admin(args) as admin:
            if args.list:
                listing(admin, args)
                return 0
            if args.describe:
                return describe(admin, args)
            if args.delete:
                return delete(admin, args)
            return (reset if args.reset_offsets else delete_offsets)(admin, args)

    return run_tool("Error: ", body)
