"""InitProducerId (API key 22) for idempotent producers, from controller-allocated id blocks.

As in Kafka, a broker hands out producer ids from a block the controller allocated to it
(``ProducerIdsRecord`` in the metadata log, so ids are never reused across restarts) and asks
for the next block when one runs out. A producer without a transactional id always gets a fresh
id at epoch 0. Transactional ids need the transaction coordinator, which this node does not run
yet: such requests get TRANSACTIONAL_ID_AUTHORIZATION_FAILED with a message saying so, a fatal
error the client reports instead of retrying forever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import Request

BlockAllocator = Callable[[], Awaitable[tuple[int, int]]]


class ProducerIdManager:
    def __init__(self, allocate_block: BlockAllocator) -> None:
        self._allocate_block = allocate_block
        self._next = 0
        self._end = 0
        self._lock = asyncio.Lock()

    async def next_producer_id(self) -> int:
        async with self._lock:
            if self._next >= self._end:
                first, length = await self._allocate_block()
                self._next, self._end = first, first + length
            producer_id = self._next
            self._next += 1
            return producer_id


async def handle_init_producer_id(manager: ProducerIdManager, request: Request) -> dict[str, Any]:
    body = request.body
    response: dict[str, Any] = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    if body.get("transactional_id") is not None:
        response["error_code"] = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return response
    try:
        response["producer_id"] = await manager.next_producer_id()
        response["producer_epoch"] = 0
    except KafkaApiError as exc:
        response["error_code"] = int(exc.code)
    return response
