"""``python -m tests.chaos --duration 600 --seed N``: one chaos run, its summary, its verdict.

Contract: :func:`run` starts a fresh 3+3 cluster (:mod:`tests.chaos.runner`), creates the two
workload topics (3 partitions, RF 3, ``min.insync.replicas=2``), starts the workloads
(:mod:`tests.chaos.workload`), lets the nemesis (:mod:`tests.chaos.faults`) inject faults for
``duration_s``, heals everything, keeps the load on for a short recovery, drains
(:mod:`tests.chaos.drain`) and checks the history (:mod:`tests.chaos.checker`). Every client
runs in a child process of its own (:mod:`tests.chaos.clients`) and a watchdog
(:mod:`tests.chaos.watchdog`) ends a run that stops making progress with stacks and exit
status 3 instead of hanging. It prints progress every ~10 s and ends with one summary line::

    chaos seed=N duration=120s faults={kill_leader:3,...} acked=... lost=0 ... VALID

and returns a :class:`Report`; ``main`` exits 1 when the run is INVALID (any anomaly) and 2 when
the harness itself failed. The history stays in ``<workdir>/history.jsonl`` (merged from the
harness's ``harness.jsonl`` and each client's ``client-*.jsonl``; the node logs beside it) so
``python -m tests.chaos --check <history.jsonl>`` replays the verdict.
Cleanup (processes, tmpfs mounts, iptables chains) always runs, also at the start of a run for
what a killed earlier run left.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.chaos import checker, drain, probes
from tests.chaos.clients import ClientProcess, merge_histories
from tests.chaos.faults import Nemesis
from tests.chaos.history import History, Op, load
from tests.chaos.runner import ChaosCluster, ChaosError, cleanup_stale, is_root
from tests.chaos.watchdog import Watchdog
from tests.chaos.workload import PARTITIONS, QUEUE_TOPIC, TXN_TOPIC
from tests.integration.node_harness import REPO_ROOT

TOPICS = (QUEUE_TOPIC, TXN_TOPIC)
PROGRESS_EVERY_S = 10.0
READY_BUDGET_S = 240.0
RECOVERY_S = 10.0
ISR_BOUND_S = 60.0
TXN_BOUND_S = 40.0
FINAL_READ_BOUND_S = 120.0
PRODUCER_RATE_PER_S = 200.0  # each of the two idempotent producers
NEMESIS_STALL_S = 120.0  # the nemesis loop turns every 0.2 s; a fault's steps are bounded


@dataclass
class Report:
    seed: int
    duration_s: float
    faults: Counter[str]
    skipped: dict[str, str]
    result: checker.Result
    workdir: Path
    summary: str = ""
    examples: dict[str, list[object]] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return self.result.valid


def summary_line(seed: int, duration_s: float, faults: Counter[str], result: checker.Result) -> str:
    fault_text = ",".join(f"{k}:{v}" for k, v in sorted(faults.items()))
    verdict = "VALID" if result.valid else "INVALID"
    return (
        f"chaos seed={seed} duration={duration_s:.0f}s faults={{{fault_text}}} "
        f"{result.summary_fields()} {verdict}"
    )


def create_topics(cluster: ChaosCluster, timeout_s: float = 60.0) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    new = [NewTopic(t, PARTITIONS, 3, config={"min.insync.replicas": "2"}) for t in TOPICS]
    for future in admin.create_topics(new, operation_timeout=30).values():
        future.result(timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    brokers = [b.address for b in cluster.brokers]
    while time.monotonic() < deadline:
        states = probes.partition_states(brokers, TOPICS)
        if len(states) == PARTITIONS * len(TOPICS) and all(
            s.leader >= 0 and len(s.isr) == 3 for s in states.values()
        ):
            return
        time.sleep(0.3)
    raise ChaosError(f"topics not ready after {timeout_s}s")


def _progress(ops: list[Op], started: float, cluster: ChaosCluster, sign: str = "+") -> str:
    """What ``ops`` did ("+" counts: since the last line; "" for the run's totals)."""
    acked = sum(1 for op in ops if op.f == "send" and op.type == "ok")
    indeterminate = sum(1 for op in ops if op.f == "send" and op.type == "info")
    committed = sum(1 for op in ops if op.f == "txn" and op.type == "ok")
    aborted = sum(1 for op in ops if op.f == "txn" and op.type == "fail")
    unknown = sum(1 for op in ops if op.f == "txn" and op.type == "info")
    records = sum(len(op.value) for op in ops if op.f == "poll" and op.type == "ok")
    down = [n.name for n in cluster.nodes if not n.is_running()]
    paused = [n.name for n in cluster.nodes if n.paused]
    return (
        f"[{time.monotonic() - started:7.1f}s] {sign}acked={acked} {sign}send_info={indeterminate} "
        f"{sign}txn ok/fail/info={committed}/{aborted}/{unknown} {sign}records_read={records} "
        f"down={down} paused={paused}"
    )


def code_revision() -> str:
    """``git describe --always --dirty`` of the tree under test (a shared checkout may hold
    uncommitted work, which a reproduction needs to know), or ``unknown``."""
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=REPO_ROOT,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except OSError:
        return "unknown"
    return done.stdout.decode().strip() or "unknown"


class _ClientOps:
    """The clients' ops as their files grow (read only by the progress lines)."""

    def __init__(self, clients: list[ClientProcess]) -> None:
        self.clients = clients
        self.summary: list[Op] = []  # every client op except reads' records, for the totals

    def new(self) -> list[Op]:
        ops = [op for client in self.clients for op in client.read_new()]
        self.summary.extend(
            Op(op.process, op.type, op.f, op.value if op.f == "poll" else None, op.time_ns)
            for op in ops
            if op.f in {"send", "txn", "poll"}
        )
        return ops


def _report_progress(
    client_ops: _ClientOps,
    started: float,
    cluster: ChaosCluster,
    stop: threading.Event,
    say: Callable[[str], None],
) -> None:
    while not stop.wait(PROGRESS_EVERY_S):
        say(_progress(client_ops.new(), started, cluster))


def run(
    duration_s: float,
    seed: int,
    workdir: Path | None = None,
    say: Callable[[str], None] = lambda line: print(line, flush=True),
) -> Report:
    revision = code_revision()
    say(f"chaos: seed={seed} duration={duration_s:.0f}s root={is_root()} code={revision}")
    for line in cleanup_stale():
        say(f"chaos: cleanup of an earlier run: {line}")
    root = workdir or Path(tempfile.mkdtemp(prefix=f"sparklog-chaos-{seed}-"))
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    history = History(root / "harness.jsonl", keep=True)
    cluster = ChaosCluster(root, privileged=is_root())
    clients: list[ClientProcess] = []

    def stall_cleanup() -> None:
        for client in clients:
            client.kill()
        cluster.close()
        history.close()

    watchdog = Watchdog(stall_cleanup, say)
    nemesis = Nemesis(
        cluster, history, random.Random(rng.random()), list(TOPICS), say=say, beat=watchdog.beat
    )
    for kind, reason in nemesis.skipped.items():
        say(f"chaos: fault kind {kind} skipped: {reason}")
    history.record(
        "harness",
        "info",
        "run",
        {
            "seed": seed,
            "duration_s": duration_s,
            "code": revision,
            "privileged": is_root(),
            "skipped": nemesis.skipped,
        },
    )
    started = time.monotonic()
    watchdog.start()
    watchdog.phase("start-up", READY_BUDGET_S)
    try:
        cluster.prepare()
        cluster.start()
        create_topics(cluster)
        say(f"chaos: cluster up in {time.monotonic() - started:.1f}s, workdir {root}")
        brokers = cluster.bootstrap_servers
        addresses = [b.address for b in cluster.brokers]
        rate = PRODUCER_RATE_PER_S
        producers = [
            ClientProcess(root, "QueueProducer", "producer-1", brokers, rate),
            ClientProcess(root, "QueueProducer", "producer-2", brokers, rate),
            ClientProcess(root, "TxnProducer", "txn-1", brokers, random.Random(rng.random()), 0.3),
            ClientProcess(root, "TxnProducer", "txn-2", brokers, random.Random(rng.random()), 0.3),
        ]
        readers = [
            ClientProcess(root, "GroupConsumer", "group-1", brokers),
            ClientProcess(root, "GroupConsumer", "group-2", brokers),
            ClientProcess(root, "AssignReader", "rc-reader", brokers, "read_committed"),
            ClientProcess(root, "AssignReader", "ru-reader", brokers, "read_uncommitted"),
            ClientProcess(root, "WatermarkObserver", "observer", addresses),
        ]
        clients.extend([*producers, *readers])
        for client in clients:
            client.start()
        client_ops = _ClientOps(clients)
        # The nemesis runs on this (the main) thread: a node's PR_SET_PDEATHSIG fires when the
        # thread that started it ends, so every launch must come from a thread that lives as
        # long as the run.
        progress = threading.Thread(
            target=_report_progress,
            args=(client_ops, started, cluster, nemesis.stop_event, say),
            name="progress",
            daemon=True,
        )
        progress.start()
        timer = threading.Timer(duration_s, nemesis.stop_event.set)
        timer.daemon = True  # an interrupted run must not wait for it at exit
        timer.start()
        watchdog.phase("nemesis", NEMESIS_STALL_S)
        nemesis.run()
        timer.cancel()
        progress.join(PROGRESS_EVERY_S + 5)
        watchdog.phase("final heal", 300.0)
        down = nemesis.heal_all()
        say(f"chaos: final heal done, down={down}; {RECOVERY_S:.0f}s of load without faults")
        time.sleep(RECOVERY_S)
        watchdog.phase("producers stop", 300.0)
        for client in producers:
            client.stop()
        for client in producers:
            if not client.join(90):
                history.record(client.name, "info", "worker_stuck", "did not stop in 90s")
        client_ops.new()
        say("chaos: totals " + _progress(client_ops.summary, started, cluster, sign=""))
        watchdog.phase("drain", ISR_BOUND_S + TXN_BOUND_S + 120.0)
        drain.wait_isr_restored(cluster, history, TOPICS, ISR_BOUND_S)
        drain.wait_no_open_transactions(cluster, history, TXN_BOUND_S)
        for client in readers:
            client.stop()
        for client in readers:
            if not client.join(30):
                history.record(client.name, "info", "worker_stuck", "did not stop in 30s")
        watchdog.phase("final reads", 2 * FINAL_READ_BOUND_S + 180.0)
        drain.final_read(brokers, TOPICS, PARTITIONS, "read_committed", history, FINAL_READ_BOUND_S)
        ends = drain.final_read(
            brokers, TOPICS, PARTITIONS, "read_uncommitted", history, FINAL_READ_BOUND_S
        )
        history.record("final", "info", "nodes_down", down)
        watchdog.phase("replica comparison", 300.0)
        drain.compare_replicas(cluster, history, ends)
    finally:
        watchdog.phase("cleanup", 120.0)
        nemesis.stop_event.set()
        for client in clients:
            client.stop()
        for node in cluster.nodes:
            node.resume()
        cluster.close()
        for client in clients:
            client.join(10)
        history.close()
        watchdog.stop()
    merged = root / "history.jsonl"
    ops = merge_histories([history.path, *(c.path for c in clients)], merged)
    result = checker.check(ops)
    report = Report(seed, duration_s, nemesis.counts, nemesis.skipped, result, root)
    for anomaly, examples in result.examples.items():
        if result.counts[anomaly] and anomaly in checker.ANOMALIES:
            say(f"chaos: {anomaly}={result.counts[anomaly]}, e.g.:")
            for example in examples:
                say(f"    {str(example)[:600]}")
    report.summary = summary_line(seed, duration_s, nemesis.counts, result)
    say(f"chaos: history {merged}")
    say(report.summary)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of faults")
    parser.add_argument("--seed", type=int, default=None, help="default: random (printed)")
    parser.add_argument("--workdir", type=Path, default=None, help="default: a new temp dir")
    parser.add_argument(
        "--check",
        type=Path,
        default=None,
        help="only check an existing history.jsonl and print its counts",
    )
    args = parser.parse_args(argv)
    if args.check is not None:
        ops = load(args.check)
        result = checker.check(ops)
        run_op = next((op.value for op in ops if op.f == "run"), {"seed": -1, "duration_s": 0})
        faults = Counter(
            op.f for op in ops if op.process == "nemesis" and op.value.get("phase") == "start"
        )
        print(summary_line(run_op["seed"], run_op["duration_s"], faults, result))
        return 0 if result.valid else 1
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    try:
        report = run(args.duration, seed, args.workdir)
    except (ChaosError, OSError) as exc:
        print(f"chaos seed={seed}: the harness failed: {exc}", file=sys.stderr)
        return 2
    return 0 if report.valid else 1
