"""Deterministic simulation of partition replication (``repl_*`` scenarios); see
tests/sim/README.md. Real :class:`~sparklog.replication.leader.LeaderCore` /
:class:`~sparklog.replication.follower.FollowerCore` on crash-aware logs, a model controller,
an acks=all producer and a faulty network, all on one seeded simulated clock."""
