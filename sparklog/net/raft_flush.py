"""The metadata log with its fsyncs run off the event loop (for :mod:`sparklog.net.raft_driver`).

:class:`OffloadedFlushLog` is a :class:`~sparklog.raft.log.ReplicatedLog` over a storage
:class:`~sparklog.storage.log.Log` whose :meth:`~OffloadedFlushLog.flush` does not block: it
plans the fsyncs (``Log.begin_flush``) and hands the plan to the runner the driver installed,
which runs it in an executor and calls :meth:`~OffloadedFlushLog.complete` back on the loop.

Why this is safe for the Raft core: the core only ever *reads* durability through
``flushed_offset`` (the log's recovery point), which advances only in :meth:`complete`, after
the fsyncs returned. A leader therefore counts its own entries toward the high watermark only
once they are on disk. A follower's next Fetch reports its log end offset as durable; the driver
holds that Fetch back until :attr:`flush_pending` is false (see the driver), which keeps the
core's rule "followers flush before fetching again".

Invariant: ``flushed_offset`` never covers an offset whose current bytes were not fsynced. A
truncation while a plan runs may replace offsets the plan was meant to cover, so a plan that
completes after a truncation to ``t`` advances the recovery point to at most ``t``. The same
holds for :meth:`~OffloadedFlushLog.reset_to` (a snapshot download restarting the log at
``t``): the old plan's segments are gone, and the offsets above ``t`` will hold new bytes.

I/O errors: an ``OSError`` from any write (append, truncation, reset, an inline flush) is
reported to :attr:`OffloadedFlushLog.on_io_error` (the driver's fatal path: the node stops)
before it propagates, whichever caller made the write (the raft core, the controller's
appends), so a write failure can never be mistaken for a recoverable request error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sparklog.raft.log import BatchInfo, StorageReplicatedLog
from sparklog.storage.log import Log
from sparklog.storage.log_durability import FlushPlan

FlushRunner = Callable[[FlushPlan], None]
# (what was being done, the error): called before the error propagates
IoErrorHook = Callable[[str, OSError], None]


class OffloadedFlushLog(StorageReplicatedLog):
    """A storage-backed replicated log whose flushes complete asynchronously."""

    def __init__(self, log: Log) -> None:
        super().__init__(log)
        # Appends never fsync on their own: durability is the Raft core's decision.
        log.auto_flush = False
        self._runner: FlushRunner | None = None
        # Plans handed to the runner, each with the lowest truncation point seen since.
        self._running: dict[int, int] = {}
        self._requested_target = -1
        self.on_io_error: IoErrorHook | None = None

    @contextmanager
    def _writing(self, action: str) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            if self.on_io_error is not None:
                self.on_io_error(action, exc)
            raise

    def append_as_leader(self, batch: bytes, epoch: int) -> BatchInfo:
        with self._writing("appending to"):
            return super().append_as_leader(batch, epoch)

    def append_as_follower(self, data: bytes) -> list[BatchInfo]:
        with self._writing("appending to"):
            return super().append_as_follower(data)

    def delete_before(self, offset: int, epoch: int) -> None:
        with self._writing("moving the start of"):
            super().delete_before(offset, epoch)

    def bind(self, runner: FlushRunner | None) -> None:
        """Install how plans run (the driver's executor); ``None`` flushes inline again."""
        self._runner = runner

    @property
    def flush_pending(self) -> bool:
        """True while a requested flush has not completed."""
        return bool(self._running)

    def flush(self) -> None:
        if self._runner is None:
            with self._writing("flushing"):
                super().flush()
            return
        target = self.log.log_end_offset
        if target <= self._requested_target and self._running:
            return  # a running plan already covers it
        plan = self.log.begin_flush(target)
        if plan is None:
            return
        self._requested_target = plan.target
        self._running[id(plan)] = plan.target
        self._runner(plan)

    def truncated_since(self, plan: FlushPlan) -> bool:
        """True if the log was truncated below ``plan``'s target while it ran."""
        return self._running.get(id(plan), plan.target) < plan.target

    def complete(self, plan: FlushPlan, succeeded: bool) -> None:
        """Called on the loop thread once ``plan.run()`` returned (or raised)."""
        limit = self._running.pop(id(plan), plan.target)
        if not self._running:
            self._requested_target = -1
        if succeeded:
            self.log.complete_flush(FlushPlan(plan.directory, limit, plan.segments))

    def truncate_to(self, offset: int) -> None:
        with self._writing("truncating"):
            super().truncate_to(offset)
        self._cap_running(offset)

    def reset_to(self, offset: int, epoch: int) -> None:
        with self._writing("resetting"):
            super().reset_to(offset, epoch)
        self._cap_running(offset)

    def _cap_running(self, offset: int) -> None:
        for key, limit in self._running.items():
            self._running[key] = min(limit, offset)
        self._requested_target = min(self._requested_target, offset)
