"""A broker's side of share-state persistence (Kafka's Persister): a share-partition leader
reads its state when it starts leading and writes it after every change a client was promised
(acknowledgements, releases); the group coordinator reads summaries, initializes (offset
resets) and deletes state for the share-group offset APIs.

Contract:
- Each call goes to the share coordinator of the share-partition, the leader of its
  ``__share_group_state`` partition in the current image: in-process when that is this broker,
  else Read/Write/Initialize/DeleteShareGroupState or ReadShareGroupStateSummary over the
  inter-broker listener (one pipelined connection per broker), each at the newest version both
  brokers speak (ApiVersions once per connection, as Kafka's NetworkClient negotiates; an API
  the peer does not list goes at version 0): WriteShareGroupState v1 carries the
  share-partition's delivery complete count and ReadShareGroupStateSummary v1 answers it
  (KIP-1226), the others have only version 0 in Kafka 4.2.
- What a retry may cure (no coordinator yet, a coordinator that moved or is loading, a lost
  connection, too few in-sync replicas) is retried with backoff until
  ``share.coordinator.write.timeout.ms`` passes; then the last code is returned.
- ``__share_group_state`` is created on first use.
- :meth:`SharePersister.latest_offsets` is Kafka's PartitionMetadataClient.listLatestOffsets
  for the share-partition lag of DescribeShareGroupOffsets v1: each partition's latest offset
  (the high watermark, what ListOffsets LATEST answers a consumer) from its leader, read in
  place when this broker leads it, else asked with ListOffsets over the same connections.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

from sparklog.broker.context import BrokerContext
from sparklog.coordinator.share_state_apis import (
    SHARE_STATE_TOPIC,
    coordinator,
    ensure_state_topic,
    state_partition,
)
from sparklog.net.client import KafkaClientConnection
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.message_types import (
    ReadShareGroupStateResponseResultsPartitions,
    ReadShareGroupStateSummaryResponseResultsPartitions,
)
from sparklog.protocol.messages.api_versions import API_VERSIONS
from sparklog.protocol.messages.delete_share_group_state import DELETE_SHARE_GROUP_STATE
from sparklog.protocol.messages.initialize_share_group_state import (
    INITIALIZE_SHARE_GROUP_STATE,
)
from sparklog.protocol.messages.list_offsets import LIST_OFFSETS
from sparklog.protocol.messages.read_share_group_state import READ_SHARE_GROUP_STATE
from sparklog.protocol.messages.read_share_group_state_summary import (
    READ_SHARE_GROUP_STATE_SUMMARY,
)
from sparklog.protocol.messages.write_share_group_state import WRITE_SHARE_GROUP_STATE
from sparklog.protocol.schema import Api
from sparklog.security.client_security import inter_broker_security
from sparklog.share.state_store import Batch, ShareState, completed_count

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
_CONSUMER_REPLICA_ID = -1  # answered as to a consumer: the high watermark
_BACKOFF_S = 0.1
_MAX_BACKOFF_S = 1.0


class SharePersister:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._connections: dict[int, tuple[tuple[str, int], KafkaClientConnection]] = {}
        # per broker: the version ranges its ApiVersions answered, for the current connection
        self._versions: dict[int, dict[int, tuple[int, int]]] = {}

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
        """Persist a share-partition's window; the delivery complete count (KIP-1226) is
        counted from ``batches`` here, as Kafka's SharePartition sends its terminal count."""
        code, _ = await self.call(
            group_id,
            topic_id,
            partition,
            "write",
            state_epoch=state_epoch,
            leader_epoch=leader_epoch,
            start_offset=start_offset,
            batches=batches,
            delivery_complete_count=completed_count(start_offset, batches),
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
            part["delivery_complete_count"] = args.get("delivery_complete_count", -1)
            part["state_batches"] = [
                {"first_offset": f, "last_offset": last, "delivery_state": s, "delivery_count": c}
                for f, last, s, c in args["batches"]
            ]
        body = {"group_id": group_id, "topics": [{"topic_id": topic_id, "partitions": [part]}]}
        try:
            version = await self._version(registration.leader, connection, api)
            response = await connection.request(api, version, body)
        except TimeoutError:
            return ErrorCode.REQUEST_TIMED_OUT, None
        except (ConnectionError, OSError):
            # the peer may come back another version: ask its ApiVersions again
            self._versions.pop(registration.leader, None)
            return ErrorCode.NETWORK_EXCEPTION, None
        # the op's API answers one partition; every one of them carries error_code
        answer = response["results"][0]["partitions"][0]
        code = ErrorCode(answer["error_code"])
        if op not in ("read", "summary") or code != ErrorCode.NONE or answer["state_epoch"] < 0:
            return code, None
        if op == "read":  # the batches; no leader epoch or completed count
            read = cast("ReadShareGroupStateResponseResultsPartitions", answer)
            batches = tuple(
                (b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
                for b in read.get("state_batches", ())
            )
            epoch, completed = args.get("leader_epoch", -1), -1
            start = read["start_offset"]
        else:  # the summary: a leader epoch and completed count, no batches
            summary = cast("ReadShareGroupStateSummaryResponseResultsPartitions", answer)
            batches = ()
            epoch = summary.get("leader_epoch", args.get("leader_epoch", -1))
            completed = summary.get("delivery_complete_count", -1)
            start = summary["start_offset"]
        return code, ShareState(answer["state_epoch"], epoch, start, batches, 0, completed)

    async def latest_offsets(
        self, partitions: list[tuple[str, int]]
    ) -> dict[tuple[str, int], tuple[ErrorCode, int]]:
        """``(error, latest offset)`` of each ``(topic, partition)``, from its leader."""
        out: dict[tuple[str, int], tuple[ErrorCode, int]] = {}
        remote: dict[int, list[tuple[str, int]]] = {}
        for topic, index in partitions:
            registration = self.ctx.image.topics.by_name.get(topic)
            part = registration.partitions.get(index) if registration is not None else None
            if part is None:
                out[(topic, index)] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
            elif part.leader < 0:
                out[(topic, index)] = (ErrorCode.LEADER_NOT_AVAILABLE, -1)
            elif part.leader == self.ctx.node_id:
                try:
                    hwm = self.ctx.replica_manager.leader_partition(topic, index).high_watermark
                    out[(topic, index)] = (ErrorCode.NONE, hwm)
                except KafkaApiError as exc:
                    out[(topic, index)] = (exc.code, -1)
            else:
                remote.setdefault(part.leader, []).append((topic, index))
        answers = await asyncio.gather(
            *(self._list_latest(leader, wanted) for leader, wanted in remote.items())
        )
        for answer in answers:
            out.update(answer)
        return out

    async def _list_latest(
        self, leader: int, wanted: list[tuple[str, int]]
    ) -> dict[tuple[str, int], tuple[ErrorCode, int]]:
        failed = {tp: (ErrorCode.NETWORK_EXCEPTION, -1) for tp in wanted}
        connection = self._connection(leader)
        if connection is None:
            return {tp: (ErrorCode.LEADER_NOT_AVAILABLE, -1) for tp in wanted}
        by_topic: dict[str, list[int]] = {}
        for topic, index in wanted:
            by_topic.setdefault(topic, []).append(index)
        # timestamp -1: ListOffsetsRequest.LATEST_TIMESTAMP
        body = {
            "replica_id": _CONSUMER_REPLICA_ID,
            "isolation_level": 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": i, "current_leader_epoch": -1, "timestamp": -1}
                        for i in indexes
                    ],
                }
                for topic, indexes in by_topic.items()
            ],
            "timeout_ms": int(self.ctx.config.get("request.timeout.ms")),
        }
        try:
            version = await self._version(leader, connection, LIST_OFFSETS)
            response = await connection.request(LIST_OFFSETS, version, body)
        except TimeoutError:
            return {tp: (ErrorCode.REQUEST_TIMED_OUT, -1) for tp in wanted}
        except (ConnectionError, OSError):
            self._versions.pop(leader, None)
            return failed
        out = dict(failed)
        for topic in response["topics"]:
            for p in topic["partitions"]:
                out[(topic["name"], p["partition_index"])] = (
                    ErrorCode(p["error_code"]),
                    p["offset"],
                )
        return out

    async def _version(self, broker_id: int, connection: KafkaClientConnection, api: Api) -> int:
        """The newest version of ``api`` this broker and ``broker_id`` both speak."""
        ranges = self._versions.get(broker_id)
        if ranges is None:
            response = await connection.request(
                API_VERSIONS,
                3,
                {"client_software_name": "sparklog", "client_software_version": "0.1.0"},
            )
            ranges = {
                k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]
            }
            self._versions[broker_id] = ranges
        theirs = ranges.get(api.key)
        if theirs is None:
            # not advertised (yet: the peer's share.version may still be on its way), so ask
            # again next time rather than keep the lowest version for this connection
            self._versions.pop(broker_id, None)
            return api.min_version
        return max(api.min_version, min(theirs[1], api.max_version))

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
        self._versions.pop(broker_id, None)
        connection = KafkaClientConnection(
            address[0],
            address[1],
            client_id=f"broker-{self.ctx.node_id}-share-persister",
            request_timeout_ms=int(self.ctx.config.get("request.timeout.ms")),
            security=inter_broker_security(self.ctx.config),
        )
        self._connections[broker_id] = (address, connection)
        return connection
