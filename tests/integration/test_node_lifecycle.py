"""The node's process contract: format, start, readiness, SIGTERM, SIGKILL and restart."""

from __future__ import annotations

import pytest

from tests.integration.node_harness import Node, probe_api_versions

pytestmark = pytest.mark.integration


def test_start_answers_api_versions(node: Node) -> None:
    assert probe_api_versions(node.host, node.port)
    assert (node.log_dir / "meta.properties").exists()


def test_sigterm_is_a_clean_exit_and_restart_works(node: Node) -> None:
    assert node.stop() == 0
    assert not probe_api_versions(node.host, node.port, timeout_s=0.5)
    node.start()
    assert probe_api_versions(node.host, node.port)


def test_restart_after_sigkill(node: Node) -> None:
    node.kill()
    node.start()
    assert probe_api_versions(node.host, node.port)
