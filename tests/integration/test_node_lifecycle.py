"""The node's process contract: format, start, readiness, SIGTERM, SIGKILL and restart."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.integration.node_harness import Node, probe_api_versions

pytestmark = pytest.mark.integration


def test_start_answers_api_versions(node: Node) -> None:
    assert probe_api_versions(node.host, node.port)
    assert (node.log_dir / "meta.properties").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc are Linux's")
def test_node_process_opts_out_of_transparent_huge_pages(node: Node) -> None:
    # sparklog.server.memory: the kernel reports the process's PR_SET_THP_DISABLE here
    status = Path(f"/proc/{node.pid}/status").read_text()
    if "THP_enabled:" not in status:
        pytest.skip("this kernel does not report THP_enabled (Linux < 5.0)")
    assert status.split("THP_enabled:", 1)[1].split()[0] == "0"


def test_sigterm_is_a_clean_exit_and_restart_works(node: Node) -> None:
    assert node.stop() == 0
    assert not probe_api_versions(node.host, node.port, timeout_s=0.5)
    node.start()
    assert probe_api_versions(node.host, node.port)


def test_restart_after_sigkill(node: Node) -> None:
    node.kill()
    node.start()
    assert probe_api_versions(node.host, node.port)
