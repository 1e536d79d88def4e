"""Run a real multi-process KRaft cluster (dedicated controllers + brokers) for integration tests.

Contract:
- ``Cluster(root, controllers=3, brokers=3, overrides=...)`` picks free loopback ports and
  writes one ``server.properties`` per node with Kafka's property names: controllers
  ``process.roles=controller`` (ids 1..C), brokers ``process.roles=broker`` (ids 101..),
  all with ``controller.quorum.bootstrap.servers`` naming every initial controller.
- ``format()`` does what an operator does (KIP-853): one ``storage random-uuid`` cluster id, one
  directory id per controller, controllers with ``--initial-controllers``, brokers with
  ``--no-initial-controllers``. ``start()`` formats on first use and starts every process
  through ``python -m sparklog.cli.main server start``; it returns once every controller
  answers ApiVersions on its controller listener and every broker on its client listener
  (brokers open it only once unfenced). Every wait is bounded.
- ``add_controller()`` formats and starts one more controller with
  ``--no-initial-controllers`` (an observer until ``metadata-quorum add-controller``).
- Nodes keep their ports and directories across ``kill()`` (SIGKILL) / ``start()``. Children
  get PR_SET_PDEATHSIG; ``close()`` stops the brokers, then the controllers; it never raises
  and leaves no process behind.
- Every node serves its metrics on ``sparklog.metrics.listener`` (a free loopback port of its
  own): ``node.metrics()`` reads them (``{mbean: {attribute: value}}``) through the CLI's client,
  ``node.metric(mbean, attribute)`` one value (``None`` while unreachable).
- ``running_cluster(root, ...)`` is the test fixtures' context: it starts the cluster, prints
  every node's log tail when start-up or the body fails, and always closes it; after a body
  that succeeded, no node's log may say "Task exception was never retrieved".
- ``wait_until(what, check)`` is the tests' bounded poll: it returns the first truthy result;
  ``consume_values(...)`` reads a partition from its start with confluent-kafka,
  ``partition_metadata(...)`` one partition's leader and ISR.
- ``describe()`` runs ``sparklog metadata-quorum describe --status`` (the real CLI, as a
  subprocess) against the running controllers and parses its lines.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparklog.cli.metadata_quorum_tool import QuorumClient, QuorumCommandError
from sparklog.cli.metrics_tool import MetricsToolError, fetch_metrics
from sparklog.protocol.kafka_uuid import random_uuid
from tests.integration.node_harness import (
    REPO_ROOT,
    NodeError,
    _die_with_parent,
    assert_no_lost_task,
    free_port,
    probe_api_versions,
)

READY_TIMEOUT_S = 45.0
CLI_TIMEOUT_S = 60.0
HOST = "127.0.0.1"
# Quick elections and a short broker session, for tests that kill nodes and wait for the
# cluster to notice.
FAST_SESSION_TIMEOUT_MS = 3000
FAST_FAILOVER = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "broker.session.timeout.ms": FAST_SESSION_TIMEOUT_MS,
    "broker.heartbeat.interval.ms": 500,
}
# FAST_FAILOVER and followers that drop out of the ISR (and fetch again) within seconds.
FAST_REPLICATION = {
    **FAST_FAILOVER,
    "replica.lag.time.max.ms": 4000,
    "replica.fetch.backoff.ms": 200,
    "replica.fetch.wait.max.ms": 200,
}
# Every topic replicated three times (min ISR 2), over elections and sessions of seconds.
REPLICATED_FAILOVER = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "broker.session.timeout.ms": 4000,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": 3000,
    "default.replication.factor": 3,
    "min.insync.replicas": 2,
    "offsets.topic.replication.factor": 3,
}


def cli(*args: str, timeout_s: float = CLI_TIMEOUT_S, check: bool = True) -> str:
    """Run ``sparklog <args>``; stdout (stderr appended on failure)."""
    cmd = [sys.executable, "-m", "sparklog.cli.main", *args]
    done = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, timeout=timeout_s, check=False)
    out = done.stdout.decode(errors="replace")
    if check and done.returncode != 0:
        raise NodeError(
            f"sparklog {' '.join(args)} failed (rc={done.returncode}):\n"
            + out
            + done.stderr.decode(errors="replace")[-4000:]
        )
    return out.strip()


class NodeFiles:
    """A node process's name, address and files in its ``workdir`` (``server.properties`` from
    ``props``, ``node.log``): shared by the cluster harness's and the chaos runner's nodes, whose
    dataclasses declare these fields."""

    node_id: int
    role: str  # "controller" or "broker"
    workdir: Path
    port: int
    props: dict[str, str]

    @property
    def name(self) -> str:
        return f"{self.role}-{self.node_id}"

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def properties_path(self) -> Path:
        return self.workdir / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.workdir / "node.log"

    def write_properties(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        text = "".join(f"{k}={v}\n" for k, v in self.props.items())
        self.properties_path.write_text(text)


@dataclass
class ClusterNode(NodeFiles):
    node_id: int
    role: str  # "controller" or "broker"
    workdir: Path
    port: int
    props: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    directory_id: str | None = None
    starts: int = 0
    metrics_port: int = field(default_factory=free_port)

    def launch(self) -> None:
        if self.is_running():
            raise NodeError(f"{self.name} already running")
        self.starts += 1
        with self.log_path.open("ab") as log:
            log.write(f"=== start #{self.starts} at {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "sparklog.cli.main",
                    "server",
                    "start",
                    str(self.properties_path),
                ],
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not probe_api_versions(HOST, self.port):
            if self.process is None or self.process.poll() is not None:
                raise NodeError(f"{self.name} exited during start-up:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise NodeError(f"{self.name} not ready after {timeout_s}s:\n{self.log_tail()}")
            time.sleep(0.1)

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
        self.process = None

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None

    @property
    def metrics_url(self) -> str:
        return f"http://{HOST}:{self.metrics_port}"

    def metrics(self) -> dict[str, dict[str, Any]]:
        return fetch_metrics(self.metrics_url, timeout_s=5.0)

    def metric(self, mbean: str, attribute: str = "Value") -> Any:
        try:
            return self.metrics().get(mbean, {}).get(attribute)
        except MetricsToolError:
            return None

    def wipe_metadata_log(self) -> None:
        """Delete this (stopped) node's ``__cluster_metadata-0`` (log, snapshots, quorum state)."""
        if self.is_running():
            raise NodeError(f"{self.name} is running")
        shutil.rmtree(self.workdir / "data" / "__cluster_metadata-0")

    def log_tail(self, max_bytes: int = 8000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return "<no log>"
        return data[-max_bytes:].decode(errors="replace")


class Cluster:
    def __init__(
        self,
        root: Path,
        controllers: int = 3,
        brokers: int = 3,
        overrides: Mapping[str, object] | None = None,
        controller_overrides: Mapping[str, object] | None = None,
        broker_overrides: Mapping[str, object] | None = None,
        bootstrap_features: Mapping[str, int] | None = None,
    ) -> None:
        self.root = root
        # feature levels the initial controllers bootstrap (`storage format --feature`)
        self.bootstrap_features = dict(bootstrap_features or {})
        self.overrides = {k: str(v) for k, v in (overrides or {}).items()}
        self.controller_overrides = {k: str(v) for k, v in (controller_overrides or {}).items()}
        self.broker_overrides = {k: str(v) for k, v in (broker_overrides or {}).items()}
        self.controllers = [
            ClusterNode(i, "controller", root / f"controller-{i}", free_port())
            for i in range(1, controllers + 1)
        ]
        self.brokers = [
            ClusterNode(100 + i, "broker", root / f"broker-{100 + i}", free_port())
            for i in range(1, brokers + 1)
        ]
        self.bootstrap_controllers = ",".join(c.address for c in self.controllers)
        self.cluster_id: str | None = None
        for node in self.nodes:
            node.props = self._properties(node)
            node.write_properties()

    @property
    def nodes(self) -> list[ClusterNode]:
        return [*self.controllers, *self.brokers]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self.brokers)

    @property
    def running_bootstrap_servers(self) -> str:
        """The client listeners of the brokers running now (one may be down on purpose)."""
        return ",".join(b.address for b in self.brokers if b.is_running())

    def _properties(self, node: ClusterNode) -> dict[str, str]:
        props = {
            "process.roles": node.role,
            "node.id": str(node.node_id),
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": self.bootstrap_controllers,
            "log.dirs": str(node.workdir / "data"),
            "sparklog.metrics.listener": f"{HOST}:{node.metrics_port}",
        }
        if node.role == "controller":
            props.update(
                {
                    "listeners": f"CONTROLLER://{node.address}",
                    "advertised.listeners": f"CONTROLLER://{node.address}",
                    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                }
            )
            props.update(self.overrides)
            props.update(self.controller_overrides)
        else:
            props.update(
                {
                    "listeners": f"PLAINTEXT://{node.address}",
                    "advertised.listeners": f"PLAINTEXT://{node.address}",
                    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    "inter.broker.listener.name": "PLAINTEXT",
                    "num.partitions": "3",
                    "offsets.topic.replication.factor": "1",
                    "transaction.state.log.replication.factor": "1",
                    "transaction.state.log.min.isr": "1",
                }
            )
            props.update(self.overrides)
            props.update(self.broker_overrides)
        return props

    def format(self) -> None:
        # The ids `storage random-uuid` prints, made in-process (the subcommand has tests of its
        # own), and the nodes' `storage format` runs side by side: each is its own interpreter
        # start, ten in a row for a 3+3 cluster before.
        self.cluster_id = random_uuid()
        for controller in self.controllers:
            controller.directory_id = random_uuid()
        initial = ",".join(f"{c.node_id}@{c.address}:{c.directory_id}" for c in self.controllers)
        flags = self.controller_format_flags()
        jobs = [(c, ("--initial-controllers", initial, *flags)) for c in self.controllers]
        jobs += [(b, ("--no-initial-controllers",)) for b in self.brokers]
        with ThreadPoolExecutor(len(jobs)) as pool:
            for done in [pool.submit(self._format, node, *how) for node, how in jobs]:
                done.result()

    def controller_format_flags(self) -> tuple[str, ...]:
        """Extra ``storage format`` flags of the initial controllers (e.g. ``--add-scram``)."""
        return ()

    def node_ready(self, node: ClusterNode) -> None:
        """Returns once ``node`` answers on its listener (bounded; NodeError otherwise)."""
        node.wait_ready()

    def _format(self, node: ClusterNode, *flags: str) -> None:
        assert self.cluster_id is not None
        if "--initial-controllers" in flags:
            for name, level in sorted(self.bootstrap_features.items()):
                flags = (*flags, "--feature", f"{name}={level}")
        cli(
            "storage",
            "format",
            "--cluster-id",
            self.cluster_id,
            "--config",
            str(node.properties_path),
            *flags,
        )

    def start(self) -> None:
        if self.cluster_id is None:
            self.format()
        for node in self.nodes:
            if not node.is_running():
                node.launch()
        for node in self.nodes:
            self.node_ready(node)

    def add_controller(
        self, node_id: int, extra_props: Mapping[str, object] | None = None
    ) -> ClusterNode:
        """Format (``--no-initial-controllers``) and start one more controller."""
        node = ClusterNode(node_id, "controller", self.root / f"controller-{node_id}", free_port())
        node.props = self._properties(node)
        node.props.update({k: str(v) for k, v in (extra_props or {}).items()})
        node.write_properties()
        self._format(node, "--no-initial-controllers")
        meta = (node.workdir / "data" / "meta.properties").read_text()
        node.directory_id = next(
            line.split("=", 1)[1] for line in meta.splitlines() if line.startswith("directory.id=")
        )
        self.controllers.append(node)
        node.launch()
        self.node_ready(node)
        return node

    def running_controllers(self) -> list[ClusterNode]:
        return [c for c in self.controllers if c.is_running()]

    def metadata_quorum(self, *args: str, check: bool = True) -> str:
        target = self.running_controllers()[0]
        return cli("metadata-quorum", "--bootstrap-controller", target.address, *args, check=check)

    def describe(self) -> dict[str, Any]:
        """``describe --status`` parsed: LeaderId etc. as ints, the voter/observer lists."""
        out = self.metadata_quorum("describe", "--status")
        status: dict[str, Any] = {}
        for line in out.splitlines():
            name, _, value = line.partition(":")
            value = value.strip()
            if name in ("CurrentVoters", "CurrentObservers"):
                status[name] = json.loads(value)
            elif name == "ClusterId":
                status[name] = value
            elif name:
                status[name] = int(value)
        return status

    def leader_id(self, timeout_s: float = 30.0, *, other_than: int | None = None) -> int:
        """The KRaft leader once one is elected (and differs from ``other_than``).

        Polls DescribeQuorum in-process (the CLI's own client, without a Python start-up per
        poll) so kill -> new-leader times are measured finely.
        """
        deadline = time.monotonic() + timeout_s
        last: object = None
        while time.monotonic() < deadline:
            for node in self.running_controllers():
                try:
                    partition, _, _ = QuorumClient(node.address, via_broker=False).describe(
                        attempts=1
                    )
                except (QuorumCommandError, OSError, ConnectionError) as exc:
                    last = exc
                    continue
                leader = int(partition["leader_id"])
                if leader >= 0 and leader != other_than:
                    return leader
                last = leader
            time.sleep(0.02)
        raise NodeError(f"no new KRaft leader after {timeout_s}s (last: {last})")

    def controller(self, node_id: int) -> ClusterNode:
        return next(c for c in self.controllers if c.node_id == node_id)

    def broker(self, node_id: int) -> ClusterNode:
        return next(b for b in self.brokers if b.node_id == node_id)

    def close(self) -> None:
        # Brokers first, while the controllers can still grant their controlled shutdowns
        # (with the controllers gone, each broker waits out its controlled-shutdown timeout).
        for node in [*self.brokers, *self.controllers]:
            with contextlib.suppress(Exception):
                node.stop(timeout_s=15.0)
            with contextlib.suppress(Exception):
                node.kill()


def create_topic(
    cluster: Cluster,
    topic: str,
    partitions: int = 1,
    replicas: int = 3,
    config: Mapping[str, str] | None = None,
) -> None:
    """Create ``topic`` through the cluster's brokers (confluent-kafka's admin client) and wait
    for the answer."""
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    new = NewTopic(topic, partitions, replicas, config=dict(config or {}))
    client.create_topics([new], operation_timeout=30)[topic].result(timeout=60)


def partition_metadata(cluster: Cluster, topic: str, index: int = 0) -> Any:
    """confluent-kafka's metadata of ``topic``-``index`` (``leader``, ``replicas``, ``isrs``),
    as the running brokers answer it."""
    from confluent_kafka.admin import AdminClient

    client = AdminClient({"bootstrap.servers": cluster.running_bootstrap_servers, "log_level": 0})
    return client.list_topics(topic=topic, timeout=10).topics[topic].partitions[index]


def consume_values(
    bootstrap: str, topic: str, partition: int, at_least: int, timeout_s: float = 60.0
) -> list[bytes]:
    """Read ``topic``-``partition`` from offset 0 with confluent-kafka until ``at_least`` values
    arrived or ``timeout_s`` passed; the values in offset order."""
    import confluent_kafka  # the cluster tests that read records all need it

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 0,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, partition, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(values) < at_least and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            values.append(msg.value() or b"")
    finally:
        consumer.close()
    return values


def wait_until(
    what: str,
    check: Callable[[], Any],
    timeout_s: float = 60.0,
    *,
    interval_s: float = 0.1,
    tolerate: tuple[type[Exception], ...] = (),
) -> Any:
    """Poll ``check`` until it returns something truthy, and return that; AssertionError
    naming ``what`` (and the last value seen) after ``timeout_s``. Exceptions of the
    ``tolerate`` types count as "not yet" (a node restarting answers nothing for a moment)."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while True:
        try:
            last = check()
        except tolerate as exc:
            last = exc
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what} (last: {last})")
        time.sleep(interval_s)


@contextlib.contextmanager
def running_cluster(
    root: Path,
    controllers: int,
    brokers: int,
    overrides: Mapping[str, object],
    *,
    prepare: Callable[[Cluster], None] | None = None,
    bootstrap_features: Mapping[str, int] | None = None,
) -> Iterator[Cluster]:
    """A started ``Cluster`` for the body, closed after it; node logs shown on a failure (a
    start-up failure is otherwise only a timeout). ``prepare`` may change nodes' ``props``
    (then ``write_properties()``) before the first start, e.g. to place their directories;
    ``bootstrap_features`` are finalized from the start (e.g. ``{"share.version": 1}``)."""
    cluster = Cluster(
        root,
        controllers=controllers,
        brokers=brokers,
        overrides=overrides,
        bootstrap_features=bootstrap_features,
    )
    try:
        if prepare is not None:
            prepare(cluster)
        cluster.start()
        yield cluster
        cluster.close()
        for node in cluster.nodes:
            assert_no_lost_task(node.log_path)
    except Exception:
        for node in cluster.nodes:
            print(f"----- {node.name} -----\n{node.log_tail()}")
        raise
    finally:
        cluster.close()
