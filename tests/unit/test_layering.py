"""The architecture's boundaries, checked on the import graph (ARCHITECTURE.md, "Layout").

- Every package (and top-level module) of ``sparklog`` declares the ``sparklog`` packages it
  may import (:data:`ALLOWED`); an import outside that list fails, so a new dependency is a
  deliberate edit here, not an accident. ``connector/`` and ``tiering/`` (installed as
  ``sparklog.connector`` / ``sparklog.tiering``) are checked too. Relative imports are
  resolved; imports under ``if TYPE_CHECKING:`` count (a type-only import still couples).
- ``server`` is the composition root: it may import every package below it, and only ``cli``
  may import it (declared so in :data:`ALLOWED`, and checked on the tree).
- The graph of package dependencies has no cycle, except through the edges listed in
  :data:`KNOWN_BREAKS`, each with the issue that removes it; a listed break that no longer
  exists fails too, so every fix is locked in by deleting its line.
- ``protocol``, ``storage``, ``raft``, ``replication``, ``share`` and the top-level module
  ``configdef`` are sans-IO: no asyncio, socket, selectors, ssl, grpc, subprocess, concurrent
  or threading imports (threading only where :data:`THREAD_SAFETY` says why), and no
  ``time.sleep``.
- The checker itself is tested on a synthetic tree (an upward import, a relative one, an I/O
  import, a cycle, an import of ``server`` from below), so it cannot silently pass by scanning
  nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SANS_IO = ("protocol", "storage", "raft", "replication", "share", "configdef")
IO_MODULES = {
    "asyncio", "socket", "selectors", "ssl", "grpc", "socketserver", "subprocess", "concurrent",
    "threading",
}  # fmt: skip
# sans-IO files that use threading for thread safety only (no I/O, no threads of their own)
THREAD_SAFETY = {
    "sparklog/protocol/compression.py": "a zstd context per thread (threading.local)",
    "sparklog/storage/handles.py": "the handle pool's lock: tiering threads read segments",
}
# The composition root (sparklog/server/) builds a node from every package below it; only the
# CLI (``sparklog server start``) imports it.
SERVER = "server"
_BELOW_SERVER = {
    "protocol", "metrics", "fault", "configdef", "config_keys", "config", "storage", "replication",
    "share",
    "client", "raft", "security", "metadata", "controller", "tiering", "net", "broker",
    "coordinator", "readservice", "readservice_wire", "console",
}  # fmt: skip

# package -> the sparklog packages it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "protocol": set(),
    "metrics": set(),
    "fault": set(),
    # The one configuration framework (ConfigDef, parser, "did you mean"): every config table
    # declares its keys with it, so it sits below storage and imports nothing of ours.
    "configdef": set(),
    "config_keys": {"configdef"},
    "storage": {"protocol", "configdef"},
    "replication": {"protocol"},
    "share": {"protocol", "config_keys"},
    "client": {"protocol", "security", "config_keys"},
    "raft": {"protocol", "storage"},
    "config": {"configdef", "config_keys", "security", "storage"},
    "security": {"protocol", "config_keys"},
    "metadata": {"protocol", "raft", "config", "security"},
    "controller": {
        "protocol", "storage", "raft", "metadata", "config", "config_keys", "configdef", "fault",
        "metrics", "security",
    },
    "tiering": {"protocol", "config", "config_keys", "configdef"},
    "net": {"protocol", "storage", "raft", "metrics", "fault", "security"},
    "broker": {
        "protocol", "storage", "replication", "raft", "metadata", "controller", "config",
        "config_keys", "metrics", "net", "security", "share", "tiering", "fault", "coordinator",
    },
    "coordinator": {"protocol", "config", "config_keys", "share", "metrics", "metadata"},
    "readservice_wire": set(),
    "readservice": {"protocol", "storage", "config", "broker", "security", "readservice_wire"},
    "connector": {"protocol", "client", "tiering", "readservice_wire", "security", "configdef"},
    "console": {"protocol", "client", "metadata", "metrics"},
    SERVER: _BELOW_SERVER,
    "cli": _BELOW_SERVER | {SERVER},
}  # fmt: skip

# (importer, imported) -> why it is still there and what removes it
KNOWN_BREAKS: dict[tuple[str, str], str] = {}


def _package_of(root: Path, path: Path) -> str:
    rel = path.relative_to(root)
    if rel.parts[0] in ("connector", "tiering"):
        return rel.parts[0]
    parts = rel.parts[1:]  # below sparklog/
    return parts[0][:-3] if len(parts) == 1 else parts[0]


def _module_parts(root: Path, path: Path) -> list[str]:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[0] in ("connector", "tiering"):
        parts = ["sparklog", *parts]
    return parts


def imports_of(root: Path, path: Path) -> Iterator[tuple[int, str]]:
    """``(line, absolute module)`` of every import in ``path``, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    module = _module_parts(root, path)
    package = module if path.name == "__init__.py" else module[:-1]
    if path.name == "__init__.py":
        package = module[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
                yield node.lineno, name
            elif node.module:
                yield node.lineno, node.module


def source_files(root: Path) -> list[Path]:
    files = [p for p in (root / "sparklog").rglob("*.py") if not _under_symlink(root, p)]
    for extra in ("connector", "tiering"):
        if (root / extra).is_dir():
            files += (root / extra).rglob("*.py")
    return sorted(files)


def _under_symlink(root: Path, path: Path) -> bool:
    return any(
        (root / "sparklog" / part).is_symlink() for part in path.relative_to(root).parts[1:2]
    )


def package_edges(root: Path) -> dict[tuple[str, str], list[str]]:
    """``(importer, imported)`` package pair -> where (``file:line``)."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in source_files(root):
        source = _package_of(root, path)
        for line, name in imports_of(root, path):
            parts = name.split(".")
            if parts[0] != "sparklog" or len(parts) < 2 or parts[1] == source:
                continue
            where = f"{path.relative_to(root)}:{line}"
            edges.setdefault((source, parts[1]), []).append(where)
    return edges


def unlisted_edges(
    edges: dict[tuple[str, str], list[str]], allowed: dict[str, set[str]]
) -> list[str]:
    return [
        f"{where[0]}: {a} imports {b} (not in ALLOWED[{a!r}])"
        for (a, b), where in sorted(edges.items())
        if b not in allowed.get(a, set()) and (a, b) not in KNOWN_BREAKS
    ]


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Every elementary cycle's nodes, found by depth-first search (small graphs only)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def walk(start: str, node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt == start and frozenset(path) not in seen:
                seen.add(frozenset(path))
                found.append([*path, start])
            elif nxt not in path and nxt > start:
                walk(start, nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, start, [start])
    return found


def io_offenders(root: Path, packages: tuple[str, ...]) -> list[str]:
    out = []
    for package in packages:
        module = root / "sparklog" / f"{package}.py"  # a sans-IO top-level module
        paths = [module] if module.is_file() else (root / "sparklog" / package).rglob("*.py")
        for path in sorted(paths):
            rel = str(path.relative_to(root))
            for line, name in imports_of(root, path):
                top = name.split(".")[0]
                if top in IO_MODULES and not (top == "threading" and rel in THREAD_SAFETY):
                    out.append(f"{rel}:{line} imports {name}")
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                sleeps = (
                    isinstance(node, ast.Attribute)
                    and node.attr == "sleep"
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "time"
                ) or (
                    isinstance(node, ast.ImportFrom)
                    and node.module == "time"
                    and any(a.name == "sleep" for a in node.names)
                )
                if sleeps:
                    out.append(f"{rel}:{getattr(node, 'lineno', 0)} sleeps (time.sleep)")
    return out


# -- the rules on this tree ------------------------------------------------------------------
def test_every_package_imports_only_what_it_declares() -> None:
    edges = package_edges(ROOT)
    assert len(edges) > 20, "the checker found almost no imports: is it scanning the tree?"
    offenders = unlisted_edges(edges, ALLOWED)
    assert not offenders, "undeclared package dependencies:\n" + "\n".join(offenders)


def test_every_package_is_declared() -> None:
    packages = {_package_of(ROOT, p) for p in source_files(ROOT)} - {"__init__", "__main__"}
    assert packages <= set(ALLOWED), f"declare these in ALLOWED: {sorted(packages - set(ALLOWED))}"


def test_known_breaks_still_exist() -> None:
    edges = package_edges(ROOT)
    fixed = [f"{a} -> {b}" for a, b in KNOWN_BREAKS if (a, b) not in edges]
    assert not fixed, "fixed: delete these from KNOWN_BREAKS to lock the gain in: " + str(fixed)


def test_no_dependency_cycles_between_packages() -> None:
    edges = set(package_edges(ROOT)) - set(KNOWN_BREAKS)
    found = cycles(edges)
    assert not found, "package cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_only_the_cli_imports_the_composition_root() -> None:
    declared = sorted(a for a, allowed in ALLOWED.items() if SERVER in allowed)
    assert declared == ["cli"], f"only cli may declare {SERVER!r}, not {declared}"
    edges = package_edges(ROOT)
    assert ("cli", SERVER) in edges, "the CLI no longer starts the node through sparklog.server"
    wrong = [
        w for (a, b), where in sorted(edges.items()) if b == SERVER and a != "cli" for w in where
    ]
    assert not wrong, f"only cli may import {SERVER}, not:\n" + "\n".join(wrong)


def test_sans_io_cores_do_no_io() -> None:
    offenders = io_offenders(ROOT, SANS_IO)
    assert not offenders, "sans-IO layer does I/O:\n" + "\n".join(offenders)


# -- the checker, on a tree made to break the rules ------------------------------------------
def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def broken_tree(tmp_path: Path) -> Path:
    _write(tmp_path, "sparklog/__init__.py", "")
    _write(tmp_path, "sparklog/storage/__init__.py", "")
    _write(tmp_path, "sparklog/storage/log.py", "from sparklog.broker.partition import Partition\n")
    _write(
        tmp_path,
        "sparklog/storage/seg.py",
        "from ..net import server\nimport time\ntime.sleep(1)\n",
    )
    _write(tmp_path, "sparklog/protocol/__init__.py", "import asyncio\n")
    _write(tmp_path, "sparklog/broker/__init__.py", "")
    _write(tmp_path, "sparklog/broker/partition.py", "from sparklog.storage import log\n")
    _write(tmp_path, "sparklog/net/__init__.py", "")
    _write(tmp_path, "sparklog/net/server.py", "")
    return tmp_path


def test_the_guard_fails_on_an_upward_import(broken_tree: Path) -> None:
    edges = package_edges(broken_tree)
    assert ("storage", "broker") in edges and ("storage", "net") in edges  # relative resolved
    offenders = unlisted_edges(edges, {"storage": {"protocol"}, "broker": {"storage"}})
    assert any("storage imports broker" in o for o in offenders)
    assert any("storage imports net" in o for o in offenders)
    assert cycles(set(edges)) == [["broker", "storage", "broker"]]
    io = io_offenders(broken_tree, ("protocol", "storage"))
    assert any("imports asyncio" in o for o in io)
    assert any("time.sleep" in o for o in io)


def test_the_guard_fails_on_an_import_of_the_composition_root(tmp_path: Path) -> None:
    _write(tmp_path, "sparklog/__init__.py", "")
    _write(tmp_path, "sparklog/server/__init__.py", "")
    _write(tmp_path, "sparklog/server/node.py", "from sparklog.broker import apis\n")
    _write(tmp_path, "sparklog/broker/__init__.py", "")
    _write(tmp_path, "sparklog/broker/apis.py", "from ..server import node\n")
    offenders = unlisted_edges(package_edges(tmp_path), ALLOWED)
    assert offenders == [
        "sparklog/broker/apis.py:1: broker imports server (not in ALLOWED['broker'])"
    ]
