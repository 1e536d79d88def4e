"""The ``sparklog`` command, shaped like Kafka's tools.

    sparklog storage random-uuid
    sparklog storage format --cluster-id ID --config server.properties --standalone
    sparklog storage info --config server.properties
    sparklog server start server.properties [--override key=value ...]
    sparklog topics --bootstrap-server HOST:PORT --create|--list|--describe|--delete ...
    sparklog log dump --files 00000000000000000000.log [--print-data-log]
    sparklog metadata-quorum --bootstrap-controller HOST:PORT describe --status|--replication
    sparklog metadata-quorum --bootstrap-controller HOST:PORT add-controller --command-config F
    sparklog metadata-quorum --bootstrap-controller HOST:PORT remove-controller --controller-id N \
        --controller-directory-id D
    sparklog leader-election --bootstrap-server HOST:PORT --election-type PREFERRED|UNCLEAN \
        (--all-topic-partitions | --topic T --partition P | --path-to-json-file F)
    sparklog reassign-partitions --bootstrap-server HOST:PORT --reassignment-json-file F \
        --execute [--additional] | --verify | --cancel
    sparklog reassign-partitions --bootstrap-server HOST:PORT --list

Every user error (a bad flag, a bad config, an unformatted directory) prints one message that
says what to fix and exits with status 1; ``--help`` documents every flag.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from sparklog.cli.acls_tool import add_acls_parser
from sparklog.cli.configs_tool import add_configs_parser
from sparklog.cli.console_consumer_tool import add_console_consumer_parser
from sparklog.cli.console_producer_tool import add_console_producer_parser
from sparklog.cli.consumer_groups_tool import add_consumer_groups_parser
from sparklog.cli.consumer_perf_tool import add_consumer_perf_parser
from sparklog.cli.delete_records_tool import add_delete_records_parser
from sparklog.cli.features_tool import add_features_parser
from sparklog.cli.get_offsets_tool import add_get_offsets_parser
from sparklog.cli.leader_election_tool import add_leader_election_parser
from sparklog.cli.log_dirs_tool import add_log_dirs_parser
from sparklog.cli.metadata_quorum_tool import add_metadata_quorum_parser
from sparklog.cli.metrics_tool import add_metrics_parser
from sparklog.cli.producer_perf_tool import add_producer_perf_parser
from sparklog.cli.reassign_partitions_tool import add_reassign_partitions_parser
from sparklog.cli.share_groups_tool import add_share_groups_parser
from sparklog.cli.storage_tool import StorageToolError
from sparklog.cli.tiering_tool import add_tiering_parser
from sparklog.cli.topics_tool import add_topics_parser
from sparklog.cli.transactions_tool import add_transactions_parser
from sparklog.config import ConfigError, ServerConfig, read_properties_file


def _storage(args: argparse.Namespace) -> int:
    from sparklog.cli import storage_tool

    if args.storage_command == "random-uuid":
        print(storage_tool.random_uuid())
        return 0
    if args.storage_command == "info":
        from sparklog.cli.storage_info_tool import storage_info

        lines, status = storage_info(ServerConfig.from_file(args.config))
        for line in lines:
            print(line)
        return status
    config = ServerConfig.from_file(args.config)
    written = storage_tool.format_storage(
        config,
        cluster_id=args.cluster_id,
        standalone=args.standalone,
        initial_controllers=args.initial_controllers,
        no_initial_controllers=args.no_initial_controllers,
        release_version=args.release_version,
        ignore_formatted=args.ignore_formatted,
        add_scram=args.add_scram or (),
        features=args.feature or (),
    )
    for line in written:
        print(line)
    return 0


def _server(args: argparse.Namespace) -> int:
    from sparklog.server.node import run_node

    overrides = {}
    for item in args.override or []:
        if "=" not in item:
            raise ConfigError(f"--override expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        overrides[key.strip()] = value.strip()
    props = read_properties_file(args.properties)
    props.update(overrides)
    config = ServerConfig.from_props(props)
    return run_node(config, args.properties)


def _log(args: argparse.Namespace) -> int:
    from sparklog.cli.dump_log_tool import run_dump

    return run_dump(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparklog", description="A Kafka-compatible log service built for Spark."
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    sub = parser.add_subparsers(dest="command", required=True)

    storage = sub.add_parser("storage", help="format and inspect node storage")
    storage_sub = storage.add_subparsers(dest="storage_command", required=True)
    storage_sub.add_parser("random-uuid", help="print a new cluster id")
    info = storage_sub.add_parser("info", help="show what the node's directories hold")
    info.add_argument("--config", "-c", required=True, help="the node's server.properties")
    fmt = storage_sub.add_parser("format", help="format the log directories of a node")
    fmt.add_argument("--cluster-id", "-t", required=True, help="the cluster id (random-uuid)")
    fmt.add_argument("--config", "-c", required=True, help="the node's server.properties")
    fmt.add_argument("--release-version", "-r", help="metadata.version to bootstrap with")
    fmt.add_argument(
        "--add-scram",
        "-S",
        action="append",
        metavar="MECHANISM=[name=USER,password=PASSWORD]",
        help="a SCRAM credential to bootstrap the cluster with (KIP-900), e.g. "
        "'SCRAM-SHA-512=[name=admin,password=admin-secret]'; repeatable",
    )
    fmt.add_argument(
        "--feature",
        "-f",
        action="append",
        metavar="FEATURE=LEVEL",
        help="a feature level to bootstrap with instead of the release's, e.g. "
        "'transaction.version=1'; repeatable",
    )
    fmt.add_argument(
        "--ignore-formatted",
        "-g",
        action="store_true",
        help="do not fail when a directory is already formatted",
    )
    voters = fmt.add_mutually_exclusive_group()
    voters.add_argument(
        "--standalone",
        "-s",
        action="store_true",
        help="bootstrap a dynamic quorum with this controller as its only voter",
    )
    voters.add_argument(
        "--initial-controllers",
        "-I",
        help="the initial voters: id@host:port:directory-id,...",
    )
    voters.add_argument(
        "--no-initial-controllers",
        "-N",
        action="store_true",
        help="format without a voter set (a controller that will join later)",
    )
    storage.set_defaults(run=_storage)

    server = sub.add_parser("server", help="run a node")
    server_sub = server.add_subparsers(dest="server_command", required=True)
    start = server_sub.add_parser("start", help="start a node in the foreground")
    start.add_argument("properties", help="path to server.properties")
    start.add_argument(
        "--override",
        action="append",
        metavar="KEY=VALUE",
        help="override a property from the file (repeatable)",
    )
    server.set_defaults(run=_server)

    add_topics_parser(sub)

    log_cmd = sub.add_parser("log", help="inspect segment files")
    log_sub = log_cmd.add_subparsers(dest="log_command", required=True)
    dump = log_sub.add_parser("dump", help="print the batches (and records) of segment files")
    dump.add_argument("--files", required=True, help="comma-separated .log segment files")
    dump.add_argument("--print-data-log", action="store_true", help="print every record too")
    log_cmd.set_defaults(run=_log)

    add_tiering_parser(sub)
    add_metadata_quorum_parser(sub)
    add_metrics_parser(sub)
    add_leader_election_parser(sub)
    add_reassign_partitions_parser(sub)
    add_consumer_groups_parser(sub)
    add_share_groups_parser(sub)
    add_configs_parser(sub)
    add_acls_parser(sub)
    add_get_offsets_parser(sub)
    add_console_producer_parser(sub)
    add_console_consumer_parser(sub)
    add_producer_perf_parser(sub)
    add_consumer_perf_parser(sub)
    add_delete_records_parser(sub)
    add_transactions_parser(sub)
    add_log_dirs_parser(sub)
    add_features_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)",
        stream=sys.stderr,
    )
    try:
        return int(args.run(args))
    except (ConfigError, StorageToolError, OSError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
