"""The state a KRaft replica's components share, and its message plumbing.

:class:`~sparklog.raft.core.RaftReplica` is composed of collaborators (elections, leader and
follower replication, snapshot sync, voter changes); each is handed the two objects here and
nothing else of the replica's state:

- :class:`RaftConfig`: the ``controller.quorum.*`` settings.
- :class:`ReplicaState`: who we are, the config, the log, the role (``quorum``), the voter set
  history and the ``kraft.version`` history read from control records, the high watermark, the
  fetch retry backoff, the replica's random source and clock. Its methods keep the control-record
  view in step with the log: :meth:`ReplicaState.scan_control` reads appended batches,
  :meth:`ReplicaState.truncate` reverts them and never goes below the high watermark, which
  :meth:`ReplicaState.advance_high_watermark` only ever raises.
- :class:`Messenger`: the outbox of messages an entry point returns, and the requests in flight
  (correlation id, destination, API, the epoch they were sent in, their deadline). A response is
  handled only if it answers a request in flight from the replica it was sent to.
"""

from __future__ import annotations

import random as random_module
from collections.abc import Callable
from dataclasses import dataclass, field

from sparklog.protocol.record_codec import RecordInput, build_batch, decode_batch
from sparklog.protocol.records import iter_batches
from sparklog.raft import rpc
from sparklog.raft.client import MAX_BATCH_SIZE_BYTES
from sparklog.raft.control_records import decode_control_record
from sparklog.raft.log import ReplicatedLog
from sparklog.raft.state import QuorumState
from sparklog.raft.voters import ReplicaKey, VoterSet, VoterSetHistory


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """Kafka's ``controller.quorum.*`` settings (defaults as in Kafka 4.x)."""

    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    fetch_max_wait_ms: int = 500
    append_linger_ms: int = 25
    max_fetch_bytes: int = 8 * 1024 * 1024
    # metadata.max.idle.interval.ms: the leader appends ``no_op_record`` when idle this long.
    idle_interval_ms: int = 500
    no_op_record: bytes | None = None
    cluster_id: str | None = None
    kraft_version: int = 1

    @property
    def check_quorum_timeout_ms(self) -> int:
        return self.fetch_timeout_ms * 3 // 2


@dataclass(slots=True)
class ReplicaState:
    """The replica's shared state; every component reads and writes it through these fields."""

    local: ReplicaKey
    config: RaftConfig
    log: ReplicatedLog
    quorum: QuorumState
    voters: VoterSetHistory
    random: random_module.Random
    time: Callable[[], int]
    bootstrap_ids: tuple[int, ...] = ()
    # (offset, kraft.version) of every KRaftVersionRecord in the log (or the latest snapshot).
    kraft_versions: list[tuple[int, int]] = field(default_factory=list)
    high_watermark: int = 0
    # A follower sends its next Fetch no earlier than this (after an error).
    retry_at_ms: int = 0

    @property
    def is_voter(self) -> bool:
        return self.voters.latest.is_voter(self.local)

    @property
    def kraft_version(self) -> int:
        return self.kraft_versions[-1][1] if self.kraft_versions else self.config.kraft_version

    def election_timeout(self) -> int:
        base = self.config.election_timeout_ms
        return base + self.random.randint(0, base)

    def advance_high_watermark(self, offset: int) -> None:
        if offset > self.high_watermark:
            self.high_watermark = offset

    def scan_control(self, data: bytes) -> None:
        """Read VotersRecord / KRaftVersionRecord from appended batches (uncommitted too)."""
        for pos, header in iter_batches(data):
            if not header.is_control:
                continue
            _, records = decode_batch(data, pos)
            for record in records:
                control = decode_control_record(record.key, record.value)
                if control is None:
                    continue
                # A batch read twice (a restart's scan, then a fetch) must not add twice.
                if control.name == "VotersRecord" and record.offset > self.voters.latest_offset:
                    self.voters.add_at(record.offset, VoterSet.from_record(control.data))
                elif control.name == "KRaftVersionRecord" and (
                    not self.kraft_versions or record.offset > self.kraft_versions[-1][0]
                ):
                    version = int(control.data["kraft_version"])
                    self.kraft_versions.append((record.offset, version))

    def truncate(self, offset: int) -> None:
        if offset < self.high_watermark:
            raise AssertionError(
                f"node {self.local.id} would truncate to {offset} "
                f"below its high watermark {self.high_watermark}"
            )
        self.log.truncate_to(offset)
        end = self.log.log_end_offset
        self.voters.truncate_to(end)
        self.kraft_versions = [(o, v) for o, v in self.kraft_versions if o < end]

    def build(self, records: list[RecordInput], epoch: int, control: bool) -> bytes:
        """A batch of ``records`` starting at the log end offset."""
        batch = build_batch(
            records,
            base_offset=self.log.log_end_offset,
            partition_leader_epoch=epoch,
            is_control=control,
        )
        if len(batch) > MAX_BATCH_SIZE_BYTES:
            raise ValueError(f"metadata batch of {len(batch)} bytes exceeds {MAX_BATCH_SIZE_BYTES}")
        return batch


@dataclass(slots=True)
class Inflight:
    """A request sent and not yet answered (or timed out)."""

    destination_id: int
    api_key: int
    epoch: int
    deadline_ms: int
    pre_vote: bool = False


class Messenger:
    """The outbox and the requests in flight; requests carry the epoch they were sent in."""

    def __init__(self, quorum: QuorumState, request_timeout_ms: int) -> None:
        self._quorum = quorum
        self._request_timeout_ms = request_timeout_ms
        self._outbox: list[rpc.Outbound] = []
        self.inflight: dict[int, Inflight] = {}
        self._next_correlation = 1

    def send(
        self, now_ms: int, destination: int, api_key: int, body: rpc.Body, pre_vote: bool = False
    ) -> None:
        correlation_id = self._next_correlation
        self._next_correlation += 1
        deadline = now_ms + self._request_timeout_ms
        self.inflight[correlation_id] = Inflight(
            destination, api_key, self._quorum.epoch, deadline, pre_vote
        )
        self._outbox.append(rpc.Outbound(destination, api_key, correlation_id, body, False))

    def respond(self, request: rpc.InboundRequest, body: rpc.Body) -> None:
        self._outbox.append(
            rpc.Outbound(request.source_id, request.api_key, request.correlation_id, body, True)
        )

    def answered(self, response: rpc.InboundResponse) -> Inflight | None:
        """The request ``response`` answers, no longer in flight (None: not ours, or stale)."""
        inflight = self.inflight.pop(response.correlation_id, None)
        if inflight is not None and inflight.destination_id == response.source_id:
            return inflight
        return None

    def expire(self, now_ms: int) -> None:
        """Forget requests whose deadline passed (a late answer is then ignored)."""
        for correlation_id, inflight in list(self.inflight.items()):
            if inflight.deadline_ms <= now_ms:
                del self.inflight[correlation_id]

    def has_inflight(self, destination: int, api_key: int) -> bool:
        return any(
            i.destination_id == destination and i.api_key == api_key for i in self.inflight.values()
        )

    def fetching(self) -> bool:
        """A Fetch or FetchSnapshot is in flight."""
        return any(i.api_key in (rpc.FETCH, rpc.FETCH_SNAPSHOT) for i in self.inflight.values())

    def deadlines(self) -> list[int]:
        return [i.deadline_ms for i in self.inflight.values()]

    def drain(self) -> list[rpc.Outbound]:
        out, self._outbox = self._outbox, []
        return out
