"""``sparklog features describe|upgrade|downgrade|disable``: kafka-features.sh.

Reads the supported and finalized feature levels a broker advertises in ApiVersions (v3+,
KIP-584) and prints Kafka's line per feature, sorted by name:
``Feature: metadata.version\\tSupportedMinVersion: 3.3-IV3\\tSupportedMaxVersion: 4.2-IV1\\t
FinalizedVersionLevel: 4.0-IV3\\tEpoch: 42`` (metadata.version levels by release name, other
features as numbers; a feature not finalized shows level 0). As FeatureCommand, it asks
``--bootstrap-server`` (a broker) or ``--bootstrap-controller`` (a controller listener, whose
ApiVersions carries the same feature levels); either takes HOST:PORT[,HOST:PORT...] and uses the
first that answers.

``upgrade --feature NAME=LEVEL``, ``downgrade --feature NAME=LEVEL [--unsafe]`` and ``disable
--feature NAME [--unsafe]`` (any number of ``--feature``; ``--dry-run`` validates only) send
UpdateFeatures v1 (upgrade type 1, 2 safe or 3 unsafe downgrade; disable is level 0) and print
FeatureCommand's line per feature: ``share.version was upgraded to 1.`` (``can be upgraded``
with ``--dry-run``), or ``Could not upgrade share.version to 1. <reason>`` and exit status 1.
``metadata.version`` is not changed this way here (the controller refuses it).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sparklog.cli.admin_client import (
    CliError,
    add_connection_args,
    command_security,
    read_command_config,
    run_tool,
)
from sparklog.client.connection import KafkaConnection
from sparklog.client.pool import ConnectionPool
from sparklog.metadata.bootstrap import metadata_version_name
from sparklog.metadata.image import METADATA_VERSION_FEATURE


def add_features_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "features",
        help="describe the cluster's feature levels (kafka-features.sh)",
        description="Describe supported and finalized feature levels (metadata.version, ...).",
    )
    add_connection_args(parser, controller=True)
    commands = parser.add_subparsers(dest="features_command", required=True)
    commands.add_parser("describe", help="print every feature's supported and finalized levels")
    for name, text in (
        ("upgrade", "raise finalized feature levels"),
        ("downgrade", "lower finalized feature levels"),
        ("disable", "remove finalized features (level 0)"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument(
            "--feature",
            action="append",
            required=True,
            metavar="NAME" if name == "disable" else "NAME=LEVEL",
            help="a feature (and its level); repeatable",
        )
        if name != "upgrade":
            command.add_argument("--unsafe", action="store_true", help="allow a lossy downgrade")
        command.add_argument("--dry-run", action="store_true", help="validate only")
    parser.set_defaults(run=run_features)


def _level(feature: str, level: int) -> str:
    if feature == METADATA_VERSION_FEATURE and level > 0:
        return metadata_version_name(level)
    return str(level)


@contextmanager
def _connection(args: argparse.Namespace) -> Iterator[KafkaConnection]:
    settings = read_command_config(args.command_config)
    bootstrap = args.bootstrap_server or args.bootstrap_controller
    addresses = [a.strip() for a in bootstrap.split(",") if a.strip()]
    pool = ConnectionPool(
        settings.get("client.id", "sparklog-cli"), 30.0, command_security(settings)
    )
    try:
        try:
            _, conn = pool.first(addresses)
        except ConnectionError as exc:
            raise CliError(f"{exc}; is a node listening there?") from None
        yield conn
    finally:
        pool.close()


def _updates(args: argparse.Namespace) -> list[tuple[str, int]]:
    out = []
    for text in args.feature:
        if args.features_command == "disable":
            out.append((text.strip(), 0))
            continue
        name, sep, level = text.partition("=")
        if not sep or not level.strip().lstrip("-").isdigit():
            raise CliError(f"--feature takes NAME=LEVEL, got {text!r}")
        out.append((name.strip(), int(level)))
    return out


def _update(args: argparse.Namespace) -> int:
    command = args.features_command
    upgrade_type = 1 if command == "upgrade" else 3 if args.unsafe else 2
    updates = _updates(args)
    body = {
        "timeout_ms": 60_000,
        "feature_updates": [
            {"feature": n, "max_version_level": lvl, "upgrade_type": upgrade_type}
            for n, lvl in updates
        ],
        "validate_only": args.dry_run,
    }
    with _connection(args) as conn:
        response = conn.request("UpdateFeatures", body, version=1)
    if response["error_code"] != 0:
        raise CliError(f"UpdateFeatures failed: {response.get('error_message')}")
    results = {r["feature"]: r for r in response.get("results") or ()}
    failed = 0
    for name, level in updates:
        result = results.get(name, {"error_code": 0})
        target = "" if command == "disable" else f" to {level}"
        if result["error_code"] != 0:
            failed += 1
            print(f"Could not {command} {name}{target}. {result.get('error_message') or ''}")
        else:
            verb = "can be" if args.dry_run else "was"
            print(f"{name} {verb} {command}d{target}.")  # upgraded, downgraded, disabled
    return 1 if failed else 0


def run_features(args: argparse.Namespace) -> int:
    def body() -> int:
        if args.features_command != "describe":
            return _update(args)
        with _connection(args) as conn:
            response = conn.request(
                "ApiVersions",
                {"client_software_name": "sparklog", "client_software_version": "0.1.0"},
                version=3,
            )
        finalized = {f["name"]: f["max_version_level"] for f in response["finalized_features"]}
        epoch = response["finalized_features_epoch"]
        for feature in sorted(response["supported_features"], key=lambda f: f["name"]):
            name = feature["name"]
            print(
                f"Feature: {name}\tSupportedMinVersion: {_level(name, feature['min_version'])}"
                f"\tSupportedMaxVersion: {_level(name, feature['max_version'])}"
                f"\tFinalizedVersionLevel: {_level(name, finalized.get(name, 0))}\tEpoch: {epoch}"
            )
        return 0

    return run_tool("", body)
