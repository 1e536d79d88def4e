"""FindCoordinator (10): which broker coordinates a group (key type 0) or a transactional id
(key type 1).

The answer is the leader of the key's partition of ``__consumer_offsets`` or
``__transaction_state``, on the listener the request came in on; COORDINATOR_NOT_AVAILABLE
while that topic has no partitions or the leader is fenced or has no such listener. The
topic is created on first use: ``__consumer_offsets`` with ``offsets.topic.num.partitions``
partitions, replication factor min(``offsets.topic.replication.factor``, live brokers),
``cleanup.policy=compact``, ``segment.bytes=offsets.topic.segment.bytes``;
``__transaction_state`` the same from the ``transaction.state.log.*`` settings, with
``min.insync.replicas`` = min(``transaction.state.log.min.isr``, replication factor). v4+
answers a batch of keys, older versions one.
"""

from __future__ import annotations

import logging

from sparklog.coordinator.coordinator import OFFSETS_TOPIC, partition_for
from sparklog.coordinator.runtime import CoordinatorContext
from sparklog.coordinator.txn_coordinator import TRANSACTION_STATE_TOPIC
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinators,
)

__all__ = ["handle_find_coordinator"]

log = logging.getLogger(__name__)


async def _ensure_internal_topic(ctx: CoordinatorContext, name: str, prefix: str) -> None:
    """Create ``__consumer_offsets`` (``prefix`` "offsets.topic") or ``__transaction_state``
    (``prefix`` "transaction.state.log") from the broker settings, if it does not exist."""
    if name in ctx.image.topics.by_name:
        return
    # Brokers that can take a replica now: unfenced and not shutting down (as placement uses).
    live = sum(
        1
        for b in ctx.image.cluster.brokers.values()
        if not b.fenced and not b.in_controlled_shutdown
    )
    configured = int(ctx.config.get(f"{prefix}.replication.factor"))
    replication = max(1, min(configured, live))
    if replication < configured:
        log.warning(
            "Creating %s with replication factor %d: %s.replication.factor is %d "
            "but only %d broker(s) are alive",
            name,
            replication,
            prefix,
            configured,
            live,
        )
    configs = [
        {"name": "cleanup.policy", "value": "compact"},
        {"name": "segment.bytes", "value": str(ctx.config.get(f"{prefix}.segment.bytes"))},
        {"name": "compression.type", "value": "producer"},
    ]
    if name == TRANSACTION_STATE_TOPIC:
        min_isr = min(int(ctx.config.get("transaction.state.log.min.isr")), replication)
        configs.append({"name": "min.insync.replicas", "value": str(min_isr)})
        configs.append({"name": "unclean.leader.election.enable", "value": "false"})
    request = {
        "topics": [
            {
                "name": name,
                "num_partitions": int(ctx.config.get(f"{prefix}.num.partitions")),
                "replication_factor": replication,
                "assignments": [],
                "configs": configs,
            }
        ],
        "timeout_ms": 30000,
        "validate_only": False,
    }
    response = await ctx.controller("create_topics", request, 7)
    for result in response["topics"]:
        code = result["error_code"]
        if code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            log.warning("Could not create %s: %s", name, result.get("error_message"))


async def _find_one(
    ctx: CoordinatorContext, key: str, key_type: int, listener: str
) -> tuple[ErrorCode, str | None, int, str, int]:
    if key_type == 1:
        if ctx.transactions is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, -1, "", -1
        topic_name = TRANSACTION_STATE_TOPIC
        await _ensure_internal_topic(ctx, topic_name, "transaction.state.log")
    elif key_type == 0:
        topic_name = OFFSETS_TOPIC
        await _ensure_internal_topic(ctx, topic_name, "offsets.topic")
    else:
        return ErrorCode.INVALID_REQUEST, f"Unsupported key type {key_type}", -1, "", -1
    image = ctx.image
    topic = image.topics.by_name.get(topic_name)
    if topic is None or not topic.partitions:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, -1, "", -1
    registration = topic.partitions.get(partition_for(key, len(topic.partitions)))
    broker = image.cluster.brokers.get(registration.leader) if registration else None
    endpoint = broker.endpoint(listener) if broker is not None and not broker.fenced else None
    if endpoint is None or broker is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, -1, "", -1
    return ErrorCode.NONE, None, broker.broker_id, endpoint.host, endpoint.port


async def handle_find_coordinator(
    ctx: CoordinatorContext, request: TypedRequest[FindCoordinatorRequest], listener: str
) -> FindCoordinatorResponse:
    body = request.body
    version = request.header.api_version
    key_type = body["key_type"]
    if version >= 4:
        coordinators: list[FindCoordinatorResponseCoordinators] = []
        for key in body["coordinator_keys"]:
            code, message, node_id, host, port = await _find_one(ctx, key, key_type, listener)
            coordinators.append(
                {
                    "key": key,
                    "node_id": node_id,
                    "host": host,
                    "port": port,
                    "error_code": int(code),
                    "error_message": message,
                }
            )
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    code, message, node_id, host, port = await _find_one(ctx, body["key"], key_type, listener)
    return {
        "throttle_time_ms": 0,
        "error_code": int(code),
        "error_message": message,
        "node_id": node_id,
        "host": host,
        "port": port,
        "coordinators": [],
    }
