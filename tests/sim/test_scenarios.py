"""Every simulator scenario over ``SIM_SEEDS`` seeds (default 200) for KRaft and
``REPL_SIM_SEEDS`` seeds (default 100) for partition replication; see tests/sim/README.md."""

from __future__ import annotations

import os

import pytest

from tests.sim.__main__ import repro
from tests.sim.replication.invariants import InvariantViolation, LivenessViolation
from tests.sim.replication.scenarios import REPL_SCENARIOS, chaos, restart_old_metadata
from tests.sim.scenarios import SCENARIOS

SEEDS = int(os.environ.get("SIM_SEEDS", "200"))
REPL_SEEDS = int(os.environ.get("REPL_SIM_SEEDS", "100"))
FIRST_SEED = int(os.environ.get("SIM_FIRST_SEED", "0"))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario_holds_for_every_seed(scenario: str) -> None:
    failures = []
    for seed in range(FIRST_SEED, FIRST_SEED + SEEDS):
        try:
            SCENARIOS[scenario](seed)
        except Exception as exc:
            failures.append(f"seed {seed}: {exc!r}\n  repro: {repro(scenario, seed)}")
    assert not failures, "\n".join(failures[:5])


@pytest.mark.parametrize("scenario", sorted(REPL_SCENARIOS))
def test_replication_scenario_holds_for_every_seed(scenario: str) -> None:
    failures = []
    for seed in range(FIRST_SEED, FIRST_SEED + REPL_SEEDS):
        try:
            REPL_SCENARIOS[scenario](seed)
        except Exception as exc:
            failures.append(f"seed {seed}: {exc!r}\n  repro: {repro(scenario, seed)}")
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
