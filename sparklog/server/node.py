"""A running node: the metadata plane, the broker and their listeners on one event loop.

Every ``process.roles`` runs the same KRaft code (:mod:`sparklog.server.plane`): a controller
is a voter of the quorum (when the voter set names it) with a QuorumController that is active
only on the raft leader; a broker-only node is an observer that fetches ``__cluster_metadata``
from the leader.

Start-up order (each step needs the one before): check the directories are formatted, open and
recover the partition logs, open the metadata plane, open the controller listener (KRaft RPCs,
broker lifecycle, admin writes) and start the raft driver, install the replica manager as a
metadata publisher (it opens the partitions the image assigns to us), register the broker with
the active controller and wait until it unfences us (caught up with the metadata log), then
open the client listeners. Admin writes a broker receives go to the active controller over the
controller listener (:class:`~sparklog.broker.controller_channel.ControllerClient`).

Every node registers its metrics (:mod:`sparklog.server.node_metrics`, Kafka's names) and, with
``sparklog.metrics.listener=host:port``, serves them over HTTP
(:mod:`sparklog.net.metrics_http`); a controller with ``controller.quorum.auto.join.enable``
adds itself to the voters once caught up (:mod:`sparklog.server.auto_join`).

Shutdown reverses it: a controlled shutdown first (the controller moves our leaderships away),
stop accepting, let in-flight requests finish, flush and checkpoint every log, resign the raft
leadership, write the clean-shutdown markers.

Background duties run as periodic tasks on the loop (:mod:`sparklog.server.duties`): the flush
scheduler (``log.flush.scheduler.interval.ms``), retention
(``log.retention.check.interval.ms``), the log cleaner and the checkpoint of recovery points,
log start offsets and high watermarks.

Faults (:mod:`sparklog.server.faults`, :mod:`sparklog.fault`): every task above is supervised
(an exception escaping one halts the running node, logged with its traceback), the loop logs
any error nothing else retrieved, and a data log dir with an I/O error goes offline as in
Kafka (its partitions answer KAFKA_STORAGE_ERROR; the node halts when no data log dir is left
or the metadata log dir failed). The raft driver halts the node on a metadata log I/O error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from typing import TYPE_CHECKING

from sparklog.broker.alter_partition_sender import AlterPartitionSender
from sparklog.broker.apis import BrokerApis, feature_fields, served_broker_apis
from sparklog.broker.consumer_lag import local_high_watermark, register_consumer_lag
from sparklog.broker.context import BrokerContext
from sparklog.broker.controller_channel import ControllerClient
from sparklog.broker.dir_assignments import DirectoryAssignments
from sparklog.broker.fetch_session import FetchSessionCache
from sparklog.broker.lifecycle import BrokerLifecycleManager
from sparklog.broker.producer_ids import ProducerIdManager
from sparklog.broker.quotas import QuotaManagers, register_quota_metrics
from sparklog.broker.remote_metrics import register_remote_storage_metrics
from sparklog.broker.replica_fetcher import FetcherConfig, ReplicaFetcherManager
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.broker.share_metrics import ShareMetrics
from sparklog.broker.share_partitions import in_flight
from sparklog.broker.topic_metrics import BrokerTopicMetrics
from sparklog.broker.txn_marker_channel import TxnMarkerChannel
from sparklog.broker.txn_markers import write_txn_markers
from sparklog.broker.txn_verification import AddPartitionsToTxnManager
from sparklog.config import ConfigError, ServerConfig, check_formatted
from sparklog.console.routes import Console
from sparklog.controller.apis import ControllerApis, controller_served_apis
from sparklog.coordinator.coordinator import GroupCoordinator
from sparklog.coordinator.share_apis import led_share_groups
from sparklog.coordinator.txn_coordinator import TransactionCoordinator, TxnConfig
from sparklog.fault import FaultHandler, halt, install_loop_handler
from sparklog.metrics import MetricsRegistry
from sparklog.net.connection_quotas import ConnectionQuotas, parse_ip_overrides
from sparklog.net.metrics_http import MetricsListenerError, MetricsServer, start_metrics_server
from sparklog.net.request_metrics import RequestMetrics
from sparklog.net.server import KafkaServer
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.kafka_uuid import uuid_from_str
from sparklog.readservice.server import ReadService, start_read_service
from sparklog.security.authorizer import StandardAuthorizer
from sparklog.security.client_security import controller_security, inter_broker_security
from sparklog.security.listener_runtime import listener_runtime
from sparklog.security.scram import ScramCredential
from sparklog.server.auto_join import AutoJoin, auto_join_enabled
from sparklog.server.duties import NodeDuties, now_ms
from sparklog.server.faults import NodeFaults
from sparklog.server.limits import settle_open_files
from sparklog.server.memory import disable_transparent_huge_pages
from sparklog.server.node_metrics import (
    register_fetch_session_metrics,
    register_node_metrics,
    register_replica_metrics,
)
from sparklog.server.plane import MetadataPlane, MetadataPlaneError
from sparklog.storage.manager import LogManager
from sparklog.storage.meta_properties import MetaPropertiesError
from sparklog.tiering.config import TieringConfig

if TYPE_CHECKING:
    # Imported where tiering is enabled: it pulls in pyarrow and numpy, a quarter of the
    # node's start-up imports, which a node without remote storage never uses.
    from sparklog.broker.remote_log_manager import RemoteLogManager

log = logging.getLogger(__name__)

# How often metadata log segments below a snapshot are looked at for deletion (they go after
# file.delete.delay.ms, as partition segments do).
_METADATA_HOUSEKEEPING_S = 10.0
_CONTROLLED_SHUTDOWN_TIMEOUT_MS = 10_000
_ALLOCATE_PRODUCER_IDS_KEY = 67


class Node:
    def __init__(
        self,
        config: ServerConfig,
        cluster_id: str,
        directory_ids: dict[str, str],
        *,
        fault_handler: FaultHandler = halt,
    ):
        self.config = config
        self.cluster_id = cluster_id
        self.directory_ids = directory_ids
        self.servers: list[KafkaServer] = []
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.log_manager: LogManager | None = None
        self.plane: MetadataPlane | None = None
        self.replica_manager: ReplicaManager | None = None
        self.remote_log_manager: RemoteLogManager | None = None
        self.controller_client: ControllerClient | None = None
        self.lifecycle: BrokerLifecycleManager | None = None
        self.fetchers: ReplicaFetcherManager | None = None
        self.isr_sender: AlterPartitionSender | None = None
        self.marker_channel: TxnMarkerChannel | None = None
        self.txn_verification: AddPartitionsToTxnManager | None = None
        self._lifecycle_stop = asyncio.Event()
        self.read_service: ReadService | None = None
        self.metrics = MetricsRegistry()
        self.request_metrics = RequestMetrics(self.metrics)
        self.metrics_server: MetricsServer | None = None
        self._auto_join_client: ControllerClient | None = None
        self.faults = NodeFaults(
            fault_handler, self._stopping, config.metadata_log_dir, directory_ids
        )
        self.duties = NodeDuties(self._stopping, self.faults)
        self.faults.lifecycle = lambda: self.lifecycle

    async def _allocate_producer_ids(self) -> tuple[int, int]:
        assert self.controller_client is not None and self.lifecycle is not None
        response = await self.controller_client.request(
            _ALLOCATE_PRODUCER_IDS_KEY,
            0,
            {"broker_id": self.config.node_id, "broker_epoch": self.lifecycle.broker_epoch},
        )
        code = ErrorCode(int(response.get("error_code", 0)))
        if code != ErrorCode.NONE:
            raise KafkaApiError(code, f"AllocateProducerIds failed: {code.name}")
        return int(response["producer_id_start"]), int(response["producer_id_len"])

    async def start(self) -> None:
        config = self.config
        log.info("%s", settle_open_files(config))  # before any log is opened
        plane = MetadataPlane.open(config, self.cluster_id, directory_ids=self.directory_ids)
        self.plane = plane
        max_request = int(config.get("socket.request.max.bytes"))
        queued = int(config.get("queued.max.requests"))
        controller_apis = ControllerApis(
            plane.driver.handle_request, plane.controller_driver, self.cluster_id
        )
        # the controller listener authorizes too (CLUSTER_ACTION for the quorum and brokers)
        controller_apis.authorizer = StandardAuthorizer.from_config(
            config, lambda: plane.loader.image.acls.acls
        )
        controller_apis.controllers = plane.driver.cluster_controllers
        controller_apis.features = lambda: feature_fields(plane.loader.image)
        try:  # checked now: a bad value must stop the node before anything runs
            parse_ip_overrides(str(config.get("max.connections.per.ip.overrides")))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        for listener in config.controller_listeners if config.is_controller else ():
            server = KafkaServer(
                listener.name,
                listener.host,
                listener.port,
                controller_served_apis(),
                controller_apis,
                max_request_bytes=max_request,
                max_queued_requests=queued,
                security=listener_runtime(config, listener.name, self._scram_credential),
            )
            server.request_metrics = self.request_metrics
            await server.start()
            self.servers.append(server)
        plane.start()
        self._tasks.append(
            self.duties.spawn(
                _METADATA_HOUSEKEEPING_S, lambda: plane.delete_expired_files(now_ms())
            )
        )
        if plane.controller_driver is not None:
            self._tasks.append(asyncio.create_task(plane.controller_driver.run(self._stopping)))
        await self._start_metrics(plane)
        if auto_join_enabled(config):
            self._start_auto_join(plane)
        if config.is_broker:
            await self._start_broker(plane)
        self.faults.supervise(self._tasks)
        log.info(
            "sparklog node %d started (cluster %s, roles %s), listeners: %s",
            config.node_id,
            self.cluster_id,
            ",".join(sorted(config.process_roles)),
            ", ".join(f"{s.name}://{s.host}:{s.port}" for s in self.servers),
        )

    async def _start_metrics(self, plane: MetadataPlane) -> None:
        """Register the node's metrics; serve them if ``sparklog.metrics.listener`` is set."""
        register_node_metrics(
            self.metrics,
            plane,
            broker_state=self._broker_state if self.config.is_broker else None,
        )
        listener = self.config.get("sparklog.metrics.listener")
        if listener:
            try:
                self.metrics_server = await start_metrics_server(self.metrics, str(listener))
            except (MetricsListenerError, OSError) as exc:
                raise MetadataPlaneError(f"cannot open the metrics listener: {exc}") from exc

    def _start_console(self, plane: MetadataPlane) -> None:
        """Serve the web console on the metrics listener when ``sparklog.console.enable``."""
        if not self.config.get("sparklog.console.enable"):
            return
        if self.metrics_server is None:
            raise MetadataPlaneError(
                "sparklog.console.enable=true needs sparklog.metrics.listener (the console is "
                "served there, at /console)"
            )
        broker_names = {listener.name for listener in self.config.broker_listeners}
        own = next(s for s in self.servers if s.name in broker_names)
        host = own.host if own.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        console = Console(lambda: f"{host}:{own.port}", lambda: plane.loader.image, self.metrics)
        self.metrics_server.pages = console.answer
        log.info("Web console on %s/console", self.metrics_server.url)

    def _start_auto_join(self, plane: MetadataPlane) -> None:
        client = ControllerClient(
            lambda: plane.leader,
            plane.controller_address,
            client_id=f"auto-join-{self.config.node_id}",
            retry_backoff_ms=int(self.config.get("controller.quorum.retry.backoff.ms")) * 5,
            security=controller_security(self.config),
        )
        self._auto_join_client = client
        auto_join = AutoJoin(self.config, plane, self.cluster_id, client.request)
        self._tasks.append(asyncio.create_task(auto_join.run(self._stopping)))

    def _broker_state(self) -> str:
        return self.lifecycle.state if self.lifecycle is not None else "STARTING"

    async def _start_broker(self, plane: MetadataPlane) -> None:
        config = self.config
        default_log_config = config.default_log_config()
        self.log_manager = LogManager(list(config.log_dirs), default_log_config, now_ms)
        # Opening thousands of logs takes seconds: off the loop, so raft and the controller
        # keep running meanwhile (nothing else touches the log manager before it is loaded).
        await asyncio.get_running_loop().run_in_executor(None, self.log_manager.load)
        replica_manager = ReplicaManager(
            config.node_id,
            self.log_manager,
            default_log_config,
            producer_id_expiration_ms=int(config.get("producer.id.expiration.ms")),
            replica_lag_time_max_ms=int(config.get("replica.lag.time.max.ms")),
        )
        replica_manager.set_directory_ids(self._data_dir_ids())
        self.replica_manager = replica_manager
        self.faults.attach(replica_manager)
        controller_client = ControllerClient(
            lambda: plane.leader,
            plane.controller_address,
            client_id=f"broker-{config.node_id}",
            retry_backoff_ms=int(config.get("controller.quorum.retry.backoff.ms")) * 5,
            security=controller_security(config),
        )
        self.controller_client = controller_client
        self._start_replication(plane, replica_manager, controller_client)
        plane.loader.install_publisher(replica_manager)
        # The hot read service (gRPC) publishes the address it bound through the config
        # DescribeConfigs serves (sparklog.readservice documents it).
        self.read_service = await start_read_service(
            config,
            replica_manager,
            lambda: self.remote_log_manager,
            self._scram_credential,
            authorizer=StandardAuthorizer.from_config(config, lambda: plane.loader.image.acls.acls),
        )
        if self.read_service is not None:
            config = self.config = self.read_service.config
        ctx = BrokerContext(
            config=config,
            cluster_id=self.cluster_id,
            replica_manager=replica_manager,
            controller=controller_client.forward,
            image_supplier=lambda: plane.loader.image,
            producer_ids=ProducerIdManager(self._allocate_producer_ids),
            # Kafka's KRaft brokers name a live broker, never a controller, as the controller
            # in Metadata and DescribeCluster: clients send admin requests there and cannot
            # reach controllers (librdkafka waits forever for an unknown controller id).
            controller_id=config.node_id,
        )
        ctx.fetch_sessions = FetchSessionCache(
            int(config.get("max.incremental.fetch.session.cache.slots"))
        )
        register_fetch_session_metrics(self.metrics, ctx.fetch_sessions)
        # authorizer.class.name: ACLs from the image this broker replays (None: allow all)
        ctx.authorizer = StandardAuthorizer.from_config(
            config, lambda: plane.loader.image.acls.acls
        )
        ctx.quotas = QuotaManagers.from_config(config, lambda: plane.loader.image.client_quotas)
        ctx.topic_metrics = BrokerTopicMetrics(self.metrics)
        ctx.share_metrics = ShareMetrics(self.metrics)
        ctx.share_metrics.watch_groups(lambda: [g.state for g in led_share_groups(ctx)])
        ctx.share_metrics.watch_partitions(lambda: in_flight(ctx))
        ctx.groups = GroupCoordinator.from_config(config, ctx.coordinator_runtime)
        register_consumer_lag(
            self.metrics, ctx.groups.committed_offsets, local_high_watermark(replica_manager)
        )
        # Markers go to every partition leader: locally for ours, WriteTxnMarkers for others.
        self.marker_channel = TxnMarkerChannel(
            config.node_id,
            lambda: plane.loader.image,
            lambda markers: write_txn_markers(ctx, markers),
            listener_name=config.inter_broker_listener_name,
            request_timeout_ms=int(config.get("request.timeout.ms")),
            security=inter_broker_security(config),
        )
        ctx.transactions = TransactionCoordinator(
            TxnConfig.from_config(config),
            ctx.coordinator_runtime,
            ctx.producer_ids.next_producer_id,
            self.marker_channel.write,
        )
        # Produce-time checks of transactional batches with their coordinator (KIP-890).
        self.txn_verification = ctx.txn_verification = AddPartitionsToTxnManager(
            config.node_id,
            lambda: plane.loader.image,
            lambda: ctx.transactions,
            listener_name=config.inter_broker_listener_name,
            request_timeout_ms=int(config.get("request.timeout.ms")),
            verification_enabled=bool(config.get("transaction.partition.verification.enable")),
            security=inter_broker_security(config),
        )
        apis = BrokerApis(ctx)
        log_dirs = list(self._data_dir_ids().values())
        self.lifecycle = BrokerLifecycleManager(
            config,
            self.cluster_id,
            controller_client,
            lambda: plane.loader.published_offset,
            log_dirs,
            previous_broker_epoch=self.log_manager.previous_broker_epoch,
        )
        lifecycle_task = asyncio.create_task(self.lifecycle.run(self._lifecycle_stop))
        self._tasks.append(lifecycle_task)
        self.faults.supervise(self._tasks)  # a failure while we wait is reported at once
        await self._wait_unfenced(lifecycle_task)
        max_request = int(config.get("socket.request.max.bytes"))
        queued = int(config.get("queued.max.requests"))
        # one count across the broker listeners: max.connections is broker-wide
        connection_quotas = ConnectionQuotas.from_config(config, config.inter_broker_listener_name)
        connection_quotas.client_quotas = lambda: plane.loader.image.client_quotas
        if ctx.quotas is not None:
            register_quota_metrics(self.metrics, ctx.quotas, connection_quotas)
        for listener in config.broker_listeners:
            server = KafkaServer(
                listener.name,
                listener.host,
                listener.port,
                served_broker_apis(config),
                apis,
                max_request_bytes=max_request,
                max_queued_requests=queued,
                security=listener_runtime(config, listener.name, self._scram_credential),
            )
            server.request_metrics = self.request_metrics
            server.connection_quotas = connection_quotas
            await server.start()
            self.servers.append(server)
        self._start_console(plane)
        self._tasks += self.duties.log_tasks(config, self.log_manager, replica_manager)
        self._tasks += [
            asyncio.create_task(ctx.groups.run(self._stopping)),
            asyncio.create_task(ctx.transactions.run(self._stopping)),
        ]
        tiering = TieringConfig.from_server_config(config)
        if tiering.enabled:
            from sparklog.broker.remote_log_manager import RemoteLogManager

            self.remote_log_manager = RemoteLogManager(
                tiering, config.node_id, self.cluster_id, replica_manager, now_ms
            )
            ctx.remote_fetch = self.remote_log_manager.read
            ctx.remote_offset_for_timestamp = self.remote_log_manager.offset_for_timestamp
            self._tasks.append(
                self.duties.spawn(
                    tiering.task_interval_ms / 1000.0,
                    self.remote_log_manager.run_once,
                    immediately=True,
                )
            )
            log.info("Tiered storage enabled: %s", tiering.storage_url)
            rlm = self.remote_log_manager
            if self.fetchers is not None:  # KIP-405: followers rebuild from the store
                self.fetchers.tier_reader = rlm.read_remote_log_aux_state
            register_remote_storage_metrics(
                self.metrics, rlm.metrics, rlm.total_copy_lag, rlm.total_remote_size
            )

    def _start_replication(
        self,
        plane: MetadataPlane,
        replica_manager: ReplicaManager,
        controller_client: ControllerClient,
    ) -> None:
        """Replica fetchers, the AlterPartition sender and the ISR expiration task; wired
        before the replica manager sees its first image, so no leadership change is missed."""
        config = self.config

        def broker_epoch() -> int:
            return self.lifecycle.broker_epoch if self.lifecycle is not None else -1

        replica_manager.broker_epoch = broker_epoch
        fetchers = ReplicaFetcherManager(
            replica_manager,
            lambda: plane.loader.image,
            broker_epoch,
            FetcherConfig(
                fetch_max_bytes=int(config.get("replica.fetch.max.bytes")),
                response_max_bytes=int(config.get("replica.fetch.response.max.bytes")),
                wait_max_ms=int(config.get("replica.fetch.wait.max.ms")),
                min_bytes=int(config.get("replica.fetch.min.bytes")),
                backoff_ms=int(config.get("replica.fetch.backoff.ms")),
                num_fetchers=max(int(config.get("num.replica.fetchers")), 1),
                listener_name=config.inter_broker_listener_name,
                request_timeout_ms=int(config.get("replica.socket.timeout.ms")),
                remote_log_storage_enabled=bool(config.get("remote.log.storage.system.enable")),
                security=inter_broker_security(config),
            ),
        )
        self.fetchers = fetchers
        replica_manager.follower_listener = fetchers.update
        sender = AlterPartitionSender(
            replica_manager,
            controller_client.request,
            broker_epoch,
            retry_backoff_ms=int(config.get("controller.quorum.retry.backoff.ms")),
        )
        self.isr_sender = sender
        replica_manager.isr_sender = sender.submit
        # KIP-858: where each replica's log is, for the controller (AssignReplicasToDirs).
        assignments = DirectoryAssignments(
            config.node_id,
            controller_client.request,
            broker_epoch,
            lambda: plane.loader.image,
            retry_backoff_ms=int(config.get("controller.quorum.retry.backoff.ms")),
        )
        replica_manager.dir_assigner = assignments.submit
        register_replica_metrics(self.metrics, replica_manager, fetchers)
        lag_ms = int(config.get("replica.lag.time.max.ms"))
        self._tasks += [
            asyncio.create_task(sender.run(self._stopping)),
            asyncio.create_task(assignments.run(self._stopping)),
            # Kafka's isr-expiration task runs every replica.lag.time.max.ms / 2.
            self.duties.spawn(lag_ms / 2000.0, replica_manager.maybe_shrink_isr),
        ]

    def _data_dir_ids(self) -> dict[str, bytes]:
        """The data log dirs' ids (``log.dirs``; as Kafka, a separate metadata log dir is not
        one: its failure halts the node), registered with the controller (KIP-858)."""
        data_dirs = {os.path.abspath(d) for d in self.config.log_dirs}
        return {
            d: uuid_from_str(i)
            for d, i in self.directory_ids.items()
            if i and os.path.abspath(d) in data_dirs
        }

    async def _wait_unfenced(self, lifecycle_task: asyncio.Task[None]) -> None:
        """Block start-up until the controller unfences this broker (Kafka does the same)."""
        assert self.lifecycle is not None
        waited_s = 0.0
        while not self.lifecycle.unfenced.is_set():
            if lifecycle_task.done() or self._stopping.is_set():
                raise MetadataPlaneError("the broker stopped before it was unfenced")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.lifecycle.unfenced.wait(), 1.0)
            waited_s += 1.0
            if waited_s % 10 == 0 and not self.lifecycle.unfenced.is_set():
                log.info(
                    "Broker %d still waiting to be unfenced (state %s, controller %d)",
                    self.config.node_id,
                    self.lifecycle.state,
                    self.plane.leader.leader_id if self.plane else -1,
                )

    def _scram_credential(self, mechanism: str, user: str) -> ScramCredential | None:
        """A SCRAM user's credential from the latest metadata image (SASL listeners)."""
        plane = self.plane
        return plane.loader.image.scram.get(mechanism, user) if plane is not None else None

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        install_loop_handler(loop)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        await self.start()
        await self._stopping.wait()
        await self.shutdown()

    async def shutdown(self) -> None:
        self._stopping.set()  # the tasks cancelled below are not faults
        log.info("Shutting down node %d", self.config.node_id)
        if self.lifecycle is not None and self.lifecycle.unfenced.is_set():
            done = await self.lifecycle.controlled_shutdown(_CONTROLLED_SHUTDOWN_TIMEOUT_MS)
            log.info("Controlled shutdown %s", "completed" if done else "timed out")
        self._lifecycle_stop.set()
        for server in self.servers:
            await server.close()
        if self.read_service is not None:
            await self.read_service.stop()
        if self.metrics_server is not None:
            await self.metrics_server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.fetchers is not None:
            await self.fetchers.close()
        if self.marker_channel is not None:
            await self.marker_channel.close()
        if self.txn_verification is not None:
            await self.txn_verification.close()
        if self.remote_log_manager is not None:
            self.remote_log_manager.close()
        if self.replica_manager is not None:
            self.replica_manager.close()
        # A pass being written finishes first (its files are swept at the next start, never
        # installed), so no segment it reads is closed under it.
        self.duties.close()
        if self.log_manager is not None:
            # Every log is flushed: the next registration may claim a clean restart (Kafka).
            epoch = self.lifecycle.broker_epoch if self.lifecycle is not None else -1
            self.log_manager.shutdown(broker_epoch=epoch)
        for client in (self.controller_client, self._auto_join_client):
            if client is not None:
                await client.close()
        if self.plane is not None:
            await self.plane.shutdown()
        log.info("Node %d shut down cleanly", self.config.node_id)


def run_node(config: ServerConfig, config_path: str = "server.properties") -> int:
    try:
        cluster_id, directory_ids = check_formatted(config, config_path)
    except MetaPropertiesError as exc:
        log.error("%s", exc)
        return 1
    disable_transparent_huge_pages()
    node = Node(config, cluster_id, directory_ids)
    try:
        asyncio.run(node.run())
    except MetadataPlaneError as exc:
        log.error("%s", exc)
        return 1
    return 0


__all__ = ["Node", "run_node"]
