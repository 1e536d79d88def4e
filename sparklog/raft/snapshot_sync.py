"""Snapshots in the consensus core (KIP-630): create, serve with FetchSnapshot, download, load.

:class:`SnapshotSync`, a component of :class:`~sparklog.raft.core.RaftReplica`. It is given the
shared :class:`~sparklog.raft.replica_state.ReplicaState`, the
:class:`~sparklog.raft.replica_state.Messenger` (to answer FetchSnapshot) and the snapshot store;
it owns the parsed latest snapshot and the download in progress. The follower's fetcher asks
it which snapshot to download and hands it the chunks (:meth:`SnapshotSync.receive_chunk`); the
leader's replication asks it which snapshot a fetcher must load
(:meth:`SnapshotSync.snapshot_for_fetch`). Rules, as in Kafka's ``KafkaRaftClient`` and
``KafkaMetadataLog``:

- Create: :meth:`SnapshotSync.create` takes the state machine's records for an end
  offset that is at most the high watermark and ends a batch; the snapshot's epoch is that
  batch's epoch. It holds the ``VotersRecord`` / ``KRaftVersionRecord`` in force at its end.
  Once frozen, older snapshots are deleted and the log start offset moves up to it
  (:meth:`SnapshotSync.advance_log_start`), but never past the slowest registered listener
  (which would otherwise have to reload the snapshot); the log start catches up as listeners
  read on.
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

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import FetchSnapshotResponseTopicsPartitions
from sparklog.protocol.records import iter_batches
from sparklog.raft import rpc
from sparklog.raft.replica_state import Messenger, ReplicaState
from sparklog.raft.snapshot_format import (
    SnapshotContents,
    SnapshotFormatError,
    build_snapshot,
    parse_snapshot,
)
from sparklog.raft.snapshots import SnapshotId, SnapshotNotFoundError, SnapshotStore, read_all
from sparklog.raft.state import Follower, Leader
from sparklog.raft.voters import ReplicaKey


class SnapshotError(ValueError):
    """A snapshot the caller asked for that the log cannot have (beyond the HW, mid-batch)."""


@dataclass(slots=True)
class _Download:
    snapshot_id: SnapshotId
    epoch: int
    leader_id: int
    data: bytearray = field(default_factory=bytearray)


class SnapshotSync:
    """Create, serve, download and install snapshots of the replicated log."""

    def __init__(self, state: ReplicaState, messenger: Messenger, store: SnapshotStore) -> None:
        self._state = state
        self._messenger = messenger
        self.store = store
        self._download: _Download | None = None
        self._cache: SnapshotContents | None = None

    # -- reading ------------------------------------------------------------------------------

    def latest_snapshot(self) -> SnapshotContents | None:
        """The latest frozen snapshot, parsed (cached until a newer one exists)."""
        snapshot_id = self.store.latest()
        if snapshot_id is None:
            return None
        cached = self._cache
        if cached is None or cached.snapshot_id != snapshot_id:
            cached = parse_snapshot(snapshot_id, read_all(self.store, snapshot_id))
            self._cache = cached
        return cached

    # -- creating -----------------------------------------------------------------------------

    def create(
        self, end_offset: int, values: Iterable[bytes], last_contained_timestamp: int
    ) -> SnapshotId:
        """Freeze a snapshot of the state after every record below ``end_offset`` and delete
        the older ones (the caller then moves the log start up with :meth:`advance_log_start`)."""
        state = self._state
        if end_offset > state.high_watermark:
            raise SnapshotError(
                f"snapshot end offset {end_offset} is beyond the high watermark "
                f"{state.high_watermark}"
            )
        latest = self.store.latest()
        if latest is not None and end_offset <= latest.end_offset:
            raise SnapshotError(f"snapshot {latest} already covers offset {end_offset}")
        epoch = self._epoch_of_batch_ending_at(end_offset)
        snapshot_id = SnapshotId(end_offset, epoch)
        last = end_offset - 1
        voters = state.voters.at(end_offset) if state.voters.latest_offset >= 0 else None
        kraft = [v for o, v in state.kraft_versions if o <= last]
        kraft_version = kraft[-1] if kraft else state.config.kraft_version
        data = build_snapshot(
            snapshot_id,
            values,
            last_contained_timestamp=last_contained_timestamp,
            kraft_version=kraft_version,
            voters=voters,
        )
        writer = self.store.begin(snapshot_id)
        writer.append(data)
        writer.freeze()
        self._cache = None
        self.store.delete_before(snapshot_id)
        return snapshot_id

    def _epoch_of_batch_ending_at(self, end_offset: int) -> int:
        log = self._state.log
        if end_offset <= log.log_start_offset or end_offset > log.log_end_offset:
            raise SnapshotError(
                f"snapshot end offset {end_offset} is outside the log "
                f"[{log.log_start_offset}, {log.log_end_offset}]"
            )
        data = log.read(end_offset - 1, 1)
        for _, header in iter_batches(data):
            if header.last_offset != end_offset - 1:
                raise SnapshotError(f"snapshot end offset {end_offset} is inside a batch")
            return header.partition_leader_epoch
        raise SnapshotError(f"no batch holds offset {end_offset - 1}")

    def advance_log_start(self, listener_floor: int | None) -> None:
        """Move the log start up to the latest snapshot, as far as every listener has read
        (``listener_floor``: the lowest next offset of the registered listeners, if any)."""
        log = self._state.log
        latest = self.store.latest()
        if latest is None or latest.end_offset <= log.log_start_offset:
            return
        target = min(latest.end_offset, log.log_end_offset, self._state.high_watermark)
        if listener_floor is not None:
            target = min(target, listener_floor)
        if target <= log.log_start_offset:
            return
        if target == latest.end_offset:
            epoch = latest.epoch
        else:
            try:
                epoch = self._epoch_of_batch_ending_at(target)
            except SnapshotError:
                return  # a listener mid-way through a batch; try again after it reads on
        log.delete_before(target, epoch)

    # -- installing ---------------------------------------------------------------------------

    def install(self, contents: SnapshotContents) -> None:
        state = self._state
        snapshot_id = contents.snapshot_id
        end = snapshot_id.end_offset
        log = state.log
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
            state.voters.truncate_to(end)
            state.kraft_versions = [(o, v) for o, v in state.kraft_versions if o < end]
        state.voters.install_snapshot(end - 1, contents.voters)
        later = [(o, v) for o, v in state.kraft_versions if o >= end]
        if contents.kraft_version is not None:
            later.insert(0, (end - 1, contents.kraft_version))
        state.kraft_versions = later
        self._cache = contents
        state.advance_high_watermark(end)
        role = state.quorum.role
        if isinstance(role, Leader):
            role.state.update_voters(state.voters.latest)

    def load_on_start(self) -> None:
        """Install the latest snapshot (a restart, before the log above it is scanned)."""
        contents = self.latest_snapshot()
        if contents is not None:
            self.install(contents)

    # -- leader side --------------------------------------------------------------------------

    def snapshot_for_fetch(self, fetch_offset: int, last_fetched_epoch: int) -> SnapshotId | None:
        """Kafka's ``validateOffsetAndEpoch``: the snapshot a fetcher must load, if any."""
        latest = self.store.latest()
        start = self._state.log.log_start_offset
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

    def handle_fetch_snapshot(self, now_ms: int, request: rpc.InboundRequest) -> None:
        respond = self._messenger.respond
        quorum = self._state.quorum
        role = quorum.role
        leader_id = quorum.leader_id
        p = rpc.fetch_snapshot_request_partition(request.body)
        if p is None:
            respond(
                request,
                rpc.fetch_snapshot_response(
                    ErrorCode.INVALID_REQUEST, ErrorCode.NONE, leader_id, role.epoch, (-1, -1)
                ),
            )
            return
        wanted = p["snapshot_id"]
        snapshot = (wanted["end_offset"], wanted["epoch"])
        epoch = p["current_leader_epoch"]
        error = ErrorCode.NONE
        if epoch < role.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        elif epoch > role.epoch:
            error = ErrorCode.UNKNOWN_LEADER_EPOCH
        elif not isinstance(role, Leader):
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        if error or not isinstance(role, Leader):
            respond(
                request,
                rpc.fetch_snapshot_response(ErrorCode.NONE, error, leader_id, role.epoch, snapshot),
            )
            return
        replica_id = int(request.body.get("replica_id", -1))
        if replica_id >= 0:
            directory = rpc.directory_id(p["replica_directory_id"])
            role.state.touch(ReplicaKey(replica_id, directory), now_ms)
        snapshot_id = SnapshotId(*snapshot)
        position = p["position"]
        try:
            size = self.store.size(snapshot_id)
        except SnapshotNotFoundError:
            respond(
                request,
                rpc.fetch_snapshot_response(
                    ErrorCode.NONE, ErrorCode.SNAPSHOT_NOT_FOUND, leader_id, role.epoch, snapshot
                ),
            )
            return
        if position < 0 or position >= size:
            respond(
                request,
                rpc.fetch_snapshot_response(
                    ErrorCode.NONE, ErrorCode.POSITION_OUT_OF_RANGE, leader_id, role.epoch, snapshot
                ),
            )
            return
        max_fetch_bytes = self._state.config.max_fetch_bytes
        max_bytes = max(1, min(int(request.body.get("max_bytes", 1)), max_fetch_bytes))
        chunk = self.store.read(snapshot_id, position, max_bytes)
        respond(
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

    def start_download(self, snapshot_id: SnapshotId) -> None:
        role = self._state.quorum.role
        assert isinstance(role, Follower)
        self._download = _Download(snapshot_id, role.epoch, role.leader_id)

    def current_download(self) -> _Download | None:
        """The download in progress, dropped if we no longer follow the leader it came from."""
        download = self._download
        role = self._state.quorum.role
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

    def fetch_snapshot_body(self, download: _Download) -> rpc.Body:
        state = self._state
        snapshot_id = download.snapshot_id
        return rpc.fetch_snapshot_request(
            state.config.cluster_id,
            state.local.id,
            state.local.directory_id,
            download.epoch,
            (snapshot_id.end_offset, snapshot_id.epoch),
            len(download.data),
            state.config.max_fetch_bytes,
        )

    def receive_chunk(
        self, now_ms: int, source_id: int, sent_epoch: int, p: FetchSnapshotResponseTopicsPartitions
    ) -> None:
        """A usable FetchSnapshot answer from ``source_id`` to a request sent in ``sent_epoch``:
        append its chunk to the download; install the snapshot once it is whole."""
        state = self._state
        config = state.config
        download = self.current_download()
        role = state.quorum.role
        if (
            download is None
            or not isinstance(role, Follower)
            or role.leader_id != source_id
            or role.epoch != sent_epoch
        ):
            return
        wanted = p.get("snapshot_id") or {}
        same_id = (
            int(wanted.get("end_offset", -1)) == download.snapshot_id.end_offset
            and int(wanted.get("epoch", -1)) == download.snapshot_id.epoch
        )
        # decoded, a memoryview; built by rpc.fetch_snapshot_response (the simulator), bytes
        chunk = bytes(cast("bytes | memoryview | None", p.get("unaligned_records")) or b"")
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
            state.retry_at_ms = now_ms + config.retry_backoff_ms
            return
        role.has_fetched = True
        role.fetch_deadline_ms = now_ms + config.fetch_timeout_ms
        download.data += chunk
        if len(download.data) < size:
            return
        self._download = None
        try:
            contents = parse_snapshot(download.snapshot_id, bytes(download.data))
        except SnapshotFormatError:
            state.retry_at_ms = now_ms + config.retry_backoff_ms
            return
        latest = self.store.latest()
        if latest is not None and latest >= download.snapshot_id:
            # Already held (a restart raced the download): install what we have.
            held = self.latest_snapshot()
            if held is not None:
                self.install(held)
            return
        writer = self.store.begin(download.snapshot_id)
        writer.append(bytes(download.data))
        writer.freeze()
        self.store.delete_before(download.snapshot_id)
        self.install(contents)
