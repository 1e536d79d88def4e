"""The nemesis: faults drawn from a seeded random schedule, each logged, each healed.

Contract:

- ``Nemesis(cluster, history, rng)`` runs on a thread: every ``interval_s`` it draws one fault
  kind, injects it, holds it for ``hold_s``, then heals it. Every injection and heal is an
  ``info`` op of process ``nemesis`` (``f`` = the kind, ``value`` = what was done, with
  ``phase`` ``start``/``heal``); ``counts`` holds how many of each kind ran.
- Kinds: ``kill_leader`` (SIGKILL of a partition leader found with Metadata, restarted after
  the hold), ``kill_controller`` (SIGKILL of the active controller found with DescribeQuorum),
  ``pause`` (SIGSTOP/SIGCONT of any node), ``torn_tail`` (SIGKILL of a leader, then its active
  segments are cut by a few bytes and/or get random garbage appended before the restart; only
  while the other brokers are healthy, so acks=all data still has two good copies),
  ``partition`` (one node cut off with iptables, root only), ``disk_full`` (a broker's tmpfs
  data dir filled by a filler file, then freed; root only), ``overlap`` (two of the above at
  once, possibly of one kind on two nodes). Kinds that cannot run here are in ``skipped``
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
from tests.chaos.runner import ChaosCluster, ChaosError, ChaosNode, is_root

FILLER_NAME = "chaos-disk-filler"
SIMPLE_KINDS = ("kill_leader", "kill_controller", "pause", "partition", "disk_full")
ALL_KINDS = (*SIMPLE_KINDS, "torn_tail", "overlap", "clock_jump")


@dataclass
class Fault:
    kind: str
    detail: dict[str, Any]
    heal: Callable[[], dict[str, Any]]


@dataclass
class Nemesis:
    cluster: ChaosCluster
    history: History
    rng: random.Random
    topics: list[str]
    interval_s: tuple[float, float] = (2.0, 5.0)
    hold_s: tuple[float, float] = (2.0, 6.0)
    say: Callable[[str], None] = print
    counts: Counter[str] = field(default_factory=Counter)
    crashes: int = 0
    expected_exits: int = 0
    restart_failures: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    stop_event: threading.Event = field(default_factory=threading.Event)
    _disk_full: set[int] = field(default_factory=set)
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
        return [k for k in ALL_KINDS if k not in self.skipped]

    # -- the schedule -------------------------------------------------------------------------
    def run(self) -> None:
        while not self.stop_event.wait(self.rng.uniform(*self.interval_s)):
            self.check_exits()
            kind = self.rng.choice(self.enabled)
            faults = self._inject(kind)
            if not faults:
                continue
            self.stop_event.wait(self.rng.uniform(*self.hold_s))
            for fault in reversed(faults):
                self._heal(fault)

    def _inject(self, kind: str) -> list[Fault]:
        if kind == "overlap":
            simple = [k for k in SIMPLE_KINDS if k not in self.skipped]
            # Drawn with replacement: two leaders killed, two nodes cut off or two disks
            # full at once are the overlaps that take a majority of replicas away.
            first, second = self.rng.choice(simple), self.rng.choice(simple)
            faults = []
            one = self._inject_one(first)
            if one is not None:
                faults.append(one)
            self.stop_event.wait(self.rng.uniform(0.0, 1.0))
            two = self._inject_one(second)
            if two is not None:
                faults.append(two)
            if len(faults) == 2:
                self._log("overlap", {"phase": "start", "kinds": [first, second]})
                self.counts["overlap"] += 1
            return faults
        one = self._inject_one(kind)
        return [one] if one is not None else []

    def _inject_one(self, kind: str) -> Fault | None:
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
        self._log(fault.kind, {"phase": "heal", **fault.detail, **detail})

    def _log(self, kind: str, value: dict[str, Any]) -> None:
        self.history.record("nemesis", "info", kind, value)
        elapsed = (time.monotonic_ns() - self._started_ns) / 1e9
        shown = {k: v for k, v in value.items() if k != "phase"}
        clock = time.strftime("%H:%M:%S")
        self.say(f"[{elapsed:7.1f}s {clock}] nemesis {kind} {value.get('phase')} {shown}")

    # -- targets ------------------------------------------------------------------------------
    def _healthy(self, nodes: list[ChaosNode]) -> list[ChaosNode]:
        return [n for n in nodes if n.is_running() and not n.paused]

    def _leader_broker(self) -> tuple[ChaosNode, str] | None:
        running = self._healthy(self.cluster.brokers)
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
        if node.is_running():
            return {}
        try:
            self.cluster.restart(node, wait=True)
        except ChaosError as exc:
            self.restart_failures += 1
            self._log("restart_failed", {"phase": "info", "node": node.name, "error": str(exc)})
            return {"restarted": False}
        return {"restarted": True}

    # -- fault kinds --------------------------------------------------------------------------
    def _kill_leader(self) -> Fault | None:
        found = self._leader_broker()
        if found is None:
            return None
        node, partition = found
        node.kill()
        return Fault(
            "kill_leader", {"node": node.name, "leader_of": partition}, lambda: self._restart(node)
        )

    def _kill_controller(self) -> Fault | None:
        running = self._healthy(self.cluster.controllers)
        leader = probes.active_controller([c.address for c in running])
        if leader is None or leader not in {c.node_id for c in running}:
            return None
        node = self.cluster.node(leader)
        node.kill()
        return Fault("kill_controller", {"node": node.name}, lambda: self._restart(node))

    def _pause(self) -> Fault | None:
        candidates = self._healthy(self.cluster.nodes)
        if not candidates:
            return None
        node = self.rng.choice(candidates)
        node.pause()

        def heal() -> dict[str, Any]:
            node.resume()
            return {}

        return Fault("pause", {"node": node.name}, heal)

    def _torn_tail(self) -> Fault | None:
        if len(self._healthy(self.cluster.brokers)) < len(self.cluster.brokers):
            return None  # another broker is down: the torn copy may be one of only two
        found = self._leader_broker()
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

        return Fault("torn_tail", {"node": node.name, "leader_of": partition, "torn": torn}, heal)

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
        if choice < 0.5:
            found = self._leader_broker()
            target = found[0] if found else None
        elif choice < 0.75:
            running = self._healthy(self.cluster.controllers)
            leader = probes.active_controller([c.address for c in running])
            target = self.cluster.node(leader) if leader is not None else None
        if target is None:
            target = self.rng.choice(self.cluster.nodes)
        node = target
        self.cluster.isolate(node)

        def heal() -> dict[str, Any]:
            self.cluster.rejoin(node)
            return {}

        return Fault("partition", {"node": node.name}, heal)

    def _fill_disk(self) -> Fault | None:
        candidates = [
            b for b in self.cluster.brokers if b.tmpfs and b.node_id not in self._disk_full
        ]
        if not candidates:
            return None
        node = self.rng.choice(candidates)
        filler = node.data_dir / FILLER_NAME
        written = 0
        chunk = b"\0" * (1 << 20)
        with filler.open("wb") as handle:
            try:
                while written < (1 << 30):
                    handle.write(chunk)
                    handle.flush()
                    written += len(chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
        with contextlib.suppress(OSError), filler.open("ab") as handle:
            handle.write(b"\0" * 4096)  # the last partial chunk, as far as it goes
        self._disk_full.add(node.node_id)

        def heal() -> dict[str, Any]:
            with contextlib.suppress(FileNotFoundError):
                filler.unlink()
            self._disk_full.discard(node.node_id)
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

        return Fault("disk_full", {"node": node.name, "filled_bytes": written}, heal)

    # -- exits and the final heal -------------------------------------------------------------
    def check_exits(self) -> None:
        for node in self.cluster.nodes:
            code = node.exit_code()
            if code is None or node.killed_by_us:
                continue
            if node.node_id in self._disk_full:
                continue  # handled (and expected) when the disk is freed
            self.crashes += 1
            self._log(
                "node_exited",
                {"phase": "info", "node": node.name, "status": code, "log": node.log_tail(3000)},
            )
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
