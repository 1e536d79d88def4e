"""Each workload client in a child process of its own, so no client can stall the nemesis.

Contract:

- :class:`ClientProcess` runs one :mod:`tests.chaos.workload` worker (named by its class, or
  ``module:Class`` elsewhere, and constructor arguments, all picklable) in a ``spawn``-ed
  child process that writes its own history file (``client-<name>.jsonl``, line-flushed: a
  killed child leaves every completed op readable). The child dies with the harness
  (``PR_SET_PDEATHSIG``).
- A librdkafka fatal error, a native hang or a crash of a client therefore stays in its child:
  the harness (the nemesis, the watchdog, the drain) shares no interpreter, no GIL and no
  librdkafka instance with any client. A seed-42 run once hung with every harness thread parked
  in a timed ``Event.wait`` after a producer's fatal "Unable to reconstruct MessageSet"; with
  the clients in threads nothing could preempt that.
- :meth:`ClientProcess.stop` asks the child to stop with SIGTERM (its worker flushes and closes
  its client); :meth:`ClientProcess.join` waits a bounded time and then SIGKILLs it, returning
  whether it stopped on its own. :meth:`ClientProcess.read_new` returns the ops written since
  the last call (for progress lines); :func:`merge_histories` merges the harness's and every
  client's file by ``time_ns`` (one ``CLOCK_MONOTONIC`` for every process of the box) into one
  history.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.chaos.history import History, Op, load, parse

_CONTEXT = multiprocessing.get_context("spawn")


def _child_main(
    kind: str, name: str, args: tuple[Any, ...], path: str
) -> None:  # pragma: no cover - runs in the child
    import importlib
    import threading

    from tests.chaos import workload
    from tests.integration.node_harness import _die_with_parent

    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the harness's to handle
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
    history = History(Path(path))
    module_name, _, class_name = kind.rpartition(":")
    module = importlib.import_module(module_name) if module_name else workload
    worker: workload.Worker = getattr(module, class_name)(name, history, *args)
    worker.start()
    while not stop.wait(0.5):
        if not worker.thread.is_alive():
            break
    worker.stop()
    worker.join(60)
    history.close()
    # Not a normal exit: a librdkafka instance in a bad state may block its destructor forever.
    os._exit(0)


class ClientProcess:
    def __init__(self, root: Path, kind: str, name: str, *args: Any) -> None:
        self.name = name
        self.path = root / f"client-{name}.jsonl"
        self._process = _CONTEXT.Process(
            target=_child_main,
            args=(kind, name, args, str(self.path)),
            name=f"chaos-{name}",
            daemon=True,
        )
        self._offset = 0
        self._pending = b""

    def start(self) -> None:
        self._process.start()

    def is_alive(self) -> bool:
        return self._process.is_alive()

    def stop(self) -> None:
        """SIGTERM: the child's handler sets its stop event. (A ``multiprocessing.Event``
        shared with the child hung the harness: ``Event.set`` waits for every sleeper to
        acknowledge, and a seed-42 run's parent blocked there for good.)"""
        pid = self._process.pid
        if pid is not None and self._process.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def join(self, timeout_s: float) -> bool:
        """True when the child ended on its own within ``timeout_s``; else it is SIGKILLed."""
        self._process.join(timeout_s)
        if self._process.is_alive():
            self.kill()
            return False
        return True

    def kill(self) -> None:
        pid = self._process.pid
        if pid is not None and self._process.is_alive():
            os.kill(pid, signal.SIGKILL)
            self._process.join(10)

    def read_new(self) -> list[Op]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        self._offset += len(chunk)
        data = self._pending + chunk
        cut = data.rfind(b"\n") + 1
        self._pending = data[cut:]
        return parse(data[:cut].decode("utf-8", errors="replace").splitlines())


def merge_histories(paths: Sequence[Path], into: Path) -> list[Op]:
    """Every op of ``paths`` ordered by ``time_ns`` (stable), also written to ``into``."""
    ops: list[Op] = []
    for path in paths:
        if path.exists():
            ops.extend(load(path))
    ops.sort(key=lambda op: op.time_ns)
    with into.open("w", encoding="utf-8") as handle:
        for op in ops:
            handle.write(op.to_json() + "\n")
    return ops
