"""Every simulator scenario over ``SIM_SEEDS`` seeds (default 200) for KRaft and
``REPL_SIM_SEEDS`` seeds (default 100) for partition replication; see tests/sim/README.md.

Seeds are independent and each replays exactly, so a scenario's seeds run on a pool of worker
processes, one per usable CPU (``SIM_WORKERS`` overrides; 1 runs them in this process): the
same seeds and the same checks, in a fraction of the wall time on CI's idle second core. A
failure still names its seed and the command that replays it.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor

import pytest

from tests.sim.__main__ import repro
from tests.sim.replication.invariants import InvariantViolation, LivenessViolation
from tests.sim.replication.scenarios import REPL_SCENARIOS, chaos, restart_old_metadata
from tests.sim.scenarios import SCENARIOS

SEEDS = int(os.environ.get("SIM_SEEDS", "200"))
REPL_SEEDS = int(os.environ.get("REPL_SIM_SEEDS", "100"))
FIRST_SEED = int(os.environ.get("SIM_FIRST_SEED", "0"))
WORKERS = int(os.environ.get("SIM_WORKERS", "0")) or len(os.sched_getaffinity(0))


def run_seed(repl: bool, scenario: str, seed: int) -> str | None:
    """One seed of one scenario (in a worker process): None, or the failure with its repro."""
    try:
        (REPL_SCENARIOS if repl else SCENARIOS)[scenario](seed)
    except Exception as exc:
        return f"seed {seed}: {exc!r}\n  repro: {repro(scenario, seed)}"
    return None


@pytest.fixture(scope="module")
def pool() -> Iterator[Executor | None]:
    """Worker processes shared by the module's scenarios; None runs seeds in this process."""
    if WORKERS <= 1:
        yield None
        return
    # spawn: pytest's process may hold threads (moto's server), which fork does not copy.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(WORKERS, mp_context=context) as executor:
        yield executor


def failures_over_seeds(pool: Executor | None, repl: bool, scenario: str, seeds: int) -> list[str]:
    """The failures of ``scenario`` over ``seeds`` seeds from FIRST_SEED, in seed order."""
    span = range(FIRST_SEED, FIRST_SEED + seeds)
    if pool is None:
        results = [run_seed(repl, scenario, seed) for seed in span]
    else:
        chunk = max(1, seeds // (4 * WORKERS))
        n = len(span)
        results = list(pool.map(run_seed, [repl] * n, [scenario] * n, span, chunksize=chunk))
    return [failure for failure in results if failure is not None]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario_holds_for_every_seed(pool: Executor | None, scenario: str) -> None:
    failures = failures_over_seeds(pool, False, scenario, SEEDS)
    assert not failures, "\n".join(failures[:5])


@pytest.mark.parametrize("scenario", sorted(REPL_SCENARIOS))
def test_replication_scenario_holds_for_every_seed(pool: Executor | None, scenario: str) -> None:
    failures = failures_over_seeds(pool, True, scenario, REPL_SEEDS)
    assert not failures, "\n".join(failures[:5])


@pytest.mark.parametrize("mutation", ["keep_isr_on_restart", "elect_any"])
def test_replication_invariants_catch_a_broken_controller(mutation: str) -> None:
    """The safety invariants are not vacuous: a controller that lets a broker which lost
    unflushed data back into the ISR, or that elects outside the ISR, loses acked records."""
    caught: list[str] = []
    for seed in range(40):
        try:
            chaos(seed, mutation=mutation)
        except LivenessViolation:
            continue
        except InvariantViolation as exc:
            caught.append(str(exc))
            break  # one violation is what this test needs; the other seeds add nothing
    assert caught, f"no safety violation found with mutation {mutation}"


def test_truncation_below_hw_is_caught_when_replayed_metadata_rewrites_the_epoch_cache() -> None:
    """Issue 16 put back on purpose: a replayed old leadership rewrites the epoch cache at the
    log end, and followers then truncate below their high watermark; invariant 6 says so."""
    caught: list[str] = []
    for seed in range(20):
        try:
            restart_old_metadata(seed, mutation="rewrite_epoch_cache")
        except LivenessViolation:
            continue
        except InvariantViolation as exc:
            caught.append(str(exc))
            if "below its high watermark" in caught[-1]:
                break  # found what the assertion asks for
    assert any("below its high watermark" in message for message in caught), caught
