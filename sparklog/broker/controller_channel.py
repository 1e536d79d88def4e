"""ControllerClient: a broker's channel to the active controller, over the controller listener.

Used for everything a broker asks of the controller (Kafka's ``NodeToControllerChannelManager``):
BrokerRegistration and BrokerHeartbeat from the lifecycle manager, AllocateProducerIds, and the
admin requests a broker forwards (CreateTopics, DeleteTopics, CreatePartitions,
IncrementalAlterConfigs, DescribeQuorum, Add/RemoveRaftVoter) — forwarded as the same request,
so the controller answers exactly what it would answer a client of its own listener.

Contract:
- The target is the current KRaft leader, as this node's raft replica knows it (voter or
  observer), at the address its driver knows (configured, voter set, or learned from Fetch).
- A NOT_CONTROLLER / NOT_LEADER_OR_FOLLOWER answer (anywhere a client would look: top level,
  per topic, per resource), a refused or broken connection, or no known leader is retried
  after ``retry_backoff_ms`` until ``timeout_ms``; the leader is re-read before every try.
- On timeout the caller gets the last answer, or REQUEST_TIMED_OUT in the shape a client
  expects (:func:`~sparklog.controller.apis.error_body`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from sparklog.controller.apis import error_body
from sparklog.net.client import KafkaClientConnection
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.messages import API_BY_KEY
from sparklog.raft.client import LeaderAndEpoch
from sparklog.security.client_security import ClientSecurity

log = logging.getLogger(__name__)

_RETRY_CODES = frozenset({int(ErrorCode.NOT_CONTROLLER), int(ErrorCode.NOT_LEADER_OR_FOLLOWER)})
OPERATION_API_KEYS = {
    "create_topics": 19,
    "delete_topics": 20,
    "create_partitions": 37,
    "elect_leaders": 43,
    "incremental_alter_configs": 44,
    "alter_configs": 33,
    "alter_partition_reassignments": 45,
    "list_partition_reassignments": 46,
    "create_acls": 30,
    "delete_acls": 31,
    "alter_client_quotas": 49,
    "alter_user_scram_credentials": 51,
    "describe_quorum": 55,
    "update_features": 57,
    "add_raft_voter": 80,
    "remove_raft_voter": 81,
}


def needs_retry(body: Mapping[str, Any]) -> bool:
    """True if the controller said it is not (or no longer) the one to ask."""
    if int(body.get("error_code", 0)) in _RETRY_CODES:
        return True
    for value in body.values():
        if isinstance(value, list):
            for item in value:
                if isinstance(item, Mapping) and int(item.get("error_code", 0)) in _RETRY_CODES:
                    return True
    return False


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class ControllerClient:
    def __init__(
        self,
        leader: Callable[[], LeaderAndEpoch],
        address_of: Callable[[int], tuple[str, int] | None],
        *,
        client_id: str,
        timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        security: ClientSecurity | None = None,
    ) -> None:
        self._leader = leader
        self._security = security
        self._address_of = address_of
        self.client_id = client_id
        self.timeout_ms = timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self._connections: dict[tuple[str, int], KafkaClientConnection] = {}
        self._closed = False

    def _connection(self, address: tuple[str, int]) -> KafkaClientConnection:
        connection = self._connections.get(address)
        if connection is None:
            connection = KafkaClientConnection(
                address[0],
                address[1],
                client_id=self.client_id,
                request_timeout_ms=self.timeout_ms,
                reconnect_backoff_ms=self.retry_backoff_ms,
                security=self._security,
            )
            self._connections[address] = connection
        return connection

    async def request(
        self,
        api_key: int,
        version: int,
        body: Mapping[str, Any],
        *,
        timeout_ms: int | None = None,
    ) -> dict[str, Any]:
        """Send ``body`` to the active controller, retrying as the module contract says."""
        api = API_BY_KEY[api_key]
        deadline = _now_ms() + (self.timeout_ms if timeout_ms is None else timeout_ms)
        last: dict[str, Any] | None = None
        while not self._closed:
            remaining = deadline - _now_ms()
            if remaining <= 0:
                break
            leader_id = self._leader().leader_id
            address = self._address_of(leader_id) if leader_id >= 0 else None
            if address is not None:
                connection = self._connection(address)
                try:
                    response = await connection.request(
                        api, version, body, timeout_ms=max(remaining, 1)
                    )
                except (ConnectionError, TimeoutError, OSError) as exc:
                    log.debug("%s to controller %d failed: %s", api.name, leader_id, exc)
                    self._connections.pop(address, None)
                    with contextlib.suppress(Exception):
                        await connection.close()
                else:
                    if not needs_retry(response):
                        return response
                    last = response
            await asyncio.sleep(min(self.retry_backoff_ms, max(remaining, 0)) / 1000)
        if last is not None:
            return last
        return dict(
            error_body(
                api_key, body, ErrorCode.REQUEST_TIMED_OUT, "No active controller answered in time."
            )
        )

    async def forward(self, operation: str, body: dict[str, Any], version: int) -> dict[str, Any]:
        """A broker's ``ControllerChannel``: forward an admin operation by name."""
        return await self.request(OPERATION_API_KEYS[operation], version, body)

    async def close(self) -> None:
        self._closed = True
        connections, self._connections = self._connections, {}
        await asyncio.gather(*(c.close() for c in connections.values()), return_exceptions=True)
