"""MetadataPlane: the metadata side of one combined node, wired in the order Kafka starts it.

``MetadataPlane.start(config, cluster_id)`` opens ``__cluster_metadata-0`` in
``metadata.log.dir``, creates the single-voter raft client, the QuorumController (the only
writer) and the broker's MetadataLoader (a separate reader with its own image, exactly as a
combined Kafka node runs a controller and a broker side by side), registers both as raft
listeners, becomes leader of a new epoch, bootstraps an empty log from
``bootstrap.checkpoint`` and registers this node's broker (unfenced). Publishers installed on
``plane.loader`` afterwards get a catch-up delta first.

Only ``process.roles=broker,controller`` with a single voter is supported until the
multi-voter KRaft lands; anything else is refused with a clear message.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from sparklog.config import ServerConfig
from sparklog.controller.quorum_controller import QuorumController
from sparklog.metadata.bootstrap import BootstrapMetadata, read_bootstrap_checkpoint
from sparklog.metadata.image import METADATA_VERSION_FEATURE, Endpoint
from sparklog.metadata.loader import MetadataLoader
from sparklog.metadata.records import MetadataRecord, decode_record
from sparklog.protocol.kafka_uuid import random_uuid_bytes, uuid_from_str
from sparklog.raft.metadata_log import open_metadata_log, quorum_state_store
from sparklog.raft.single_voter import SingleVoterRaft
from sparklog.storage.log import Log

SECURITY_PROTOCOL_CODES = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
# metadata.version levels this node can run (3.3-IV3 .. 4.1-IV1).
SUPPORTED_METADATA_VERSIONS = (7, 27)


class MetadataPlaneError(Exception):
    """A node configuration the metadata plane cannot run yet."""


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class MetadataPlane:
    config: ServerConfig
    log: Log
    raft: SingleVoterRaft[MetadataRecord]
    controller: QuorumController
    loader: MetadataLoader
    broker_epoch: int

    @classmethod
    def start(
        cls,
        config: ServerConfig,
        cluster_id: str,
        *,
        clock_ms: Callable[[], int] = _wall_clock_ms,
        directory_ids: dict[str, str] | None = None,
    ) -> MetadataPlane:
        if not (config.is_broker and config.is_controller):
            raise MetadataPlaneError(
                "This release runs combined nodes only: set process.roles=broker,controller"
            )
        voters = config.quorum_voters
        if voters and {v.node_id for v in voters} != {config.node_id}:
            raise MetadataPlaneError(
                "This release supports a single-voter quorum only: controller.quorum.voters "
                f"must list just this node ({config.node_id}@host:port)"
            )
        bootstrap = read_bootstrap_checkpoint(config.metadata_log_dir)
        if bootstrap is None:
            bootstrap = BootstrapMetadata.from_release_version(None, "the default bootstrap")
        log = open_metadata_log(config, clock_ms)
        raft: SingleVoterRaft[MetadataRecord] = SingleVoterRaft(
            log, config.node_id, quorum_state_store(config), decode_record, clock_ms=clock_ms
        )
        controller = QuorumController(raft, config=config, bootstrap=bootstrap)
        loader = MetadataLoader(cluster_id=cluster_id)
        raft.register_listener(loader)
        raft.start()
        controller.activate()
        endpoints = [
            Endpoint(
                listener.name,
                # Kafka advertises the canonical host name for a listener bound to all
                # interfaces; an empty host is useless to a client.
                listener.host or socket.gethostname(),
                listener.port,
                SECURITY_PROTOCOL_CODES[listener.security_protocol],
            )
            for listener in config.advertised_listeners
            if listener.name not in config.controller_listener_names
        ]
        log_dirs = [uuid_from_str(d) for d in (directory_ids or {}).values() if d]
        broker_epoch = controller.run(
            controller.register_broker(
                config.node_id,
                random_uuid_bytes(),
                endpoints,
                config.get("broker.rack"),
                {METADATA_VERSION_FEATURE: SUPPORTED_METADATA_VERSIONS},
                log_dirs=log_dirs,
            )
        )
        return cls(config, log, raft, controller, loader, broker_epoch)

    def close(self) -> None:
        self.log.flush()
        self.log.close()
