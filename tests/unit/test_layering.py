"""The architecture's boundaries, checked on the import graph (ARCHITECTURE.md, "Layout").

- ``sparklog.protocol``, ``sparklog.storage``, ``sparklog.raft``, ``sparklog.replication`` and
  ``sparklog.share`` are sans-IO: they never import sockets, selectors, asyncio, ssl or grpc.
- Dependencies run one way: protocol <- storage, raft <- metadata, controller <- broker <- net,
  node, cli. The lower layers never import the upper ones.
- ``sparklog.connector`` and ``sparklog.tiering`` use the protocol and the client, never broker
  internals.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IO_MODULES = {"asyncio", "socket", "selectors", "ssl", "grpc", "socketserver"}

# package -> sparklog packages it must not import
FORBIDDEN = {
    "sparklog/protocol": {
        "storage",
        "raft",
        "metadata",
        "controller",
        "broker",
        "net",
        "node",
        "cli",
        "client",
        "connector",
        "tiering",
    },
    "sparklog/storage": {
        "raft",
        "metadata",
        "controller",
        "broker",
        "net",
        "node",
        "cli",
        "client",
        "connector",
        "tiering",
    },
    "sparklog/raft": {
        "metadata",
        "controller",
        "broker",
        "net",
        "node",
        "cli",
        "connector",
        "tiering",
    },
    "sparklog/replication": {
        "raft",
        "metadata",
        "controller",
        "broker",
        "net",
        "node",
        "cli",
        "client",
        "connector",
        "tiering",
        "coordinator",
    },
    "sparklog/share": {
        "raft",
        "metadata",
        "controller",
        "broker",
        "net",
        "node",
        "cli",
        "client",
        "connector",
        "tiering",
        "coordinator",
    },
    "sparklog/metadata": {"controller", "broker", "net", "node", "cli"},
    "sparklog/controller": {"broker", "net", "node"},
    "sparklog/broker": {"node", "cli"},
    "connector": {"broker", "controller", "node", "storage"},
    "tiering": {"broker", "controller", "node", "net"},
}
SANS_IO = (
    "sparklog/protocol",
    "sparklog/storage",
    "sparklog/raft",
    "sparklog/replication",
    "sparklog/share",
)


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", SANS_IO)
def test_sans_io_cores_import_no_io(package: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in _files(package)
        for line, name in _imports(path)
        if name.split(".")[0] in IO_MODULES
    ]
    assert not offenders, "sans-IO layer imports I/O modules:\n" + "\n".join(offenders)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_dependencies_run_one_way(package: str) -> None:
    banned = FORBIDDEN[package]
    offenders = []
    for path in _files(package):
        for line, name in _imports(path):
            parts = name.split(".")
            if parts[0] == "sparklog" and len(parts) > 1 and parts[1] in banned:
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not offenders, f"{package} reaches upward:\n" + "\n".join(offenders)


def test_the_check_sees_imports() -> None:
    # Guard against a check that silently scans nothing.
    assert len(_files("sparklog/protocol")) > 5
    assert any(name == "asyncio" for _, name in _imports(ROOT / "sparklog/net/server.py"))
