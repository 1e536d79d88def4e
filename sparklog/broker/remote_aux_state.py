"""A follower's state rebuilt from the tier (KIP-405's ``buildRemoteLogAuxState``).

When the leader answers a follower's Fetch with OFFSET_MOVED_TO_TIERED_STORAGE, the offset the
follower wants is no longer on the leader's disk. The follower then:

1. asks the leader for its earliest local offset ``L`` and that offset's epoch (ListOffsets
   with timestamp -4; the fetcher does this, see :mod:`sparklog.broker.replica_fetcher`);
2. reads the partition's manifest from the store (:func:`read_tier_state`, blocking, on a
   worker thread) and finds the finished remote segment holding ``L - 1``;
3. rebuilds, on the event loop (:func:`apply_tier_state`), its log as Kafka does: the log is
   truncated fully and restarts empty at ``next = that segment's end offset + 1`` (``<= L``,
   so the leader still has ``next`` locally), the leader-epoch cache gets the entries of every
   remote segment up to and including that one (the segment's own ``.leader-epoch-checkpoint``
   object for the last), the producer state is the segment's uploaded snapshot (the state as
   of ``next``), and the log start offset becomes the remote log start offset (offsets below
   ``next`` are served from the store, as on the leader).

Invariants: nothing is changed on the log unless the store held a segment covering ``L - 1``
(otherwise :class:`TierStateUnavailable` is raised and the fetcher backs off and retries);
the epoch entries are strictly increasing and all start below ``next``; the orphan objects of
an in-flight copy are never touched (the manifest is read without the orphan cleanup only a
leader may do).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from sparklog.storage.log import Log
from sparklog.tiering.metadata import TopicIdPartition
from sparklog.tiering.rlmm import RemoteLogMetadataManager
from sparklog.tiering.rsm import RemoteStorageError, RemoteStorageManager

log = logging.getLogger(__name__)


class TierStateUnavailable(RemoteStorageError):
    """The store holds no finished segment covering the offset below the leader's local log."""


@dataclass(frozen=True, slots=True)
class TierState:
    """What a follower restarts from: ``next_offset`` (its new, empty log end), the remote
    log start offset, the leader-epoch entries below ``next_offset`` and the producer
    snapshot as of ``next_offset`` (empty: no producers)."""

    next_offset: int
    log_start_offset: int
    epochs: tuple[tuple[int, int], ...]
    producer_snapshot: bytes
    segment_id: str


def _merge_epochs(
    entries: list[tuple[int, int]], more: tuple[tuple[int, int], ...] | list[tuple[int, int]]
) -> None:
    for epoch, start in more:
        if entries and epoch <= entries[-1][0]:
            continue  # the same epoch continuing, or an entry we already have
        if entries and start <= entries[-1][1]:
            continue
        entries.append((epoch, start))


def read_tier_state(
    rlmm: RemoteLogMetadataManager,
    rsm: RemoteStorageManager,
    tip: TopicIdPartition,
    leader_local_start: int,
) -> TierState:
    """The state a follower rebuilds for the leader's local log start ``leader_local_start``.
    Blocking (store reads): call from a worker thread."""
    manifest = rlmm.load(tip, delete_orphans=False)
    wanted = leader_local_start - 1
    finished = [s for s in manifest.finished_segments if s.base_offset <= wanted]
    target = next((s for s in reversed(finished) if s.base_offset <= wanted <= s.end_offset), None)
    if target is None or wanted < 0:
        raise TierStateUnavailable(
            f"{tip}: no finished remote segment holds offset {wanted} (the leader's local log"
            f" starts at {leader_local_start}); remote segments:"
            f" {[(s.base_offset, s.end_offset) for s in manifest.finished_segments]}"
        )
    start = rlmm.remote_log_start_offset(tip)
    if start is None:
        raise TierStateUnavailable(f"{tip}: nothing readable in the store")
    metadata = rlmm.remote_log_segment_metadata(tip, target.base_offset)
    if metadata is None or metadata.segment_id != target.segment_id:
        raise TierStateUnavailable(f"{tip}: segment {target.segment_id} left the manifest")
    epochs: list[tuple[int, int]] = []
    for segment in finished:
        if segment.base_offset >= target.base_offset:
            break
        if segment.end_offset >= start:
            _merge_epochs(epochs, segment.leader_epochs)
    _merge_epochs(epochs, rsm.fetch_leader_epoch_checkpoint(metadata))
    snapshot = rsm.fetch_producer_snapshot(metadata)
    return TierState(
        next_offset=target.end_offset + 1,
        log_start_offset=start,
        epochs=tuple((e, max(s, start)) for e, s in epochs),
        producer_snapshot=snapshot,
        segment_id=target.segment_id,
    )


def apply_tier_state(plog: Log, state: TierState, now_ms: int | None = None) -> None:
    """Restart ``plog`` empty at ``state.next_offset`` with the tier's epochs, producer state
    and log start offset. Runs on the event loop (the log is only touched there)."""
    plog.truncate_fully_and_start_at(state.next_offset)
    entries: list[tuple[int, int]] = []
    _merge_epochs(entries, [(e, s) for e, s in state.epochs if s < state.next_offset])
    plog.epoch_cache.assign_many(entries)
    producers = plog.producer_state
    if state.producer_snapshot:
        with open(producers.snapshot_path(state.next_offset), "wb") as f:
            f.write(state.producer_snapshot)
        now = int(time.time() * 1000) if now_ms is None else now_ms
        producers.load(state.next_offset, now)
    producers.map_end_offset = state.next_offset
    plog.attach_remote(state.log_start_offset, state.next_offset - 1)
    log.info(
        "Rebuilt %s from remote segment %s: log [%d, %d), %d leader epochs, %d producers",
        plog.directory,
        state.segment_id,
        plog.log_start_offset,
        state.next_offset,
        len(entries),
        len(producers.producers),
    )
