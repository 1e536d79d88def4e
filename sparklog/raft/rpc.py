"""The messages a :class:`~sparklog.raft.core.RaftReplica` exchanges, as decoded wire dicts.

A replica consumes :class:`InboundRequest` and :class:`InboundResponse` and produces
:class:`Outbound` messages. Their ``body`` is the dict tree the codec reads and writes for the
declarations in ``sparklog.protocol.messages`` (snake_case Kafka field names), so the asyncio
driver encodes an outbound request with ``codec`` at ``api_version`` and feeds the decoded
response back with the same ``correlation_id``. A request that fails in transport (timeout,
disconnect) may be reported as a response whose body is ``{"error_code": NETWORK_EXCEPTION}``;
the replica also times requests out itself, so a driver may simply drop them.

Builders below fill in every field of the versions we send (Vote v2, BeginQuorumEpoch v1,
EndQuorumEpoch v1, Fetch v17, FetchSnapshot v1, DescribeQuorum v2, Add/Remove/UpdateRaftVoter
v0/v1) and take what the core decides; parsers return the one partition KRaft uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.kafka_uuid import METADATA_TOPIC_ID, ZERO_UUID
from sparklog.protocol.message_types import (
    AddRaftVoterResponse,
    ApiKey,
    BeginQuorumEpochRequest,
    BeginQuorumEpochRequestTopicsPartitions,
    BeginQuorumEpochResponse,
    BeginQuorumEpochResponseTopicsPartitions,
    DescribeQuorumResponse,
    DescribeQuorumResponseTopicsPartitions,
    DescribeQuorumResponseTopicsPartitionsCurrentVoters,
    EndQuorumEpochRequest,
    EndQuorumEpochRequestTopicsPartitions,
    EndQuorumEpochResponseTopicsPartitions,
    FetchRequest,
    FetchRequestTopicsPartitions,
    FetchResponse,
    FetchResponseResponsesPartitions,
    FetchSnapshotRequest,
    FetchSnapshotRequestTopicsPartitions,
    FetchSnapshotResponse,
    FetchSnapshotResponseTopicsPartitions,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteRequestTopicsPartitions,
    VoteResponse,
    VoteResponseTopicsPartitions,
)

METADATA_TOPIC: Final = "__cluster_metadata"
METADATA_PARTITION: Final = 0

FETCH: Final = ApiKey.FETCH
VOTE: Final = ApiKey.VOTE
BEGIN_QUORUM_EPOCH: Final = ApiKey.BEGIN_QUORUM_EPOCH
END_QUORUM_EPOCH: Final = ApiKey.END_QUORUM_EPOCH
DESCRIBE_QUORUM: Final = ApiKey.DESCRIBE_QUORUM
FETCH_SNAPSHOT: Final = ApiKey.FETCH_SNAPSHOT
ADD_RAFT_VOTER: Final = ApiKey.ADD_RAFT_VOTER
REMOVE_RAFT_VOTER: Final = ApiKey.REMOVE_RAFT_VOTER
UPDATE_RAFT_VOTER: Final = ApiKey.UPDATE_RAFT_VOTER

# Every KRaft RPC: what a controller listener routes to the consensus core.
RAFT_API_KEYS: Final = frozenset(
    {
        FETCH,
        VOTE,
        BEGIN_QUORUM_EPOCH,
        END_QUORUM_EPOCH,
        DESCRIBE_QUORUM,
        FETCH_SNAPSHOT,
        ADD_RAFT_VOTER,
        REMOVE_RAFT_VOTER,
        UPDATE_RAFT_VOTER,
    }
)

# The version each request is sent at (the Kafka 4.x versions carrying KIP-853/KIP-996 fields).
REQUEST_VERSIONS: Final[dict[int, int]] = {
    FETCH: 17,
    VOTE: 2,
    BEGIN_QUORUM_EPOCH: 1,
    END_QUORUM_EPOCH: 1,
    DESCRIBE_QUORUM: 2,
    FETCH_SNAPSHOT: 1,
    ADD_RAFT_VOTER: 1,
    REMOVE_RAFT_VOTER: 0,
    UPDATE_RAFT_VOTER: 0,
}

Body = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class _Inbound:
    """What a replica receives from node ``source_id``: a decoded ``api_key`` body."""

    api_key: int
    source_id: int
    correlation_id: int
    body: Body


@dataclass(frozen=True, slots=True)
class InboundRequest(_Inbound):
    """A request the replica answers with an :class:`Outbound` response."""


@dataclass(frozen=True, slots=True)
class InboundResponse(_Inbound):
    """The response to the replica's :class:`Outbound` request of ``correlation_id``."""


@dataclass(frozen=True, slots=True)
class Outbound:
    """A request to send (``is_response`` False) or a response to an inbound request."""

    destination_id: int
    api_key: int
    correlation_id: int
    body: Body
    is_response: bool

    @property
    def api_version(self) -> int:
        return REQUEST_VERSIONS[self.api_key]


def partition_of(body: Body, topics: str = "topics") -> Mapping[str, Any] | None:
    """The single ``__cluster_metadata-0`` partition of a KRaft request or response."""
    for topic in body.get(topics) or ():
        for partition in topic.get("partitions") or ():
            return dict(partition)
    return None


# The partition of an inbound request of one KRaft API: the body is what the codec decoded from
# that API's request declaration (or what this module's builder made, in the simulator), so its
# partition is that declaration's TypedDict; the cast names the type the dispatch by api key
# already guarantees, as the broker's handler table does.


def vote_partition(body: Body) -> VoteRequestTopicsPartitions | None:
    return cast("VoteRequestTopicsPartitions | None", partition_of(body))


def begin_epoch_partition(body: Body) -> BeginQuorumEpochRequestTopicsPartitions | None:
    return cast("BeginQuorumEpochRequestTopicsPartitions | None", partition_of(body))


def end_epoch_partition(body: Body) -> EndQuorumEpochRequestTopicsPartitions | None:
    return cast("EndQuorumEpochRequestTopicsPartitions | None", partition_of(body))


def fetch_request_partition(body: Body) -> FetchRequestTopicsPartitions | None:
    return cast("FetchRequestTopicsPartitions | None", partition_of(body))


def fetch_snapshot_request_partition(body: Body) -> FetchSnapshotRequestTopicsPartitions | None:
    return cast("FetchSnapshotRequestTopicsPartitions | None", partition_of(body))


# What a Fetch request partition sends for the leader's high watermark it does not know
# (KIP-1166's tagged field, v18+; the declared default, Long.MAX_VALUE).
_UNKNOWN_HIGH_WATERMARK = (1 << 63) - 1


# -- Vote ------------------------------------------------------------------------------------


def vote_request(
    cluster_id: str | None,
    voter_id: int,
    voter_directory_id: bytes,
    epoch: int,
    candidate_id: int,
    candidate_directory_id: bytes,
    last_epoch: int,
    last_offset: int,
    pre_vote: bool,
) -> VoteRequest:
    return {
        "cluster_id": cluster_id,
        "voter_id": voter_id,
        "topics": [
            {
                "topic_name": METADATA_TOPIC,
                "partitions": [
                    {
                        "partition_index": METADATA_PARTITION,
                        "replica_epoch": epoch,
                        "replica_id": candidate_id,
                        "replica_directory_id": candidate_directory_id,
                        "voter_directory_id": voter_directory_id,
                        "last_offset_epoch": last_epoch,
                        "last_offset": last_offset,
                        "pre_vote": pre_vote,
                    }
                ],
            }
        ],
    }


def vote_response(
    error: ErrorCode, leader_id: int, epoch: int, granted: bool, partition_error: ErrorCode
) -> VoteResponse:
    partition: VoteResponseTopicsPartitions = {
        "partition_index": METADATA_PARTITION,
        "error_code": int(partition_error),
        "leader_id": leader_id,
        "leader_epoch": epoch,
        "vote_granted": granted,
    }
    return {
        "error_code": int(error),
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}],
        "node_endpoints": [],
    }


# -- BeginQuorumEpoch / EndQuorumEpoch -------------------------------------------------------


def begin_quorum_epoch_request(
    cluster_id: str | None, voter_id: int, voter_directory_id: bytes, leader_id: int, epoch: int
) -> BeginQuorumEpochRequest:
    return {
        "cluster_id": cluster_id,
        "voter_id": voter_id,
        "topics": [
            {
                "topic_name": METADATA_TOPIC,
                "partitions": [
                    {
                        "partition_index": METADATA_PARTITION,
                        "voter_directory_id": voter_directory_id,
                        "leader_id": leader_id,
                        "leader_epoch": epoch,
                    }
                ],
            }
        ],
        "leader_endpoints": [],
    }


def end_quorum_epoch_request(
    cluster_id: str | None, leader_id: int, epoch: int, preferred: list[tuple[int, bytes]]
) -> EndQuorumEpochRequest:
    return {
        "cluster_id": cluster_id,
        "topics": [
            {
                "topic_name": METADATA_TOPIC,
                "partitions": [
                    {
                        "partition_index": METADATA_PARTITION,
                        "leader_id": leader_id,
                        "leader_epoch": epoch,
                        "preferred_successors": [node for node, _ in preferred],
                        "preferred_candidates": [
                            {"candidate_id": node, "candidate_directory_id": directory}
                            for node, directory in preferred
                        ],
                    }
                ],
            }
        ],
        "leader_endpoints": [],
    }


def epoch_response(
    error: ErrorCode, leader_id: int, epoch: int, partition_error: ErrorCode
) -> BeginQuorumEpochResponse:
    """The BeginQuorumEpoch / EndQuorumEpoch response (the two declare the same fields)."""
    return {
        "error_code": int(error),
        "topics": [
            {
                "topic_name": METADATA_TOPIC,
                "partitions": [
                    {
                        "partition_index": METADATA_PARTITION,
                        "error_code": int(partition_error),
                        "leader_id": leader_id,
                        "leader_epoch": epoch,
                    }
                ],
            }
        ],
        "node_endpoints": [],
    }


# -- Fetch -----------------------------------------------------------------------------------


def fetch_request(
    cluster_id: str | None,
    replica_id: int,
    replica_directory_id: bytes,
    epoch: int,
    fetch_offset: int,
    last_fetched_epoch: int,
    max_wait_ms: int,
    max_bytes: int,
) -> FetchRequest:
    return {
        "cluster_id": cluster_id,
        "replica_id": -1,
        "replica_state": {"replica_id": replica_id, "replica_epoch": -1},
        "max_wait_ms": max_wait_ms,
        "min_bytes": 0,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": "",
                "topic_id": METADATA_TOPIC_ID,
                "partitions": [
                    {
                        "partition": METADATA_PARTITION,
                        "current_leader_epoch": epoch,
                        "fetch_offset": fetch_offset,
                        "last_fetched_epoch": last_fetched_epoch,
                        "log_start_offset": -1,
                        "partition_max_bytes": max_bytes,
                        "replica_directory_id": replica_directory_id,
                        "high_watermark": _UNKNOWN_HIGH_WATERMARK,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def fetch_replica_id(body: Body) -> int:
    state = body.get("replica_state")
    if state and state.get("replica_id", -1) >= 0:
        return int(state["replica_id"])
    return int(body.get("replica_id", -1))


def fetch_response(
    error: ErrorCode,
    partition_error: ErrorCode,
    leader_id: int,
    epoch: int,
    high_watermark: int,
    log_start_offset: int,
    records: bytes | None,
    diverging: tuple[int, int] | None = None,
    snapshot: tuple[int, int] | None = None,
) -> FetchResponse:
    partition: FetchResponseResponsesPartitions = {
        "partition_index": METADATA_PARTITION,
        "error_code": int(partition_error),
        "high_watermark": high_watermark,
        "last_stable_offset": high_watermark,
        "log_start_offset": log_start_offset,
        "current_leader": {"leader_id": leader_id, "leader_epoch": epoch},
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": records,
    }
    if diverging is not None:
        partition["diverging_epoch"] = {"epoch": diverging[0], "end_offset": diverging[1]}
    if snapshot is not None:
        partition["snapshot_id"] = {"end_offset": snapshot[0], "epoch": snapshot[1]}
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "session_id": 0,
        "responses": [{"topic_id": METADATA_TOPIC_ID, "partitions": [partition]}],
        "node_endpoints": [],
    }


# The partition of an inbound response, typed as the partition of the response declaration of
# the API the request was sent for (the same dispatch by api key as for requests).


def fetch_partition(body: Body) -> FetchResponseResponsesPartitions | None:
    return cast("FetchResponseResponsesPartitions | None", partition_of(body, "responses"))


def vote_response_partition(body: Body) -> VoteResponseTopicsPartitions | None:
    return cast("VoteResponseTopicsPartitions | None", partition_of(body))


def epoch_response_partition(
    body: Body,
) -> BeginQuorumEpochResponseTopicsPartitions | EndQuorumEpochResponseTopicsPartitions | None:
    """BeginQuorumEpoch's or EndQuorumEpoch's answer (the same partition fields)."""
    return cast(
        "BeginQuorumEpochResponseTopicsPartitions | EndQuorumEpochResponseTopicsPartitions | None",
        partition_of(body),
    )


def fetch_snapshot_response_partition(body: Body) -> FetchSnapshotResponseTopicsPartitions | None:
    return cast("FetchSnapshotResponseTopicsPartitions | None", partition_of(body))


# -- FetchSnapshot ---------------------------------------------------------------------------


def fetch_snapshot_request(
    cluster_id: str | None,
    replica_id: int,
    replica_directory_id: bytes,
    epoch: int,
    snapshot: tuple[int, int],
    position: int,
    max_bytes: int,
) -> FetchSnapshotRequest:
    return {
        "cluster_id": cluster_id,
        "replica_id": replica_id,
        "max_bytes": max_bytes,
        "topics": [
            {
                "name": METADATA_TOPIC,
                "partitions": [
                    {
                        "partition": METADATA_PARTITION,
                        "current_leader_epoch": epoch,
                        "snapshot_id": {"end_offset": snapshot[0], "epoch": snapshot[1]},
                        "position": position,
                        "replica_directory_id": replica_directory_id,
                    }
                ],
            }
        ],
    }


def fetch_snapshot_response(
    error: ErrorCode,
    partition_error: ErrorCode,
    leader_id: int,
    epoch: int,
    snapshot: tuple[int, int],
    size: int = 0,
    position: int = 0,
    chunk: bytes = b"",
) -> FetchSnapshotResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "topics": [
            {
                "name": METADATA_TOPIC,
                "partitions": [
                    {
                        "index": METADATA_PARTITION,
                        "error_code": int(partition_error),
                        "snapshot_id": {"end_offset": snapshot[0], "epoch": snapshot[1]},
                        "current_leader": {"leader_id": leader_id, "leader_epoch": epoch},
                        "size": size,
                        "position": position,
                        "unaligned_records": chunk,
                    }
                ],
            }
        ],
        "node_endpoints": [],
    }


# -- admin: DescribeQuorum, Add/Remove/UpdateRaftVoter ---------------------------------------


def replica_state(
    replica_id: int,
    directory_id: bytes,
    end_offset: int,
    last_fetch_ms: int,
    last_caught_up_ms: int,
) -> DescribeQuorumResponseTopicsPartitionsCurrentVoters:
    return {
        "replica_id": replica_id,
        "replica_directory_id": directory_id,
        "log_end_offset": end_offset,
        "last_fetch_timestamp": last_fetch_ms,
        "last_caught_up_timestamp": last_caught_up_ms,
    }


def describe_quorum_response(
    error: ErrorCode,
    leader_id: int,
    epoch: int,
    high_watermark: int,
    voters: list[DescribeQuorumResponseTopicsPartitionsCurrentVoters],
    observers: list[DescribeQuorumResponseTopicsPartitionsCurrentVoters],
    message: str | None = None,
) -> DescribeQuorumResponse:
    partition: DescribeQuorumResponseTopicsPartitions = {
        "partition_index": METADATA_PARTITION,
        "error_code": int(error),
        "leader_id": leader_id,
        "leader_epoch": epoch,
        "error_message": message,
        "high_watermark": high_watermark,
        "current_voters": voters,
        "observers": observers,
    }
    return {
        "error_code": 0,
        "error_message": None,
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}],
        "nodes": [],
    }


def voter_change_response(error: ErrorCode, message: str | None = None) -> AddRaftVoterResponse:
    """AddRaftVoter / RemoveRaftVoter response (the two declare the same fields)."""
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message}


def update_voter_response(error: ErrorCode, leader_id: int, epoch: int) -> UpdateRaftVoterResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "current_leader": {"leader_id": leader_id, "leader_epoch": epoch, "host": "", "port": 0},
    }


def directory_id(value: object) -> bytes:
    return bytes(value) if isinstance(value, bytes | bytearray | memoryview) else ZERO_UUID
