"""The composition root: where one node's packages are built and wired together.

Contract:
- This package, and only this one, turns a :class:`~sparklog.config.ServerConfig` into a
  running node: it opens the logs, builds the metadata plane, the controller, the broker and the
  coordinators, starts their listeners, tasks and threads, and supervises them.
- It may import every other package of ``sparklog``; nothing in ``sparklog`` imports it except
  :mod:`sparklog.cli` (``sparklog server start``). ``tests/unit/test_layering.py`` enforces both.
- The packages below it take what they need (logs, clocks, channels, stores) as arguments and
  never reach up here for it.

Modules: :mod:`~sparklog.server.node` (a running node: start-up and shutdown order),
:mod:`~sparklog.server.plane` (the metadata plane: this node's KRaft member and what reads or
writes it), :mod:`~sparklog.server.duties` (periodic background duties),
:mod:`~sparklog.server.faults` (failed tasks and offline log dirs),
:mod:`~sparklog.server.limits` (the file descriptor budget),
:mod:`~sparklog.server.metadata_log` (where this node keeps ``__cluster_metadata-0``),
:mod:`~sparklog.server.node_metrics` (the metrics a node reports, Kafka's names) and
:mod:`~sparklog.server.auto_join` (a controller adding itself to the voters).
"""
