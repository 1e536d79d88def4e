"""The client-quota part of ``sparklog configs`` (kafka-configs.sh for users, clients and ips).

    sparklog configs --bootstrap-server B --alter --add-config producer_byte_rate=1048576 \\
        --entity-type users --entity-name alice
    sparklog configs --bootstrap-server B --alter --add-config consumer_byte_rate=2048 \\
        --user alice --client app          # the (user, client-id) entity
    sparklog configs --bootstrap-server B --alter --delete-config request_percentage \\
        --entity-type clients --entity-default
    sparklog configs --bootstrap-server B --describe --entity-type users [--entity-name alice]

Altering is AlterClientQuotas (49); a ``--delete-config`` key the entity does not have is
Kafka's ``Invalid config(s): k``. Describing is DescribeClientQuotas (48), strict, exact for a
name, default for ``--entity-default`` / ``--user-defaults``, any named entity when no name is
given. Output is Kafka's ``Quota configs for user-principal 'alice', client-id 'app' are
producer_byte_rate=1024.0`` (``the default client-id`` for a default), and
``Completed updating config for user alice.`` / ``Completed updating default config for
users in the cluster.``
"""

from __future__ import annotations

import argparse
from typing import cast

from sparklog.cli.admin_client import AdminClient, CliError, kafka_error
from sparklog.protocol.message_types import (
    DescribeClientQuotasRequestComponents,
    DescribeClientQuotasResponse,
    DescribeClientQuotasResponseEntries,
)

QUOTA_ENTITY_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
_LABEL = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

# (entity type as the tool names it, name: None any, "" the default)
Entity = list[tuple[str, str | None]]


def add_quota_entity_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", help="shorthand for --entity-type users --entity-name U")
    parser.add_argument("--client", help="shorthand for --entity-type clients --entity-name C")
    parser.add_argument("--ip", help="shorthand for --entity-type ips --entity-name IP")
    parser.add_argument("--user-defaults", action="store_true", help="the default user")
    parser.add_argument("--client-defaults", action="store_true", help="the default client id")
    parser.add_argument("--ip-defaults", action="store_true", help="the default ip")


def quota_entity(args: argparse.Namespace) -> Entity | None:
    """The quota entity the arguments name, or None when they name no users/clients/ips."""
    entity: Entity = []
    for kind, name, default in (
        ("users", args.user, args.user_defaults),
        ("clients", args.client, args.client_defaults),
        ("ips", args.ip, args.ip_defaults),
    ):
        if name is not None or default:
            entity.append((kind, "" if default else name))
    if args.entity_type in QUOTA_ENTITY_TYPES:
        if entity:
            raise CliError("give the quota entity with --entity-type or with --user/--client")
        name = "" if args.entity_default else args.entity_name
        entity.append((args.entity_type, name))
    if not entity:
        return None
    kinds = [k for k, _ in entity]
    if "ips" in kinds and len(kinds) > 1:
        raise CliError("an ip entity cannot be combined with users or clients")
    return sorted(entity, key=lambda e: ["users", "clients", "ips"].index(e[0]))


def _components(entity: Entity) -> list[DescribeClientQuotasRequestComponents]:
    components: list[DescribeClientQuotasRequestComponents] = []
    for kind, name in entity:
        entity_type = QUOTA_ENTITY_TYPES[kind]
        # match: the declared default (null) unless an exact name is matched
        if name is None:
            components.append(
                {"entity_type": entity_type, "match_type": MATCH_SPECIFIED, "match": None}
            )
        elif name == "":
            components.append(
                {"entity_type": entity_type, "match_type": MATCH_DEFAULT, "match": None}
            )
        else:
            components.append(
                {"entity_type": entity_type, "match_type": MATCH_EXACT, "match": name}
            )
    return components


def _describe_entries(
    admin: AdminClient, entity: Entity
) -> list[DescribeClientQuotasResponseEntries]:
    answer = admin.request(
        "DescribeClientQuotas", {"components": _components(entity), "strict": True}
    )
    response = cast("DescribeClientQuotasResponse", answer)
    if response["error_code"]:
        raise CliError(kafka_error(response["error_code"], response.get("error_message")))
    return list(response["entries"] or ())


def _value(value: float) -> str:
    """Java's ``Double.toString``, which Kafka prints: 1024.0, 1.048576E7."""
    value = float(value)
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    mantissa, exponent = f"{value:.16e}".split("e")
    digits = mantissa.rstrip("0")
    if digits.endswith("."):
        digits += "0"
    return f"{digits}E{int(exponent)}"


def describe_quotas(admin: AdminClient, entity: Entity) -> None:
    for entry in _describe_entries(admin, entity):
        names = {e["entity_type"]: e["entity_name"] for e in entry["entity"]}
        parts = []
        for entity_type in ("user", "client-id", "ip"):
            if entity_type in names:
                name = names[entity_type]
                label = _LABEL[entity_type]
                parts.append(f"the default {label}" if name is None else f"{label} '{name}'")
        values = ", ".join(f"{v['key']}={_value(v['value'])}" for v in entry["values"])
        print(f"Quota configs for {', '.join(parts)} are {values}")


def alter_quotas(
    admin: AdminClient, entity: Entity, to_set: dict[str, str], to_delete: list[str]
) -> None:
    if any(name is None for _, name in entity):
        raise CliError("--alter needs --entity-name or --entity-default for every entity type")
    if to_delete:
        current = {v["key"] for e in _describe_entries(admin, entity) for v in e["values"]}
        missing = [k for k in to_delete if k not in current]
        if missing:
            raise CliError(f"Invalid config(s): {','.join(missing)}")
    ops = []
    for key, text in to_set.items():
        try:
            value = float(text)
        except ValueError:
            raise CliError(f"Cannot parse quota configuration value for {key}: {text}") from None
        ops.append({"key": key, "value": value, "remove": False})
    ops += [{"key": key, "value": 0.0, "remove": True} for key in to_delete]
    response = admin.request(
        "AlterClientQuotas",
        {
            "entries": [
                {
                    "entity": [
                        {"entity_type": QUOTA_ENTITY_TYPES[kind], "entity_name": name or None}
                        for kind, name in entity
                    ],
                    "ops": ops,
                }
            ],
            "validate_only": False,
        },
    )
    for result in response["entries"]:
        if result["error_code"]:
            raise CliError(kafka_error(result["error_code"], result.get("error_message")))
    kind, name = entity[0]
    if name:
        print(f"Completed updating config for {kind[:-1]} {name}.")
    else:
        print(f"Completed updating default config for {kind} in the cluster.")
