"""The container image's entry point, run for real: it formats on first start, keeps the data
on the next start, refuses to guess a cluster id, and hands SIGTERM to the node (exec).

The image itself cannot be built here (no container runtime); the script is the part of it
with behaviour, so it runs against the checkout's CLI through ``SPARKLOG_BIN``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.integration.node_harness import REPO_ROOT, free_port, probe_api_versions

ENTRYPOINT = REPO_ROOT / "deploy" / "docker" / "entrypoint.sh"
READY_TIMEOUT_S = 60.0


def _write_config(tmp_path: Path) -> tuple[Path, int]:
    port, controller_port = free_port(), free_port()
    config = tmp_path / "server.properties"
    config.write_text(
        "\n".join(
            [
                "process.roles=broker,controller",
                "node.id=1",
                f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                f"controller.quorum.bootstrap.servers=127.0.0.1:{controller_port}",
                f"log.dirs={tmp_path / 'data'}",
                "offsets.topic.replication.factor=1",
                "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1",
                "sparklog.read.listener=disabled",
                "",
            ]
        )
    )
    return config, port


def _env(config: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLUSTER_ID",)}
    env.update(
        SPARKLOG_CONFIG=str(config),
        SPARKLOG_BIN=f"{sys.executable} -m sparklog.cli.main",
        PYTHONPATH=str(REPO_ROOT),
        **extra,
    )
    return env


def _start(config: Path, log: Path, **extra: str) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            ["sh", str(ENTRYPOINT)],
            env=_env(config, **extra),
            stdout=out,
            stderr=out,
            cwd=REPO_ROOT,
        )


def _wait_serving(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"node exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        if probe_api_versions("127.0.0.1", port):
            return
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"node never served:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def test_entrypoint_formats_once_then_restarts_on_its_data(tmp_path: Path) -> None:
    config, port = _write_config(tmp_path)
    log = tmp_path / "node.log"
    cluster_id = subprocess.run(
        [sys.executable, "-m", "sparklog.cli.main", "storage", "random-uuid"],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    ).stdout.strip()

    proc = _start(config, log, CLUSTER_ID=cluster_id, SPARKLOG_STANDALONE="true")
    _wait_serving(proc, port, log)
    # exec: the shell was replaced by the node, which shuts down cleanly on SIGTERM.
    assert _stop(proc) == 0
    meta = (tmp_path / "data" / "meta.properties").read_text()
    assert f"cluster.id={cluster_id}" in meta

    # Second start: already formatted, so no CLUSTER_ID is needed and the data is kept.
    proc = _start(config, log)
    _wait_serving(proc, port, log)
    assert _stop(proc) == 0
    assert (tmp_path / "data" / "meta.properties").read_text() == meta


def test_entrypoint_refuses_an_unformatted_node_without_a_cluster_id(tmp_path: Path) -> None:
    config, _ = _write_config(tmp_path)
    result = subprocess.run(
        ["sh", str(ENTRYPOINT)],
        env=_env(config),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 2
    assert "CLUSTER_ID is not set" in result.stderr
    assert not (tmp_path / "data" / "meta.properties").exists()
