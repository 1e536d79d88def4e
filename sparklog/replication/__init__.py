"""Partition replication, sans-IO: the leader's and the follower's state machines.

The cores in this package never touch a socket, a task or a clock of their own: the broker (or
the deterministic simulator) feeds them fetches, fetch responses, AlterPartition responses,
metadata and ``now_ms``, and carries out the effects they return (read the log up to the LEO,
send an AlterPartition, refetch). They act on a partition log through the small
:class:`~sparklog.replication.log.ReplicaLog` protocol, which ``sparklog.storage.log.Log`` and
``tests/sim/replication/memory_log.py``'s ``InMemoryLog`` both satisfy.

Modules:
- ``log``: the log protocol the cores need.
- ``messages``: the value objects that go in and out of the cores.
- ``isr``: the committed / pending ISR state of a leader (KIP-497 maximal ISR).
- ``leader``: :class:`LeaderCore`, follower tracking, HW, ISR shrink / expand.
- ``follower``: :class:`FollowerCore`, fetch position, truncation, appends, HW.
"""

from sparklog.replication.follower import FollowerCore
from sparklog.replication.isr import CommittedIsr, IsrState, PendingExpandIsr, PendingShrinkIsr
from sparklog.replication.leader import LeaderCore, ReplicaState
from sparklog.replication.log import EpochCacheLike, ReplicaLog
from sparklog.replication.messages import (
    AlterPartitionOutcome,
    AlterPartitionProposal,
    BrokerStatus,
    EpochEndOffset,
    FetchPosition,
    FetchResponsePartition,
    FollowerAction,
    FollowerFetch,
    FollowerFetchResult,
    FollowerOutcome,
    PartitionView,
)

__all__ = [
    "AlterPartitionOutcome",
    "AlterPartitionProposal",
    "BrokerStatus",
    "CommittedIsr",
    "EpochCacheLike",
    "EpochEndOffset",
    "FetchPosition",
    "FetchResponsePartition",
    "FollowerAction",
    "FollowerCore",
    "FollowerFetch",
    "FollowerFetchResult",
    "FollowerOutcome",
    "IsrState",
    "LeaderCore",
    "PartitionView",
    "PendingExpandIsr",
    "PendingShrinkIsr",
    "ReplicaLog",
    "ReplicaState",
]
