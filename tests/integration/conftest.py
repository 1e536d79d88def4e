"""Fixtures that run real sparklog nodes for integration tests.

- ``node_factory``: creates nodes under the test's tmp_path; every node it made is stopped (then
  killed if needed) at teardown, whatever the test did, and its log checked for a task that
  died unseen ("Task exception was never retrieved").
- ``node``: one fresh, started node per test.
- ``module_node``: one started node shared by a module (tests must use unique topic names).

When a test fails, the tail of each node's log is attached to the report. Set
``SPARKLOG_SKIP_INTEGRATION=1`` to skip this folder (e.g. while the node does not start yet).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path

import pytest

from tests.integration.node_harness import Node, assert_no_lost_task


class NodeFactory:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.nodes: list[Node] = []

    def create(self, overrides: Mapping[str, object] | None = None, start: bool = True) -> Node:
        node = Node(self.root / f"node{len(self.nodes)}", overrides)
        self.nodes.append(node)
        if start:
            node.start()
        return node

    def close(self) -> None:
        for node in self.nodes:
            node.close()
        for node in self.nodes:
            assert_no_lost_task(node.log_path)


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("SPARKLOG_SKIP_INTEGRATION") != "1":
        return
    skip = pytest.mark.skip(reason="SPARKLOG_SKIP_INTEGRATION=1")
    for item in items:
        if item.get_closest_marker("integration") is not None:
            item.add_marker(skip)


def _nodes_used_by(item: pytest.Item) -> Iterator[Node]:
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, Node):
            yield value
        elif isinstance(value, NodeFactory):
            yield from value.nodes


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, None, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed:
        seen: set[int] = set()
        for node in _nodes_used_by(item):
            if id(node) not in seen:
                seen.add(id(node))
                report.sections.append((f"sparklog node log {node.log_path}", node.log_tail()))


@pytest.fixture
def node_factory(tmp_path: Path) -> Iterator[NodeFactory]:
    factory = NodeFactory(tmp_path)
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture
def node(node_factory: NodeFactory) -> Node:
    return node_factory.create()


@pytest.fixture(scope="module")
def module_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    factory = NodeFactory(tmp_path_factory.mktemp("module-node"))
    try:
        yield factory.create()
    finally:
        factory.close()
