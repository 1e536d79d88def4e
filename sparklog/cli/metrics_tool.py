"""``sparklog metrics``: read a node's metrics from its ``sparklog.metrics.listener``.

``sparklog metrics --url http://host:port [--filter TEXT]... [--json]`` fetches
``/metrics.json`` and prints one line per metric, sorted: ``<mbean> <value>`` for a Yammer
metric (``kafka.controller:type=KafkaController,name=ActiveControllerCount 1``) and
``<mbean> <attribute> <value>`` for an attribute of a Kafka-metrics group
(``kafka.server:type=raft-metrics current-leader 2``). ``--filter`` keeps the lines whose
mbean or attribute contains the text (case-insensitive; repeat it to keep any of several);
``--json`` prints the selected metrics as JSON instead. Exit status 1 with a one-line error
when the node cannot be reached or answers something other than metrics JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import Any

DEFAULT_TIMEOUT_S = 10.0


class MetricsToolError(Exception):
    pass


def fetch_metrics(url: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, dict[str, Any]]:
    """``{mbean: {attribute: value}}`` from the metrics listener at ``url``."""
    base = url if "://" in url else f"http://{url}"
    if not base.startswith(("http://", "https://")):
        raise MetricsToolError(f"--url must be an http:// address, got {url!r}")
    target = base.rstrip("/")
    if not target.endswith("/metrics.json"):
        target += "/metrics.json"
    try:
        with urllib.request.urlopen(target, timeout=timeout_s) as response:
            body = response.read()
    except (urllib.error.URLError, OSError) as exc:
        raise MetricsToolError(f"cannot read metrics from {target}: {exc}") from exc
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise MetricsToolError(f"{target} did not answer metrics JSON: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise MetricsToolError(f"{target} did not answer metrics JSON")
    return data


def select(metrics: dict[str, dict[str, Any]], filters: list[str]) -> dict[str, dict[str, Any]]:
    wanted = [f.lower() for f in filters]
    out: dict[str, dict[str, Any]] = {}
    for mbean, attributes in metrics.items():
        for attribute, value in attributes.items():
            text = f"{mbean} {attribute}".lower()
            if not wanted or any(w in text for w in wanted):
                out.setdefault(mbean, {})[attribute] = value
    return out


def format_lines(metrics: dict[str, dict[str, Any]]) -> list[str]:
    lines = []
    for mbean in sorted(metrics):
        for attribute, value in sorted(metrics[mbean].items()):
            yammer = ",name=" in mbean and attribute in ("Value", "Count")
            label = mbean if yammer else f"{mbean} {attribute}"
            lines.append(f"{label} {value}")
    return lines


def run_metrics(args: argparse.Namespace) -> int:
    try:
        metrics = select(fetch_metrics(args.url, args.timeout), list(args.filter or []))
    except MetricsToolError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(metrics, indent=2, sort_keys=True))
    else:
        for line in format_lines(metrics):
            print(line)
    return 0


def add_metrics_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "metrics",
        help="print a node's metrics (Kafka's names) from its sparklog.metrics.listener",
    )
    parser.add_argument(
        "--url", required=True, help="the node's metrics listener, e.g. http://127.0.0.1:9404"
    )
    parser.add_argument(
        "--filter",
        action="append",
        metavar="TEXT",
        help="keep metrics whose mbean or attribute contains TEXT (case-insensitive, repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of lines")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds to wait (default 10)"
    )
    parser.set_defaults(run=run_metrics)
