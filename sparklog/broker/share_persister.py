"""A broker's side of share-state persistence (Kafka's Persister): a share-partition leader
reads its state when it starts leading and writes it after every change a client was promised
(acknowledgements, releases); the group coordinator reads summaries, initializes (offset
resets) and deletes state for the share-group offset APIs.

Contract:
- Each call goes to the share coordinator of the share-partition, the leader of its
  ``__share_group_state`` partition in the current image: in-process when that is this broker,
  else Read/Write/Initialize/DeleteShareGroupState or ReadShareGroupStateSummary v0 over the
  inter-broker listener (one pipelined connection per broker).
- What a retry may cure (no coordinator yet, a coordinator that moved or is loading, a lost
  connection, too few in-sync replicas) is retried with backoff until
  ``share.coordinator.write.timeout.ms`` passes; then the last code is returned.
- ``__share_group_state`` is created on first use.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sparklog.broker.context import BrokerContext
from sparklog.coordinator.share_state_apis import (
    SHARE_STATE_TOPIC,
    coordinator,
    ensure_state_topic,
    state_partition,
)
from sparklog.net.client import KafkaClientConnection
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.messages.delete_share_group_state import DELETE_SHARE_GROUP_STATE
from sparklog.protocol.messages.initialize_share_group_state import (
    INITIALIZE_SHARE_GROUP_STATE,
)
from sparklog.protocol.messages.read_share_group_state import READ_SHARE_GROUP_STATE
from sparklog.protocol.messages.read_share_group_state_summary import (
    READ_SHARE_GROUP_STATE_SUMMARY,
)
from sparklog.protocol.messages.write_share_group_state import WRITE_SHARE_GROUP_STATE
from sparklog.protocol.schema import Api
from sparklog.security.client_security import inter_broker_security
from sparklog.share.state_store import Batch, ShareState

log = logging.getLogger(__name__)

RETRIABLE = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)
_APIS: dict[str, Api] = {
    "read": READ_SHARE_GROUP_STATE,
    "write": WRITE_SHARE_GROUP_STATE,
    "summary": READ_SHARE_GROUP_STATE_SUMMARY,
    "initialize": INITIALIZE_SHARE_GROUP_STATE,
    "delete": DELETE_SHARE_GROUP_STATE,
}
_BACKOFF_S = 0.1
_MAX_BACKOFF_S = 1.0


class SharePersister:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._connections: dict[int, tuple[tuple[str, int], KafkaClientConnection]] = {}

    async def read(
        self, group_id: str, topic_id: bytes, partition: int, leader_epoch: int
    ) -> tuple[ErrorCode, ShareState | None]:
        return await self.call(group_id, topic_id, partition, "read", leader_epoch=leader_epoch)

    async def write(
        self,
        group_id: str,
        topic_id: bytes,
        partition: int,
        *,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[Batch, ...],
    ) -> ErrorCode:
        code, _ = await self.call(
            group_id,
            topic_id,
            partition,
            "write",
            state_epoch=state_epoch,
            leader_epoch=leader_epoch,
            start_offset=start_offset,
            batches=batches,
        )
        return code

    async def call(
        self, group_id: str, topic_id: bytes, partition: int, op: str, **args: Any
    ) -> tuple[ErrorCode, ShareState | None]:
        loop = asyncio.get_running_loop()
        deadline = (
            loop.time() + int(self.ctx.config.get("share.coordinator.write.timeout.ms")) / 1000
        )
        backoff = _BACKOFF_S
        while True:
            code, state = await self._once(group_id, topic_id, partition, op, args)
            if code not in RETRIABLE or loop.time() + backoff > deadline:
                if code != ErrorCode.NONE:
                    log.warning(
                        "Share state %s of %s/%d failed: %s", op, group_id, partition, code.name
                    )
                return code, state
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF_S)

    async def _once(
        self, group_id: str, topic_id: bytes, partition: int, op: str, args: dict[str, Any]
    ) -> tuple[ErrorCode, ShareState | None]:
        image = self.ctx.image
        topic = image.topics.by_name.get(SHARE_STATE_TOPIC)
        if topic is None:
            await ensure_state_topic(self.ctx)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        index = state_partition(self.ctx, group_id, topic_id, partition)
        registration = topic.partitions.get(index)
        if registration is None or registration.leader < 0:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        if registration.leader == self.ctx.node_id:
            return await coordinator(self.ctx).run(group_id, topic_id, partition, op, **args)
        connection = self._connection(registration.leader)
        if connection is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        api: Api = _APIS[op]
        part: dict[str, Any] = {"partition": partition}
        if op in ("read", "summary", "write"):
            part["leader_epoch"] = args.get("leader_epoch", -1)
        if op in ("write", "initialize"):
            part.update(state_epoch=args["state_epoch"], start_offset=args["start_offset"])
        if op == "write":
            part["state_batches"] = [
                {"first_offset": f, "last_offset": last, "delivery_state": s, "delivery_count": c}
                for f, last, s, c in args["batches"]
            ]
        body = {"group_id": group_id, "topics": [{"topic_id": topic_id, "partitions": [part]}]}
        try:
            response = await connection.request(api, 0, body)
        except TimeoutError:
            return ErrorCode.REQUEST_TIMED_OUT, None
        except (ConnectionError, OSError):
            return ErrorCode.NETWORK_EXCEPTION, None
        answer = response["results"][0]["partitions"][0]
        code = ErrorCode(answer["error_code"])
        if op not in ("read", "summary") or code != ErrorCode.NONE or answer["state_epoch"] < 0:
            return code, None
        batches = tuple(
            (b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
            for b in answer.get("state_batches", ())
        )
        epoch = args.get("leader_epoch", -1)
        return code, ShareState(answer["state_epoch"], epoch, answer["start_offset"], batches)

    def _connection(self, broker_id: int) -> KafkaClientConnection | None:
        registration = self.ctx.image.cluster.broker(broker_id)
        endpoint = (
            registration.endpoint(self.ctx.config.inter_broker_listener_name)
            if registration
            else None
        )
        if endpoint is None:
            return None
        address = (endpoint.host, endpoint.port)
        found = self._connections.get(broker_id)
        if found is not None and found[0] == address:
            return found[1]
        if found is not None:
            asyncio.get_running_loop().create_task(found[1].close())
        connection = KafkaClientConnection(
            address[0],
            address[1],
            client_id=f"broker-{self.ctx.node_id}-share-persister",
            request_timeout_ms=int(self.ctx.config.get("request.timeout.ms")),
            security=inter_broker_security(self.ctx.config),
        )
        self._connections[broker_id] = (address, connection)
        return connection
