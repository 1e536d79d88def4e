"""The local log engine, sans-IO: segments, sparse indexes, leader-epoch cache, per-partition log, log manager (recovery, retention)."""
