"""SnapshotGenerator: decides when to write a metadata snapshot (Kafka's ``SnapshotGenerator``).

The :class:`~sparklog.metadata.loader.MetadataLoader` tells the generator about every
committed batch it folds in (its size in bytes and the image after it) and about every snapshot
it loads. Rules, with Kafka's configuration keys:

- After at least ``metadata.log.max.record.bytes.between.snapshots`` (default 20 MiB) of
  committed batches since the last snapshot, the current image is emitted.
- Otherwise, if ``metadata.log.max.snapshot.interval.ms`` (default 1 h; 0 disables it) has
  passed since the last snapshot, the image is emitted when the next batch arrives.
- Emitting, or loading a snapshot, resets both counters. An emitter that fails is reported
  through ``on_error`` (the counters are reset anyway so a broken disk does not make every
  batch retry); a disabled generator (``disabled_reason``) never emits.

:func:`raft_snapshot_emitter` is the emitter for a :class:`~sparklog.raft.core.RaftReplica`:
it writes the image's records as a snapshot ending after the image's last offset, unless a
snapshot already covers that offset.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from sparklog.config import ServerConfig
from sparklog.metadata.image import MetadataImage
from sparklog.metadata.snapshot_image import snapshot_values
from sparklog.raft.snapshots import SnapshotId

_log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS = 20 * 1024 * 1024
DEFAULT_MAX_SNAPSHOT_INTERVAL_MS = 60 * 60 * 1000

Emitter = Callable[[MetadataImage], object]


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class SnapshotGenerator:
    def __init__(
        self,
        emitter: Emitter,
        *,
        max_bytes_between_snapshots: int = DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS,
        max_interval_ms: int = DEFAULT_MAX_SNAPSHOT_INTERVAL_MS,
        clock_ms: Callable[[], int] = _wall_clock_ms,
        disabled_reason: str | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        if max_bytes_between_snapshots < 1:
            raise ValueError("max_bytes_between_snapshots must be at least 1")
        self._emitter = emitter
        self.max_bytes_between_snapshots = max_bytes_between_snapshots
        self.max_interval_ms = max_interval_ms
        self._clock_ms = clock_ms
        self.disabled_reason = disabled_reason
        self._on_error = on_error
        self.bytes_since_last_snapshot = 0
        self._last_snapshot_ms = clock_ms()
        self.emitted = 0

    @classmethod
    def from_config(
        cls,
        config: ServerConfig,
        emitter: Emitter,
        *,
        clock_ms: Callable[[], int] = _wall_clock_ms,
        on_error: Callable[[Exception], None] | None = None,
    ) -> SnapshotGenerator:
        return cls(
            emitter,
            max_bytes_between_snapshots=int(
                config.get("metadata.log.max.record.bytes.between.snapshots")
            ),
            max_interval_ms=int(config.get("metadata.log.max.snapshot.interval.ms")),
            clock_ms=clock_ms,
            on_error=on_error,
        )

    def _reset(self) -> None:
        self.bytes_since_last_snapshot = 0
        self._last_snapshot_ms = self._clock_ms()

    def publish_snapshot(self, image: MetadataImage) -> None:
        """A snapshot was loaded: the log up to ``image`` is already summarised."""
        self._reset()

    def publish_log_delta(self, image: MetadataImage, batch_bytes: int) -> bool:
        """A committed batch of ``batch_bytes`` was folded into ``image``; True if emitted."""
        self.bytes_since_last_snapshot += batch_bytes
        if self.bytes_since_last_snapshot >= self.max_bytes_between_snapshots:
            limit = self.max_bytes_between_snapshots
            return self._emit(image, f"at least {limit} bytes were committed")
        if self.max_interval_ms > 0:
            waited_ms = self._clock_ms() - self._last_snapshot_ms
            if waited_ms >= self.max_interval_ms:
                return self._emit(image, f"{waited_ms} ms passed since the last snapshot")
        return False

    def _emit(self, image: MetadataImage, reason: str) -> bool:
        if self.disabled_reason is not None:
            return False
        self._reset()
        try:
            self._emitter(image)
        except Exception as exc:  # a failed snapshot must not stop metadata replay
            _log.exception("Failed to write a metadata snapshot at offset %d", _end(image))
            if self._on_error is not None:
                self._on_error(exc)
            return False
        self.emitted += 1
        _log.info("Wrote a metadata snapshot ending at offset %d: %s", _end(image), reason)
        return True


def _end(image: MetadataImage) -> int:
    return image.provenance.last_offset + 1


class SnapshotWriterClient(Protocol):
    """What the emitter needs of the raft client (a ``RaftReplica``)."""

    @property
    def latest_snapshot_id(self) -> SnapshotId | None: ...

    def create_snapshot(
        self, end_offset: int, values: list[bytes], last_contained_timestamp: int
    ) -> SnapshotId: ...


def raft_snapshot_emitter(raft: SnapshotWriterClient) -> Callable[[MetadataImage], None]:
    def emit(image: MetadataImage) -> None:
        end = _end(image)
        latest = raft.latest_snapshot_id
        if end <= 0 or (latest is not None and latest.end_offset >= end):
            return
        raft.create_snapshot(end, snapshot_values(image), image.provenance.last_append_timestamp)

    return emit
