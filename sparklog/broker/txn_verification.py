"""Produce-time transaction checks of a partition leader (Kafka's ``AddPartitionsToTxnManager``,
KIP-890).

Before a leader appends the first transactional batch of a producer epoch to a partition, it
asks the producer's transaction coordinator about that partition:

- a Produce v12+ on a cluster that finalized ``transaction.version`` >= 2 comes from a TV2
  producer, which never sends AddPartitionsToTxn: the leader adds the partition itself
  (AddPartitionsToTxn v5, ``verify_only`` false; the coordinator records the transaction as
  version 2);
- any other transactional Produce is verified (part 1, ``transaction.partition.verification.
  enable``, on by default as in Kafka): AddPartitionsToTxn v5 with ``verify_only`` answers
  whether the client added the partition (TRANSACTION_ABORTABLE if not), so a hanging
  transaction can not start from a late or misdirected batch.

A partition whose producer state already has the producer's transaction open at that epoch is
not asked again. The coordinator is the leader of ``__transaction_state`` partition
``abs(java_hash(id)) % transaction.state.log.num.partitions``: our own coordinator is called
directly, another broker over one pipelined connection of its inter-broker listener.

What the produce answers (Kafka's mapping): the coordinator unreachable, not the coordinator,
loading, or CONCURRENT_TRANSACTIONS (the previous transaction's markers are being written,
retried here with backoff first) are NOT_ENOUGH_REPLICAS, retriable for every producer;
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH; a partition not in the transaction, a producer id
the coordinator does not know for the id, or a state that forbids the add is
TRANSACTION_ABORTABLE for Produce v11+ and INVALID_TXN_STATE before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from sparklog.coordinator.coordinator import partition_for
from sparklog.coordinator.txn_coordinator import TRANSACTION_STATE_TOPIC
from sparklog.coordinator.txn_state import TV_2, supports_epoch_bump
from sparklog.metadata.image import MetadataImage
from sparklog.net.client import KafkaClientConnection
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from sparklog.protocol.messages.add_partitions_to_txn import ADD_PARTITIONS_TO_TXN
from sparklog.security.client_security import ClientSecurity

if TYPE_CHECKING:
    from sparklog.coordinator.txn_coordinator import TransactionCoordinator

__all__ = ["AddPartitionsToTxnManager", "produce_error"]

log = logging.getLogger(__name__)

ADD_PARTITIONS_VERSION = 5
# Produce versions: 11 knows TRANSACTION_ABORTABLE, 12 is a transactions-version-2 producer.
_ABORTABLE_FROM = 11
IMPLICIT_ADD_FROM = 12
# Kafka's add.partitions.to.txn.retry.backoff.ms / .max.ms defaults.
_RETRY_BACKOFF_S = 0.02
_RETRY_MAX_S = 0.1

TopicPartition = tuple[str, int]
_RETRIABLE = frozenset(
    {
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_SERVER_ERROR,
    }
)


def produce_error(code: ErrorCode, produce_version: int) -> ErrorCode:
    """What a Produce of ``produce_version`` answers for the coordinator's ``code``."""
    if code == ErrorCode.NONE:
        return code
    if code in _RETRIABLE:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    if code in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH):
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code in (
        ErrorCode.TRANSACTION_ABORTABLE,
        ErrorCode.INVALID_TXN_STATE,
        ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    ):
        if produce_version >= _ABORTABLE_FROM:
            return ErrorCode.TRANSACTION_ABORTABLE
        return ErrorCode.INVALID_TXN_STATE
    return code


class AddPartitionsToTxnManager:
    def __init__(
        self,
        broker_id: int,
        image: Callable[[], MetadataImage],
        coordinator: Callable[[], TransactionCoordinator | None],
        *,
        listener_name: str,
        request_timeout_ms: int,
        verification_enabled: bool = True,
        security: ClientSecurity | None = None,
    ) -> None:
        self.broker_id = broker_id
        self._image = image
        self._coordinator = coordinator
        self.listener_name = listener_name
        self.request_timeout_ms = request_timeout_ms
        self.verification_enabled = verification_enabled
        self._security = security
        self._connections: dict[int, tuple[tuple[str, int], KafkaClientConnection]] = {}

    def mode(self, produce_version: int) -> bool | None:
        """None: no check; False: add the partitions (TV2); True: verify only."""
        if produce_version >= IMPLICIT_ADD_FROM and supports_epoch_bump(
            self._image().features.transaction_version
        ):
            return False
        return True if self.verification_enabled else None

    async def check(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        produce_version: int,
    ) -> dict[TopicPartition, ErrorCode]:
        """The produce error of each partition (NONE: append)."""
        wanted = sorted(set(partitions))
        verify_only = self.mode(produce_version)
        if verify_only is None or not wanted:
            return dict.fromkeys(wanted, ErrorCode.NONE)
        codes = await self.add_or_verify(
            transactional_id, producer_id, producer_epoch, wanted, verify_only
        )
        return {tp: produce_error(code, produce_version) for tp, code in codes.items()}

    async def add_or_verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
        verify_only: bool,
    ) -> dict[TopicPartition, ErrorCode]:
        """The coordinator's code per partition for an add (TV2) or a verification; retried
        with backoff while it is CONCURRENT_TRANSACTIONS (the previous transaction's markers
        are being written), as Kafka's ``add.partitions.to.txn.retry.backoff.*``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _RETRY_MAX_S
        delay_s = _RETRY_BACKOFF_S
        while True:
            codes = await self._ask(
                transactional_id, producer_id, producer_epoch, partitions, verify_only
            )
            concurrent = any(c == ErrorCode.CONCURRENT_TRANSACTIONS for c in codes.values())
            if not concurrent or loop.time() + delay_s > deadline:
                return codes
            await asyncio.sleep(delay_s)
            delay_s *= 2

    async def close(self) -> None:
        for _, connection in self._connections.values():
            await connection.close()
        self._connections.clear()

    # -- the coordinator ----------------------------------------------------------------------
    def _coordinator_broker(self, transactional_id: str) -> int | ErrorCode:
        image = self._image()
        registered = image.topics.get_topic(TRANSACTION_STATE_TOPIC)
        if registered is None or not registered.partitions:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        index = partition_for(transactional_id, len(registered.partitions))
        partition = registered.partitions.get(index)
        if partition is None or partition.leader < 0:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return int(partition.leader)

    async def _ask(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
        verify_only: bool,
    ) -> dict[TopicPartition, ErrorCode]:
        broker = self._coordinator_broker(transactional_id)
        if isinstance(broker, ErrorCode):
            return dict.fromkeys(partitions, broker)
        local = self._coordinator()
        if broker == self.broker_id and local is not None:
            if verify_only:
                return local.verify_partitions(
                    transactional_id, producer_id, producer_epoch, partitions
                )
            code = await local.add_partitions(
                transactional_id, producer_id, producer_epoch, partitions, TV_2
            )
            return dict.fromkeys(partitions, code)
        connection = self._connection(broker)
        if connection is None:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        body = _request_body(transactional_id, producer_id, producer_epoch, partitions, verify_only)
        try:
            response = await connection.request(ADD_PARTITIONS_TO_TXN, ADD_PARTITIONS_VERSION, body)
        except (TimeoutError, ConnectionError, OSError) as exc:
            log.info("AddPartitionsToTxn to broker %d failed: %s", broker, exc)
            return dict.fromkeys(partitions, ErrorCode.NETWORK_EXCEPTION)
        return _response_codes(cast("AddPartitionsToTxnResponse", response), partitions)

    def _connection(self, broker_id: int) -> KafkaClientConnection | None:
        registration = self._image().cluster.broker(broker_id)
        endpoint = registration.endpoint(self.listener_name) if registration else None
        if endpoint is None:
            return None
        address = (endpoint.host, endpoint.port)
        known = self._connections.get(broker_id)
        if known is not None and known[0] == address:
            return known[1]
        if known is not None:
            asyncio.get_running_loop().create_task(known[1].close())
        connection = KafkaClientConnection(
            address[0],
            address[1],
            client_id=f"broker-{self.broker_id}-add-partitions-to-txn",
            request_timeout_ms=self.request_timeout_ms,
            security=self._security,
        )
        self._connections[broker_id] = (address, connection)
        return connection


def _request_body(
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    partitions: list[TopicPartition],
    verify_only: bool,
) -> AddPartitionsToTxnRequest:
    topics: dict[str, list[int]] = {}
    for topic, index in partitions:
        topics.setdefault(topic, []).append(index)
    # v4+ (KIP-890): the v3_and_below fields at their declared defaults, not sent
    return {
        "transactions": [
            {
                "transactional_id": transactional_id,
                "producer_id": producer_id,
                "producer_epoch": producer_epoch,
                "verify_only": verify_only,
                "topics": [{"name": n, "partitions": p} for n, p in topics.items()],
            }
        ],
        "v3_and_below_transactional_id": "",
        "v3_and_below_producer_id": 0,
        "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [],
    }


def _response_codes(
    response: AddPartitionsToTxnResponse, partitions: list[TopicPartition]
) -> dict[TopicPartition, ErrorCode]:
    codes = dict.fromkeys(partitions, ErrorCode.UNKNOWN_SERVER_ERROR)
    top = ErrorCode(int(response.get("error_code", 0)))
    if top != ErrorCode.NONE:
        return dict.fromkeys(partitions, top)
    for txn in response.get("results_by_transaction", []):
        for topic in txn["topic_results"]:
            for result in topic["results_by_partition"]:
                tp = (topic["name"], int(result["partition_index"]))
                if tp in codes:
                    codes[tp] = ErrorCode(int(result["partition_error_code"]))
    return codes
