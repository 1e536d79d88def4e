"""KRaft consensus, sans-IO.

:mod:`sparklog.raft.client` is the seam the metadata layer codes against (Kafka's
``RaftClient``); :mod:`sparklog.raft.single_voter` implements it for a quorum of one voter
(commit on local fsync). The multi-voter protocol will be a second implementation of the same
interface.
"""
