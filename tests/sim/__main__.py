"""Run simulator scenarios over many seeds (KRaft scenarios and the ``repl_*`` partition
replication scenarios).

    .venv/bin/python -m tests.sim --scenario leader_crash --seeds 5000
    .venv/bin/python -m tests.sim --scenario all --seeds 1000 --first-seed 20000
    .venv/bin/python -m tests.sim --scenario partitions --seed 1234     # one seed (repro)
    .venv/bin/python -m tests.sim --scenario repl_chaos --seeds 2000
    .venv/bin/python -m tests.sim --scenario repl --seeds 500          # every repl_* scenario

A failing seed prints a one-line repro command and the error; the exit status is 1.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Callable, Sequence

from tests.sim.replication.scenarios import REPL_SCENARIOS, ReplRunStats
from tests.sim.scenarios import SCENARIOS, RunStats

ALL_SCENARIOS: dict[str, Callable[[int], RunStats | ReplRunStats]] = {
    **SCENARIOS,
    **REPL_SCENARIOS,
}


def repro(scenario: str, seed: int) -> str:
    return f".venv/bin/python -m tests.sim --scenario {scenario} --seed {seed}"


def run(scenario: str, seeds: range, verbose: bool) -> int:
    failures = 0
    stats: list[RunStats] = []
    repl_stats: list[ReplRunStats] = []
    started = time.perf_counter()
    for seed in seeds:
        try:
            result = ALL_SCENARIOS[scenario](seed)
            if isinstance(result, ReplRunStats):
                repl_stats.append(result)
            else:
                stats.append(result)
        except Exception as exc:  # a failing seed is a report, not a crash of the runner
            failures += 1
            print(f"FAIL {scenario} seed={seed}: {exc!r}\n  repro: {repro(scenario, seed)}")
            if verbose:
                traceback.print_exc()
    elapsed = time.perf_counter() - started
    if stats:
        elect = sorted(s.time_to_elect_ms for s in stats)
        p99 = elect[max(0, int(len(elect) * 0.99) - 1)]
        print(
            f"{scenario}: {len(stats)} ok, {failures} failed in {elapsed:.1f}s; "
            f"events={sum(s.events for s in stats)} delivered={sum(s.delivered for s in stats)} "
            f"dropped={sum(s.dropped for s in stats)} "
            f"simulated={sum(s.simulated_ms for s in stats) / 1000:.0f}s "
            f"max_epoch={max(s.max_epoch for s in stats)} "
            f"time_to_leader_after_heal p99={p99}ms "
            f"max={elect[-1]}ms "
            f"snapshots created={sum(s.snapshots_created for s in stats)} "
            f"downloaded={sum(s.snapshots_downloaded for s in stats)}"
        )
    if repl_stats:
        print(repl_summary(scenario, repl_stats, failures, elapsed))
    return failures


def repl_summary(
    scenario: str, stats: Sequence[ReplRunStats], failures: int, elapsed: float
) -> str:
    def total(name: str) -> int:
        return sum(int(getattr(s, name)) for s in stats)

    return (
        f"{scenario}: {len(stats)} ok, {failures} failed in {elapsed:.1f}s; "
        f"events={total('events')} delivered={total('delivered')} dropped={total('dropped')} "
        f"simulated={total('simulated_ms') / 1000:.0f}s produced={total('produced')} "
        f"acked={total('acked')} (after heal {total('acked_after_heal')}) "
        f"leader_changes={total('leader_changes')} "
        f"max_leader_epoch={max(s.max_leader_epoch for s in stats)} "
        f"truncations={total('truncations')} isr_shrinks={total('isr_shrinks')} "
        f"isr_expands={total('isr_expands')} fenced={total('fenced')} "
        f"crashes={total('crashes')} lost_unflushed_offsets={total('lost_offsets')} "
        f"pauses={total('pauses')} deletions={total('deletions')} "
        f"ended_offline={total('offline')}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.sim", description=__doc__)
    parser.add_argument(
        "--scenario",
        default="all",
        choices=["all", "kraft", "repl", *ALL_SCENARIOS],
        help="a scenario, or all / kraft / repl for a group",
    )
    parser.add_argument("--seeds", type=int, default=100, help="how many seeds to run")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--seed", type=int, help="run exactly this seed, with a traceback")
    args = parser.parse_args(argv)
    groups = {"all": list(ALL_SCENARIOS), "kraft": list(SCENARIOS), "repl": list(REPL_SCENARIOS)}
    names = groups.get(args.scenario, [args.scenario])
    seeds = (
        range(args.seed, args.seed + 1)
        if args.seed is not None
        else range(args.first_seed, args.first_seed + args.seeds)
    )
    failures = sum(run(name, seeds, args.seed is not None) for name in names)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
