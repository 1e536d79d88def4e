"""InitProducerId (API key 22) for idempotent producers, from controller-allocated id blocks.

As in Kafka, a broker hands out producer ids from a block the controller allocated to it
(``ProducerIdsRecord`` in the metadata log, so ids are never reused across restarts) and asks
for the next block when one runs out. A producer without a transactional id always gets a fresh
id at epoch 0. A request with a transactional id goes to the transaction coordinator (epoch
bumps, fencing, timeout validation); PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH to
versions before 4, which do not know it (as Kafka does). Without a transaction coordinator such
requests get COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import InitProducerIdRequest, InitProducerIdResponse

BlockAllocator = Callable[[], Awaitable[tuple[int, int]]]


class InitResultLike(Protocol):
    @property
    def error(self) -> ErrorCode: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...


class TransactionalInit(Protocol):
    """The part of the transaction coordinator InitProducerId needs."""

    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, producer_id: int, producer_epoch: int
    ) -> InitResultLike: ...


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


async def handle_init_producer_id(
    manager: ProducerIdManager,
    request: TypedRequest[InitProducerIdRequest],
    transactions: TransactionalInit | None = None,
) -> InitProducerIdResponse:
    body = request.body
    response: InitProducerIdResponse = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    transactional_id = body["transactional_id"]
    if transactional_id is not None:
        if transactions is None:
            response["error_code"] = int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return response
        try:
            result = await transactions.init_producer_id(
                transactional_id,
                body["transaction_timeout_ms"],
                body["producer_id"],
                body["producer_epoch"],
            )
        except KafkaApiError as exc:
            response["error_code"] = int(exc.code)
            return response
        code = result.error
        if code == ErrorCode.PRODUCER_FENCED and request.header.api_version < 4:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        response["error_code"] = int(code)
        if code == ErrorCode.NONE:
            response["producer_id"] = result.producer_id
            response["producer_epoch"] = result.producer_epoch
        return response
    try:
        response["producer_id"] = await manager.next_producer_id()
        response["producer_epoch"] = 0
    except KafkaApiError as exc:
        response["error_code"] = int(exc.code)
    return response
