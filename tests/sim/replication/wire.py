"""The messages of the replication simulator, and the envelope the faulty network carries.

Requests name the sender's incarnation; answers go back to that incarnation only (a restarted
process has a new connection, so answers meant for the previous one are lost). Requests from
an old incarnation that are still in flight are delivered: the receiver cannot tell.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparklog.replication.messages import (
    AlterPartitionProposal,
    FetchResponsePartition,
    FollowerFetch,
)
from tests.sim.replication.model import AlterPartitionAnswer, MetadataImage

CONTROLLER_ID = 100
PRODUCER_ID = 200


@dataclass(frozen=True, slots=True)
class Register:
    incarnation: int


@dataclass(frozen=True, slots=True)
class RegisterReply:
    incarnation: int
    error: int
    broker_epoch: int
    image: MetadataImage | None


@dataclass(frozen=True, slots=True)
class Heartbeat:
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class MetadataPush:
    image: MetadataImage


@dataclass(frozen=True, slots=True)
class AlterPartition:
    broker_epoch: int
    proposal: AlterPartitionProposal


@dataclass(frozen=True, slots=True)
class AlterPartitionReply:
    proposal: AlterPartitionProposal
    """The proposal answered (Kafka's AlterPartitionManager answers the callback of the very
    request it sent, not whatever the partition has pending now)."""
    answer: AlterPartitionAnswer


@dataclass(frozen=True, slots=True)
class Fetch:
    request_id: int
    fetch: FollowerFetch


@dataclass(frozen=True, slots=True)
class FetchReply:
    request_id: int
    response: FetchResponsePartition


@dataclass(frozen=True, slots=True)
class Produce:
    request_id: int
    value: bytes


@dataclass(frozen=True, slots=True)
class ProduceReply:
    request_id: int
    error: int


@dataclass(frozen=True, slots=True)
class MetadataQuery:
    pass


@dataclass(frozen=True, slots=True)
class MetadataAnswer:
    leader: int
    leader_epoch: int


Payload = (
    Register
    | RegisterReply
    | Heartbeat
    | MetadataPush
    | AlterPartition
    | AlterPartitionReply
    | Fetch
    | FetchReply
    | Produce
    | ProduceReply
    | MetadataQuery
    | MetadataAnswer
)


@dataclass(frozen=True, slots=True)
class Envelope:
    src: int
    dst: int
    src_incarnation: int
    dst_incarnation: int | None
    """None: for whichever incarnation is up when it arrives (requests, metadata pushes)."""
    payload: Payload
