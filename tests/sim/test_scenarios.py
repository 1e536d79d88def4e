"""Every simulator scenario over ``SIM_SEEDS`` seeds (default 200); see tests/sim/README.md."""

from __future__ import annotations

import os

import pytest

from tests.sim.__main__ import repro
from tests.sim.scenarios import SCENARIOS

SEEDS = int(os.environ.get("SIM_SEEDS", "200"))
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
