"""A Jepsen-style history: one JSON object per line, appended by many threads, read back offline.

Contract:

- Every operation is ``{"process", "type", "f", "value", "time_ns"}`` with ``type`` one of
  ``invoke`` (about to do ``f``), ``ok`` (it happened), ``fail`` (it definitely did not happen:
  e.g. an aborted transaction) or ``info`` (indeterminate, or an observation such as a fault or
  a watermark). ``time_ns`` is ``time.monotonic_ns()`` of this process, so ops are ordered
  within one run; ``value`` is any JSON value.
- :class:`History` is safe to share between threads; each line is written and flushed under
  one lock, so a crash of the harness leaves every completed line readable.
- :func:`load` reads a history file back into a list of :class:`Op` in file order (an
  incomplete last line, from a killed harness, is ignored).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

OpType = Literal["invoke", "ok", "fail", "info"]
OP_TYPES: frozenset[str] = frozenset({"invoke", "ok", "fail", "info"})


@dataclass(frozen=True, slots=True)
class Op:
    process: str
    type: str
    f: str
    value: Any
    time_ns: int

    def to_json(self) -> str:
        return json.dumps(
            {
                "process": self.process,
                "type": self.type,
                "f": self.f,
                "value": self.value,
                "time_ns": self.time_ns,
            },
            separators=(",", ":"),
        )


class History:
    """Appends ops to a JSONL file (and keeps them in memory when ``keep`` is set)."""

    def __init__(self, path: Path, *, keep: bool = False) -> None:
        self.path = path
        self._file: TextIO = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        self._keep = keep
        self.ops: list[Op] = []

    def record(self, process: str, type_: OpType, f: str, value: Any = None) -> Op:
        op = Op(process, type_, f, value, time.monotonic_ns())
        line = op.to_json()
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
            if self._keep:
                self.ops.append(op)
        return op

    def close(self) -> None:
        with self._lock:
            self._file.close()


def parse(lines: Iterable[str]) -> list[Op]:
    ops: list[Op] = []
    for line in lines:
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        if raw.get("type") not in OP_TYPES:
            raise ValueError(f"not a history op: {line[:200]}")
        ops.append(Op(raw["process"], raw["type"], raw["f"], raw["value"], int(raw["time_ns"])))
    return ops


def load(path: Path) -> list[Op]:
    with path.open(encoding="utf-8") as handle:
        return parse(handle)
