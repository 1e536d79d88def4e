"""Offline data log directories (Kafka's ``LogDirFailureChannel`` and its handler's rules).

Contract:
- A data log dir is online until the first I/O error (``OSError``: ENOSPC, EIO, EROFS, ...)
  while writing, flushing, rolling or checkpointing one of its logs. :meth:`LogDirFailureChannel.
  maybe_add_offline_log_dir` then marks it offline, logs the error once at ERROR naming the dir,
  and hands the dir to the listener (the broker's failure handler). Later errors in the same
  dir are neither logged again nor handed over: each dir goes offline exactly once.
- Offline is final for the life of the process: a dir never comes back online without a
  restart (Kafka: the operator frees the disk and restarts the broker, whose recovery
  truncates whatever torn tail the failed write left).
- The channel only records; what going offline means is :func:`failure_decision`'s: the
  metadata log dir failing, or every data log dir being offline, halts the broker with
  Kafka's messages ("Shutdown broker because the metadata log dir ... has failed", "Shutdown
  broker because all log dirs in ... have failed"); otherwise the broker stops serving the
  dir's partitions (KAFKA_STORAGE_ERROR) and reports the dir's id to the controller.
- Running out of file descriptors (EMFILE, ENFILE) is not a disk failure
  (:func:`is_disk_failure`): the operation fails with KAFKA_STORAGE_ERROR and is retried, the
  dir stays online (:mod:`sparklog.storage.handles`).
- Paths are compared as absolute paths; :func:`log_dir_of` is the parent of a partition dir,
  :func:`log_dir_holding` the data log dir a file path lies in.
- Not thread-safe: used from the broker's event loop only.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.storage.handles import is_out_of_descriptors

log = logging.getLogger(__name__)

OfflineListener = Callable[[str], None]


def log_dir_of(partition_directory: str) -> str:
    """The log dir holding a partition directory (its absolute parent)."""
    return os.path.dirname(os.path.abspath(partition_directory.rstrip(os.sep)))


def is_disk_failure(exc: BaseException) -> bool:
    """True for an I/O error that takes a log dir offline (not a descriptor shortage)."""
    return isinstance(exc, OSError) and not is_out_of_descriptors(exc)


def log_dir_holding(path: object, log_dirs: Iterable[str]) -> str | None:
    """The dir of ``log_dirs`` that ``path`` (an ``OSError.filename``) lies in, if any."""
    if not isinstance(path, str):
        return None
    target = os.path.abspath(path)
    for log_dir in log_dirs:
        if target.startswith(os.path.abspath(log_dir) + os.sep):
            return os.path.abspath(log_dir)
    return None


def storage_error(topic: str, index: int, log_dir: str) -> KafkaApiError:
    """KAFKA_STORAGE_ERROR (56) for a partition in an offline log dir."""
    return KafkaApiError(
        ErrorCode.KAFKA_STORAGE_ERROR,
        f"Partition {topic}-{index} is in an offline log directory {log_dir}",
    )


class LogDirFailureChannel:
    """Which data log dirs are offline, and who to tell when one goes offline."""

    def __init__(self, log_dirs: Iterable[str]) -> None:
        self.log_dirs = tuple(os.path.abspath(d) for d in log_dirs)
        self._offline: list[str] = []
        self.listener: OfflineListener | None = None

    def is_online(self, log_dir: str) -> bool:
        return os.path.abspath(log_dir) not in self._offline

    @property
    def offline_dirs(self) -> tuple[str, ...]:
        """Offline dirs in the order they failed."""
        return tuple(self._offline)

    @property
    def any_offline(self) -> bool:
        return bool(self._offline)

    @property
    def all_offline(self) -> bool:
        return bool(self.log_dirs) and all(d in self._offline for d in self.log_dirs)

    def maybe_add_offline_log_dir(self, log_dir: str, message: str, cause: BaseException) -> bool:
        """Mark ``log_dir`` offline after ``cause``; True the first time only."""
        path = os.path.abspath(log_dir)
        if path in self._offline:
            return False
        self._offline.append(path)
        log.error("%s (log dir %s is now offline)", message, path, exc_info=cause)
        if self.listener is not None:
            self.listener(path)
        return True


@dataclass(frozen=True, slots=True)
class FailureDecision:
    """What the broker does about a dir that went offline: halt with ``fatal_message``, or
    keep running without it."""

    fatal_message: str | None


def failure_decision(
    channel: LogDirFailureChannel, failed_dir: str, metadata_log_dir: str
) -> FailureDecision:
    """Kafka's rules (``ReplicaManager``/``LogManager.handleLogDirFailure``) for ``failed_dir``."""
    failed = os.path.abspath(failed_dir)
    if failed == os.path.abspath(metadata_log_dir):
        return FailureDecision(f"Shutdown broker because the metadata log dir {failed} has failed")
    if channel.all_offline:
        dirs = ", ".join(channel.log_dirs)
        return FailureDecision(f"Shutdown broker because all log dirs in {dirs} have failed")
    return FailureDecision(None)
