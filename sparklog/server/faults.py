"""How a running node reacts to faults: failed tasks and offline log dirs.

:class:`NodeFaults` is the node's one place for it:
- :meth:`NodeFaults.supervise` gives each long-running task of the node a done-callback
  (:func:`sparklog.fault.supervise`). The node's tasks are all essential (heartbeats, ISR
  expiration, flushes, checkpoints, the coordinators' loops, the controller's timers): each
  catches the errors it expects, so an exception escaping one is a fault and, while the node
  is running, halts it (:attr:`NodeFaults.fault_handler`). During shutdown the failure is
  only logged: a clean stop must not turn into a halt that skips the clean-shutdown marker.
- :meth:`NodeFaults.log_dir_failed` is the :class:`~sparklog.broker.log_dir_failure.
  LogDirFailureChannel` listener. It runs the broker's handling on the next loop iteration
  (never inside the append or flush that failed, as Kafka's handler runs on a thread of its
  own): the replica manager stops serving the dir's partitions, then either the node halts
  (the metadata log dir failed, or every data log dir is offline: Kafka's messages) or the
  dir's id goes into the broker heartbeats' ``OfflineLogDirs`` (KIP-858).
- :meth:`NodeFaults.checkpoint` writes each log dir's checkpoints; an ``OSError`` there
  takes that dir offline ("Disk error while writing recovery offsets checkpoint in
  directory ...", as Kafka) instead of failing every checkpoint pass after it.
- :meth:`NodeFaults.io_error` does the same for retention and the log cleaner: the dir is the
  one named, else the one holding the file the error names; an error naming no data log dir,
  or a shortage of file descriptors, is re-raised (not a disk fault this class can place).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping

from sparklog.broker.lifecycle import BrokerLifecycleManager
from sparklog.broker.log_dir_failure import failure_decision, is_disk_failure, log_dir_holding
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.fault import FaultHandler, supervise
from sparklog.protocol.kafka_uuid import uuid_from_str

log = logging.getLogger(__name__)


def _task_name(task: asyncio.Task[object]) -> str:
    coro = task.get_coro()
    name = getattr(coro, "__qualname__", None) or task.get_name()
    frame_locals = getattr(getattr(coro, "cr_frame", None), "f_locals", None) or {}
    duty = frame_locals.get("duty")
    if duty is not None:
        name = f"{name}({getattr(duty, '__name__', duty)!s})"
    return str(name)


class NodeFaults:
    """The fault handling of one node; see the module docstring."""

    def __init__(
        self,
        fault_handler: FaultHandler,
        stopping: asyncio.Event,
        metadata_log_dir: str,
        directory_ids: Mapping[str, str],
    ) -> None:
        self.fault_handler = fault_handler
        self.stopping = stopping
        self.metadata_log_dir = os.path.abspath(metadata_log_dir)
        self.directory_ids = {os.path.abspath(d): i for d, i in directory_ids.items() if i}
        self.replica_manager: ReplicaManager | None = None
        self.lifecycle: Callable[[], BrokerLifecycleManager | None] = lambda: None
        self._supervised: set[asyncio.Task[object]] = set()

    # -- tasks ------------------------------------------------------------------------------

    def supervise(self, tasks: list[asyncio.Task[None]]) -> None:
        """Supervise every task of ``tasks`` not supervised yet."""
        for task in tasks:
            if task not in self._supervised:
                self._supervised.add(task)
                supervise(task, _task_name(task), fault_handler=self._task_fault)

    def _task_fault(self, message: str, cause: BaseException | None = None) -> None:
        if self.stopping.is_set():
            return  # already logged by the done-callback; the node is stopping anyway
        self.fault_handler(message, cause)

    # -- log dirs ---------------------------------------------------------------------------

    def attach(self, replica_manager: ReplicaManager) -> None:
        self.replica_manager = replica_manager
        replica_manager.log_dir_failures.listener = self.log_dir_failed

    def log_dir_failed(self, log_dir: str) -> None:
        asyncio.get_running_loop().call_soon(self.handle_log_dir_failure, log_dir)

    def handle_log_dir_failure(self, log_dir: str) -> None:
        rm = self.replica_manager
        if rm is None:
            return
        rm.handle_log_dir_failure(log_dir)
        decision = failure_decision(rm.log_dir_failures, log_dir, self.metadata_log_dir)
        if decision.fatal_message is not None:
            self.fault_handler(decision.fatal_message, None)
            return
        directory_id = self.directory_ids.get(os.path.abspath(log_dir))
        lifecycle = self.lifecycle()
        if directory_id and lifecycle is not None:
            lifecycle.report_offline_dir(uuid_from_str(directory_id))

    def io_error(self, exc: OSError, message: str, log_dir: str | None = None) -> None:
        """Take the log dir behind ``exc`` offline (see the module docstring)."""
        rm = self.replica_manager
        directory = log_dir
        if directory is None and rm is not None:
            directory = log_dir_holding(exc.filename, rm.log_dir_failures.log_dirs)
        if rm is None or directory is None or not is_disk_failure(exc):
            raise exc
        rm.log_dir_failures.maybe_add_offline_log_dir(
            directory, f"{message} in dir {directory}: {exc}", exc
        )

    def checkpoint(self) -> None:
        rm = self.replica_manager
        if rm is None:
            return
        manager = rm.log_manager
        for log_dir in list(manager.log_dirs):
            try:
                manager.checkpoint_dir(log_dir)
            except OSError as exc:
                if not is_disk_failure(exc):
                    raise
                rm.log_dir_failures.maybe_add_offline_log_dir(
                    log_dir,
                    f"Disk error while writing recovery offsets checkpoint in directory "
                    f"{log_dir}: {exc}",
                    exc,
                )
