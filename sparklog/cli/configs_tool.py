"""``sparklog configs``: kafka-configs.sh's --describe and --alter, incremental.

    sparklog configs --bootstrap-server B --describe --entity-type topics [--entity-name T] [--all]
    sparklog configs --bootstrap-server B --alter --topic T --add-config k=v,k2=[a,b] \\
        [--delete-config k3,k4]
    sparklog configs --bootstrap-server B --describe --broker 1 | --broker-defaults
    sparklog configs --bootstrap-server B --describe --entity-type groups --entity-name G

Describe is DescribeConfigs (32) with synonyms; alter is IncrementalAlterConfigs (44) with SET
(``--add-config``) and DELETE (``--delete-config``) operations, so keys not named are left as
they are. Output is Kafka's: ``Dynamic configs for topic t are:`` (``All configs`` with
``--all``) and ``  key=value sensitive=false synonyms={SOURCE:key=value, ...}`` lines;
``Completed updating config for topic t.`` after an alter. ``--add-config`` values holding
commas are written in brackets (``k=[a,b]``), as in Kafka. Client quotas (``--entity-type
users|clients|ips``, ``--user``/``--client``/``--ip`` and their ``-defaults``) are
:mod:`sparklog.cli.configs_quotas`; ACLs are ``sparklog acls``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sparklog.cli.admin_client import (
    AdminClient,
    CliError,
    add_connection_args,
    kafka_error,
    open_admin,
    run_tool,
)
from sparklog.cli.configs_quotas import (
    QUOTA_ENTITY_TYPES,
    add_quota_entity_args,
    alter_quotas,
    describe_quotas,
    quota_entity,
)
from sparklog.protocol.errors import ErrorCode

RESOURCE_TYPES = {"topics": 2, "brokers": 4, "broker-loggers": 8, "groups": 32}
_ENTITY_LABEL = {
    "topics": "topic",
    "brokers": "broker",
    "broker-loggers": "broker",
    "groups": "group",
}
# DescribeConfigs config_source -> Kafka's ConfigEntry.ConfigSource name.
SOURCE_NAMES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}
_SET, _DELETE = 0, 1


def add_configs_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "configs",
        help="describe and alter topic, broker and group configs (kafka-configs.sh)",
        description="Describe configs, or alter them incrementally (IncrementalAlterConfigs).",
    )
    add_connection_args(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="list configs of the entity")
    action.add_argument("--alter", action="store_true", help="add, change or delete configs")
    parser.add_argument(
        "--entity-type",
        choices=sorted({*RESOURCE_TYPES, *QUOTA_ENTITY_TYPES}),
        help="what to configure (users, clients, ips: client quotas)",
    )
    parser.add_argument("--entity-name", help="topic name, broker id or group id")
    parser.add_argument(
        "--entity-default", action="store_true", help="brokers: the cluster-wide default"
    )
    parser.add_argument("--topic", help="shorthand for --entity-type topics --entity-name T")
    parser.add_argument("--broker", help="shorthand for --entity-type brokers --entity-name N")
    parser.add_argument(
        "--broker-defaults", action="store_true", help="shorthand for brokers --entity-default"
    )
    parser.add_argument("--group", help="shorthand for --entity-type groups --entity-name G")
    add_quota_entity_args(parser)
    parser.add_argument(
        "--all", action="store_true", help="describe: every config, not only dynamic"
    )
    parser.add_argument(
        "--add-config", metavar="K=V,K2=[A,B]", help="configs to set (comma-separated)"
    )
    parser.add_argument("--delete-config", metavar="K,K2", help="configs to remove")
    parser.set_defaults(run=run_configs)


def _entity(args: argparse.Namespace) -> tuple[str, str | None]:
    """(entity type, name or None for 'every one'); "" is the brokers' default entity."""
    shorthands = [
        ("topics", args.topic),
        ("brokers", args.broker),
        ("brokers", "" if args.broker_defaults else None),
        ("groups", args.group),
    ]
    given = [(kind, name) for kind, name in shorthands if name is not None]
    if len(given) > 1 or (given and args.entity_type):
        raise CliError("give one entity: --entity-type with --entity-name, or one shorthand")
    if given:
        return given[0]
    if not args.entity_type:
        raise CliError("--entity-type (topics, brokers, groups) or --topic/--broker is required")
    if args.entity_default:
        if args.entity_type not in ("brokers",):
            raise CliError("--entity-default is only for --entity-type brokers")
        return args.entity_type, ""
    return args.entity_type, args.entity_name


def parse_add_config(text: str) -> dict[str, str]:
    """Kafka's ``k=v,k2=[a,b]``: commas split entries except inside brackets."""
    entries: list[str] = []
    depth, current = 0, ""
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            entries.append(current)
            current = ""
        else:
            current += char
    entries.append(current)
    configs = {}
    for entry in (e.strip() for e in entries):
        if not entry:
            continue
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            raise CliError(f"Invalid entity config: all configs to be added must be in the format "
                           f"\"key=val\" (got {entry!r})")  # fmt: skip
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        configs[key.strip()] = value
    return configs


def _names(admin: AdminClient, kind: str, name: str | None) -> list[str]:
    if name is not None:
        return [name]
    if kind == "topics":
        return sorted(admin.topic_partitions(None))
    if kind == "brokers":
        return [
            str(b["node_id"])
            for b in sorted(admin.metadata([])["brokers"], key=lambda b: b["node_id"])
        ]
    raise CliError(f"--describe of {kind} needs --entity-name")


def _title(kind: str, name: str, all_configs: bool) -> str:
    if kind == "brokers" and name == "":
        return "Default configs for brokers in the cluster are:"
    which = "All" if all_configs else "Dynamic"
    return f"{which} configs for {_ENTITY_LABEL[kind]} {name} are:"


def _shown(kind: str, name: str, source: int) -> bool:
    """Without --all Kafka shows what was set dynamically on this very entity."""
    if kind == "topics":
        return source == 1
    if kind == "brokers":
        return source == (3 if name == "" else 2)
    return source in (6, 8)


def _describe(admin: AdminClient, args: argparse.Namespace) -> None:
    quotas = quota_entity(args)
    if quotas is not None:
        describe_quotas(admin, quotas)
        return
    kind, name = _entity(args)
    for entity in _names(admin, kind, name):
        conn = admin.broker(int(entity)) if kind == "brokers" and entity else admin.conn
        response = conn.request(
            "DescribeConfigs",
            {
                "resources": [
                    {
                        "resource_type": RESOURCE_TYPES[kind],
                        "resource_name": entity,
                        "configuration_keys": None,
                    }
                ],
                "include_synonyms": True,
                "include_documentation": False,
            },
        )
        result = response["results"][0]
        if result["error_code"]:
            if kind == "groups" and result["error_code"] == ErrorCode.INVALID_REQUEST:
                raise CliError(
                    "this cluster does not serve group configs (DescribeConfigs for GROUP "
                    "resources) yet; topics and brokers are supported"
                )
            raise CliError(kafka_error(result["error_code"], result.get("error_message")))
        print(_title(kind, entity, args.all))
        for config in sorted(result["configs"], key=lambda c: c["name"]):
            if not args.all and not _shown(kind, entity, config.get("config_source", -1)):
                continue
            value = "null" if config["is_sensitive"] else config["value"]
            synonyms = ", ".join(
                f"{SOURCE_NAMES.get(s['source'], 'UNKNOWN')}:{s['name']}={s['value']}"
                for s in config.get("synonyms") or []
            )
            print(
                f"  {config['name']}={value} sensitive={str(config['is_sensitive']).lower()} "
                f"synonyms={{{synonyms}}}"
            )


def _alter(admin: AdminClient, args: argparse.Namespace) -> None:
    quotas = quota_entity(args)
    kind, name = ("", "") if quotas is not None else _entity(args)
    if name is None:
        raise CliError("--alter needs --entity-name (or --entity-default for brokers)")
    to_set = parse_add_config(args.add_config) if args.add_config else {}
    to_delete = [k.strip() for k in (args.delete_config or "").split(",") if k.strip()]
    if not to_set and not to_delete:
        raise CliError(
            "At least one of --add-config or --delete-config must be specified with --alter"
        )
    both = sorted(set(to_set) & set(to_delete))
    if both:
        raise CliError(f"{both[0]} is both added and deleted; pick one")
    if quotas is not None:
        alter_quotas(admin, quotas, to_set, to_delete)
        return
    configs = [{"name": k, "config_operation": _SET, "value": v} for k, v in to_set.items()]
    configs += [{"name": k, "config_operation": _DELETE, "value": None} for k in to_delete]
    response = admin.request(
        "IncrementalAlterConfigs",
        {
            "resources": [
                {"resource_type": RESOURCE_TYPES[kind], "resource_name": name, "configs": configs}
            ],
            "validate_only": False,
        },
    )
    result = response["responses"][0]
    if result["error_code"]:
        raise CliError(kafka_error(result["error_code"], result.get("error_message")))
    if kind == "brokers" and name == "":
        print("Completed updating default config for brokers in the cluster.")
    else:
        print(f"Completed updating config for {_ENTITY_LABEL[kind]} {name}.")


def run_configs(args: argparse.Namespace) -> int:
    def body() -> int:
        with open_admin(args) as admin:
            if args.describe:
                _describe(admin, args)
            else:
                _alter(admin, args)
        return 0

    command = " ".join(sys.argv[1:])
    return run_tool(f"Error while executing config command with args '{command}'\n", body)
