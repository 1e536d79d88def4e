"""MetadataPlane: this node's member of the KRaft quorum and everything that reads or writes it.

``MetadataPlane.open(config, cluster_id)`` opens ``__cluster_metadata-0`` in
``metadata.log.dir`` and builds, in Kafka's order:

- the KRaft replica (:class:`~sparklog.raft.core.RaftReplica`) over an
  :class:`~sparklog.net.raft_flush.OffloadedFlushLog` (fsyncs off the loop), driven by a
  :class:`~sparklog.net.raft_driver.RaftDriver`. A node with ``controller`` in
  ``process.roles`` is a voter when the voter set names it; a broker-only node is an observer
  that fetches the log from the leader.
- on a controller, the :class:`QuorumController` (active only on the raft leader) and its
  :class:`~sparklog.controller.driver.ControllerDriver`;
- the broker's :class:`MetadataLoader` (its own image; it publishes nothing until it replayed up
  to the replica's high watermark, then one delta from the empty image), with the
  :class:`SnapshotGenerator` installed on it: every node writes its own snapshots of the
  committed image into ``metadata.log.dir`` (``{end}-{epoch}.checkpoint`` files) after
  ``metadata.log.max.record.bytes.between.snapshots`` or
  ``metadata.log.max.snapshot.interval.ms``, and the raft replica then deletes the log
  segments below them.

Snapshots on start: the replica installs its latest snapshot before it scans the log, and each
raft listener (the controller, its driver, the loader) whose next offset is below the log start
loads that snapshot first (``handle_load_snapshot``), then replays the log above it. A replica
further behind than the leader's log start downloads the leader's snapshot (FetchSnapshot) and
its listeners load it the same way.

The voter set comes from ``controller.quorum.voters`` (static quorum, ``kraft.version`` 0) or
from the one ``sparklog storage format`` wrote (``bootstrap.voters``, KIP-853); without either
(``--no-initial-controllers``) the node fetches from ``controller.quorum.bootstrap.servers``
(under reserved ids, as Kafka does) until the log tells it the voters. A sole voter campaigns
at once instead of waiting an election timeout, as Kafka's ``QuorumState`` does.

:meth:`start` needs the running event loop; :meth:`shutdown` resigns (EndQuorumEpoch) and
flushes, :meth:`close` (a crash from the quorum's point of view) does neither.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from sparklog.config import ServerConfig
from sparklog.controller.driver import ControllerDriver
from sparklog.controller.quorum_controller import QuorumController
from sparklog.metadata.bootstrap import BootstrapMetadata, read_bootstrap_checkpoint
from sparklog.metadata.bootstrap_voters import read_bootstrap_voters
from sparklog.metadata.loader import MetadataLoader
from sparklog.metadata.records import MetadataRecord, decode_record, make_record
from sparklog.metadata.snapshot_generator import SnapshotGenerator, raft_snapshot_emitter
from sparklog.net.raft_driver import RaftDriver
from sparklog.net.raft_flush import OffloadedFlushLog
from sparklog.protocol.kafka_uuid import ZERO_UUID, uuid_from_str
from sparklog.raft.client import LeaderAndEpoch
from sparklog.raft.core import RaftConfig, RaftReplica
from sparklog.raft.state import Resigned, Unattached
from sparklog.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet
from sparklog.security.client_security import controller_security
from sparklog.server.metadata_log import open_metadata_log, quorum_state_store, snapshot_store
from sparklog.storage.log import Log

SECURITY_PROTOCOL_CODES = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
# Kafka gives the N-th controller.quorum.bootstrap.servers entry the id -2 - N; the raft core
# reads any negative id as "nobody", so ours count down from the top of the int32 range,
# far above any node.id in use.
FIRST_BOOTSTRAP_ID = 2**31 - 2


class MetadataPlaneError(Exception):
    """A node configuration the metadata plane cannot run."""


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def raft_config(config: ServerConfig, cluster_id: str, *, static: bool) -> RaftConfig:
    """The ``controller.quorum.*`` settings of ``config`` as a :class:`RaftConfig`."""
    return RaftConfig(
        election_timeout_ms=int(config.get("controller.quorum.election.timeout.ms")),
        fetch_timeout_ms=int(config.get("controller.quorum.fetch.timeout.ms")),
        election_backoff_max_ms=int(config.get("controller.quorum.election.backoff.max.ms")),
        request_timeout_ms=int(config.get("controller.quorum.request.timeout.ms")),
        retry_backoff_ms=int(config.get("controller.quorum.retry.backoff.ms")),
        append_linger_ms=int(config.get("controller.quorum.append.linger.ms")),
        idle_interval_ms=int(config.get("metadata.max.idle.interval.ms")),
        no_op_record=make_record("NoOpRecord", {}).encode(),
        cluster_id=cluster_id,
        kraft_version=0 if static else 1,
    )


def _controller_listener_name(config: ServerConfig) -> str:
    names = config.controller_listener_names
    return names[0] if names else "CONTROLLER"


@dataclass(frozen=True, slots=True)
class QuorumSetup:
    """Who the voters are and where to reach the quorum before the log says so."""

    voters: VoterSet | None
    endpoints: dict[int, tuple[str, int]]
    bootstrap_ids: tuple[int, ...]
    static: bool


def quorum_setup(config: ServerConfig) -> QuorumSetup:
    name = _controller_listener_name(config)
    static = config.quorum_voters
    if static:
        voters = VoterSet.of(
            VoterNode(ReplicaKey(v.node_id, ZERO_UUID), (Endpoint(name, v.host, v.port),))
            for v in static
        )
        endpoints = {v.node_id: (v.host, v.port) for v in static}
        return QuorumSetup(voters, endpoints, tuple(endpoints), True)
    bootstrap = {
        FIRST_BOOTSTRAP_ID - i: address for i, address in enumerate(config.quorum_bootstrap_servers)
    }
    formatted = read_bootstrap_voters(config.metadata_log_dir)
    return QuorumSetup(formatted, bootstrap, tuple(bootstrap), False)


@dataclass(slots=True)
class ErrorCount:
    """How many times something failed, and the last failure (for metrics and logs)."""

    count: int = 0
    last: str = ""

    def record(self, exc: Exception) -> None:
        self.count += 1
        self.last = repr(exc)


@dataclass(slots=True)
class MetadataPlane:
    config: ServerConfig
    log: Log
    replica: RaftReplica[MetadataRecord]
    driver: RaftDriver[MetadataRecord]
    loader: MetadataLoader
    controller: QuorumController | None
    controller_driver: ControllerDriver | None
    executor: ThreadPoolExecutor
    snapshot_generator: SnapshotGenerator
    snapshot_errors: ErrorCount

    @classmethod
    def open(
        cls,
        config: ServerConfig,
        cluster_id: str,
        *,
        clock_ms: Callable[[], int] = _wall_clock_ms,
        directory_ids: dict[str, str] | None = None,
    ) -> MetadataPlane:
        if not config.process_roles:
            raise MetadataPlaneError("process.roles must contain broker, controller or both")
        setup = quorum_setup(config)
        directory_id = (directory_ids or {}).get(config.metadata_log_dir) or ""
        local_key = ReplicaKey(
            config.node_id, uuid_from_str(directory_id) if directory_id else ZERO_UUID
        )
        bootstrap = read_bootstrap_checkpoint(config.metadata_log_dir)
        if bootstrap is None:
            bootstrap = BootstrapMetadata.from_release_version(None, "the default bootstrap")
        log = open_metadata_log(config, clock_ms)
        replica: RaftReplica[MetadataRecord] = RaftReplica(
            config.node_id,
            local_key.directory_id,
            OffloadedFlushLog(log),
            quorum_state_store(config),
            setup.voters,
            raft_config(config, cluster_id, static=setup.static),
            random.Random(),
            clock_ms,
            decode=decode_record,
            bootstrap_ids=setup.bootstrap_ids,
            snapshots=snapshot_store(config),
        )
        if replica.voters.latest.ids == {config.node_id} and config.is_controller:
            role = replica.quorum.role
            if isinstance(role, Unattached | Resigned):
                role.election_deadline_ms = clock_ms()
        controller = controller_driver = None
        executor = ThreadPoolExecutor(1, thread_name_prefix="metadata-fsync")
        driver: RaftDriver[MetadataRecord] = RaftDriver(
            replica,
            setup.endpoints,
            clock=clock_ms,
            executor=executor,
            listener_name=_controller_listener_name(config),
            client_id=f"raft-{config.node_id}",
            security=controller_security(config),
        )
        if config.is_controller:
            controller = QuorumController(replica, config=config, bootstrap=bootstrap)
            controller_driver = ControllerDriver(
                controller, replica, driver.wakeup, clock_ms=clock_ms
            )
        # Publishes nothing before it replayed up to the raft high watermark (Kafka's loader).
        loader = MetadataLoader(
            cluster_id=cluster_id, high_watermark=lambda: replica.high_watermark
        )
        snapshot_errors = ErrorCount()
        generator = SnapshotGenerator.from_config(
            config,
            raft_snapshot_emitter(replica),
            clock_ms=clock_ms,
            on_error=snapshot_errors.record,
        )
        loader.install_snapshot_generator(generator)
        replica.register_listener(loader)
        return cls(
            config,
            log,
            replica,
            driver,
            loader,
            controller,
            controller_driver,
            executor,
            generator,
            snapshot_errors,
        )

    def start(self) -> None:
        self.driver.start()

    def delete_expired_files(self, now_ms: int) -> None:
        """Remove metadata log segments a snapshot made obsolete, once their delay passed."""
        self.log.delete_expired_files(now_ms)

    @property
    def leader(self) -> LeaderAndEpoch:
        return self.replica.leader_and_epoch

    def controller_address(self, node_id: int) -> tuple[str, int] | None:
        """Where ``node_id``'s controller listener is, as far as this node knows."""
        return self.driver.address_of(node_id)

    async def shutdown(self) -> None:
        """Resign if leading, flush and close the metadata log."""
        await self.driver.shutdown()
        self._close_log()

    async def close(self) -> None:
        await self.driver.close()
        self._close_log()

    def _close_log(self) -> None:
        self.executor.shutdown(wait=True)
        self.log.flush()
        self.log.close()
