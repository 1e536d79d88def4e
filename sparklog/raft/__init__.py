"""KRaft consensus, sans-IO.

:mod:`sparklog.raft.client` is the seam the metadata layer codes against (Kafka's
``RaftClient``), implemented by :class:`sparklog.raft.core.RaftReplica`, the multi-voter protocol
(Vote with Pre-Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch replication, DescribeQuorum and
KIP-853 voter changes), composed of collaborators that share only the typed state of
:mod:`~sparklog.raft.replica_state`: :mod:`~sparklog.raft.elections` (role changes, votes),
:mod:`~sparklog.raft.replication` (leader and follower Fetch), :mod:`~sparklog.raft.snapshot_sync`
and :mod:`~sparklog.raft.voter_changes`; beside them :mod:`~sparklog.raft.state` (roles,
persisted election state), :mod:`~sparklog.raft.leader_state` (HW, check-quorum),
:mod:`~sparklog.raft.voters` (voter sets and their history), :mod:`~sparklog.raft.log` (the
replicated log over storage; the simulator's in-memory one is in ``tests/sim``),
:mod:`~sparklog.raft.listeners` (commit delivery) and :mod:`~sparklog.raft.rpc` (message bodies).
"""
