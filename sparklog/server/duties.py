"""The periodic background duties of a node, each a task on the event loop.

Contract:
- :meth:`NodeDuties.every` runs a duty every ``interval_s`` (at least 50 ms) until the node's
  ``stopping`` event is set; an exception in one run is logged and the next run still
  happens (a duty never dies of one bad pass). It returns as soon as ``stopping`` is set.
- :meth:`NodeDuties.log_tasks` starts the partition-log duties of a broker, as Kafka
  schedules them: the flush scheduler (``log.flush.scheduler.interval.ms``), retention
  (``log.retention.check.interval.ms``), the cleaner (every ``log.cleaner.backoff.ms``, or
  the retention interval if shorter) and the checkpoint of recovery points, log start
  offsets and high watermarks.
- Compaction writes on one cleaner thread (Kafka's ``log.cleaner.threads=1``); planning and
  the segment swap stay on the loop. An I/O error of retention or cleaning goes to the
  node's fault handling (:class:`~sparklog.server.faults.NodeFaults`), which takes the log
  dir offline. :meth:`NodeDuties.close` waits for a pass being written (its files are swept
  at the next start, never installed), so no segment it reads is closed under it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from sparklog.broker.log_dir_failure import log_dir_of
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.config import ServerConfig
from sparklog.server.faults import NodeFaults
from sparklog.storage.manager import LogManager

__all__ = ["CHECKPOINT_INTERVAL_S", "NodeDuties", "now_ms"]

log = logging.getLogger(__name__)

CHECKPOINT_INTERVAL_S = 5.0

Duty = Callable[[], object]
"""A duty: a function whose result is awaited when it is awaitable (otherwise ignored)."""


def now_ms() -> int:
    return int(time.time() * 1000)


class NodeDuties:
    """Runs a node's periodic duties until ``stopping`` is set."""

    def __init__(self, stopping: asyncio.Event, faults: NodeFaults) -> None:
        self._stopping = stopping
        self._faults = faults
        self._cleaner_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="log-cleaner")

    def spawn(
        self, interval_s: float, duty: Duty, *, immediately: bool = False
    ) -> asyncio.Task[None]:
        return asyncio.create_task(self.every(interval_s, duty, immediately=immediately))

    async def every(self, interval_s: float, duty: Duty, *, immediately: bool = False) -> None:
        interval_s = max(interval_s, 0.05)
        wait_s = 0.0 if immediately else interval_s
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), wait_s)
            wait_s = interval_s
            if self._stopping.is_set():
                return
            try:
                outcome = duty()
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                log.exception("background duty %s failed", getattr(duty, "__name__", duty))

    def log_tasks(
        self, config: ServerConfig, log_manager: LogManager, replica_manager: ReplicaManager
    ) -> list[asyncio.Task[None]]:
        """Start the flush, retention, cleaner and checkpoint duties of a broker's logs."""

        async def flush() -> None:
            await replica_manager.flush_due(now_ms())

        async def retention() -> None:
            try:
                deleted = log_manager.retention_pass(now_ms(), clean=False)
            except OSError as exc:
                self._faults.io_error(exc, "Error while deleting segments")
                return
            if deleted:
                log.info("Retention deleted %d segment(s)", deleted)

        async def clean() -> None:
            await self._clean(log_manager)

        retention_ms = int(config.get("log.retention.check.interval.ms"))
        return [
            self.spawn(int(config.get("log.flush.scheduler.interval.ms")) / 1000.0, flush),
            self.spawn(retention_ms / 1000.0, retention),
            # Kafka's cleaner thread looks for a log to compact every log.cleaner.backoff.ms,
            # whatever the retention check's interval (5 minutes by default).
            self.spawn(
                min(int(config.get("log.cleaner.backoff.ms")), retention_ms) / 1000.0, clean
            ),
            self.spawn(CHECKPOINT_INTERVAL_S, self._faults.checkpoint),
        ]

    async def _clean(self, log_manager: LogManager) -> None:
        loop = asyncio.get_running_loop()
        for cleaning in log_manager.cleaning_passes(now_ms()):
            log_dir = log_dir_of(cleaning.log.directory)
            try:
                await loop.run_in_executor(self._cleaner_thread, cleaning.write)
                cleaning.install()
            except OSError as exc:
                self._faults.io_error(exc, "Failed to clean up a log", log_dir)
            except Exception:
                log.exception("Cleaning %s failed", cleaning.log.directory)

    def close(self) -> None:
        """Wait for a cleaning pass being written; later ones are cancelled."""
        self._cleaner_thread.shutdown(wait=True, cancel_futures=True)
