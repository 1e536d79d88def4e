"""``sparklog acls``: kafka-acls.sh over the wire (CreateAcls, DescribeAcls, DeleteAcls).

Options and output follow Kafka 4.x's ``AclCommand``:

- ``--add`` needs ``--allow-principal`` or ``--deny-principal`` (repeatable), takes
  ``--operation`` (repeatable, default All), ``--allow-host`` / ``--deny-host`` (default ``*``)
  and one or more resources: ``--topic``, ``--group``, ``--transactional-id`` (repeatable,
  ``*`` for all) or ``--cluster``. ``--resource-pattern-type`` is LITERAL (default) or PREFIXED.
  ``--producer`` (WRITE, DESCRIBE, CREATE on topics; WRITE, DESCRIBE on transactional ids;
  IDEMPOTENT_WRITE on the cluster with ``--idempotent``) and ``--consumer`` (READ, DESCRIBE on
  topics, READ on groups) are Kafka's shortcuts. It prints ``Adding ACLs for resource
  `ResourcePattern(...)`:`` and the entries.
- ``--remove`` deletes the given entries, or every ACL of the resource filter when no principal
  is given, after a ``(y/n)`` question unless ``--force``.
- ``--list`` prints ``Current ACLs for resource `...`:`` per resource pattern, for the given
  resources (pattern type ANY by default: also MATCH, LITERAL, PREFIXED) or all; ``--principal``
  keeps one principal's entries.

Without an authorizer on the brokers every command fails with SECURITY_DISABLED, as Kafka.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sparklog.cli.admin_client import (
    CliError,
    add_tool_parser,
    kafka_error,
    open_admin,
    run_tool,
)
from sparklog.security.acls import (
    CLUSTER_NAME,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

NEWLINE = "\n"
Pattern = tuple[ResourceType, str, PatternType]
Entry = tuple[str, str, AclOperation, AclPermissionType]
_VERSION = 3


def _operation(text: str) -> AclOperation:
    wanted = text.replace("_", "").replace("-", "").upper()
    for op in AclOperation:
        if op.name.replace("_", "") == wanted and op not in (
            AclOperation.UNKNOWN,
            AclOperation.ANY,
        ):
            return op
    raise CliError(
        f"Invalid operation {text!r}; valid ones: "
        + ", ".join(
            _pascal(o.name)
            for o in AclOperation
            if o not in (AclOperation.UNKNOWN, AclOperation.ANY)
        )
    )


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def add_acls_parser(sub: Any) -> None:
    parser = add_tool_parser(
        sub,
        "acls",
        "add, remove or list ACLs (kafka-acls.sh)",
        "Manage the ACLs of a cluster whose brokers run the StandardAuthorizer.",
        [("--add", "add ACLs"), ("--remove", "remove ACLs"), ("--list", "list ACLs")],
    )
    parser.add_argument("--topic", action="append", default=[], help="a topic ('*': all)")
    parser.add_argument("--group", action="append", default=[], help="a consumer group")
    parser.add_argument(
        "--transactional-id", action="append", default=[], help="a transactional id"
    )
    parser.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument(
        "--resource-pattern-type",
        type=str.upper,
        choices=("ANY", "MATCH", "LITERAL", "PREFIXED"),
        help="LITERAL (default for --add/--remove), PREFIXED; --list also ANY (its default), MATCH",
    )
    parser.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME")
    parser.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST")
    parser.add_argument("--deny-host", action="append", default=[], metavar="HOST")
    parser.add_argument(
        "--operation",
        action="append",
        default=[],
        help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
        "AlterConfigs, IdempotentWrite, All (default All); repeatable",
    )
    parser.add_argument("--principal", action="append", default=[], help="--list: only these")
    parser.add_argument("--producer", action="store_true", help="the ACLs a producer needs")
    parser.add_argument("--consumer", action="store_true", help="the ACLs a consumer needs")
    parser.add_argument("--idempotent", action="store_true", help="with --producer")
    parser.add_argument("--force", action="store_true", help="--remove without asking")
    parser.set_defaults(run=run_acls)


def pattern_text(pattern: tuple[ResourceType, str | None, PatternType]) -> str:
    rtype, name, ptype = pattern
    shown = "<any>" if name is None else name
    return f"ResourcePattern(resourceType={rtype.name}, name={shown}, patternType={ptype.name})"


def entry_text(entry: Entry) -> str:
    principal, host, op, permission = entry
    return (
        f"(principal={principal}, host={host}, operation={op.name}, "
        f"permissionType={permission.name})"
    )


def _entries(args: argparse.Namespace, operations: list[AclOperation]) -> list[Entry]:
    entries: list[Entry] = []
    for principals, hosts, permission in (
        (args.allow_principal, args.allow_host or ["*"], AclPermissionType.ALLOW),
        (args.deny_principal, args.deny_host or ["*"], AclPermissionType.DENY),
    ):
        for principal in principals:
            if ":" not in principal:
                raise CliError(f"Could not parse principal {principal!r}: expected Type:name")
            for host in hosts:
                for op in operations:
                    entries.append((principal, host, op, permission))
    return entries


def _resources(args: argparse.Namespace, ptype: PatternType) -> list[tuple[ResourceType, str]]:
    resources = [(ResourceType.TOPIC, t) for t in args.topic]
    resources += [(ResourceType.GROUP, g) for g in args.group]
    resources += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        resources.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return resources


def _resource_entries(
    args: argparse.Namespace, ptype: PatternType
) -> dict[tuple[ResourceType, str | None, PatternType], list[Entry]]:
    """Entries per resource pattern for --add / --remove (Kafka's getResourceFilterToAcls)."""
    out: dict[tuple[ResourceType, str | None, PatternType], list[Entry]] = {}

    def put(rtype: ResourceType, name: str, ops: list[AclOperation]) -> None:
        out.setdefault((rtype, name, ptype), []).extend(_entries(args, ops))

    if not args.producer and not args.consumer:
        ops = [_operation(o) for o in args.operation] or [AclOperation.ALL]
        for rtype, name in _resources(args, ptype):
            put(rtype, name, ops)
    if args.producer:
        for topic in args.topic:
            put(
                ResourceType.TOPIC,
                topic,
                [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE],
            )
        for txn in args.transactional_id:
            put(ResourceType.TRANSACTIONAL_ID, txn, [AclOperation.WRITE, AclOperation.DESCRIBE])
        if args.idempotent:
            put(ResourceType.CLUSTER, CLUSTER_NAME, [AclOperation.IDEMPOTENT_WRITE])
    if args.consumer:
        if not args.topic or not args.group:
            raise CliError("--consumer needs --topic and --group")
        for topic in args.topic:
            put(ResourceType.TOPIC, topic, [AclOperation.READ, AclOperation.DESCRIBE])
        for group in args.group:
            put(ResourceType.GROUP, group, [AclOperation.READ])
    if not out:
        raise CliError("You must specify one of: --topic, --cluster, --group, --transactional-id")
    return out


def _check(code: int, message: str | None) -> None:
    if code:
        raise CliError(kafka_error(code, message))


def _describe(
    admin: Any, pattern: tuple[ResourceType, str | None, PatternType]
) -> dict[tuple[ResourceType, str, PatternType], list[Entry]]:
    rtype, name, ptype = pattern
    response = admin.request(
        "DescribeAcls",
        {
            "resource_type_filter": int(rtype),
            "resource_name_filter": name,
            "pattern_type_filter": int(ptype),
            "principal_filter": None,
            "host_filter": None,
            "operation": int(AclOperation.ANY),
            "permission_type": int(AclPermissionType.ANY),
        },
        _VERSION,
    )
    _check(response["error_code"], response.get("error_message"))
    found: dict[tuple[ResourceType, str, PatternType], list[Entry]] = {}
    for resource in response["resources"]:
        key = (
            ResourceType(resource["resource_type"]),
            resource["resource_name"],
            PatternType(resource["pattern_type"]),
        )
        for acl in resource["acls"]:
            found.setdefault(key, []).append(
                (
                    acl["principal"],
                    acl["host"],
                    AclOperation(acl["operation"]),
                    AclPermissionType(acl["permission_type"]),
                )
            )
    return found


def _print_block(title: str, entries: list[Entry]) -> None:
    lines = NEWLINE.join("\t" + entry_text(e) for e in entries)
    print(f"{title}: {NEWLINE} {lines} {NEWLINE}")


def _add(admin: Any, args: argparse.Namespace) -> int:
    ptype = PatternType[args.resource_pattern_type or "LITERAL"]
    if ptype not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise CliError(
            f"A '--resource-pattern-type' value of '{ptype.name}' is not valid when adding acls."
        )
    for pattern, entries in _resource_entries(args, ptype).items():
        if not entries:
            raise CliError(
                "You must specify one of: --allow-principal, --deny-principal when trying to "
                "add ACLs."
            )
        _print_block(f"Adding ACLs for resource `{pattern_text(pattern)}`", entries)
        creations = [
            {
                "resource_type": int(pattern[0]),
                "resource_name": pattern[1],
                "resource_pattern_type": int(ptype),
                "principal": principal,
                "host": host,
                "operation": int(op),
                "permission_type": int(permission),
            }
            for principal, host, op, permission in entries
        ]
        response = admin.request("CreateAcls", {"creations": creations}, _VERSION)
        for result in response["results"]:
            _check(result["error_code"], result.get("error_message"))
    return 0


def _confirm(args: argparse.Namespace, question: str) -> bool:
    if args.force:
        return True
    print(question)
    return sys.stdin.readline().strip().lower() == "y"


def _remove(admin: Any, args: argparse.Namespace) -> int:
    ptype = PatternType[args.resource_pattern_type or "LITERAL"]
    for pattern, entries in _resource_entries(args, ptype).items():
        shown = pattern_text(pattern)
        if entries:
            listed = NEWLINE.join("\t" + entry_text(e) for e in entries)
            question = (
                f"Are you sure you want to remove ACLs: {NEWLINE} {listed} {NEWLINE} from "
                f"resource filter `{shown}`? (y/n)"
            )
        else:
            question = (
                f"Are you sure you want to delete all ACLs for resource filter `{shown}`? (y/n)"
            )
        if not _confirm(args, question):
            continue
        base = {
            "resource_type_filter": int(pattern[0]),
            "resource_name_filter": pattern[1],
            "pattern_type_filter": int(ptype),
        }
        if entries:
            filters = [
                {
                    **base,
                    "principal_filter": principal,
                    "host_filter": host,
                    "operation": int(op),
                    "permission_type": int(permission),
                }
                for principal, host, op, permission in entries
            ]
        else:
            filters = [
                {
                    **base,
                    "principal_filter": None,
                    "host_filter": None,
                    "operation": int(AclOperation.ANY),
                    "permission_type": int(AclPermissionType.ANY),
                }
            ]
        response = admin.request("DeleteAcls", {"filters": filters}, _VERSION)
        for result in response["filter_results"]:
            _check(result["error_code"], result.get("error_message"))
    return 0


def _list(admin: Any, args: argparse.Namespace) -> int:
    ptype = PatternType[args.resource_pattern_type or "ANY"]
    resources = _resources(args, ptype)
    patterns: list[tuple[ResourceType, str | None, PatternType]] = [
        (rtype, name, ptype) for rtype, name in resources
    ] or [(ResourceType.ANY, None, PatternType.ANY)]
    found: dict[tuple[ResourceType, str, PatternType], list[Entry]] = {}
    for pattern in patterns:
        for key, entries in _describe(admin, pattern).items():
            merged = found.setdefault(key, [])
            merged.extend(e for e in entries if e not in merged)
    principals = args.principal
    if not principals:
        for key, entries in sorted(found.items()):
            _print_block(f"Current ACLs for resource `{pattern_text(key)}`", entries)
        return 0
    for principal in principals:
        print(f"ACLs for principal `{principal}`")
        for key, entries in sorted(found.items()):
            mine = [e for e in entries if e[0] == principal]
            if mine:
                _print_block(f"Current ACLs for resource `{pattern_text(key)}`", mine)
    return 0


def run_acls(args: argparse.Namespace) -> int:
    def body() -> int:
        with open_admin(args) as admin:
            if args.add:
                return _add(admin, args)
            if args.remove:
                return _remove(admin, args)
            return _list(admin, args)

    return run_tool("Error while executing ACL command: ", body)
