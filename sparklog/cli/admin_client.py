"""What the admin tools share: ``--bootstrap-server`` / ``--command-config``, one
:class:`AdminClient` over :class:`~sparklog.client.connection.KafkaConnection`, and the rule that
a failure prints one message that says what to fix (never a traceback).

Contract:
- :func:`add_connection_args` adds Kafka's two flags to a tool's parser.
- :func:`read_command_config` reads the properties file of client settings, Kafka's client
  security keys included (``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config`` or
  ``sasl.username``/``sasl.password``, ``ssl.truststore.*``, ``ssl.keystore.*``, librdkafka's
  ``ssl.ca.location``); :func:`command_security` turns them into the connection's TLS and SASL.
  Unknown client keys are ignored, as Kafka's clients only warn about them.
- :class:`~sparklog.client.admin.AdminClient` (re-exported here) does the requests.
- :func:`run_tool` maps :class:`CliError`, socket errors and protocol errors to
  ``<prefix><message>`` on stderr and status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from sparklog.client.admin import (
    EARLIEST,
    EARLIEST_LOCAL,
    LATEST,
    LATEST_TIERED,
    MAX_TIMESTAMP,
    AdminClient,
    AdminError,
    TopicPartition,
    command_security,
    kafka_error,
)
from sparklog.config import ConfigError, read_properties_file
from sparklog.protocol.errors import ProtocolError

__all__ = [
    "EARLIEST",
    "EARLIEST_LOCAL",
    "LATEST",
    "LATEST_TIERED",
    "MAX_TIMESTAMP",
    "AdminClient",
    "CliError",
    "TopicPartition",
    "add_connection_args",
    "command_security",
    "kafka_error",
    "open_admin",
    "read_command_config",
    "run_tool",
]


# The CLI's failures are the admin client's (one class, so run_tool catches both).
CliError = AdminError


def add_connection_args(
    parser: argparse.ArgumentParser, *, required: bool = True, controller: bool = False
) -> None:
    """--bootstrap-server and --command-config; with ``controller``, --bootstrap-controller
    too, one of the two required (as Kafka's tools that also talk to controllers)."""
    target: Any = parser
    if controller:
        target = parser.add_mutually_exclusive_group(required=required)
        target.add_argument(
            "--bootstrap-controller",
            metavar="HOST:PORT[,HOST:PORT...]",
            help="a controller listener (one or more, comma-separated)",
        )
    target.add_argument(
        "--bootstrap-server",
        required=required and not controller,
        metavar="HOST:PORT[,HOST:PORT...]",
        help="a broker's client listener (one or more, comma-separated)",
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="a properties file of client settings (client.id, request.timeout.ms, and for a "
        "secured cluster security.protocol, sasl.mechanism, sasl.jaas.config, ssl.*)",
    )


def add_tool_parser(
    sub: Any,
    name: str,
    help_text: str,
    description: str,
    actions: list[tuple[str, str]] | None = None,
) -> argparse.ArgumentParser:
    """A tool's subcommand parser: the connection options and, given ``actions``
    (``(flag, help)``, store_true flags), exactly one of them, as Kafka's kafka-*.sh tools
    take them."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=description)
    add_connection_args(parser)
    if actions:
        action = parser.add_mutually_exclusive_group(required=True)
        for flag, text in actions:
            action.add_argument(flag, action="store_true", help=text)
    return parser


def read_command_config(path: str | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        props = read_properties_file(path)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    command_security(props, path)  # a bad security setting fails before any connection
    return props


def open_admin(args: argparse.Namespace) -> AdminClient:
    return AdminClient(args.bootstrap_server, read_command_config(args.command_config))


def run_admin_tool(args: argparse.Namespace, body: Callable[[], int]) -> int:
    """Run a tool's body: a :class:`CliError` is ``Error: <message>`` on stderr, an
    unreachable ``--bootstrap-server`` says so; either is status 1."""
    try:
        return body()
    except CliError as exc:
        print(f"Error: {exc}", file=sys.stderr)
    except OSError as exc:
        print(
            f"Error: cannot reach {args.bootstrap_server} ({exc.strerror or exc}); "
            "is a node listening there?",
            file=sys.stderr,
        )
    return 1


def run_tool(prefix: str, body: Callable[[], int]) -> int:
    """Run a tool's body; a failure becomes ``<prefix><message>`` on stderr and status 1."""
    try:
        return body()
    except CliError as exc:
        print(f"{prefix}{exc}", file=sys.stderr)
    except (ConnectionError, ProtocolError) as exc:
        print(f"{prefix}the broker closed the connection or answered badly: {exc}", file=sys.stderr)
    except OSError as exc:
        print(f"{prefix}{exc.strerror or exc}", file=sys.stderr)
    return 1
