"""The nemesis's safety limits, without a cluster: a broker-down fault never takes the last
broker holding every partition in sync, and a paused or cut-off broker (which keeps its copy)
does not count against that limit unless it left an ISR."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from tests.chaos import faults, probes
from tests.chaos.faults import SETTLE_S, Fault, Nemesis
from tests.chaos.history import History
from tests.chaos.probes import PartitionState
from tests.chaos.runner import ChaosNode


class Node(ChaosNode):
    running: bool = True

    def is_running(self) -> bool:
        return self.running


class Cluster:
    def __init__(self, root: Path) -> None:
        self.controllers = [Node(i, "controller", root, 9000 + i, None) for i in (1, 2, 3)]
        self.brokers = [Node(i, "broker", root, 9100 + i, None) for i in (101, 102, 103)]

    @property
    def nodes(self) -> list[ChaosNode]:
        return [*self.controllers, *self.brokers]

    def node(self, node_id: int) -> ChaosNode:
        return next(n for n in self.nodes if n.node_id == node_id)


ISR: dict[str, tuple[int, ...]] = {}


def _states(brokers: Any, topics: Any) -> dict[tuple[str, int], PartitionState]:
    return {("t", 0): PartitionState(101, 1, (101, 102, 103), ISR["t-0"])}


@pytest.fixture
def nemesis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Nemesis:
    monkeypatch.setattr(probes, "partition_states", _states)
    ISR["t-0"] = (101, 102, 103)
    cluster: Any = Cluster(tmp_path)
    return Nemesis(cluster, History(tmp_path / "h.jsonl"), random.Random(1), ["t"])


def ids(nodes: list[ChaosNode]) -> list[int]:
    return sorted(n.node_id for n in nodes)


def test_all_in_sync_every_broker_may_go(nemesis: Nemesis) -> None:
    assert ids(nemesis._brokers_to_take()) == [101, 102, 103]


def test_one_broker_out_of_an_isr_leaves_the_two_others(nemesis: Nemesis) -> None:
    ISR["t-0"] = (101, 102)
    assert ids(nemesis._brokers_to_take()) == [101, 102]


def test_two_impaired_brokers_protect_the_last_in_sync_one(nemesis: Nemesis) -> None:
    ISR["t-0"] = (101, 102)
    nemesis._settling[102] = time.monotonic() + SETTLE_S  # just back from a kill
    assert nemesis._brokers_to_take() == []
    ISR["t-0"] = (101, 102, 103)
    node: Any = nemesis.cluster.node(103)
    node.running = False  # down, and 102 settling: 101 is the last one
    assert nemesis._brokers_to_take() == []


def test_a_paused_broker_still_in_the_isr_does_not_count(nemesis: Nemesis) -> None:
    paused = nemesis.cluster.node(102)
    paused.paused = True
    nemesis._active.append((time.monotonic() + 5, Fault("pause", paused, {}, lambda: {})))
    nemesis._settling[103] = time.monotonic() + SETTLE_S
    assert ids(nemesis._brokers_to_take()) == [101]
    ISR["t-0"] = (101, 103)  # it dropped out of the ISR while paused: now it counts
    assert nemesis._brokers_to_take() == []


def test_no_kind_runs_more_than_max_lead_ahead(nemesis: Nemesis) -> None:
    tried: list[str] = []

    def refuse(kind: str, *, quiet: bool = False) -> None:
        tried.append(kind)
        return None

    nemesis._inject_one = refuse  # type: ignore[method-assign]
    others = [k for k in nemesis.enabled if k != "torn_tail"]
    nemesis.counts.update({k: faults.MAX_LEAD for k in others})
    assert nemesis._inject_next() is None
    assert tried[0] == "torn_tail"  # the least-run kind first
    assert sorted(tried) == sorted(nemesis.enabled)  # the others are within MAX_LEAD of it
    nemesis.counts.update({k: 1 for k in others})  # now MAX_LEAD + 1 ahead
    tried.clear()
    assert nemesis._inject_next() is None
    assert tried == ["torn_tail"]


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Any:
    """A 2 MiB tmpfs (root only, as the disk_full fault's)."""
    import os
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode:
        pytest.skip(f"mount tmpfs: {done.stderr.decode(errors='replace')}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_fill_until_full_fills_the_disk_and_returns(tiny_tmpfs: Path) -> None:
    """The fill ends at ENOSPC without raising (it once raised from close(), leaving the disk
    full with no fault to free it), the disk is then full, and deleting the filler frees it."""
    filler = tiny_tmpfs / faults.FILLER_NAME
    written = faults.fill_until_full(filler)
    assert 2 * 1024 * 1024 - 8192 <= written <= 2 * 1024 * 1024
    assert filler.stat().st_size == written
    with pytest.raises(OSError) as full:
        (tiny_tmpfs / "more").write_bytes(b"\0" * 8192)
    assert full.value.errno == 28
    filler.unlink()
    (tiny_tmpfs / "more").write_bytes(b"\0" * 8192)
