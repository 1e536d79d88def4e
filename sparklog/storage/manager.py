"""The log manager: every partition log of a node across its log directories.

Contract (Kafka's ``LogManager``):
- Each log dir holds ``topic-partition`` directories plus four offset checkpoints
  (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``replication-offset-checkpoint`` and the log cleaner's ``cleaner-offset-checkpoint``, the
  first dirty offset of each compacted log) and, after a clean shutdown,
  ``.kafka_cleanshutdown``.
- :meth:`retention_pass` applies retention, then compaction (:meth:`clean`, synchronously;
  a caller that writes cleaned segments on another thread uses :meth:`cleaning_passes`),
  expires idle producers and removes ``.deleted`` files whose delay has passed.
- :meth:`load` reads the marker and checkpoints, then *removes* the marker before opening any
  log, so a crash during this run is never mistaken for a clean shutdown. Without the marker
  each log is recovered from its checkpointed recovery point. Directories ending in
  ``-delete`` are leftovers of a deletion and are removed.
- :meth:`checkpoint` writes the three files atomically; :meth:`shutdown` flushes every log
  (and snapshots its producer state at the log end offset),
  checkpoints and then writes the marker, in that order.
- A missing or unreadable checkpoint is treated as empty (recovery from offset 0: slower,
  never unsafe). Recovery points are only as fresh as the last :meth:`checkpoint`; the broker
  calls it periodically (Kafka: ``log.flush.offset.checkpoint.interval.ms``).
- :meth:`handle_log_dir_failure` takes a dir that had an I/O error out of ``log_dirs`` for
  good (Kafka's offline log dir): nothing is written there again until the next start.
- Not thread-safe; the broker drives it from one place.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable

from sparklog.storage.checkpoint import (
    CheckpointError,
    atomic_write,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from sparklog.storage.cleaner import CleaningPass, CleanResult, LogCleaner
from sparklog.storage.config import LogConfig
from sparklog.storage.loader import log_dir_name, parse_log_dir_name
from sparklog.storage.log import Clock, Log

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
DELETE_DIR_SUFFIX = "-delete"

TopicPartition = tuple[str, int]

_log = logging.getLogger(__name__)


METADATA_TOPIC = "__cluster_metadata"


def _read_checkpoint(path: str) -> dict[TopicPartition, int]:
    try:
        return read_offset_checkpoint(path)
    except FileNotFoundError:
        return {}
    except (CheckpointError, OSError, UnicodeDecodeError) as exc:
        _log.warning("Ignoring unreadable checkpoint %s: %s", path, exc)
        return {}


class LogManager:
    """Owns the :class:`Log` of every partition hosted in ``log_dirs``."""

    def __init__(self, log_dirs: list[str], default_config: LogConfig, clock: Clock) -> None:
        if not log_dirs:
            raise ValueError("at least one log directory is required")
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.default_config = default_config
        self._clock = clock
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, str] = {}
        self.cleaner = LogCleaner()
        # The broker epoch recorded by the last clean shutdown of every log dir, else -1: sent
        # as BrokerRegistration's previous_broker_epoch so the controller knows this restart
        # lost nothing (KIP-966 keeps such a broker in the ELR).
        self.previous_broker_epoch = -1

    def load(self, config_for: Callable[[str], LogConfig] | None = None) -> None:
        """Open every log found in the log dirs; ``config_for(topic)`` gives topic configs."""
        epochs: list[int] = []
        for log_dir in self.log_dirs:
            os.makedirs(log_dir, exist_ok=True)
            marker = os.path.join(log_dir, CLEAN_SHUTDOWN_FILE)
            clean = os.path.exists(marker)
            recovery = _read_checkpoint(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT))
            starts = _read_checkpoint(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT))
            watermarks = _read_checkpoint(os.path.join(log_dir, REPLICATION_OFFSET_CHECKPOINT))
            dirty = _read_checkpoint(os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT))
            if clean:
                epochs.append(_marker_broker_epoch(marker))
                os.remove(marker)
            entries = sorted(os.listdir(log_dir))
            candidates = [n for n in entries if os.path.isdir(os.path.join(log_dir, n))]
            _log.info(
                "Loading %d logs from %s (%s shutdown)",
                len(candidates),
                log_dir,
                "clean" if clean else "unclean",
            )
            for done, name in enumerate(candidates, 1):
                path = os.path.join(log_dir, name)
                if name.endswith(DELETE_DIR_SUFFIX):
                    shutil.rmtree(path, ignore_errors=True)
                    continue
                parsed = parse_log_dir_name(name)
                if parsed is None or parsed[0] == METADATA_TOPIC:
                    # The metadata log belongs to the raft layer, which opens it itself.
                    continue
                if parsed in self._logs:
                    raise RuntimeError(f"Duplicate log directories for {parsed}: {path}")
                config = config_for(parsed[0]) if config_for else self.default_config
                self._logs[parsed] = Log.open(
                    path,
                    config,
                    self._clock,
                    log_start_offset=starts.get(parsed, 0),
                    recovery_point=recovery.get(parsed, 0),
                    high_watermark=watermarks.get(parsed, 0),
                    had_clean_shutdown=clean,
                )
                self._dir_of[parsed] = log_dir
                if parsed in dirty:
                    self.cleaner.first_dirty_offsets[parsed] = dirty[parsed]
                _log.info("Loaded log %s (%d/%d in %s)", name, done, len(candidates), log_dir)
        clean_everywhere = len(epochs) == len(self.log_dirs) and len(set(epochs)) == 1
        self.previous_broker_epoch = epochs[0] if clean_everywhere else -1

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def dir_of(self, topic: str, partition: int) -> str | None:
        """The (absolute) log dir holding the partition's log, if this node has it."""
        return self._dir_of.get((topic, partition))

    def all_logs(self) -> list[Log]:
        return list(self._logs.values())

    def create_log(
        self,
        topic: str,
        partition: int,
        topic_id: bytes | None,
        config: LogConfig | None = None,
        log_dir: str | None = None,
    ) -> Log:
        """Return the partition's log, creating it if needed in ``log_dir`` (one of
        :attr:`log_dirs`, the dir the metadata placed the replica in), else in the
        least-loaded log dir."""
        key = (topic, partition)
        existing = self._logs.get(key)
        if existing is not None:
            return existing
        if log_dir is not None and os.path.abspath(log_dir) in self.log_dirs:
            log_dir = os.path.abspath(log_dir)
        elif len(self.log_dirs) == 1:
            log_dir = self.log_dirs[0]  # no count of every log (20,000 creates: quadratic)
        else:
            counts = {d: 0 for d in self.log_dirs}
            for log_dir in self._dir_of.values():
                counts[log_dir] += 1
            log_dir = min(self.log_dirs, key=lambda d: counts[d])
        log = Log.open(
            os.path.join(log_dir, log_dir_name(topic, partition)),
            config or self.default_config,
            self._clock,
            topic_id=topic_id,
            had_clean_shutdown=True,
        )
        self._logs[key] = log
        self._dir_of[key] = log_dir
        return log

    def delete_log(self, topic: str, partition: int, *, checkpoint: bool = True) -> bool:
        """Rename the directory to ``topic-partition.<uuid>-delete`` and remove it, then
        checkpoint (a caller deleting many logs passes ``checkpoint=False`` and checkpoints
        once after them)."""
        key = (topic, partition)
        log = self._logs.pop(key, None)
        if log is None:
            return False
        log_dir = self._dir_of.pop(key)
        self.cleaner.forget(key)
        log.close()
        doomed = os.path.join(
            log_dir, f"{log_dir_name(topic, partition)}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
        )
        os.replace(log.directory, doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        if checkpoint:
            self.checkpoint()
        return True

    def checkpoint(self) -> None:
        """Write the recovery point, log start and high watermark checkpoints of every dir."""
        for log_dir in self.log_dirs:
            self.checkpoint_dir(log_dir)

    def checkpoint_dir(self, log_dir: str) -> None:
        """:meth:`checkpoint` for one log dir (an ``OSError`` names only this dir's disk)."""
        if log_dir in self.log_dirs:
            logs = {k: v for k, v in self._logs.items() if self._dir_of[k] == log_dir}
            write_offset_checkpoint(
                os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT),
                {k: log.recovery_point for k, log in logs.items()},
            )
            write_offset_checkpoint(
                os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT),
                {k: log.log_start_offset for k, log in logs.items()},
            )
            write_offset_checkpoint(
                os.path.join(log_dir, REPLICATION_OFFSET_CHECKPOINT),
                {k: log.high_watermark for k, log in logs.items()},
            )
            dirty = self.cleaner.first_dirty_offsets
            write_offset_checkpoint(
                os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT),
                {k: dirty[k] for k in logs if k in dirty},
            )

    def handle_log_dir_failure(self, log_dir: str) -> list[TopicPartition]:
        """Stop managing every log in ``log_dir`` after an I/O error there (Kafka's
        ``LogManager.handleLogDirFailure``): its logs are closed and forgotten, and nothing
        (checkpoints, retention, cleaning, the clean-shutdown marker) touches the dir again.
        Its files stay as they are for recovery at the next start. Returns the partitions."""
        path = os.path.abspath(log_dir)
        if path not in self.log_dirs:
            return []
        self.log_dirs.remove(path)
        gone = [k for k, d in self._dir_of.items() if d == path]
        for key in gone:
            log = self._logs.pop(key)
            del self._dir_of[key]
            self.cleaner.forget(key)
            try:
                log.close()
            except OSError:
                _log.warning("Closing %s after its dir failed raised", log.directory)
        return gone

    def flush_due(self, now_ms: int) -> int:
        """Flush logs whose flush.ms has elapsed; returns how many were flushed."""
        return sum(1 for log in list(self._logs.values()) if log.flush_if_due(now_ms))

    def retention_pass(self, now_ms: int, *, clean: bool = True) -> int:
        """Apply retention and (unless ``clean`` is False: the caller runs
        :meth:`cleaning_passes` itself) compaction to every log, expire idle producers and
        remove expired ``.deleted`` files; returns how many segments retention deleted."""
        deleted = 0
        for log in list(self._logs.values()):
            deleted += log.delete_retention_breached(now_ms)
        if clean:
            self.clean(now_ms)
        for log in list(self._logs.values()):
            log.remove_expired_producers(now_ms)
            log.delete_expired_files(now_ms)
        return deleted

    def cleaning_passes(self, now_ms: int) -> list[CleaningPass]:
        """The compaction passes due now, planned; the caller writes each (on any thread)
        and installs it (on this manager's thread)."""
        passes: list[CleaningPass] = []
        for key, log in list(self._logs.items()):
            try:
                planned = self.cleaner.plan(key, log, now_ms)
            except Exception:
                _log.exception("Planning the cleaning of %s failed", log.directory)
                continue
            if planned is not None:
                passes.append(planned)
        return passes

    def clean(self, now_ms: int) -> dict[TopicPartition, CleanResult]:
        """Compact every log with cleanup.policy including compact that needs it now."""
        results: dict[TopicPartition, CleanResult] = {}
        for key, log in list(self._logs.items()):
            try:
                result = self.cleaner.maybe_clean(key, log, now_ms)
            except Exception:
                # A damaged batch must not stop the other logs' cleaning nor the node.
                _log.exception("Cleaning %s failed", log.directory)
                continue
            if result is not None:
                results[key] = result
        return results

    def shutdown(self, broker_epoch: int = -1) -> None:
        """Flush and close every log, checkpoint, then mark each dir cleanly shut down."""
        for log in self._logs.values():
            log.flush()
            log.take_producer_snapshot()
            log.delete_expired_files(1 << 62)
        self.checkpoint()
        for log in self._logs.values():
            log.close()
        for log_dir in self.log_dirs:
            # The broker epoch (Kafka 3.5+) lets the next registration claim a clean restart.
            payload = json.dumps({"version": 0, "brokerEpoch": broker_epoch}).encode()
            atomic_write(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE), payload)
        self._logs.clear()
        self._dir_of.clear()


def _marker_broker_epoch(path: str) -> int:
    """The broker epoch in a ``.kafka_cleanshutdown`` marker (-1 if absent or unreadable)."""
    try:
        with open(path, "rb") as f:
            value = json.loads(f.read() or b"{}").get("brokerEpoch", -1)
    except (OSError, ValueError, AttributeError):
        return -1
    return value if isinstance(value, int) else -1
