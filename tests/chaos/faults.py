"""The nemesis: faults drawn from a seeded random schedule, each logged, each healed.

Contract:

- ``Nemesis(cluster, history, rng)`` runs on the harness's main thread: every ``interval_s``
  (while fewer than ``max_active`` faults are in force) it injects the kind that ran least so
  far (seeded ties; a kind with no eligible target now is passed over, but no kind runs more
  than ``MAX_LEAD`` ahead of the least-run one), holds it for
  ``hold_s`` and heals it, so faults overlap (each on a node of its own). Every injection and
  heal is an ``info`` op of process ``nemesis`` (``f`` = the kind, ``value`` = what was done,
  with ``phase`` ``start``/``heal``); ``counts`` holds how many of each kind ran, ``overlap``
  how many began while another fault was in force. A killed node is relaunched at its heal
  without waiting: it is a target again once it answers ApiVersions (or ``restart_failed``
  after ``READY_TIMEOUT_S``). ``beat`` is called on every turn of the loop (the watchdog).
- Limits that keep the cluster recoverable: a fault that takes a broker down (``kill_leader``,
  ``torn_tail``, ``disk_full``) only while at most one other broker is impaired (down,
  restarting, back from a broker-down fault less than ``SETTLE_S`` ago, or missing from some
  partition's ISR per the Metadata of any healthy broker; a paused or cut-off broker keeps its
  in-sync copy), so one broker always holds every partition in sync; a controller fault only
  while every controller is healthy.
- Kinds: ``kill_leader`` (SIGKILL of a partition leader found with Metadata, restarted after
  the hold), ``kill_controller`` (SIGKILL of the active controller found with DescribeQuorum),
  ``pause`` (SIGSTOP/SIGCONT of any node), ``torn_tail`` (SIGKILL of a leader, then its active
  segments are cut by a few bytes and/or get random garbage appended before the restart; only
  while the other brokers are healthy, so acks=all data still has two good copies),
  ``partition`` (one node cut off with iptables, root only), ``disk_full`` (a broker's tmpfs
  data dir filled by a filler file, then freed; root only), ``overlap`` (two of the above at
  once, possibly of one kind on two nodes: any kinds overlap now). Kinds that cannot run here
  are in ``skipped``
  with the reason (``clock_jump``: the box
  has one clock shared with everyone, and sparklog has no per-process clock offset).
- Nothing is hidden: a node that exits on its own is recorded (``node_exited``, with its status
  and log tail) and restarted; an exit while its disk was full is expected (Kafka halts on a
  failed log dir), any other one counts in ``crashes``. A restart that fails is recorded
  (``restart_failed``) and retried by :meth:`heal_all`.
- :meth:`heal_all` is the final heal: resume every node, remove every network cut, free every
  disk, restart every stopped node and wait (bounded) until each answers.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.chaos import probes
from tests.chaos.history import History
from tests.chaos.runner import HOST, READY_TIMEOUT_S, ChaosCluster, ChaosError, ChaosNode, is_root
from tests.integration.node_harness import probe_api_versions as answers_api_versions

FILLER_NAME = "chaos-disk-filler"
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
KINDS = ("kill_leader", "kill_controller", "pause", "partition", "disk_full", "torn_tail")
TICK_S = 0.2
# A broker counts as impaired this long after it answers again or its broker-down fault is
# healed: the ISR shrink its fault caused may still be on its way to the controller (Metadata
# shows it late).
SETTLE_S = 3.0
MAX_LEAD = 2
# A broker that hit ENOSPC while its disk was full may finish halting just after the heal.
DISK_EXIT_GRACE_S = 20.0
ENOSPC_TEXT = "No space left on device"
# Faults that take a broker down (a restart follows); pauses and cuts, held for less than
# replica.lag.time.max.ms, impair a broker only while they are in force.
BROKER_DOWN_KINDS = frozenset({"kill_leader", "torn_tail", "disk_full"})
SOFT_KINDS = frozenset({"pause", "partition"})


def fill_until_full(filler: Path, limit: int = 1 << 30) -> int:
    """Write zeros to ``filler`` until its file system is full (or ``limit`` bytes); the bytes
    written. Unbuffered: a buffered file keeps what did not fit and fails again in close(),
    outside the ENOSPC handling, which once left a full disk with no fault to heal it (the node
    then crashed on every restart until the final heal). Any other error removes the file."""
    written = 0
    try:
        with filler.open("wb", buffering=0) as handle:
            chunk = b"\0" * (1 << 20)
            try:
                # A chunk that does not fit is written in part (to the last page), then the
                # next write fails with ENOSPC.
                while written < limit and (n := handle.write(chunk)):
                    written += n
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            filler.unlink()
        raise
    return written


@dataclass
class Fault:
    kind: str
    node: ChaosNode
    detail: dict[str, Any]
    heal: Callable[[], dict[str, Any]]


@dataclass
class Nemesis:
    cluster: ChaosCluster
    history: History
    rng: random.Random
    topics: list[str]
    interval_s: tuple[float, float] = (1.0, 2.2)
    hold_s: tuple[float, float] = (1.0, 2.5)
    max_active: int = 3
    say: Callable[[str], None] = print
    beat: Callable[[], None] = lambda: None
    counts: Counter[str] = field(default_factory=Counter)
    crashes: int = 0
    expected_exits: int = 0
    restart_failures: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    stop_event: threading.Event = field(default_factory=threading.Event)
    _disk_full: set[int] = field(default_factory=set)
    _active: list[tuple[float, Fault]] = field(default_factory=list)
    _starting: dict[int, float] = field(default_factory=dict)
    _settling: dict[int, float] = field(default_factory=dict)  # node id -> impaired until
    _disk_freed_at: dict[int, float] = field(default_factory=dict)
    _started_ns: int = field(default_factory=time.monotonic_ns)

    def __post_init__(self) -> None:
        self.skipped["clock_jump"] = (
            "one real clock shared by every process on this box (and other users) and no "
            "per-process clock offset in sparklog; libfaketime (wall clock only) makes Python's "
            "time.sleep fail with EINVAL, and faking the monotonic clock too can only jump forward"
        )
        if not is_root():
            reason = "needs root (iptables owner match; a tmpfs per broker)"
            self.skipped["partition"] = reason
            self.skipped["disk_full"] = reason

    @property
    def enabled(self) -> list[str]:
        return [k for k in KINDS if k not in self.skipped]

    # -- the schedule -------------------------------------------------------------------------
    def run(self) -> None:
        next_at = time.monotonic() + self.rng.uniform(*self.interval_s)
        while not self.stop_event.wait(TICK_S):
            self.beat()
            self.check_exits()
            self._poll_restarts()
            now = time.monotonic()
            for due in [a for a in self._active if a[0] <= now]:
                self._active.remove(due)
                self._heal(due[1])
            if now < next_at or len(self._active) >= self.max_active:
                continue
            fault = self._inject_next()
            if fault is not None:
                self._active.append((time.monotonic() + self.rng.uniform(*self.hold_s), fault))
            next_at = time.monotonic() + self.rng.uniform(*self.interval_s)
        for _, fault in reversed(self._active):
            self._heal(fault)
        self._active.clear()

    def _inject_next(self) -> Fault | None:
        """The least-run kind that has a target now (ties broken by the seeded rng); none
        that is ``MAX_LEAD`` ahead of the least-run kind, so a kind that waits for the
        cluster to settle (a broker-down fault) is not starved by the others."""
        floor = min(self.counts[k] for k in self.enabled)
        order = sorted(self.enabled, key=lambda k: (self.counts[k], self.rng.random()))
        for kind in (k for k in order if self.counts[k] <= floor + MAX_LEAD):
            fault = self._inject_one(kind, quiet=True)
            if fault is None:
                continue
            if self._active:
                self.counts["overlap"] += 1
                others = [f"{f.kind}@{f.node.name}" for _, f in self._active]
                self._log("overlap", {"phase": "start", "with": others})
            return fault
        return None

    def _inject_one(self, kind: str, *, quiet: bool = False) -> Fault | None:
        inject: dict[str, Callable[[], Fault | None]] = {
            "kill_leader": self._kill_leader,
            "kill_controller": self._kill_controller,
            "pause": self._pause,
            "torn_tail": self._torn_tail,
            "partition": self._partition,
            "disk_full": self._fill_disk,
        }
        try:
            fault = inject[kind]()
        except (ChaosError, OSError) as exc:
            self._log(kind, {"phase": "not_injected", "error": str(exc)})
            return None
        if fault is None:
            if not quiet:
                self._log(kind, {"phase": "not_injected", "error": "no eligible target"})
            return None
        self.counts[kind] += 1
        self._log(kind, {"phase": "start", **fault.detail})
        return fault

    def _heal(self, fault: Fault) -> None:
        try:
            detail = fault.heal()
        except (ChaosError, OSError) as exc:
            detail = {"error": str(exc)}
        if fault.kind in BROKER_DOWN_KINDS:
            self._settling[fault.node.node_id] = time.monotonic() + SETTLE_S
        self._log(fault.kind, {"phase": "heal", **fault.detail, **detail})

    def _log(self, kind: str, value: dict[str, Any]) -> None:
        self.history.record("nemesis", "info", kind, value)
        elapsed = (time.monotonic_ns() - self._started_ns) / 1e9
        shown = {k: v for k, v in value.items() if k != "phase"}
        clock = time.strftime("%H:%M:%S")
        self.say(f"[{elapsed:7.1f}s {clock}] nemesis {kind} {value.get('phase')} {shown}")

    # -- targets ------------------------------------------------------------------------------
    def _healthy(self, nodes: list[ChaosNode]) -> list[ChaosNode]:
        """Running, answering, and under no fault (a fault per node at a time)."""
        busy = {f.node.node_id for _, f in self._active} | set(self._starting) | self._disk_full
        return [n for n in nodes if n.is_running() and not n.paused and n.node_id not in busy]

    def _impaired_brokers(self) -> set[int]:
        """Brokers down, (re)starting, settling, or missing from some partition's ISR. A
        broker only paused or cut off (for less than replica.lag.time.max.ms) keeps its
        in-sync copy and is not counted unless it dropped out of an ISR."""
        healthy = self._healthy(self.cluster.brokers)
        soft = {f.node.node_id for _, f in self._active if f.kind in SOFT_KINDS}
        impaired = {b.node_id for b in self.cluster.brokers} - {b.node_id for b in healthy}
        impaired -= soft
        now = time.monotonic()
        impaired |= {n for n, until in self._settling.items() if until > now}
        # Every healthy broker is asked: one that has just restarted may still serve metadata
        # from before its restart, which shows ISRs that have shrunk since.
        for broker in healthy:
            states = probes.partition_states([broker.address], [*self.topics, *INTERNAL_TOPICS])
            if not states:
                impaired.add(broker.node_id)
            impaired |= {r for s in states.values() for r in s.replicas if r not in s.isr}
        return impaired

    def _brokers_to_take(self) -> list[ChaosNode]:
        """Brokers a fault may take down now: at most two impaired at once, so one broker
        always holds every partition in sync (and the cluster can recover between faults)."""
        impaired = self._impaired_brokers()
        if len(impaired) > 1:
            return []
        healthy = self._healthy(self.cluster.brokers)  # excludes paused and cut-off brokers
        return [b for b in healthy if b.node_id not in impaired]

    def _controllers_ok(self) -> bool:
        """A controller fault only while every controller is healthy: one at a time."""
        return len(self._healthy(self.cluster.controllers)) == len(self.cluster.controllers)

    def _leader_broker(self, among: list[ChaosNode] | None = None) -> tuple[ChaosNode, str] | None:
        running = self._healthy(self.cluster.brokers) if among is None else among
        if not running:
            return None
        states = probes.partition_states([b.address for b in running], self.topics)
        leaders = sorted(
            (f"{t}-{p}", s.leader)
            for (t, p), s in states.items()
            if s.leader in {b.node_id for b in running}
        )
        if not leaders:
            return None
        partition, leader = self.rng.choice(leaders)
        return self.cluster.node(leader), partition

    def _restart(self, node: ChaosNode) -> dict[str, Any]:
        """Relaunch without waiting; :meth:`_poll_restarts` follows it until it answers."""
        if node.is_running():
            return {}
        try:
            self.cluster.restart(node, wait=False)
        except (ChaosError, OSError) as exc:
            self.restart_failures += 1
            self._log("restart_failed", {"phase": "info", "node": node.name, "error": str(exc)})
            return {"restarted": False}
        self._starting[node.node_id] = time.monotonic() + READY_TIMEOUT_S
        return {"restarted": True}

    def _poll_restarts(self) -> None:
        for node_id, deadline in list(self._starting.items()):
            node = self.cluster.node(node_id)
            if not node.is_running():
                self._starting.pop(node_id)  # check_exits records and relaunches it
            elif answers_api_versions(HOST, node.port, timeout_s=0.5):
                self._starting.pop(node_id)
                self._settling[node_id] = time.monotonic() + SETTLE_S
            elif time.monotonic() > deadline:
                self._starting.pop(node_id)
                self.restart_failures += 1
                self._log(
                    "restart_failed",
                    {"phase": "info", "node": node.name, "error": node.log_tail(1500)},
                )

    # -- fault kinds --------------------------------------------------------------------------
    def _kill_leader(self) -> Fault | None:
        found = self._leader_broker(self._brokers_to_take())
        if found is None:
            return None
        node, partition = found
        node.kill()
        return Fault(
            "kill_leader",
            node,
            {"node": node.name, "leader_of": partition},
            lambda: self._restart(node),
        )

    def _kill_controller(self) -> Fault | None:
        if not self._controllers_ok():
            return None
        running = self._healthy(self.cluster.controllers)
        leader = probes.active_controller([c.address for c in running])
        if leader is None or leader not in {c.node_id for c in running}:
            return None
        node = self.cluster.node(leader)
        node.kill()
        return Fault("kill_controller", node, {"node": node.name}, lambda: self._restart(node))

    def _pause(self) -> Fault | None:
        candidates = self._healthy(self.cluster.nodes)
        if not self._controllers_ok():
            candidates = [n for n in candidates if n.role == "broker"]
        if not candidates:
            return None
        node = self.rng.choice(candidates)
        node.pause()

        def heal() -> dict[str, Any]:
            node.resume()
            return {}

        return Fault("pause", node, {"node": node.name}, heal)

    def _torn_tail(self) -> Fault | None:
        # With eligible leader replicas (see runner.RELEASE_VERSION) the torn broker leaves
        # every ISR when it registers again, so one other in-sync copy is enough.
        found = self._leader_broker(self._brokers_to_take())
        if found is None:
            return None
        node, partition = found
        node.kill()
        dirs = probes.partition_dirs(node.data_dir)
        names = sorted(n for n in dirs if not n.startswith("__cluster_metadata"))
        torn = []
        for name in self.rng.sample(names, min(len(names), self.rng.randint(1, 3))):
            torn.append(self._tear(dirs[name]))

        def heal() -> dict[str, Any]:
            return self._restart(node)

        detail = {"node": node.name, "leader_of": partition, "torn": torn}
        return Fault("torn_tail", node, detail, heal)

    def _tear(self, partition_dir: Path) -> dict[str, Any]:
        segments = sorted(
            (p for p in partition_dir.glob("*.log") if p.stem.isdigit()), key=lambda p: int(p.stem)
        )
        if not segments:
            return {"dir": partition_dir.name, "segment": None}
        active = segments[-1]
        size = active.stat().st_size
        cut = self.rng.choice([0, self.rng.randint(1, 64)])
        garbage = (
            self.rng.choice([0, self.rng.randint(1, 4096)]) if cut else self.rng.randint(1, 4096)
        )
        with active.open("r+b") as handle:
            handle.truncate(max(0, size - cut))
            handle.seek(0, os.SEEK_END)
            handle.write(self.rng.randbytes(garbage))
        return {
            "dir": partition_dir.name,
            "segment": active.name,
            "size": size,
            "cut": min(cut, size),
            "garbage": garbage,
        }

    def _partition(self) -> Fault | None:
        choice = self.rng.random()
        target: ChaosNode | None = None
        healthy = self._healthy(self.cluster.nodes)
        if not self._controllers_ok():
            healthy = [n for n in healthy if n.role == "broker"]
        if choice < 0.5:
            found = self._leader_broker()
            target = found[0] if found else None
        elif choice < 0.75:
            running = self._healthy(self.cluster.controllers)
            leader = probes.active_controller([c.address for c in running])
            target = self.cluster.node(leader) if leader is not None else None
        if target is None or target not in healthy:
            if not healthy:
                return None
            target = self.rng.choice(healthy)
        node = target
        self.cluster.isolate(node)

        def heal() -> dict[str, Any]:
            self.cluster.rejoin(node)
            return {}

        return Fault("partition", node, {"node": node.name}, heal)

    def _fill_disk(self) -> Fault | None:
        candidates = [b for b in self._brokers_to_take() if b.tmpfs]
        if not candidates:
            return None
        node = self.rng.choice(candidates)
        filler = node.data_dir / FILLER_NAME
        written = fill_until_full(filler)
        self._disk_full.add(node.node_id)

        def heal() -> dict[str, Any]:
            with contextlib.suppress(FileNotFoundError):
                filler.unlink()
            self._disk_full.discard(node.node_id)
            self._disk_freed_at[node.node_id] = time.monotonic()
            code = node.exit_code()
            if code is not None and not node.killed_by_us:
                self.expected_exits += 1
                self._log(
                    "node_exited",
                    {
                        "phase": "info",
                        "node": node.name,
                        "status": code,
                        "while": "disk_full",
                        "log": node.log_tail(1500),
                    },
                )
                node.process = None
                return {"exited": code, **self._restart(node)}
            return {}

        return Fault("disk_full", node, {"node": node.name, "filled_bytes": written}, heal)

    # -- exits and the final heal -------------------------------------------------------------
    def check_exits(self) -> None:
        for node in self.cluster.nodes:
            code = node.exit_code()
            if code is None or node.killed_by_us:
                continue
            if node.node_id in self._disk_full:
                continue  # handled (and expected) when the disk is freed
            self._starting.pop(node.node_id, None)
            tail = node.log_tail(3000)
            exited: dict[str, Any] = {"phase": "info", "node": node.name, "status": code}
            freed_at = self._disk_freed_at.get(node.node_id, -1e9)
            if time.monotonic() - freed_at < DISK_EXIT_GRACE_S and ENOSPC_TEXT in tail:
                # Its ENOSPC came while the disk was full; the halt landed after the heal.
                exited["while"] = "disk_full (exit after the heal)"
                self.expected_exits += 1
            else:
                self.crashes += 1
            self._log("node_exited", {**exited, "log": tail})
            node.process = None
            self._restart(node)

    def heal_all(self, timeout_s: float = 90.0) -> list[str]:
        """Undo every fault; the names of nodes still not answering after ``timeout_s``."""
        for node in self.cluster.nodes:
            node.resume()
        self.cluster.heal_network()
        for broker in self.cluster.brokers:
            with contextlib.suppress(FileNotFoundError):
                (broker.data_dir / FILLER_NAME).unlink()
        self._disk_full.clear()
        self._starting.clear()
        self.check_exits()
        deadline = time.monotonic() + timeout_s
        down: list[str] = []
        for node in self.cluster.nodes:
            if not node.is_running():
                node.launch()
        self.cluster.save_state()
        for node in self.cluster.nodes:
            try:
                node.wait_ready(max(1.0, deadline - time.monotonic()))
            except ChaosError as exc:
                down.append(node.name)
                self._log(
                    "restart_failed",
                    {"phase": "final", "node": node.name, "error": str(exc)[-3000:]},
                )
        self._log("heal_all", {"phase": "done", "down": down})
        return down
