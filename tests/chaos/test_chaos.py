"""A two-minute chaos run with a fixed seed: every anomaly count must be 0.

The run is the one ``python -m tests.chaos --duration 120 --seed 20261124`` performs (3
controllers + 3 brokers, overlapping faults of every kind every ~2 s, the final heal, a drain,
the checker); the assertion message carries the summary line, examples of each anomaly and the
history's path, and the node logs stay beside the history under pytest's tmp dir.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka")

from tests.chaos.checker import ANOMALIES
from tests.chaos.cli import run
from tests.chaos.faults import KINDS

pytestmark = [pytest.mark.integration, pytest.mark.timeout(480)]

SEED = 20261124
DURATION_S = 120.0


def test_two_minutes_of_faults_leave_no_anomaly(tmp_path: Path) -> None:
    report = run(DURATION_S, SEED, tmp_path / "chaos")
    found = {a: report.result.counts[a] for a in ANOMALIES if report.result.counts[a]}
    examples = {a: report.result.examples[a][:3] for a in found}
    assert found == {}, (
        f"{report.summary}\nexamples: {examples}\nhistory: {report.workdir / 'history.jsonl'}"
    )
    assert report.result.counts["acked"] > 1000, report.summary
    assert report.result.counts["txns_committed"] > 0, report.summary
    assert report.result.counts["txns_aborted"] > 0, report.summary
    assert sum(report.faults.values()) >= 10, report.summary
    for kind in KINDS:
        if kind not in report.skipped:
            assert report.faults[kind] >= 1, f"no {kind} fault ran: {report.summary}"
