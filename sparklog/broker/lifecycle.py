"""BrokerLifecycleManager: registration, heartbeats and controlled shutdown (KIP-631).

The broker side of the lease the controller keeps (see :mod:`sparklog.controller.brokers`):

- STARTING: send BrokerRegistration (a fresh incarnation id per process, the advertised
  client listeners, rack, supported ``metadata.version`` range, log directory ids) until the
  active controller answers with a broker epoch; errors other than "no controller yet" are
  logged and retried.
- RECOVERY: heartbeat quickly (every ``_FAST_HEARTBEAT_MS``), reporting the offset up to which
  this broker has replayed the metadata log, until the controller unfences it;
  :attr:`unfenced` is then set and the broker may serve.
- RUNNING: heartbeat every ``broker.heartbeat.interval.ms``; a STALE_BROKER_EPOCH or
  BROKER_ID_NOT_REGISTERED answer (the controller lost or replaced our registration) means
  registering again.
- PENDING_CONTROLLED_SHUTDOWN: :meth:`controlled_shutdown` makes heartbeats carry
  ``want_shut_down``; the controller moves our leaderships away and finally answers
  ``should_shut_down``, which completes the shutdown (SHUTTING_DOWN).
- Every heartbeat carries the ids of the log dirs that failed (``offline_log_dirs``, KIP-858;
  :meth:`report_offline_dir` sends one at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Sequence
from typing import cast

from sparklog.broker.controller_channel import ControllerClient
from sparklog.config import ServerConfig
from sparklog.metadata.bootstrap import BOOTSTRAP_FEATURES
from sparklog.metadata.bootstrap import SUPPORTED_METADATA_VERSIONS as SUPPORTED_METADATA_VERSIONS
from sparklog.metadata.image import METADATA_VERSION_FEATURE
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.kafka_uuid import random_uuid_bytes
from sparklog.protocol.message_types import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationRequestListeners,
    BrokerRegistrationResponse,
)

log = logging.getLogger(__name__)

SECURITY_PROTOCOL_CODES = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
BROKER_REGISTRATION_KEY = 62
BROKER_HEARTBEAT_KEY = 63
_FAST_HEARTBEAT_MS = 50
_REGISTER_AGAIN = frozenset(
    {int(ErrorCode.STALE_BROKER_EPOCH), int(ErrorCode.BROKER_ID_NOT_REGISTERED)}
)


def registration_listeners(config: ServerConfig) -> list[BrokerRegistrationRequestListeners]:
    """The advertised client listeners, as BrokerRegistration carries them."""
    return [
        {
            "name": listener.name,
            # Kafka advertises the canonical host name for a listener bound to all
            # interfaces; an empty host is useless to a client.
            "host": listener.host or socket.gethostname(),
            "port": listener.port,
            "security_protocol": SECURITY_PROTOCOL_CODES[listener.security_protocol],
        }
        for listener in config.advertised_listeners
        if listener.name not in config.controller_listener_names
    ]


class BrokerLifecycleManager:
    def __init__(
        self,
        config: ServerConfig,
        cluster_id: str,
        client: ControllerClient,
        metadata_offset: Callable[[], int],
        log_dirs: Sequence[bytes] = (),
        previous_broker_epoch: int = -1,
    ) -> None:
        self.config = config
        self.cluster_id = cluster_id
        self.client = client
        self.metadata_offset = metadata_offset
        self.log_dirs = list(log_dirs)
        # Ids of log dirs that failed (KIP-858), sent in every heartbeat from then on.
        self.offline_log_dirs: list[bytes] = []
        self.incarnation_id = random_uuid_bytes()
        self.broker_epoch = -1
        # From the last clean shutdown (the logs' marker); -1 after a crash.
        self.previous_broker_epoch = previous_broker_epoch
        self.state = "STARTING"
        self.unfenced = asyncio.Event()
        self.shut_down = asyncio.Event()
        self._want_shut_down = False
        self._poke = asyncio.Event()
        self.interval_ms = int(config.get("broker.heartbeat.interval.ms"))
        self.session_timeout_ms = int(config.get("broker.session.timeout.ms"))

    def _registration(self) -> BrokerRegistrationRequest:
        # Every feature this broker implements, so UpdateFeatures can check the cluster's
        # brokers support a new level (as Kafka's BrokerRegistrationRequest carries them).
        supported = {METADATA_VERSION_FEATURE: SUPPORTED_METADATA_VERSIONS, **BOOTSTRAP_FEATURES}
        return {
            "broker_id": self.config.node_id,
            "cluster_id": self.cluster_id,
            "incarnation_id": self.incarnation_id,
            "listeners": registration_listeners(self.config),
            "features": [
                {"name": name, "min_supported_version": low, "max_supported_version": high}
                for name, (low, high) in sorted(supported.items())
            ],
            "rack": self.config.get("broker.rack"),
            "is_migrating_zk_broker": False,
            "log_dirs": self.log_dirs,
            "previous_broker_epoch": self.previous_broker_epoch,
        }

    async def _register(self, stopping: asyncio.Event) -> bool:
        while not stopping.is_set():
            answer = await self.client.request(
                BROKER_REGISTRATION_KEY, 3, self._registration(), timeout_ms=self.interval_ms
            )
            response = cast("BrokerRegistrationResponse", answer)
            code = int(response.get("error_code", 0))
            if code == 0:
                self.broker_epoch = int(response["broker_epoch"])
                self.state = "RECOVERY"
                log.info(
                    "Broker %d registered with epoch %d", self.config.node_id, self.broker_epoch
                )
                return True
            if code not in (int(ErrorCode.REQUEST_TIMED_OUT), int(ErrorCode.NOT_CONTROLLER)):
                log.warning(
                    "Broker %d registration failed: %s", self.config.node_id, ErrorCode(code).name
                )
            await self._sleep(stopping, self.interval_ms // 4)
        return False

    async def run(self, stopping: asyncio.Event) -> None:
        """Register, then heartbeat until stopped or shut down by the controller."""
        if not await self._register(stopping):
            return
        while not stopping.is_set():
            body: BrokerHeartbeatRequest = {
                "broker_id": self.config.node_id,
                "broker_epoch": self.broker_epoch,
                "current_metadata_offset": self.metadata_offset(),
                "want_fence": False,
                "want_shut_down": self._want_shut_down,
                "offline_log_dirs": list(self.offline_log_dirs),
            }
            answer = await self.client.request(
                BROKER_HEARTBEAT_KEY, 1, body, timeout_ms=self.session_timeout_ms // 2
            )
            response = cast("BrokerHeartbeatResponse", answer)
            code = int(response.get("error_code", 0))
            if code in _REGISTER_AGAIN:
                log.warning("Broker %d must register again (%s)", self.config.node_id, code)
                self.state = "STARTING"
                if not await self._register(stopping):
                    return
                continue
            if code == 0:
                self._on_heartbeat(response)
                if self.shut_down.is_set():
                    return
            fast = self.state in ("RECOVERY", "PENDING_CONTROLLED_SHUTDOWN")
            await self._sleep(stopping, _FAST_HEARTBEAT_MS if fast else self.interval_ms)

    def _on_heartbeat(self, response: BrokerHeartbeatResponse) -> None:
        if response.get("should_shut_down"):
            self.state = "SHUTTING_DOWN"
            self.shut_down.set()
        elif self._want_shut_down:
            self.state = "PENDING_CONTROLLED_SHUTDOWN"
        elif not response.get("is_fenced", True):
            if self.state != "RUNNING":
                log.info("Broker %d is unfenced", self.config.node_id)
            self.state = "RUNNING"
            self.unfenced.set()
        elif self.state == "RUNNING":
            log.warning("Broker %d was fenced by the controller", self.config.node_id)
            self.state = "RECOVERY"
            self.unfenced.clear()

    def report_offline_dir(self, directory_id: bytes) -> None:
        """A log dir failed: tell the controller in the next heartbeat (sent at once)."""
        if directory_id not in self.offline_log_dirs:
            self.offline_log_dirs.append(directory_id)
            self._poke.set()

    async def _sleep(self, stopping: asyncio.Event, ms: int) -> None:
        self._poke.clear()
        waiters = [asyncio.ensure_future(stopping.wait()), asyncio.ensure_future(self._poke.wait())]
        try:
            await asyncio.wait(waiters, timeout=ms / 1000, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    async def controlled_shutdown(self, timeout_ms: int) -> bool:
        """Ask the controller to move our leaderships away; True once it let us go."""
        if self.broker_epoch < 0:
            return False
        self._want_shut_down = True
        self._poke.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.shut_down.wait(), timeout_ms / 1000)
        return self.shut_down.is_set()
