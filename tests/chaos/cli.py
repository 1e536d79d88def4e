"""``python -m tests.chaos --duration 600 --seed N``: one chaos run, its summary, its verdict.

Contract: :func:`run` starts a fresh 3+3 cluster (:mod:`tests.chaos.runner`), creates the two
workload topics (3 partitions, RF 3, ``min.insync.replicas=2``), starts the workloads
(:mod:`tests.chaos.workload`), lets the nemesis (:mod:`tests.chaos.faults`) inject faults for
``duration_s``, heals everything, keeps the load on for a short recovery, drains
(:mod:`tests.chaos.drain`) and checks the history (:mod:`tests.chaos.checker`). It prints
progress every ~10 s and ends with one summary line::

    chaos seed=N duration=120s faults={kill_leader:3,...} acked=... lost=0 ... VALID

and returns a :class:`Report`; ``main`` exits 1 when the run is INVALID (any anomaly) and 2 when
the harness itself failed. The history stays in ``<workdir>/history.jsonl`` (and the node logs
beside it) so ``python -m tests.chaos --check <history.jsonl>`` replays the verdict.
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
from tests.chaos.faults import Nemesis
from tests.chaos.history import History, load
from tests.chaos.runner import ChaosCluster, ChaosError, cleanup_stale, is_root
from tests.chaos.workload import (
    PARTITIONS,
    QUEUE_TOPIC,
    TXN_TOPIC,
    AssignReader,
    GroupConsumer,
    QueueProducer,
    TxnProducer,
    WatermarkObserver,
    Worker,
)
from tests.integration.node_harness import REPO_ROOT

TOPICS = (QUEUE_TOPIC, TXN_TOPIC)
PROGRESS_EVERY_S = 10.0
RECOVERY_S = 10.0
ISR_BOUND_S = 60.0
TXN_BOUND_S = 40.0
FINAL_READ_BOUND_S = 60.0


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


def _progress(history: History, since: int, started: float, cluster: ChaosCluster) -> str:
    """What happened since op ``since`` ("+" counts; from op 0 they are the run's totals)."""
    ops = history.ops[since:]
    acked = sum(1 for op in ops if op.f == "send" and op.type == "ok")
    indeterminate = sum(1 for op in ops if op.f == "send" and op.type == "info")
    committed = sum(1 for op in ops if op.f == "txn" and op.type == "ok")
    aborted = sum(1 for op in ops if op.f == "txn" and op.type == "fail")
    unknown = sum(1 for op in ops if op.f == "txn" and op.type == "info")
    records = sum(len(op.value) for op in ops if op.f == "poll" and op.type == "ok")
    down = [n.name for n in cluster.nodes if not n.is_running()]
    paused = [n.name for n in cluster.nodes if n.paused]
    return (
        f"[{time.monotonic() - started:7.1f}s] +acked={acked} +send_info={indeterminate} "
        f"+txn ok/fail/info={committed}/{aborted}/{unknown} +records_read={records} "
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


def _report_progress(
    history: History,
    started: float,
    cluster: ChaosCluster,
    stop: threading.Event,
    say: Callable[[str], None],
) -> None:
    mark = 0
    while not stop.wait(PROGRESS_EVERY_S):
        say(_progress(history, mark, started, cluster))
        mark = len(history.ops)


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
    history = History(root / "history.jsonl", keep=True)
    cluster = ChaosCluster(root, privileged=is_root())
    workers: list[Worker] = []
    nemesis = Nemesis(cluster, history, random.Random(rng.random()), list(TOPICS), say=say)
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
    try:
        cluster.prepare()
        cluster.start()
        create_topics(cluster)
        say(f"chaos: cluster up in {time.monotonic() - started:.1f}s, workdir {root}")
        brokers = cluster.bootstrap_servers
        producers: list[Worker] = [
            QueueProducer("producer-1", history, brokers, rate_per_s=25),
            QueueProducer("producer-2", history, brokers, rate_per_s=25),
            TxnProducer("txn-1", history, brokers, random.Random(rng.random()), 0.3),
            TxnProducer("txn-2", history, brokers, random.Random(rng.random()), 0.3),
        ]
        readers: list[Worker] = [
            GroupConsumer("group-1", history, brokers),
            GroupConsumer("group-2", history, brokers),
            AssignReader("rc-reader", history, brokers, "read_committed"),
            AssignReader("ru-reader", history, brokers, "read_uncommitted"),
            WatermarkObserver("observer", history, [b.address for b in cluster.brokers]),
        ]
        workers = [*producers, *readers]
        for worker in workers:
            worker.start()
        # The nemesis runs on this (the main) thread: a node's PR_SET_PDEATHSIG fires when the
        # thread that started it ends, so every launch must come from a thread that lives as
        # long as the run.
        progress = threading.Thread(
            target=_report_progress,
            args=(history, started, cluster, nemesis.stop_event, say),
            name="progress",
            daemon=True,
        )
        progress.start()
        timer = threading.Timer(duration_s, nemesis.stop_event.set)
        timer.start()
        nemesis.run()
        timer.cancel()
        progress.join(PROGRESS_EVERY_S + 5)
        down = nemesis.heal_all()
        say(f"chaos: final heal done, down={down}; {RECOVERY_S:.0f}s of load without faults")
        time.sleep(RECOVERY_S)
        for worker in producers:
            worker.stop()
        for worker in producers:
            if not worker.join(90):
                history.record(worker.process, "info", "worker_stuck", "did not stop in 90s")
        say("chaos: totals " + _progress(history, 0, started, cluster))
        drain.wait_isr_restored(cluster, history, TOPICS, ISR_BOUND_S)
        drain.wait_no_open_transactions(cluster, history, TXN_BOUND_S)
        for worker in readers:
            worker.stop()
        for worker in readers:
            if not worker.join(30):
                history.record(worker.process, "info", "worker_stuck", "did not stop in 30s")
        drain.final_read(brokers, TOPICS, PARTITIONS, "read_committed", history, FINAL_READ_BOUND_S)
        ends = drain.final_read(
            brokers, TOPICS, PARTITIONS, "read_uncommitted", history, FINAL_READ_BOUND_S
        )
        history.record("final", "info", "nodes_down", down)
        drain.compare_replicas(cluster, history, ends)
    finally:
        nemesis.stop_event.set()
        for worker in workers:
            worker.stop()
        for node in cluster.nodes:
            node.resume()
        cluster.close()
        history.close()
    result = checker.check(history.ops)
    report = Report(seed, duration_s, nemesis.counts, nemesis.skipped, result, root)
    for anomaly, examples in result.examples.items():
        if result.counts[anomaly] and anomaly in checker.ANOMALIES:
            say(f"chaos: {anomaly}={result.counts[anomaly]}, e.g.:")
            for example in examples:
                say(f"    {str(example)[:600]}")
    report.summary = summary_line(seed, duration_s, nemesis.counts, result)
    say(f"chaos: history {history.path}")
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
