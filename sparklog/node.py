"""A running node: the metadata plane, the broker and their listeners on one event loop.

Start-up order (each step needs the one before): check the directories are formatted, open and
recover the partition logs, start the metadata plane (replays ``__cluster_metadata`` and
registers this broker), install the replica manager as a metadata publisher (it opens the
partitions the image assigns to us), then open the listeners. Shutdown reverses it: stop
accepting, let in-flight requests finish, flush and checkpoint every log, write the
clean-shutdown markers.

Background duties run as periodic tasks on the loop: the flush scheduler
(``log.flush.scheduler.interval.ms``), retention (``log.retention.check.interval.ms``) and the
checkpoint of recovery points, log start offsets and high watermarks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

from sparklog.broker.apis import SERVED, BrokerApis
from sparklog.broker.context import BrokerContext
from sparklog.broker.producer_ids import ProducerIdManager
from sparklog.broker.remote_log_manager import RemoteLogManager
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.cli.storage_tool import StorageToolError, check_formatted
from sparklog.config import ServerConfig
from sparklog.controller.metadata_plane import MetadataPlane, MetadataPlaneError
from sparklog.controller.result import ControllerResult
from sparklog.coordinator.coordinator import GroupCoordinator
from sparklog.net.server import Connection, KafkaServer
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import Request
from sparklog.protocol.messages import apis_for_listener
from sparklog.storage.manager import LogManager
from sparklog.tiering.config import TieringConfig

log = logging.getLogger(__name__)

_CHECKPOINT_INTERVAL_S = 5.0
# ApiVersions, CreateTopics, DeleteTopics, DescribeConfigs, CreatePartitions,
# IncrementalAlterConfigs.
CONTROLLER_LISTENER_APIS = frozenset({18, 19, 20, 32, 37, 44})


def _now_ms() -> int:
    return int(time.time() * 1000)


class Node:
    def __init__(self, config: ServerConfig, cluster_id: str, directory_ids: dict[str, str]):
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

    async def _controller_call(
        self, operation: str, body: dict[str, Any], version: int
    ) -> dict[str, Any]:
        plane = self.plane
        assert plane is not None
        controller = plane.controller
        method: Callable[[dict[str, Any], int], ControllerResult[Any]] = getattr(
            controller, operation
        )
        response: dict[str, Any] = controller.run(lambda: method(body, version))
        return response

    async def _allocate_producer_ids(self) -> tuple[int, int]:
        plane = self.plane
        assert plane is not None
        controller = plane.controller
        block: tuple[int, int] = controller.run(
            lambda: controller.allocate_producer_ids(self.config.node_id, plane.broker_epoch)
        )
        return block

    async def start(self) -> None:
        config = self.config
        default_log_config = config.default_log_config()
        self.log_manager = LogManager(list(config.log_dirs), default_log_config, _now_ms)
        self.log_manager.load()
        self.plane = MetadataPlane.start(config, self.cluster_id, directory_ids=self.directory_ids)
        replica_manager = ReplicaManager(
            config.node_id,
            self.log_manager,
            default_log_config,
            producer_id_expiration_ms=int(config.get("producer.id.expiration.ms")),
        )
        self.replica_manager = replica_manager
        self.plane.loader.install_publisher(replica_manager)
        plane = self.plane
        ctx = BrokerContext(
            config=config,
            cluster_id=self.cluster_id,
            replica_manager=replica_manager,
            controller=self._controller_call,
            image_supplier=lambda: plane.loader.image,
            producer_ids=ProducerIdManager(self._allocate_producer_ids),
            controller_id=config.node_id,
        )
        ctx.groups = GroupCoordinator.from_config(config, replica_manager)
        apis = BrokerApis(ctx)
        max_request = int(config.get("socket.request.max.bytes"))
        queued = int(config.get("queued.max.requests"))
        for listener in config.broker_listeners:
            server = KafkaServer(
                listener.name,
                listener.host,
                listener.port,
                SERVED,
                apis,
                max_request_bytes=max_request,
                max_queued_requests=queued,
            )
            await server.start()
            self.servers.append(server)
        # The controller listener answers what Kafka's controllers answer and we implement:
        # version negotiation and the admin APIs. Raft Fetch arrives with the KRaft quorum.
        controller_apis = apis_for_listener("controller")
        controller_served = {
            k: a
            for k, a in SERVED.items()
            if k in controller_apis and k in CONTROLLER_LISTENER_APIS
        }

        async def controller_handler(request: Request, conn: Connection) -> dict[str, Any] | None:
            return await apis(request, conn)

        for listener in config.controller_listeners:
            server = KafkaServer(
                listener.name,
                listener.host,
                listener.port,
                controller_served,
                controller_handler,
                max_request_bytes=max_request,
                max_queued_requests=queued,
            )
            await server.start()
            self.servers.append(server)
        self._tasks = [
            asyncio.create_task(
                self._every(
                    int(config.get("log.flush.scheduler.interval.ms")) / 1000.0, self._flush
                )
            ),
            asyncio.create_task(
                self._every(
                    int(config.get("log.retention.check.interval.ms")) / 1000.0, self._retention
                )
            ),
            asyncio.create_task(self._every(_CHECKPOINT_INTERVAL_S, self._checkpoint)),
            asyncio.create_task(ctx.groups.run(self._stopping)),
        ]
        tiering = TieringConfig.from_server_config(config)
        if tiering.enabled:
            self.remote_log_manager = RemoteLogManager(
                tiering, config.node_id, self.cluster_id, replica_manager, _now_ms
            )
            ctx.remote_fetch = self.remote_log_manager.fetch
            ctx.remote_offset_for_timestamp = self.remote_log_manager.offset_for_timestamp
            self._tasks.append(
                asyncio.create_task(
                    self._every(
                        tiering.task_interval_ms / 1000.0,
                        self.remote_log_manager.run_once,
                        immediately=True,
                    )
                )
            )
            log.info("Tiered storage enabled: %s", tiering.storage_url)
        log.info(
            "sparklog node %d started (cluster %s), listeners: %s",
            config.node_id,
            self.cluster_id,
            ", ".join(f"{s.name}://{s.host}:{s.port}" for s in self.servers),
        )

    async def _every(
        self,
        interval_s: float,
        duty: Callable[[], Awaitable[None] | None],
        *,
        immediately: bool = False,
    ) -> None:
        interval_s = max(interval_s, 0.05)
        wait_s = 0.0 if immediately else interval_s
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), wait_s)
            wait_s = interval_s
            if self._stopping.is_set():
                return
            try:
                outcome = duty()
                if outcome is not None:
                    await outcome
            except Exception:
                log.exception("background duty %s failed", duty.__name__)

    async def _flush(self) -> None:
        assert self.replica_manager is not None
        await self.replica_manager.flush_due(_now_ms())

    def _retention(self) -> None:
        assert self.log_manager is not None
        deleted = self.log_manager.retention_pass(_now_ms())
        if deleted:
            log.info("Retention deleted %d segment(s)", deleted)

    def _checkpoint(self) -> None:
        assert self.log_manager is not None
        self.log_manager.checkpoint()

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        await self.start()
        await self._stopping.wait()
        await self.shutdown()

    async def shutdown(self) -> None:
        log.info("Shutting down node %d", self.config.node_id)
        for server in self.servers:
            await server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.remote_log_manager is not None:
            self.remote_log_manager.close()
        if self.replica_manager is not None:
            self.replica_manager.close()
        if self.log_manager is not None:
            self.log_manager.shutdown()
        if self.plane is not None:
            self.plane.close()
        log.info("Node %d shut down cleanly", self.config.node_id)


def run_node(config: ServerConfig, config_path: str = "server.properties") -> int:
    try:
        cluster_id, directory_ids = check_formatted(config, config_path)
    except StorageToolError as exc:
        log.error("%s", exc)
        return 1
    node = Node(config, cluster_id, directory_ids)
    try:
        asyncio.run(node.run())
    except MetadataPlaneError as exc:
        log.error("%s", exc)
        return 1
    return 0


__all__ = ["ErrorCode", "Node", "run_node"]
