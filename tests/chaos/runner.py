"""The chaos cluster: 3 controllers and 3 brokers as real ``sparklog server start`` processes.

Contract:

- ``ChaosCluster(root, privileged=...)`` picks free loopback ports and writes one
  ``server.properties`` per node (Kafka's names, as ``tests/integration/cluster_harness.py``
  does): controllers ``process.roles=controller`` (ids 1-3) formatted with
  ``--initial-controllers``, brokers ``process.roles=broker`` (ids 101-103) formatted with
  ``--no-initial-controllers``, every node given ``controller.quorum.bootstrap.servers``,
  with ``--release-version 4.1`` (eligible leader replicas on, see ``RELEASE_VERSION``).
  Timeouts are scaled for 2 shared cores (``TIMINGS``); RF 3 and ``min.insync.replicas=2`` for
  every topic, the internal ones included.
- When ``privileged`` (root), each node runs with a group id of its own (``GID_BASE + i``) so a
  network cut can drop its outbound packets by ``-m owner --gid-owner``, and each broker's data
  dir is a small tmpfs of its own (for the disk-full fault). Unprivileged, neither is done.
- A node is never hidden: ``exit_code()`` tells whether it died on its own, ``log_tail()``
  shows why, and every wait is bounded and raises :class:`ChaosError` with the log tail.
- ``close()`` continues paused nodes, kills every node it started, removes the iptables
  chains and unmounts the tmpfs mounts; it never raises. A state file
  (``/tmp/sparklog-chaos-state.json``) names the pids, mounts and chains of the running
  harness, so :func:`cleanup_stale` at the start of the next run removes what a killed harness
  left behind (and refuses to start while that harness still runs).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.integration.cluster_harness import NodeFiles, cli
from tests.integration.node_harness import REPO_ROOT, _die_with_parent, free_port
from tests.integration.node_harness import probe_api_versions as answers_api_versions

HOST = "127.0.0.1"
GID_BASE = 61000
TMPFS_SIZE = "192m"  # 10 minutes of the workload fit; the disk_full fault fills the rest
CHAIN_IN = "SPARKLOG_CHAOS_IN"
CHAIN_OUT = "SPARKLOG_CHAOS_OUT"
STATE_FILE = Path("/tmp/sparklog-chaos-state.json")
READY_TIMEOUT_S = 60.0
# 4.1 bootstraps eligible.leader.replicas.version=1 (KIP-966), as Kafka 4.1 does for new
# clusters: a broker that restarts after an unclean shutdown leaves every ISR until it has caught
# up. Under 4.0's rules it stays in the ISR with whatever its log recovery kept, so a torn tail
# on it followed by the loss of the leader loses acknowledged records (Kafka 4.0 has the same
# hole, the reason for KIP-966); the torn_tail fault needs 4.1's rules to be survivable.
RELEASE_VERSION = "4.1"

# Scaled for 6 Python processes plus the clients on 2 shared cores (about x2-x3 of the
# integration tests): a paused or starved node should not be fenced by every hiccup.
TIMINGS: dict[str, object] = {
    "controller.quorum.election.timeout.ms": 1500,
    "controller.quorum.fetch.timeout.ms": 3000,
    "broker.session.timeout.ms": 6000,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": 4000,
    "default.replication.factor": 3,
    "min.insync.replicas": 2,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 3,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "transaction.state.log.num.partitions": 3,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 2000,
    "log.segment.bytes": 1048576,
    "group.initial.rebalance.delay.ms": 0,
    "unclean.leader.election.enable": "false",
    "auto.leader.rebalance.enable": "true",
    "leader.imbalance.check.interval.seconds": 10,
}


class ChaosError(RuntimeError):
    """A node failed to format, start or become ready in time."""


def is_root() -> bool:
    return os.geteuid() == 0


@dataclass
class ChaosNode(NodeFiles):
    node_id: int
    role: str  # "controller" or "broker"
    workdir: Path
    port: int
    gid: int | None
    props: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    paused: bool = False
    killed_by_us: bool = False
    tmpfs: bool = False

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def launch(self) -> None:
        if self.is_running():
            raise ChaosError(f"{self.name} already running")
        self.starts += 1
        self.paused = False
        self.killed_by_us = False
        with self.log_path.open("ab") as log:
            log.write(f"=== chaos start #{self.starts} at {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            cmd = [sys.executable, "-m", "sparklog.cli.main", "server", "start"]
            self.process = subprocess.Popen(
                [*cmd, str(self.properties_path)],
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
                group=self.gid,
                extra_groups=[] if self.gid is not None else None,
            )

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not answers_api_versions(HOST, self.port, timeout_s=1.0):
            if self.exit_code() is not None:
                raise ChaosError(f"{self.name} exited during start-up:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise ChaosError(f"{self.name} not ready after {timeout_s}s:\n{self.log_tail()}")
            time.sleep(0.2)

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def exit_code(self) -> int | None:
        """The exit status when the process ended (on its own or killed), else None."""
        if self.process is None:
            return None
        return self.process.poll()

    def signal(self, signum: int) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signum)

    def kill(self) -> None:
        """SIGKILL (a paused process dies too) and reap."""
        if self.process is not None and self.process.poll() is None:
            self.killed_by_us = True
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
        self.paused = False

    def terminate(self, timeout_s: float = 20.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.killed_by_us = True
        self.resume()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        if self.paused:
            self.signal(signal.SIGCONT)
        self.paused = False

    def log_tail(self, max_bytes: int = 6000) -> str:
        try:
            with self.log_path.open("rb") as log:
                log.seek(0, os.SEEK_END)
                log.seek(max(0, log.tell() - max_bytes))
                return log.read().decode(errors="replace")
        except OSError:
            return "<no log>"


def _run(*cmd: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(list(cmd), capture_output=True, timeout=30, check=False)


def iptables(*args: str) -> None:
    done = _run("iptables", "-w", "5", *args)
    if done.returncode != 0:
        raise ChaosError(f"iptables {' '.join(args)}: {done.stderr.decode(errors='replace')}")


def remove_chains() -> None:
    """Unhook and delete our two chains (nothing else is touched); silent when absent."""
    for parent, chain in (("INPUT", CHAIN_IN), ("OUTPUT", CHAIN_OUT)):
        while _run("iptables", "-w", "5", "-D", parent, "-j", chain).returncode == 0:
            pass
        _run("iptables", "-w", "5", "-F", chain)
        _run("iptables", "-w", "5", "-X", chain)


def cleanup_stale() -> list[str]:
    """Undo what a previous harness left (from its state file); what was done, for the log."""
    done: list[str] = []
    try:
        state = json.loads(STATE_FILE.read_text())
    except (OSError, ValueError):
        state = {}
    owner = state.get("harness_pid")
    if owner is not None and owner != os.getpid() and Path(f"/proc/{owner}").exists():
        raise ChaosError(
            f"another chaos run is in progress (pid {owner}, {state.get('root')}); "
            "one at a time: they would share iptables chains and node group ids"
        )
    for pid in state.get("pids", []):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"sparklog.cli.main" in cmdline and b"server" in cmdline:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
                done.append(f"killed stale node pid {pid}")
    if is_root():
        for mount in state.get("mounts", []):
            if _run("umount", "-l", mount).returncode == 0:
                done.append(f"unmounted {mount}")
        remove_chains()
    with contextlib.suppress(OSError):
        STATE_FILE.unlink()
    return done


class ChaosCluster:
    def __init__(self, root: Path, *, privileged: bool) -> None:
        self.root = root
        self.privileged = privileged
        self.controllers = [self._node(i, "controller", i) for i in range(1, 4)]
        self.brokers = [self._node(100 + i, "broker", 3 + i) for i in range(1, 4)]
        self.bootstrap_controllers = ",".join(c.address for c in self.controllers)
        self.cluster_id: str | None = None
        self.chains_installed = False
        for node in self.nodes:
            node.props = self._properties(node)

    def _node(self, node_id: int, role: str, index: int) -> ChaosNode:
        gid = GID_BASE + index if self.privileged else None
        return ChaosNode(node_id, role, self.root / f"{role}-{node_id}", free_port(), gid)

    @property
    def nodes(self) -> list[ChaosNode]:
        return [*self.controllers, *self.brokers]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self.brokers)

    def node(self, node_id: int) -> ChaosNode:
        return next(n for n in self.nodes if n.node_id == node_id)

    def _properties(self, node: ChaosNode) -> dict[str, str]:
        props = {
            "process.roles": node.role,
            "node.id": str(node.node_id),
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": self.bootstrap_controllers,
            "log.dirs": str(node.data_dir),
        }
        if node.role == "controller":
            props.update(
                {
                    "listeners": f"CONTROLLER://{node.address}",
                    "advertised.listeners": f"CONTROLLER://{node.address}",
                    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                }
            )
        else:
            props.update(
                {
                    "listeners": f"PLAINTEXT://{node.address}",
                    "advertised.listeners": f"PLAINTEXT://{node.address}",
                    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    "inter.broker.listener.name": "PLAINTEXT",
                    "num.partitions": "3",
                }
            )
        props.update({k: str(v) for k, v in TIMINGS.items()})
        return props

    def save_state(self) -> None:
        state = {
            "pids": [n.pid for n in self.nodes if n.pid is not None],
            "mounts": [str(b.data_dir) for b in self.brokers if b.tmpfs],
            "root": str(self.root),
            "harness_pid": os.getpid(),
        }
        STATE_FILE.write_text(json.dumps(state))

    def prepare(self) -> None:
        """Mount the brokers' tmpfs data dirs, install the (empty) chains, write and format."""
        for node in self.nodes:
            node.write_properties()
        if self.privileged:
            for broker in self.brokers:
                broker.data_dir.mkdir(parents=True, exist_ok=True)
                done = _run(
                    "mount",
                    "-t",
                    "tmpfs",
                    "-o",
                    f"size={TMPFS_SIZE}",
                    "tmpfs",
                    str(broker.data_dir),
                )
                if done.returncode != 0:
                    raise ChaosError(f"mount tmpfs: {done.stderr.decode(errors='replace')}")
                broker.tmpfs = True
            remove_chains()
            iptables("-N", CHAIN_IN)
            iptables("-N", CHAIN_OUT)
            iptables("-I", "INPUT", "-j", CHAIN_IN)
            iptables("-I", "OUTPUT", "-j", CHAIN_OUT)
            self.chains_installed = True
        self.save_state()
        self.cluster_id = cli("storage", "random-uuid").splitlines()[-1]
        directory_ids = {
            c.node_id: cli("storage", "random-uuid").splitlines()[-1] for c in self.controllers
        }
        initial = ",".join(
            f"{c.node_id}@{c.address}:{directory_ids[c.node_id]}" for c in self.controllers
        )
        for node in self.nodes:
            flags = (
                ["--initial-controllers", initial]
                if node.role == "controller"
                else ["--no-initial-controllers"]
            )
            cli(
                "storage",
                "format",
                "--cluster-id",
                self.cluster_id,
                "--config",
                str(node.properties_path),
                "--release-version",
                RELEASE_VERSION,
                *flags,
            )

    def start(self) -> None:
        for node in self.nodes:
            if not node.is_running():
                node.launch()
        self.save_state()
        for node in self.nodes:
            node.wait_ready()

    def restart(self, node: ChaosNode, *, wait: bool = True) -> None:
        node.launch()
        self.save_state()
        if wait:
            node.wait_ready()

    # -- network cuts (root only) -------------------------------------------------------------
    def isolate(self, node: ChaosNode) -> None:
        """Drop everything the node sends (by its gid) and every packet to its port."""
        if not self.chains_installed or node.gid is None:
            raise ChaosError("network cuts need root (iptables and a gid per node)")
        iptables("-A", CHAIN_OUT, "-m", "owner", "--gid-owner", str(node.gid), "-j", "DROP")
        iptables("-A", CHAIN_IN, "-p", "tcp", "--dport", str(node.port), "-j", "DROP")

    def rejoin(self, node: ChaosNode) -> None:
        """Remove this node's two rules (other cuts stay)."""
        if not self.chains_installed or node.gid is None:
            return
        iptables("-D", CHAIN_OUT, "-m", "owner", "--gid-owner", str(node.gid), "-j", "DROP")
        iptables("-D", CHAIN_IN, "-p", "tcp", "--dport", str(node.port), "-j", "DROP")

    def heal_network(self) -> None:
        if self.chains_installed:
            iptables("-F", CHAIN_IN)
            iptables("-F", CHAIN_OUT)

    def close(self) -> None:
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.resume()
        if self.chains_installed:
            with contextlib.suppress(Exception):
                remove_chains()
            self.chains_installed = False
        for node in self.nodes:  # SIGTERM to all at once, then 10 s in all before SIGKILL
            if node.is_running():
                node.killed_by_us = True
                node.signal(signal.SIGTERM)
        deadline = time.monotonic() + 10.0
        for node in self.nodes:
            with contextlib.suppress(Exception):
                if node.process is not None:
                    node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(Exception):
                node.kill()
        for broker in self.brokers:
            if broker.tmpfs:
                with contextlib.suppress(Exception):
                    _run("umount", "-l", str(broker.data_dir))
                broker.tmpfs = False
        with contextlib.suppress(OSError):
            STATE_FILE.unlink()
