"""RemoteLogMetadataManager (KIP-405): segment states per partition, kept in memory and
published as the partition's ``manifest.json`` in the store (see :mod:`sparklog.tiering.layout`).

Rules:

- ``add_remote_log_segment_metadata`` records COPY_SEGMENT_STARTED in memory only; readers of
  the manifest never see a copy in progress.
- ``update_remote_log_segment_metadata(..., COPY_SEGMENT_FINISHED, copied=...)`` writes a new
  manifest naming the segment; the in-memory state changes only after that write succeeded, so
  memory never claims more than the store says. DELETE_SEGMENT_STARTED rewrites the entry's
  state (readers skip it) and, when no finished segment lies below it, moves
  ``log_start_offset`` past it; DELETE_SEGMENT_FINISHED drops the entry.
- Transitions follow Kafka's RemoteLogSegmentState (self transitions are valid no-ops); any
  other raises :class:`IllegalStateTransition`.
- Finished segments never overlap. A finished copy with exactly the offsets of an existing
  entry supersedes it (a re-copy after a crash under a new id): the old entry leaves the
  manifest and its objects are deleted. A partial overlap raises :class:`OverlappingSegmentError`.
- Before each write the stored manifest's version is compared with ours; a newer one means
  another broker wrote it (leadership moved) and raises :class:`ManifestConflictError` after
  reloading. This is a guard, not a compare-and-swap: one leader per partition is assumed.
- ``load`` rebuilds a partition's state from the store after a restart and deletes objects
  under ``segments/`` that no manifest entry (and no copy in progress here) names.

Thread-safe (one lock per partition). Blocking: call from worker threads, not an event loop.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from .layout import (
    MANIFEST_NAME,
    SEGMENTS_DIR,
    STATE_COPY_FINISHED,
    STATE_DELETE_STARTED,
    LayoutError,
    Manifest,
    ManifestSegment,
    manifest_path,
    parse_segment_object,
    partition_dir,
)
from .metadata import (
    CopiedSegment,
    IllegalStateTransition,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
    check_transition,
)
from .rsm import RemoteStorageError
from .store import ObjectNotFoundError, ObjectStore, StoreError

__all__ = [
    "IllegalStateTransition",
    "ManifestConflictError",
    "OverlappingSegmentError",
    "RemoteLogMetadataManager",
]

_log = logging.getLogger(__name__)

STARTED = RemoteLogSegmentState.COPY_SEGMENT_STARTED
FINISHED = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
DELETE_STARTED = RemoteLogSegmentState.DELETE_SEGMENT_STARTED
DELETE_FINISHED = RemoteLogSegmentState.DELETE_SEGMENT_FINISHED
_MANIFEST_STATE = {FINISHED: STATE_COPY_FINISHED, DELETE_STARTED: STATE_DELETE_STARTED}
_FROM_MANIFEST = {STATE_COPY_FINISHED: FINISHED, STATE_DELETE_STARTED: DELETE_STARTED}


class ManifestConflictError(RemoteStorageError):
    """The stored manifest changed under us (another broker wrote it)."""


class OverlappingSegmentError(RemoteStorageError):
    """A finished segment would partially overlap one already in the manifest."""


@dataclass(slots=True)
class _Partition:
    tp: TopicIdPartition
    manifest: Manifest
    started: dict[str, RemoteLogSegmentMetadata] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The metadata made of each manifest entry, by the entry's identity (the entry is kept
    # with it, so its id is not reused): every remote fetch looks segments up, and building
    # metadata (uuid decoding, dataclasses) for every segment of the partition each time was
    # a large share of the event loop's time for a consumer catching up.
    made: dict[int, tuple[ManifestSegment, RemoteLogSegmentMetadata]] = field(default_factory=dict)
    # The finished entries of ``manifest`` (manifests are immutable and replaced whole, so
    # this is kept by identity) and their base offsets: a remote fetch finds its segment by
    # bisection instead of walking every entry, twice per fetch, on the event loop.
    finished_of: Manifest | None = None
    finished: tuple[ManifestSegment, ...] = ()
    finished_bases: list[int] = field(default_factory=list)

    def finished_segments(self) -> tuple[ManifestSegment, ...]:
        if self.finished_of is not self.manifest:
            self.finished = self.manifest.finished_segments
            self.finished_bases = [entry.base_offset for entry in self.finished]
            self.finished_of = self.manifest
        return self.finished

    def metadata_of(self, entry: ManifestSegment) -> RemoteLogSegmentMetadata:
        hit = self.made.get(id(entry))
        if hit is not None and hit[0] is entry:
            return hit[1]
        metadata = _metadata_of(self.tp, entry)
        if len(self.made) > 2 * len(self.manifest.segments) + 64:
            self.made.clear()  # entries of replaced manifests
        self.made[id(entry)] = (entry, metadata)
        return metadata


def _metadata_of(tp: TopicIdPartition, entry: ManifestSegment) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(
        remote_log_segment_id=RemoteLogSegmentId(tp, entry.segment_id),
        start_offset=entry.base_offset,
        end_offset=entry.end_offset,
        max_timestamp_ms=entry.max_timestamp,
        broker_id=entry.broker_id,
        event_timestamp_ms=entry.copied_ms,
        segment_size_in_bytes=entry.segment_bytes,
        segment_leader_epochs=entry.leader_epochs,
        leader_epoch=entry.leader_epoch,
        state=_FROM_MANIFEST[entry.state],
    )


class RemoteLogMetadataManager:
    def __init__(self, store: ObjectStore, *, time_ms: Callable[[], int] | None = None) -> None:
        self._store = store
        self._time_ms = time_ms or (lambda: int(time.time() * 1000))
        self._partitions: dict[TopicIdPartition, _Partition] = {}
        self._lock = threading.Lock()

    @property
    def store(self) -> ObjectStore:
        return self._store

    # -- loading -------------------------------------------------------------------------

    def _read_manifest(self, tp: TopicIdPartition) -> Manifest:
        path = manifest_path(tp.topic, tp.topic_id, tp.partition)
        try:
            manifest = Manifest.from_bytes(self._store.read_bytes(path))
        except ObjectNotFoundError:
            return Manifest(tp.topic, tp.topic_id, tp.partition)
        except (StoreError, LayoutError) as exc:
            raise RemoteStorageError(f"cannot read {self._store.url}/{path}: {exc}") from exc
        if (manifest.topic, manifest.topic_id, manifest.partition) != (
            tp.topic,
            tp.topic_id,
            tp.partition,
        ):
            raise RemoteStorageError(f"{self._store.url}/{path} describes another partition")
        return manifest

    def _partition(self, tp: TopicIdPartition) -> _Partition:
        with self._lock:
            state = self._partitions.get(tp)
        if state is not None:
            return state
        manifest = self._read_manifest(tp)
        with self._lock:
            return self._partitions.setdefault(tp, _Partition(tp, manifest))

    def load(self, tp: TopicIdPartition, *, delete_orphans: bool = True) -> Manifest:
        """(Re)read the partition's manifest; delete orphan segment objects. Copies this
        instance has in progress (COPY_SEGMENT_STARTED) are kept and their objects spared."""
        state = self._partition(tp)
        with state.lock:
            state.manifest = self._read_manifest(tp)
            if delete_orphans:
                self._delete_orphans(state)
            return state.manifest

    def _delete_orphans(self, state: _Partition) -> None:
        tp = state.tp
        base = partition_dir(tp.topic, tp.topic_id, tp.partition)
        known = {s.segment_id for s in state.manifest.segments} | set(state.started)
        try:
            for path in self._store.list(f"{base}/{SEGMENTS_DIR}"):
                parsed = parse_segment_object(path.rsplit("/", 1)[-1])
                if parsed is None or parsed[1] not in known:
                    _log.info("Deleting orphan remote object %s/%s", self._store.url, path)
                    self._store.delete(path)
            for path in self._store.list(base):
                name = path.rsplit("/", 1)[-1]
                if name.startswith(MANIFEST_NAME + ".") and name.endswith(".tmp"):
                    self._store.delete(path)
        except StoreError as exc:
            raise RemoteStorageError(f"cannot clean orphans of {tp}: {exc}") from exc

    def forget(self, tp: TopicIdPartition) -> None:
        """Drop the in-memory state of a partition (no longer led here)."""
        with self._lock:
            self._partitions.pop(tp, None)

    # -- state changes -------------------------------------------------------------------

    def add_remote_log_segment_metadata(self, metadata: RemoteLogSegmentMetadata) -> None:
        """Record COPY_SEGMENT_STARTED (in memory only)."""
        check_transition(metadata.segment_id, self._state_of(metadata), STARTED)
        if metadata.state != STARTED:
            raise IllegalStateTransition(
                f"remote log segment {metadata.segment_id}: new metadata must be"
                f" COPY_SEGMENT_STARTED, not {metadata.state.name}"
            )
        state = self._partition(metadata.topic_id_partition)
        with state.lock:
            state.started[metadata.segment_id] = metadata

    def _state_of(self, metadata: RemoteLogSegmentMetadata) -> RemoteLogSegmentState | None:
        state = self._partition(metadata.topic_id_partition)
        with state.lock:
            return self._find(state, metadata.segment_id)[1]

    @staticmethod
    def _find(
        state: _Partition, segment_id: str
    ) -> tuple[RemoteLogSegmentMetadata | None, RemoteLogSegmentState | None]:
        started = state.started.get(segment_id)
        if started is not None:
            return started, started.state
        for entry in state.manifest.segments:
            if entry.segment_id == segment_id:
                return state.metadata_of(entry), _FROM_MANIFEST[entry.state]
        return None, None

    def update_remote_log_segment_metadata(
        self,
        segment_id: RemoteLogSegmentId,
        new_state: RemoteLogSegmentState,
        *,
        copied: CopiedSegment | None = None,
        event_timestamp_ms: int | None = None,
    ) -> RemoteLogSegmentMetadata:
        """Move a segment to ``new_state``; COPY_SEGMENT_FINISHED needs ``copied`` (what
        :meth:`RemoteStorageManager.copy_log_segment_data` returned)."""
        state = self._partition(segment_id.topic_id_partition)
        now = self._time_ms() if event_timestamp_ms is None else event_timestamp_ms
        with state.lock:
            current, current_state = self._find(state, segment_id.id)
            check_transition(segment_id.id, current_state, new_state)
            assert current is not None and current_state is not None
            if current_state == new_state:
                return current
            updated = current.with_state(new_state, now)
            if new_state == FINISHED:
                if copied is None:
                    raise ValueError("COPY_SEGMENT_FINISHED needs the CopiedSegment of the copy")
                self._finish_copy(state, updated, copied, now)
                del state.started[segment_id.id]
            elif current_state == STARTED:
                # An abandoned copy: never in the manifest, only its objects may remain.
                if new_state == DELETE_FINISHED:
                    del state.started[segment_id.id]
                else:
                    state.started[segment_id.id] = updated
            elif new_state == DELETE_STARTED:
                self._start_delete(state, segment_id.id, now)
            else:
                self._write(
                    state,
                    replace(
                        state.manifest,
                        segments=tuple(
                            s for s in state.manifest.segments if s.segment_id != segment_id.id
                        ),
                    ),
                )
            return updated

    def _finish_copy(
        self,
        state: _Partition,
        metadata: RemoteLogSegmentMetadata,
        copied: CopiedSegment,
        now: int,
    ) -> None:
        entry = ManifestSegment(
            segment_id=metadata.segment_id,
            base_offset=metadata.start_offset,
            end_offset=metadata.end_offset,
            record_count=copied.record_count,
            first_timestamp=copied.first_timestamp,
            max_timestamp=max(copied.max_timestamp, metadata.max_timestamp_ms),
            size_bytes=copied.size_bytes,
            segment_bytes=metadata.segment_size_in_bytes,
            leader_epochs=metadata.segment_leader_epochs or copied.leader_epochs,
            path=copied.path,
            state=STATE_COPY_FINISHED,
            copied_ms=now,
            broker_id=metadata.broker_id,
            leader_epoch=metadata.leader_epoch,
            control_records=copied.control_records,
            aborted_records=copied.aborted_records,
            transactional_records=copied.transactional_records,
        )
        kept: list[ManifestSegment] = []
        superseded: list[ManifestSegment] = []
        for other in state.manifest.segments:
            same_range = (other.base_offset, other.end_offset) == (
                entry.base_offset,
                entry.end_offset,
            )
            if same_range and other.state == STATE_COPY_FINISHED:
                superseded.append(other)
            elif other.end_offset >= entry.base_offset and other.base_offset <= entry.end_offset:
                raise OverlappingSegmentError(
                    f"{state.tp}: segment {entry.segment_id} [{entry.base_offset},"
                    f" {entry.end_offset}] overlaps {other.segment_id} [{other.base_offset},"
                    f" {other.end_offset}] ({other.state})"
                )
            else:
                kept.append(other)
        kept.append(entry)
        kept.sort(key=lambda s: s.base_offset)
        self._write(state, replace(state.manifest, segments=tuple(kept)))
        base = partition_dir(state.tp.topic, state.tp.topic_id, state.tp.partition)
        for old in superseded:
            self._delete_objects(base, old.segment_id)

    def _delete_objects(self, base: str, segment_id: str) -> None:
        # Best effort: a failure leaves orphans that the next load() deletes.
        try:
            for path in self._store.list(f"{base}/{SEGMENTS_DIR}"):
                parsed = parse_segment_object(path.rsplit("/", 1)[-1])
                if parsed is not None and parsed[1] == segment_id:
                    self._store.delete(path)
        except StoreError as exc:
            _log.warning("Could not delete superseded segment %s: %s", segment_id, exc)

    def _start_delete(self, state: _Partition, segment_id: str, now: int) -> None:
        segments = list(state.manifest.segments)
        index = next(i for i, s in enumerate(segments) if s.segment_id == segment_id)
        target = segments[index]
        segments[index] = replace(target, state=STATE_DELETE_STARTED)
        log_start = state.manifest.log_start_offset
        if all(
            s.base_offset > target.base_offset for s in segments if s.state == STATE_COPY_FINISHED
        ):
            log_start = max(log_start, target.end_offset + 1)
        self._write(
            state, replace(state.manifest, segments=tuple(segments), log_start_offset=log_start)
        )

    def update_log_start_offset(self, tp: TopicIdPartition, offset: int) -> None:
        """Move the remote log start offset forward (retention, DeleteRecords); never back."""
        state = self._partition(tp)
        with state.lock:
            if offset > state.manifest.log_start_offset:
                self._write(state, replace(state.manifest, log_start_offset=offset))

    def _write(self, state: _Partition, manifest: Manifest) -> None:
        current = self._read_manifest(state.tp)
        if current.version != state.manifest.version:
            state.manifest = current
            raise ManifestConflictError(
                f"{state.tp}: manifest version {current.version} in the store, expected"
                f" {state.manifest.version}; another broker wrote it (state reloaded)"
            )
        new = replace(manifest, version=current.version + 1)
        path = manifest_path(state.tp.topic, state.tp.topic_id, state.tp.partition)
        try:
            self._store.write_atomic(path, new.to_bytes())
        except StoreError as exc:
            raise RemoteStorageError(f"cannot write the manifest of {state.tp}: {exc}") from exc
        state.manifest = new

    # -- queries -------------------------------------------------------------------------

    def manifest(self, tp: TopicIdPartition) -> Manifest:
        state = self._partition(tp)
        with state.lock:
            return state.manifest

    def list_remote_log_segments(
        self,
        tp: TopicIdPartition,
        states: Iterable[RemoteLogSegmentState] = (FINISHED,),
    ) -> list[RemoteLogSegmentMetadata]:
        """Segments in any of ``states`` (default: finished), by start offset."""
        wanted = set(states)
        state = self._partition(tp)
        with state.lock:
            found = [
                m
                for m in (state.metadata_of(e) for e in state.manifest.segments)
                if m.state in wanted
            ]
            found += [m for m in state.started.values() if m.state in wanted]
        return sorted(found, key=lambda m: m.start_offset)

    def remote_log_segment_metadata(
        self, tp: TopicIdPartition, offset: int
    ) -> RemoteLogSegmentMetadata | None:
        """The finished segment holding ``offset`` (at or above the log start offset)."""
        state = self._partition(tp)
        with state.lock:
            if offset < state.manifest.log_start_offset:
                return None
            finished = state.finished_segments()
            # Finished segments never overlap: only the last one starting at or below
            # ``offset`` can hold it.
            index = bisect.bisect_right(state.finished_bases, offset) - 1
            if index >= 0 and offset <= finished[index].end_offset:
                return state.metadata_of(finished[index])
        return None

    def transaction_index_segments(
        self, tp: TopicIdPartition, from_offset: int, below_offset: int
    ) -> list[RemoteLogSegmentMetadata]:
        """The finished segments ending at or after ``from_offset`` and starting below
        ``below_offset``, by start offset, that may have aborted transactions in their
        ``.txnindex``: a segment whose entry counts no transactional row holds no marker, so
        its index is empty and it is left out (an entry without counts is kept). What a
        read_committed fetch scans; without the empty ones it scans nothing for
        non-transactional data instead of every later segment on every fetch."""
        state = self._partition(tp)
        with state.lock:
            return [
                state.metadata_of(entry)
                for entry in state.finished_segments()
                if entry.end_offset >= from_offset
                and entry.base_offset < below_offset
                and entry.transactional_records != 0
            ]

    def highest_copied_offset(self, tp: TopicIdPartition) -> int:
        """The end offset of the highest copied segment, -1 when none."""
        segments = self.manifest(tp).segments
        return max((s.end_offset for s in segments), default=-1)

    def remote_log_start_offset(self, tp: TopicIdPartition) -> int | None:
        """The first offset readable from the store, None when nothing readable is there."""
        manifest = self.manifest(tp)
        for entry in manifest.finished_segments:
            if entry.end_offset >= manifest.log_start_offset:
                return max(entry.base_offset, manifest.log_start_offset)
        return None
