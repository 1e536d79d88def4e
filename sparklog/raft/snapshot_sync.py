"""Snapshots in the consensus core (KIP-630): create, serve with FetchSnapshot, download, load.

A mixin of :class:`~sparklog.raft.core.RaftReplica` (it shares the replica's state). Rules, as
in Kafka's ``KafkaRaftClient`` and ``KafkaMetadataLog``:

- Create: :meth:`SnapshotMixin.create_snapshot` takes the state machine's records for an end
  offset that is at most the high watermark and ends a batch; the snapshot's epoch is that
  batch's epoch. It holds the ``VotersRecord`` / ``KRaftVersionRecord`` in force at its end.
  Once frozen, older snapshots are deleted and the log start offset moves up to it, but never
  past the slowest registered listener (which would otherwise have to reload the snapshot);
  the log start catches up as listeners read on.
- Serve (leader): a Fetch whose offset is below the log start, or whose last fetched epoch is
  older than the snapshot at the log start, is answered with the latest ``snapshot_id`` and no
  records; FetchSnapshot returns ``max_bytes`` chunks of a frozen snapshot
  (``SNAPSHOT_NOT_FOUND``, ``POSITION_OUT_OF_RANGE`` otherwise). Both count for check-quorum
  but not toward the high watermark.
- Download (follower): on a ``snapshot_id`` the follower fetches chunks from position 0 from
  the leader of its epoch, checks the whole snapshot, freezes it, and then installs it; any
  error or a change of leader drops the download and the next Fetch starts over.
- Install (a downloaded snapshot, or the latest one on start-up): the log is emptied and
  restarted at the snapshot's end offset when it ends before it or holds no batch starting
  there, or when its last epoch is older than the snapshot's (Kafka's
  ``truncateToLatestSnapshot``); otherwise only the prefix below goes. The voter set and
  kraft.version below the end offset come from the snapshot; the HW becomes at least the end
  offset (a snapshot only ever holds committed records). Listeners behind the new log start
  reload the snapshot before reading on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.records import iter_batches
from sparklog.raft import rpc
from sparklog.raft.snapshot_format import (
    SnapshotContents,
    SnapshotFormatError,
    build_snapshot,
    parse_snapshot,
)
from sparklog.raft.snapshots import SnapshotId, SnapshotNotFoundError, SnapshotStore, read_all
from sparklog.raft.state import Follower, Leader
from sparklog.raft.voter_changes import VoterChangeMixin
from sparklog.raft.voters import ReplicaKey

if TYPE_CHECKING:
    from sparklog.raft.listeners import ListenerDispatcher
    from sparklog.raft.log import ReplicatedLog

T = TypeVar("T")

_log = logging.getLogger(__name__)
_CLUSTER_ID_LOG_INTERVAL_MS = 60_000


class SnapshotError(ValueError):
    """A snapshot the caller asked for that the log cannot have (beyond the HW, mid-batch)."""


@dataclass(slots=True)
class _Download:
    snapshot_id: SnapshotId
    epoch: int
    leader_id: int
    data: bytearray = field(default_factory=bytearray)


class SnapshotMixin(VoterChangeMixin):
    log: ReplicatedLog
    snapshots: SnapshotStore
    _download: _Download | None
    _snapshot_cache: SnapshotContents | None
    _kraft_versions: list[tuple[int, int]]
    _high_watermark: int
    _retry_at_ms: int
    _cluster_id_rejected_logged_ms: int | None
    _time: Callable[[], int]
    _listeners: ListenerDispatcher[Any]

    if TYPE_CHECKING:

        def _advance_high_watermark(self, offset: int) -> None: ...

        def _truncate(self, offset: int) -> None: ...

    # -- reading ------------------------------------------------------------------------------

    def latest_snapshot(self) -> SnapshotContents | None:
        """The latest frozen snapshot, parsed (cached until a newer one exists)."""
        snapshot_id = self.snapshots.latest()
        if snapshot_id is None:
            return None
        cached = self._snapshot_cache
        if cached is None or cached.snapshot_id != snapshot_id:
            cached = parse_snapshot(snapshot_id, read_all(self.snapshots, snapshot_id))
            self._snapshot_cache = cached
        return cached

    @property
    def latest_snapshot_id(self) -> SnapshotId | None:
        return self.snapshots.latest()

    # -- creating -----------------------------------------------------------------------------

    def create_snapshot(
        self, end_offset: int, values: Iterable[bytes], last_contained_timestamp: int
    ) -> SnapshotId:
        """Freeze a snapshot of the state after every record below ``end_offset``."""
        if end_offset > self.high_watermark:
            raise SnapshotError(
                f"snapshot end offset {end_offset} is beyond the high watermark "
                f"{self.high_watermark}"
            )
        latest = self.snapshots.latest()
        if latest is not None and end_offset <= latest.end_offset:
            raise SnapshotError(f"snapshot {latest} already covers offset {end_offset}")
        epoch = self._epoch_of_batch_ending_at(end_offset)
        snapshot_id = SnapshotId(end_offset, epoch)
        last = end_offset - 1
        voters = self.voters.at(end_offset) if self.voters.latest_offset >= 0 else None
        kraft = [v for o, v in self._kraft_versions if o <= last]
        kraft_version = kraft[-1] if kraft else self.config.kraft_version
        data = build_snapshot(
            snapshot_id,
            values,
            last_contained_timestamp=last_contained_timestamp,
            kraft_version=kraft_version,
            voters=voters,
        )
        writer = self.snapshots.begin(snapshot_id)
        writer.append(data)
        writer.freeze()
        self._snapshot_cache = None
        self.snapshots.delete_before(snapshot_id)
        self._maybe_advance_log_start()
        return snapshot_id

    def _epoch_of_batch_ending_at(self, end_offset: int) -> int:
        if end_offset <= self.log.log_start_offset or end_offset > self.log.log_end_offset:
            raise SnapshotError(
                f"snapshot end offset {end_offset} is outside the log "
                f"[{self.log.log_start_offset}, {self.log.log_end_offset}]"
            )
        data = self.log.read(end_offset - 1, 1)
        for _, header in iter_batches(data):
            if header.last_offset != end_offset - 1:
                raise SnapshotError(f"snapshot end offset {end_offset} is inside a batch")
            return header.partition_leader_epoch
        raise SnapshotError(f"no batch holds offset {end_offset - 1}")

    def _maybe_advance_log_start(self) -> None:
        """Move the log start up to the latest snapshot, as far as every listener has read."""
        latest = self.snapshots.latest()
        if latest is None or latest.end_offset <= self.log.log_start_offset:
            return
        target = min(latest.end_offset, self.log.log_end_offset, self._high_watermark)
        floor = self._listeners.min_next_offset()
        if floor is not None:
            target = min(target, floor)
        if target <= self.log.log_start_offset:
            return
        if target == latest.end_offset:
            epoch = latest.epoch
        else:
            try:
                epoch = self._epoch_of_batch_ending_at(target)
            except SnapshotError:
                return  # a listener mid-way through a batch; try again after it reads on
        self.log.delete_before(target, epoch)

    # -- installing ---------------------------------------------------------------------------

    def _install_snapshot(self, contents: SnapshotContents) -> None:
        snapshot_id = contents.snapshot_id
        end = snapshot_id.end_offset
        log = self.log
        starts_there = any(
            header.base_offset == end for _, header in iter_batches(log.read(end, 1))
        )
        keep_log = (
            log.log_end_offset >= end
            and (log.log_end_offset == end or starts_there)
            and log.last_epoch >= snapshot_id.epoch
        )
        if keep_log:
            log.delete_before(end, snapshot_id.epoch)
        else:
            log.reset_to(end, snapshot_id.epoch)
            self.voters.truncate_to(end)
            self._kraft_versions = [(o, v) for o, v in self._kraft_versions if o < end]
        self.voters.install_snapshot(end - 1, contents.voters)
        later = [(o, v) for o, v in self._kraft_versions if o >= end]
        if contents.kraft_version is not None:
            later.insert(0, (end - 1, contents.kraft_version))
        self._kraft_versions = later
        self._snapshot_cache = contents
        self._advance_high_watermark(end)
        role = self.quorum.role
        if isinstance(role, Leader):
            role.state.update_voters(self.voters.latest)

    def _load_snapshot_on_start(self) -> None:
        contents = self.latest_snapshot()
        if contents is not None:
            self._install_snapshot(contents)

    # -- leader side --------------------------------------------------------------------------

    def _snapshot_for_fetch(self, fetch_offset: int, last_fetched_epoch: int) -> SnapshotId | None:
        """Kafka's ``validateOffsetAndEpoch``: the snapshot a fetcher must load, if any."""
        latest = self.snapshots.latest()
        start = self.log.log_start_offset
        if latest is None or start == 0:
            return None
        if fetch_offset < start:
            return latest
        if latest.end_offset == start and (
            (fetch_offset == start and last_fetched_epoch != latest.epoch)
            or last_fetched_epoch < latest.epoch
        ):
            return latest
        return None

    def _handle_fetch_snapshot(self, now_ms: int, request: rpc.InboundRequest) -> None:
        role = self.quorum.role
        leader_id = self.quorum.leader_id
        p = rpc.partition_of(request.body)
        if p is None:
            self._respond(
                request,
                rpc.fetch_snapshot_response(
                    ErrorCode.INVALID_REQUEST, ErrorCode.NONE, leader_id, role.epoch, (-1, -1)
                ),
            )
            return
        wanted = p.get("snapshot_id") or {}
        snapshot = (int(wanted.get("end_offset", -1)), int(wanted.get("epoch", -1)))
        epoch = int(p.get("current_leader_epoch", -1))
        error = ErrorCode.NONE
        if epoch < role.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        elif epoch > role.epoch:
            error = ErrorCode.UNKNOWN_LEADER_EPOCH
        elif not isinstance(role, Leader):
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        if error or not isinstance(role, Leader):
            self._respond(
                request,
                rpc.fetch_snapshot_response(ErrorCode.NONE, error, leader_id, role.epoch, snapshot),
            )
            return
        replica_id = int(request.body.get("replica_id", -1))
        if replica_id >= 0:
            directory = rpc.directory_id(p.get("replica_directory_id"))
            role.state.touch(ReplicaKey(replica_id, directory), now_ms)
        snapshot_id = SnapshotId(*snapshot)
        position = int(p.get("position", -1))
        try:
            size = self.snapshots.size(snapshot_id)
        except SnapshotNotFoundError:
            self._respond(
                request,
                rpc.fetch_snapshot_response(
                    ErrorCode.NONE, ErrorCode.SNAPSHOT_NOT_FOUND, leader_id, role.epoch, snapshot
                ),
            )
            return
        if position < 0 or position >= size:
            self._respond(
                request,
                rpc.fetch_snapshot_response(
                    ErrorCode.NONE, ErrorCode.POSITION_OUT_OF_RANGE, leader_id, role.epoch, snapshot
                ),
            )
            return
        max_bytes = max(1, min(int(request.body.get("max_bytes", 1)), self.config.max_fetch_bytes))
        chunk = self.snapshots.read(snapshot_id, position, max_bytes)
        self._respond(
            request,
            rpc.fetch_snapshot_response(
                ErrorCode.NONE,
                ErrorCode.NONE,
                leader_id,
                role.epoch,
                snapshot,
                size,
                position,
                chunk,
            ),
        )

    # -- follower side ------------------------------------------------------------------------

    def _start_download(self, snapshot_id: SnapshotId) -> None:
        role = self.quorum.role
        assert isinstance(role, Follower)
        self._download = _Download(snapshot_id, role.epoch, role.leader_id)

    def _current_download(self) -> _Download | None:
        """The download in progress, dropped if we no longer follow the leader it came from."""
        download = self._download
        role = self.quorum.role
        if download is None:
            return None
        if not (
            isinstance(role, Follower)
            and role.epoch == download.epoch
            and role.leader_id == download.leader_id
        ):
            self._download = None
            return None
        return download

    def _fetch_snapshot_body(self, download: _Download) -> rpc.Body:
        snapshot_id = download.snapshot_id
        return rpc.fetch_snapshot_request(
            self.config.cluster_id,
            self.local.id,
            self.local.directory_id,
            download.epoch,
            (snapshot_id.end_offset, snapshot_id.epoch),
            len(download.data),
            self.config.max_fetch_bytes,
        )

    def _usable_partition(
        self, now_ms: int, body: rpc.Body, p: Mapping[str, Any] | None
    ) -> Mapping[str, Any] | None:
        """The partition of a Fetch or FetchSnapshot response when it is worth reading on.

        None after a top-level error or a missing partition (the next request waits out the
        retry backoff), and when the response's current leader moved this replica to another
        epoch or leader (what was asked of the old one no longer applies).
        """
        if body.get("error_code", 0) or p is None:
            if body.get("error_code", 0) == ErrorCode.INCONSISTENT_CLUSTER_ID:
                self._log_cluster_id_rejected(now_ms)
            self._retry_at_ms = now_ms + self.config.retry_backoff_ms
            return None
        leader = p.get("current_leader") or {}
        if self._observe_leader(
            now_ms, int(leader.get("leader_epoch", -1)), int(leader.get("leader_id", -1))
        ):
            return None
        return p

    def _log_cluster_id_rejected(self, now_ms: int) -> None:
        """Say why this node never catches up: it was formatted for another cluster. Without
        this, a broker formatted with the wrong cluster id waits to be unfenced forever and
        its log never names the cause (issue 19). Logged at once, then once a minute."""
        last = self._cluster_id_rejected_logged_ms
        if last is not None and now_ms - last < _CLUSTER_ID_LOG_INTERVAL_MS:
            return
        self._cluster_id_rejected_logged_ms = now_ms
        _log.error(
            "The controller quorum rejects node %d's cluster id %s (INCONSISTENT_CLUSTER_ID): "
            "its metadata log directory was formatted for another cluster. Format this node "
            "again with the quorum's cluster id (sparklog storage format --cluster-id <id> "
            "--config <server.properties>), or point controller.quorum.bootstrap.servers at "
            "its own cluster. It cannot join until then.",
            self.local.id,
            self.config.cluster_id,
        )

    def _handle_fetch_snapshot_response(
        self, now_ms: int, response: rpc.InboundResponse, sent_epoch: int
    ) -> None:
        p = self._usable_partition(now_ms, response.body, rpc.partition_of(response.body))
        if p is None:
            return
        download = self._current_download()
        role = self.quorum.role
        if (
            download is None
            or not isinstance(role, Follower)
            or role.leader_id != response.source_id
            or role.epoch != sent_epoch
        ):
            return
        wanted = p.get("snapshot_id") or {}
        same_id = (
            int(wanted.get("end_offset", -1)) == download.snapshot_id.end_offset
            and int(wanted.get("epoch", -1)) == download.snapshot_id.epoch
        )
        chunk = bytes(p.get("unaligned_records") or b"")
        size = int(p.get("size", -1))
        if (
            p.get("error_code", 0)
            or not same_id
            or int(p.get("position", -1)) != len(download.data)
            or not chunk
            or len(download.data) + len(chunk) > size
        ):
            # The leader moved on (a newer snapshot) or the answer is not for this download:
            # start over from a Fetch, which names the snapshot to load now.
            self._download = None
            self._retry_at_ms = now_ms + self.config.retry_backoff_ms
            return
        role.has_fetched = True
        role.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
        download.data += chunk
        if len(download.data) < size:
            return
        self._download = None
        try:
            contents = parse_snapshot(download.snapshot_id, bytes(download.data))
        except SnapshotFormatError:
            self._retry_at_ms = now_ms + self.config.retry_backoff_ms
            return
        latest = self.snapshots.latest()
        if latest is not None and latest >= download.snapshot_id:
            # Already held (a restart raced the download): install what we have.
            held = self.latest_snapshot()
            if held is not None:
                self._install_snapshot(held)
            return
        writer = self.snapshots.begin(download.snapshot_id)
        writer.append(bytes(download.data))
        writer.freeze()
        self.snapshots.delete_before(download.snapshot_id)
        self._install_snapshot(contents)
