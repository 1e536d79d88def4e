"""The harness's own watchdog: a chaos run fails loudly with stacks, it never hangs.

Contract:

- :meth:`Watchdog.phase` names what the harness does now and how long that may take; every
  :meth:`Watchdog.beat` (the nemesis beats on every turn of its loop) restarts that budget.
- When a budget runs out, the watchdog's thread prints ``chaos: WATCHDOG: ...`` with the phase
  and the silence, the Python stacks of every thread (``faulthandler``) and, when ``py-spy`` is
  installed beside the interpreter, its ``--native`` dump (which also shows a native thread
  holding the GIL), then calls ``on_stall`` (the run's cleanup: clients killed, nodes killed,
  iptables chains and tmpfs mounts removed) and ends the process with status 3.
- Should the watchdog's own thread be unable to run (the GIL held forever by native code),
  ``faulthandler.dump_traceback_later`` (a C thread, no GIL needed) dumps the stacks and exits
  at twice the budget; :func:`cleanup_stale` of the next run removes what is left.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

STALL_EXIT_STATUS = 3
CHECK_EVERY_S = 2.0


class Watchdog:
    def __init__(self, on_stall: Callable[[], None], say: Callable[[str], None]) -> None:
        self._on_stall = on_stall
        self._say = say
        self._lock = threading.Lock()
        self._phase = "start"
        self._budget_s = 300.0
        self._last = time.monotonic()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="chaos-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._arm_native()

    def phase(self, name: str, budget_s: float) -> None:
        with self._lock:
            self._phase, self._budget_s, self._last = name, budget_s, time.monotonic()
        self._arm_native()

    def beat(self) -> None:
        with self._lock:
            self._last = time.monotonic()

    def stop(self) -> None:
        self._stopped.set()
        faulthandler.cancel_dump_traceback_later()

    def _arm_native(self) -> None:
        if not self._stopped.is_set():
            faulthandler.dump_traceback_later(2 * self._budget_s + 60, exit=True)

    def _watch(self) -> None:
        while not self._stopped.wait(CHECK_EVERY_S):
            with self._lock:
                silent_s = time.monotonic() - self._last
                phase, budget_s = self._phase, self._budget_s
            if silent_s > budget_s:
                self._stall(phase, silent_s)
            else:
                self._arm_native()

    def _stall(self, phase: str, silent_s: float) -> None:
        self._say(
            f"chaos: WATCHDOG: the harness made no progress in phase {phase!r} for "
            f"{silent_s:.0f}s (budget exceeded); stacks follow, then cleanup and exit "
            f"{STALL_EXIT_STATUS}"
        )
        with contextlib.suppress(Exception):
            faulthandler.dump_traceback(sys.stderr, all_threads=True)
        py_spy = Path(sys.executable).with_name("py-spy")
        if py_spy.exists():
            with contextlib.suppress(Exception):
                done = subprocess.run(
                    [str(py_spy), "dump", "--native", "--pid", str(os.getpid())],
                    capture_output=True,
                    timeout=60,
                    check=False,
                )
                self._say(done.stdout.decode(errors="replace") + done.stderr.decode("replace"))
        with contextlib.suppress(Exception):
            self._on_stall()
        self._say(f"chaos: the harness hung in phase {phase!r}: run failed (watchdog)")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(STALL_EXIT_STATUS)
