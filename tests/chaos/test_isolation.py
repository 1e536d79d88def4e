"""The harness cannot hang on a client or on itself: a client that ignores its stop request is
killed (its ops so far stay readable), histories merge by time, and a stalled phase ends the
process through the watchdog with the stacks and a clear message (exit status 3)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.chaos.clients import ClientProcess, merge_histories
from tests.chaos.history import History, Op
from tests.chaos.watchdog import STALL_EXIT_STATUS
from tests.chaos.workload import Worker
from tests.integration.node_harness import REPO_ROOT


class HangingWorker(Worker):
    """Records one op, then blocks as a client stuck in native code would: stop is ignored."""

    def session(self) -> None:
        self.history.record(self.process, "ok", "send", ["k", "v", 0, 0])
        while True:
            time.sleep(1.0)


def test_a_client_that_ignores_stop_is_killed_and_its_ops_stay(tmp_path: Path) -> None:
    client = ClientProcess(tmp_path, "tests.chaos.test_isolation:HangingWorker", "hang", "x")
    client.start()
    deadline = time.monotonic() + 120
    ops: list[Op] = []
    while not ops and time.monotonic() < deadline:
        ops = client.read_new()
        time.sleep(0.2)
    assert [(op.process, op.f, op.value) for op in ops] == [("hang", "send", ["k", "v", 0, 0])]
    client.stop()
    # The child's worker thread never ends: its own join gives up after 60 s; ours is shorter.
    assert client.join(3.0) is False
    assert not client.is_alive()
    assert client.read_new() == []


def test_histories_merge_by_time(tmp_path: Path) -> None:
    first, second = History(tmp_path / "a.jsonl"), History(tmp_path / "b.jsonl")
    first.record("a", "invoke", "send", 1)
    second.record("b", "invoke", "send", 2)
    first.record("a", "ok", "send", 3)
    first.close()
    second.close()
    merged = merge_histories([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], tmp_path / "m.jsonl")
    assert [op.value for op in merged] == [1, 2, 3]
    assert (tmp_path / "m.jsonl").read_text().count("\n") == 3


def test_a_stalled_phase_ends_the_run_with_stacks_not_a_hang() -> None:
    script = textwrap.dedent(
        """
        import time
        from tests.chaos.watchdog import Watchdog

        def cleanup():
            print("cleanup ran", flush=True)

        dog = Watchdog(cleanup, lambda line: print(line, flush=True))
        dog.start()
        dog.phase("stuck phase", 1.0)
        def parked_forever():
            time.sleep(600)
        parked_forever()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=300,
        check=False,
    )
    out = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == STALL_EXIT_STATUS, out
    assert "WATCHDOG" in out and "'stuck phase'" in out, out
    assert "parked_forever" in out, out  # the main thread's stack was dumped
    assert "cleanup ran" in out, out
