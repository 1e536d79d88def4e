"""``sparklog features describe``: kafka-features.sh describe.

Reads the supported and finalized feature levels a broker advertises in ApiVersions (v3+,
KIP-584) and prints Kafka's line per feature, sorted by name:
``Feature: metadata.version\\tSupportedMinVersion: 3.3-IV3\\tSupportedMaxVersion: 4.1-IV1\\t
FinalizedVersionLevel: 4.0-IV3\\tEpoch: 42`` (metadata.version levels by release name, other
features as numbers; a feature not finalized shows level 0). As FeatureCommand, it asks
``--bootstrap-server`` (a broker) or ``--bootstrap-controller`` (a controller listener, whose
ApiVersions carries the same feature levels); either takes HOST:PORT[,HOST:PORT...] and uses the
first that answers. Upgrading and downgrading features is not offered yet.
"""

from __future__ import annotations

import argparse
from typing import Any

from sparklog.cli.admin_client import CliError, command_security, read_command_config, run_tool
from sparklog.client.pool import ConnectionPool
from sparklog.metadata.bootstrap import metadata_version_name
from sparklog.metadata.image import METADATA_VERSION_FEATURE


def add_features_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "features",
        help="describe the cluster's feature levels (kafka-features.sh)",
        description="Describe supported and finalized feature levels (metadata.version, ...).",
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT[,HOST:PORT...]",
        help="a broker's client listener (one or more, comma-separated)",
    )
    target.add_argument(
        "--bootstrap-controller",
        metavar="HOST:PORT[,HOST:PORT...]",
        help="a controller listener (one or more, comma-separated)",
    )
    parser.add_argument(
        "--command-config", metavar="FILE", help="a properties file of client settings"
    )
    commands = parser.add_subparsers(dest="features_command", required=True)
    commands.add_parser("describe", help="print every feature's supported and finalized levels")
    parser.set_defaults(run=run_features)


def _level(feature: str, level: int) -> str:
    if feature == METADATA_VERSION_FEATURE and level > 0:
        return metadata_version_name(level)
    return str(level)


def run_features(args: argparse.Namespace) -> int:
    def body() -> int:
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
            response = conn.request(
                "ApiVersions",
                {"client_software_name": "sparklog", "client_software_version": "0.1.0"},
                version=3,
            )
        finally:
            pool.close()
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
