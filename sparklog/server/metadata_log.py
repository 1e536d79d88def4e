"""Where and how the ``__cluster_metadata-0`` log is stored on this node.

The metadata partition lives in ``metadata.log.dir`` (default: the first ``log.dirs`` entry) as
``__cluster_metadata-0``, next to its ``quorum-state`` file, with Kafka's MetadataLogConfig:
segments of ``metadata.log.segment.bytes``/``.ms``, 8 MiB batches, and no time/size retention:
segments go only once a snapshot covers them (the raft core raises the log start offset to
its latest snapshot). Snapshots are ``{end_offset:020d}-{epoch:010d}.checkpoint`` files in the
same directory (:func:`snapshot_store`). It is opened outside the LogManager, so topic
retention and deletion never touch it.

The raft core takes its log, quorum-state store and snapshot store as arguments and knows
nothing of a node's config or directories; choosing them from ``ServerConfig`` and opening them
on disk is wiring, so it lives here in the composition root (used by :mod:`~sparklog.server.plane`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace

from sparklog.config import ServerConfig
from sparklog.protocol.kafka_uuid import METADATA_TOPIC_ID
from sparklog.raft.client import MAX_BATCH_SIZE_BYTES, METADATA_PARTITION, METADATA_TOPIC
from sparklog.raft.quorum_state import QUORUM_STATE_FILENAME, QuorumStateStore
from sparklog.raft.snapshots import FileSnapshotStore
from sparklog.storage.config import LONG_MAX, LogConfig
from sparklog.storage.log import Log


def metadata_partition_dir(config: ServerConfig) -> str:
    return os.path.join(config.metadata_log_dir, f"{METADATA_TOPIC}-{METADATA_PARTITION}")


def metadata_log_config(config: ServerConfig) -> LogConfig:
    return replace(
        LogConfig(),
        segment_bytes=int(config.get("metadata.log.segment.bytes")),
        segment_ms=int(config.get("metadata.log.segment.ms")),
        retention_ms=-1,
        retention_bytes=-1,
        max_message_bytes=MAX_BATCH_SIZE_BYTES + 1024,
        # Raft stamps batches with its own clock; a skew against the log's clock must never
        # make the only writer of metadata unable to append.
        message_timestamp_after_max_ms=LONG_MAX,
    )


def open_metadata_log(config: ServerConfig, clock: Callable[[], int]) -> Log:
    """Open (creating if needed) this node's metadata log, recovering a torn tail."""
    return Log.open(
        metadata_partition_dir(config),
        metadata_log_config(config),
        clock,
        topic_id=METADATA_TOPIC_ID,
    )


def quorum_state_store(config: ServerConfig) -> QuorumStateStore:
    return QuorumStateStore(os.path.join(metadata_partition_dir(config), QUORUM_STATE_FILENAME))


def snapshot_store(config: ServerConfig) -> FileSnapshotStore:
    """This node's metadata snapshots (pass to ``RaftReplica(snapshots=...)``)."""
    return FileSnapshotStore(metadata_partition_dir(config))
