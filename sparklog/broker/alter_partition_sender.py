"""The AlterPartition sender: ISR changes from the partitions we lead to the active controller.

Kafka's ``AlterPartitionManager``: leaders queue ISR changes (:meth:`AlterPartitionSender.submit`,
the replica manager's ``isr_sender``); one task batches everything queued into a single
AlterPartition v3 request at a time (``new_isr_with_epochs``: each member with its broker
epoch, KIP-903), sent through :class:`~sparklog.broker.controller_channel.ControllerClient`,
which finds the active controller and retries NOT_CONTROLLER.

Contract:
- At most one proposal per partition is queued or in flight (the leader core allows one
  pending change); a newer proposal for a partition replaces a queued older one.
- Each partition's answer goes back to its leader core
  (:meth:`~sparklog.replication.leader.LeaderCore.on_alter_partition_response`), which applies,
  rolls back, keeps waiting for metadata or asks for a retry; retries are queued again after
  ``retry_backoff_ms``. A top-level error (or no answer in time) counts for every partition.
- The sending task ends only when stopped (or cancelled itself): a failed send, even one that
  raised a ``CancelledError`` not meant for it, is retried like an unanswered request (Kafka's
  AlterPartitionManager resends after a disconnect or timeout).
- Counters on the replica manager: ``isr_expands`` / ``isr_shrinks`` on applied changes,
  ``failed_isr_updates`` on every error.
- After each answer the partition's HW is recomputed and its waiters woken.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from sparklog.broker.partition import Partition
from sparklog.broker.replica_manager import ReplicaManager, TopicPartition
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    AlterPartitionRequest,
    AlterPartitionRequestTopicsPartitions,
    AlterPartitionResponse,
    AlterPartitionResponseTopicsPartitions,
    ApiKey,
)
from sparklog.replication.messages import AlterPartitionOutcome, AlterPartitionProposal

log = logging.getLogger(__name__)

ALTER_PARTITION_KEY = ApiKey.ALTER_PARTITION
ALTER_PARTITION_VERSION = 3

# (api key, version, body) -> response body, e.g. ControllerClient.request
ControllerRequest = Callable[[int, int, Mapping[str, Any]], Awaitable[dict[str, Any]]]


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class _Queued:
    partition: Partition
    proposal: AlterPartitionProposal


class AlterPartitionSender:
    def __init__(
        self,
        replica_manager: ReplicaManager,
        request: ControllerRequest,
        broker_epoch: Callable[[], int],
        *,
        retry_backoff_ms: int = 100,
    ) -> None:
        self.rm = replica_manager
        self._request = request
        self._broker_epoch = broker_epoch
        self.retry_backoff_ms = retry_backoff_ms
        self._queued: dict[TopicPartition, _Queued] = {}
        self._wake = asyncio.Event()

    def submit(self, partition: Partition, proposal: AlterPartitionProposal) -> None:
        self._queued[(partition.topic, partition.index)] = _Queued(partition, proposal)
        self._wake.set()

    @property
    def queued(self) -> int:
        return len(self._queued)

    async def run(self, stopping: asyncio.Event) -> None:
        stop = asyncio.ensure_future(stopping.wait())
        try:
            while not stopping.is_set():
                if not self._queued:
                    self._wake.clear()
                    wake = asyncio.ensure_future(self._wake.wait())
                    await asyncio.wait({stop, wake}, return_when=asyncio.FIRST_COMPLETED)
                    wake.cancel()
                    continue
                batch, self._queued = self._queued, {}
                try:
                    retry = await self.send(list(batch.values()))
                except asyncio.CancelledError:
                    current = asyncio.current_task()
                    if current is None or current.cancelling():
                        raise
                    # Not our cancellation (a layer below gave up a shared wait): this task
                    # carries every ISR change of the broker, it must not end here.
                    log.warning("AlterPartition interrupted by a stray cancellation; retrying")
                    retry = list(batch.values())
                except Exception:
                    log.exception("AlterPartition failed")
                    retry = list(batch.values())
                if retry:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(asyncio.shield(stop), self.retry_backoff_ms / 1000)
                    for item in retry:
                        tp = (item.partition.topic, item.partition.index)
                        self._queued.setdefault(tp, item)
        finally:
            stop.cancel()

    async def send(self, batch: list[_Queued]) -> list[_Queued]:
        """Send one request for ``batch``, apply the answers; returns what must be retried."""
        topics: dict[bytes, list[AlterPartitionRequestTopicsPartitions]] = {}
        for item in batch:
            proposal = item.proposal
            topics.setdefault(item.partition.topic_id, []).append(
                {
                    "partition_index": item.partition.index,
                    "leader_epoch": proposal.leader_epoch,
                    "new_isr": [broker for broker, _ in proposal.new_isr],  # v0-2 only
                    "new_isr_with_epochs": [
                        {"broker_id": broker, "broker_epoch": epoch}
                        for broker, epoch in proposal.new_isr
                    ],
                    "leader_recovery_state": 0,
                    "partition_epoch": proposal.partition_epoch,
                }
            )
        body: AlterPartitionRequest = {
            "broker_id": self.rm.broker_id,
            "broker_epoch": self._broker_epoch(),
            "topics": [
                {"topic_name": "", "topic_id": topic_id, "partitions": partitions}
                for topic_id, partitions in topics.items()
            ],
        }
        answer = await self._request(ALTER_PARTITION_KEY, ALTER_PARTITION_VERSION, body)
        response = cast("AlterPartitionResponse", answer)
        top_error = int(response.get("error_code", 0))
        answers: dict[tuple[bytes, int], AlterPartitionResponseTopicsPartitions] = {}
        for topic in response.get("topics", []):
            topic_id = bytes(topic.get("topic_id") or b"")
            for partition in topic.get("partitions", []):
                answers[(topic_id, int(partition["partition_index"]))] = partition
        retry: list[_Queued] = []
        for item in batch:
            answered = answers.get((item.partition.topic_id, item.partition.index))
            data: AlterPartitionResponseTopicsPartitions = {}
            if top_error or answered is None:
                error = top_error or int(ErrorCode.UNKNOWN_SERVER_ERROR)
            else:
                data = answered
                error = int(data.get("error_code", 0))
            if self._apply(item, error, data) is AlterPartitionOutcome.RETRY:
                retry.append(item)
        return retry

    def _apply(
        self, item: _Queued, error: int, data: AlterPartitionResponseTopicsPartitions
    ) -> AlterPartitionOutcome:
        partition, proposal = item.partition, item.proposal
        core = partition.leader_core
        if core is None:
            return AlterPartitionOutcome.STALE
        outcome = core.on_alter_partition_response(
            proposal.proposal_id,
            error,
            _now_ms(),
            leader_epoch=int(data.get("leader_epoch", -1)),
            partition_epoch=int(data.get("partition_epoch", -1)),
            isr=tuple(int(b) for b in data.get("isr", ())),
        )
        name = f"{partition.topic}-{partition.index}"
        if (
            outcome is AlterPartitionOutcome.STALE
            and error == ErrorCode.NONE
            and core.isr == frozenset(proposal.isr_ids)
        ):
            # The metadata image brought the committed change before this answer did.
            outcome = AlterPartitionOutcome.APPLIED
        if outcome is AlterPartitionOutcome.APPLIED:
            if proposal.expand:
                self.rm.isr_expands += 1
            else:
                self.rm.isr_shrinks += 1
            log.info(
                "ISR of %s is now %s (partition epoch %d)",
                name,
                sorted(core.isr),
                core.partition_epoch,
            )
        elif outcome is not AlterPartitionOutcome.STALE:
            self.rm.failed_isr_updates += 1
            code = _error_name(error)
            log.info(
                "AlterPartition of %s to %s failed: %s (%s)",
                name,
                proposal.isr_ids,
                code,
                outcome.value,
            )
        self.rm.hw_may_have_moved(partition)
        return outcome
