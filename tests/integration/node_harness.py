"""Run a real sparklog node as a subprocess for integration tests and benchmarks.

Contract:
- ``Node(workdir, overrides)`` picks two free loopback ports (PLAINTEXT and CONTROLLER), writes
  ``workdir/server.properties`` with Kafka's property names (``overrides`` win), and keeps the
  same ports, log dir and cluster id across restarts so clients can reconnect.
- ``start()`` formats storage on first use (a fresh cluster id made in-process, then
  ``sparklog storage format``), launches ``python -m sparklog.cli.main server start`` with
  stdout and stderr appended to ``workdir/node.log``, and returns once the PLAINTEXT listener
  answers ApiVersions (then allows Metadata a short grace period to list a broker), or raises
  ``NodeError`` carrying the log tail. Every wait is bounded.
- ``stop()`` is SIGTERM plus a bounded wait (escalating to SIGKILL, then raising); ``kill()`` is
  SIGKILL. The child gets PR_SET_PDEATHSIG so a crashed test run never leaves a node behind.
- ``assert_no_lost_task(log_path)``: the fixtures' closing check that a node's log never says
  "Task exception was never retrieved".
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from sparklog.protocol.kafka_uuid import random_uuid
from tests.integration import wire

REPO_ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
METADATA_GRACE_S = 10.0
FORMAT_TIMEOUT_S = 60.0


class NodeError(RuntimeError):
    """The node failed to format, start, become ready or stop in time."""


# asyncio's report of a task that died with nobody looking (sparklog.fault supervises every
# long-running task, so this line in a node's log is a bug).
LOST_TASK_MESSAGE = "Task exception was never retrieved"


def assert_no_lost_task(log_path: Path) -> None:
    """AssertionError if the node log at ``log_path`` reports a task exception nobody saw."""
    try:
        text = log_path.read_bytes().decode(errors="replace")
    except OSError:
        return
    at = text.find(LOST_TASK_MESSAGE)
    assert at < 0, f"{log_path}: {text[max(at - 2000, 0) : at + 4000]}"


# Listener ports come from below the kernel's ephemeral range (32768-60999 by default): a port
# the kernel hands out as ephemeral can be taken by any outgoing connection between the moment
# it is picked and the moment a node binds it ("address already in use" at start-up).
_LISTENER_PORTS = range(20000, 32768)
_handed_out: set[int] = set()
_port_rng = random.Random(os.getpid() ^ time.monotonic_ns())


def free_port() -> int:
    """A loopback port nothing listens on, never handed out twice by this process."""
    for _ in range(1000):
        port = _port_rng.choice(_LISTENER_PORTS)
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free loopback port in {_LISTENER_PORTS}")


def _die_with_parent() -> None:
    # Linux only; elsewhere the harness still cleans up through fixtures.
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


def probe_api_versions(host: str, port: int, timeout_s: float = 2.0) -> bool:
    """True when ``host:port`` answers an ApiVersions v0 request with error code 0."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(wire.api_versions_v0(correlation_id=7))
            correlation_id, body = wire.recv_response(sock)
            return correlation_id == 7 and wire.api_versions_error_code(body) == 0
    except (OSError, ConnectionError, ValueError, IndexError):
        return False
    except Exception:  # struct.error and friends: a garbled answer is "not ready"
        return False


def _metadata_lists_broker(bootstrap: str, timeout_s: float) -> bool:
    try:
        from confluent_kafka.admin import AdminClient
    except ImportError:
        return True
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        metadata = admin.list_topics(timeout=timeout_s)
        return len(metadata.brokers) > 0
    except Exception:
        return False


class Node:
    """One combined broker+controller sparklog process."""

    def __init__(
        self,
        workdir: Path,
        overrides: Mapping[str, object] | None = None,
        node_id: int = 1,
    ) -> None:
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.node_id = node_id
        self.port = free_port()
        self.controller_port = free_port()
        self.log_dir = workdir / "data"
        self.properties_path = workdir / "server.properties"
        self.log_path = workdir / "node.log"
        self.overrides: dict[str, str] = {k: str(v) for k, v in (overrides or {}).items()}
        self.process: subprocess.Popen[bytes] | None = None
        self.cluster_id: str | None = None
        # feature levels `storage format --feature` bootstraps (set before the first start)
        self.bootstrap_features: dict[str, int] = {}
        # `storage format --release-version` (None: the node's default metadata.version)
        self.release_version: str | None = None
        self.starts = 0
        self._write_properties()

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        if self.process is None:
            raise NodeError("node is not running")
        return self.process.pid

    @property
    def properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "listeners": (
                f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            # Dynamic quorum (KIP-853): `format --standalone` rejects controller.quorum.voters.
            "controller.quorum.bootstrap.servers": f"{self.host}:{self.controller_port}",
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "auto.create.topics.enable": "true",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
        }
        props.update(self.overrides)
        return props

    def _write_properties(self) -> None:
        lines = [f"{key}={value}" for key, value in self.properties.items()]
        self.properties_path.write_text("\n".join(lines) + "\n")

    def _cli(self, *args: str, timeout_s: float = FORMAT_TIMEOUT_S) -> str:
        cmd = [sys.executable, "-m", "sparklog.cli.main", *args]
        try:
            done = subprocess.run(
                cmd,
                cwd=REPO_ROOT,
                capture_output=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise NodeError(f"{' '.join(args)} timed out after {timeout_s}s") from exc
        output = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
        with self.log_path.open("a") as log:
            log.write(f"=== $ sparklog {' '.join(args)} (rc={done.returncode})\n{output}\n")
        if done.returncode != 0:
            raise NodeError(f"sparklog {' '.join(args)} failed (rc={done.returncode}):\n{output}")
        return done.stdout.decode().strip()

    def format(self) -> None:
        # The id `storage random-uuid` would print, made in-process: one interpreter start less
        # per node (the subcommand has tests of its own; `storage format` still runs the CLI).
        self.cluster_id = random_uuid()
        self._cli(
            "storage",
            "format",
            "--cluster-id",
            self.cluster_id,
            "--config",
            str(self.properties_path),
            "--standalone",
            *(("--release-version", self.release_version) if self.release_version else ()),
            *(
                arg
                for name, level in sorted(self.bootstrap_features.items())
                for arg in ("--feature", f"{name}={level}")
            ),
        )

    def start(self, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        if self.process is not None and self.process.poll() is None:
            raise NodeError("node already running")
        if self.cluster_id is None:
            self.format()
        self.starts += 1
        log = self.log_path.open("ab")
        log.write(f"=== start #{self.starts} at {time.strftime('%H:%M:%S')}\n".encode())
        log.flush()
        cmd = [sys.executable, "-m", "sparklog.cli.main", "server", "start"]
        try:
            self.process = subprocess.Popen(
                [*cmd, str(self.properties_path)],
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        finally:
            log.close()
        self.wait_ready(ready_timeout_s)

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Block until ApiVersions is answered (the contract's readiness), then give Metadata a
        short, non-fatal grace period to list a broker so the first client call does not race
        the broker's registration. A node that never serves Metadata fails in the tests that
        use it, with the client's own error, rather than here."""
        deadline = time.monotonic() + timeout_s
        while not probe_api_versions(self.host, self.port):
            self._check_alive()
            if time.monotonic() >= deadline:
                self.kill()
                raise NodeError(f"no ApiVersions answer after {timeout_s}s:\n{self.log_tail()}")
            time.sleep(0.1)
        grace = time.monotonic() + METADATA_GRACE_S
        while time.monotonic() < grace and not _metadata_lists_broker(self.bootstrap, 2.0):
            self._check_alive()
            time.sleep(0.1)

    def _check_alive(self) -> None:
        if self.process is None or self.process.poll() is not None:
            code = None if self.process is None else self.process.returncode
            raise NodeError(f"node exited during start-up (rc={code}):\n{self.log_tail()}")

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: a crash, no chance to flush or write the clean-shutdown marker."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT_S)
        self.process = None

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """Graceful shutdown (SIGTERM); returns the exit code. Raises if it had to SIGKILL."""
        if self.process is None:
            return 0
        process = self.process
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired as exc:
                self.kill()
                raise NodeError(f"node ignored SIGTERM for {timeout_s}s; killed") from exc
        self.process = None
        return int(process.returncode)

    def restart(self, graceful: bool = True) -> None:
        if graceful:
            self.stop()
        else:
            self.kill()
        self.start()

    def close(self) -> None:
        """Fixture teardown: never raises, always leaves no process behind."""
        with contextlib.suppress(Exception):
            self.stop(timeout_s=10.0)
        with contextlib.suppress(Exception):
            self.kill()

    def log_tail(self, max_bytes: int = 20_000) -> str:
        try:
            with self.log_path.open("rb") as log:
                log.seek(0, os.SEEK_END)
                size = log.tell()
                log.seek(max(0, size - max_bytes))
                return log.read().decode(errors="replace")
        except OSError:
            return "<no node log>"

    def partition_dir(self, topic: str, partition: int) -> Path:
        return self.log_dir / f"{topic}-{partition}"

    def segment_files(self, topic: str, partition: int) -> list[Path]:
        """The partition's ``<20-digit base offset>.log`` files, oldest first."""
        files = [
            path
            for path in self.partition_dir(topic, partition).glob("*.log")
            if len(path.stem) == 20 and path.stem.isdigit()
        ]
        return sorted(files, key=lambda path: int(path.stem))

    def fd_count(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def memory_kib(self) -> dict[str, int]:
        """VmRSS and VmHWM (peak RSS) of the node, in KiB."""
        result: dict[str, int] = {}
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    result[key] = int(rest.split()[0])
        return result
