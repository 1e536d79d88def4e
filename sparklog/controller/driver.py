"""ControllerDriver: the QuorumController's event loop on top of a real KRaft quorum.

The controller's operations are pure (image in, records + response out); this driver gives
them Kafka's write -> commit -> apply discipline on an asyncio loop:

- One operation at a time (an ``asyncio.Lock``): compute on the committed image, append the
  records as one atomic batch through the raft client, await their commit (the controller's
  image reaching the batch's last offset), then answer. Because the next operation starts only
  after the previous one is applied, no operation ever decides on uncommitted state, so
  losing leadership has nothing to revert: the waiting operation fails with NOT_CONTROLLER and
  the records it appended are committed or truncated by the new leader, as raft decides.
- Activation: when the raft listener contract announces this node as leader (only after the
  controller has replayed everything before the new epoch), the driver starts every broker's
  lease afresh and appends the bootstrap records if the log has none (a NoOpRecord otherwise:
  a replica restarted as the resigned leader of its last epoch names itself leader until the
  next election, and only a committed append proves the leadership, as Kafka's activation
  records do). Operations wait for the activation of the current epoch and fail with
  NOT_CONTROLLER while it has not succeeded.
- Only the active controller writes; every other call fails with NOT_CONTROLLER at once.
- :meth:`run` fences brokers whose lease expired, every ``check_interval_ms``, while active;
  every 5 s it elects leaders for offline partitions that may have one (unclean election
  turned on for their topic), and with ``auto.leader.rebalance.enable`` it runs the preferred
  leader rebalance every ``leader.imbalance.check.interval.seconds`` (the first one an
  interval after activation, as Kafka schedules it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sparklog.controller.quorum_controller import QuorumController
from sparklog.controller.result import ControllerResult
from sparklog.fault import supervise
from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.metrics import LatencyWindow
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.raft.client import CommittedBatch, LeaderAndEpoch, RaftClient

log = logging.getLogger(__name__)

R = TypeVar("R")

# How often the active controller looks for offline partitions that may now have a leader.
OFFLINE_ELECTION_INTERVAL_MS = 5_000


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class ControllerDriver:
    def __init__(
        self,
        controller: QuorumController,
        raft: RaftClient[MetadataRecord],
        wakeup: Callable[[], None],
        *,
        clock_ms: Callable[[], int] = _wall_clock_ms,
        commit_timeout_ms: int = 30_000,
    ) -> None:
        """``raft`` must already have ``controller`` registered as a listener."""
        self.controller = controller
        self._raft = raft
        self._wakeup = wakeup
        self._clock_ms = clock_ms
        self._commit_timeout_ms = commit_timeout_ms
        self._lock = asyncio.Lock()
        self._changed = asyncio.Event()
        self._activated_epoch = -1
        self._activation: asyncio.Task[None] | None = None
        # Metrics (sparklog.server.node_metrics): append-to-commit time of our own operations, and
        # brokers fenced because their session expired.
        self.commit_latency = LatencyWindow()
        self.timed_out_broker_heartbeats = 0
        raft.register_listener(self)

    # -- RaftListener (registered after the controller, so it sees applied state) ------------

    def handle_commit(self, batch: CommittedBatch[MetadataRecord]) -> None:
        self._changed.set()

    def handle_load_snapshot(self, snapshot: Any) -> None:
        self._changed.set()

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self._changed.set()
        if leader.leader_id == self._raft.node_id and leader.epoch > self._activated_epoch:
            loop = asyncio.get_running_loop()
            # Supervised: an activation failing with anything but a Kafka error is logged
            # with its traceback at once, not when the task is collected.
            self._activation = supervise(
                loop.create_task(self._activate(leader.epoch)),
                f"controller activation in epoch {leader.epoch}",
            )
        elif leader.leader_id != self._raft.node_id and self._activated_epoch >= 0:
            log.info("Controller %d is no longer active (%s)", self._raft.node_id, leader)

    @property
    def is_active(self) -> bool:
        leader = self.controller.leader
        return self.controller.is_active and self._activated_epoch == leader.epoch

    # -- operations ---------------------------------------------------------------------------

    async def call(self, op: Callable[[], ControllerResult[R]]) -> R:
        """Run one controller operation to its committed end; NOT_CONTROLLER if not active."""
        self.controller.check_active()
        activation = self._activation
        if activation is not None and not activation.done():
            await asyncio.shield(activation)
        async with self._lock:
            if not self.is_active:
                # Raft names us leader, but this epoch is not activated (its activation failed
                # or has not started): our image may not hold the log yet. A controller
                # restarted with a persisted leadership it no longer has answered heartbeats
                # from an empty image (BROKER_ID_NOT_REGISTERED), making every broker
                # re-register (chaos seed 42). Kafka's controller serves only once active.
                leader = self.controller.leader
                raise KafkaApiError(
                    ErrorCode.NOT_CONTROLLER,
                    f"Node {self._raft.node_id} is not the active controller (epoch "
                    f"{leader.epoch} is not activated).",
                )
            return await self._run_locked(op)

    async def _run_locked(self, op: Callable[[], ControllerResult[R]]) -> R:
        self.controller.check_active()
        epoch = self.controller.leader.epoch
        result = op()
        last_offset = self.controller.append(result)
        if last_offset >= 0:
            appended_ms = self._clock_ms()
            self._wakeup()
            await self._await_commit(last_offset, epoch)
            self.commit_latency.record(self._clock_ms() - appended_ms)
        return result.response

    async def _await_commit(self, last_offset: int, epoch: int) -> None:
        deadline_ms = self._clock_ms() + self._commit_timeout_ms
        while self.controller.image.provenance.last_offset < last_offset:
            leader = self.controller.leader
            if leader.epoch != epoch or leader.leader_id != self._raft.node_id:
                raise KafkaApiError(
                    ErrorCode.NOT_CONTROLLER,
                    f"Node {self._raft.node_id} lost the leadership of epoch {epoch} before "
                    "the operation committed.",
                )
            remaining_ms = deadline_ms - self._clock_ms()
            if remaining_ms <= 0:
                raise KafkaApiError(
                    ErrorCode.REQUEST_TIMED_OUT,
                    f"Metadata records up to offset {last_offset} were not committed in "
                    f"{self._commit_timeout_ms} ms.",
                )
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining_ms / 1000)

    async def _activate(self, epoch: int) -> None:
        async with self._lock:
            leader = self.controller.leader
            if leader.epoch != epoch or leader.leader_id != self._raft.node_id:
                return
            now = self._clock_ms()
            self.controller.sessions.reset(self.controller.image.cluster.brokers, now)
            try:
                await self._run_locked(self._activation_result)
            except KafkaApiError as exc:
                log.warning("Controller activation in epoch %d failed: %s", epoch, exc)
                return
            self._activated_epoch = epoch
            log.info("Controller %d is active in epoch %d", self._raft.node_id, epoch)

    def _activation_result(self) -> ControllerResult[None]:
        result = self.controller.bootstrap_result()
        if result.records:
            return result
        image_offset = self.controller.image.provenance.last_offset
        return ControllerResult((make_record("NoOpRecord", {}),), None, image_offset)

    # -- lease expiry -------------------------------------------------------------------------

    async def run(self, stopping: asyncio.Event, check_interval_ms: int = 250) -> None:
        """While this controller is active: fence brokers whose session expired, elect
        leaders for offline partitions that may have one, and rebalance preferred leaders."""
        next_offline_ms = next_balance_ms = 0
        while not stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), check_interval_ms / 1000)
            if stopping.is_set() or not self.is_active:
                continue
            now = self._clock_ms()
            if now >= next_offline_ms:
                next_offline_ms = now + OFFLINE_ELECTION_INTERVAL_MS
                await self._periodic(self.controller.elect_offline_partitions, "offline elections")
            controller = self.controller
            if controller.auto_leader_rebalance and now >= next_balance_ms:
                if next_balance_ms:
                    await self._periodic(controller.balance_partition_leaders, "leader rebalance")
                next_balance_ms = now + controller.imbalance_check_interval_ms
            try:
                fenced: list[int] = [-1]
                while fenced and self.is_active:
                    fenced = await self.call(
                        lambda: self.controller.fence_expired_brokers(self._clock_ms())
                    )
                    self.timed_out_broker_heartbeats += len(fenced)
                    for broker_id in fenced:
                        log.info("Fenced broker %d: its session expired", broker_id)
            except KafkaApiError as exc:
                log.debug("fencing pass stopped: %s", exc)
            except Exception:
                log.exception("fencing pass failed")

    async def _periodic(self, op: Callable[[], ControllerResult[int]], what: str) -> None:
        try:
            changed = await self.call(op)
        except KafkaApiError as exc:
            log.debug("%s stopped: %s", what, exc)
            return
        except Exception:
            log.exception("%s failed", what)
            return
        if changed:
            log.info("Controller %s changed %d partition(s)", what, changed)
