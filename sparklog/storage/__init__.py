"""The local log engine (sans-IO: plain file I/O, no sockets, no asyncio).

Modules: ``config`` (topic configs), ``index`` (offset/time indexes), ``segment`` (one
segment), ``epoch_cache`` (leader-epoch checkpoint), ``checkpoint`` (Kafka's small text
files), ``loader`` (temp-file sweep and crash recovery), ``log`` (one partition, composed of
``log_durability``, ``log_retention`` and ``log_txn`` (markers, last stable offset) over the
shared ``log_state``, with ``log_validation`` checking appends),
``producer_state`` (idempotent and transactional producers, snapshots), ``txn_index`` (the
per-segment ``.txnindex`` of aborted transactions), ``cleaner`` (compaction), ``manager``
(all partitions of a node: dirs, checkpoints, clean shutdown), ``slices`` (result objects),
``errors`` (errors with Kafka codes). Formats on disk are Kafka's, except the producer
snapshot (see ``producer_state``).
"""
