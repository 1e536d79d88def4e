"""Running ``sparklog`` as a subprocess in the CLI tests, as a user does.

``sparklog(*args, stdin=...)`` returns a :class:`CliRun` (status, stdout, stderr); every run is
bounded. ``assert_no_traceback`` is the check every CLI error test makes: a user sees a
message, never a Python traceback. ``tool(bootstrap, command, *args)`` runs a command with
``--bootstrap-server`` and makes that check; ``create_topic`` makes a uniquely named topic.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from tests.integration.conftest import unique_topic
from tests.integration.node_harness import REPO_ROOT, Node


@dataclass(frozen=True)
class CliRun:
    status: int
    out: str
    err: str

    def lines(self) -> list[str]:
        return self.out.splitlines()


def sparklog(*args: str, stdin: str | None = None, timeout_s: float = 120.0) -> CliRun:
    done = subprocess.run(
        [sys.executable, "-m", "sparklog.cli.main", *args],
        cwd=REPO_ROOT,
        input=None if stdin is None else stdin.encode(),
        capture_output=True,
        timeout=timeout_s,
        check=False,
    )
    return CliRun(done.returncode, done.stdout.decode(), done.stderr.decode())


def assert_no_traceback(run: CliRun) -> None:
    assert "Traceback" not in run.err and "Traceback" not in run.out, run.err


def tool(bootstrap: str, command: str, *args: str, stdin: str | None = None) -> CliRun:
    run = sparklog(command, "--bootstrap-server", bootstrap, *args, stdin=stdin)
    assert_no_traceback(run)
    return run


def create_topic(bootstrap: str, prefix: str, partitions: int = 1, replicas: int = -1) -> str:
    topic = unique_topic(prefix)
    run = tool(bootstrap, "topics", "--create", "--topic", topic, "--partitions", str(partitions),
               "--replication-factor", str(replicas))  # fmt: skip
    assert run.status == 0, run.err
    return topic


def cells(line: str) -> list[str]:
    """A prettyPrintTable row's cells (each padded, then a tab)."""
    assert line.endswith("\t"), repr(line)
    return [cell.rstrip() for cell in line.split("\t")[:-1]]


def node_tool(node: Node, *args: str, stdin: str | None = None) -> CliRun:
    """:func:`tool` against ``node``'s client listener."""
    return tool(node.bootstrap, *args, stdin=stdin)


def node_topic(node: Node, prefix: str, partitions: int = 1) -> str:
    """:func:`create_topic` on ``node``: a new topic named after ``prefix``."""
    return create_topic(node.bootstrap, prefix, partitions)
