"""The broker's AssignmentsManager: which log dir holds each replica, told to the controller.

Kafka's ``AssignmentsManager`` (KIP-858). The replica manager reports a replica whose log lies
in a dir other than the one the metadata names for it (:meth:`DirectoryAssignments.submit`:
a new replica the controller left UNASSIGNED on a broker with several dirs, or a log found in
another dir at start-up); one task sends them to the active controller as AssignReplicasToDirs
(73) requests through :class:`~sparklog.broker.controller_channel.ControllerClient`.

Contract:
- At most one assignment per partition is queued or in flight; a newer one for a partition
  replaces a queued older one.
- One request at a time, at most ``MAX_ASSIGNMENTS_PER_REQUEST`` (2250) partitions each, all
  that is queued (Kafka batches the same way): creating thousands of partitions costs a few
  requests, not one per partition.
- Just before sending, an assignment that the current image no longer needs is dropped: the
  partition is gone, this broker is no longer its replica, or the image already names that
  dir (Kafka's ``Assignment.valid``).
- A top-level error, no answer in time or a partition's error requeues the assignment after a
  backoff that doubles up to ``MAX_BACKOFF_MS`` (reset by a success); the task ends only when
  stopped.
- Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from sparklog.broker.alter_partition_sender import ControllerRequest
from sparklog.controller.directories import (
    MAX_ASSIGNMENTS_PER_REQUEST,
    assignment_request,
    directory_of,
)
from sparklog.metadata.image import MetadataImage
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.kafka_uuid import uuid_to_str
from sparklog.protocol.message_types import ApiKey

log = logging.getLogger(__name__)

ASSIGN_REPLICAS_TO_DIRS_KEY = ApiKey.ASSIGN_REPLICAS_TO_DIRS
MAX_BACKOFF_MS = 10_000

# (topic id, partition)
TopicIdPartition = tuple[bytes, int]


class DirectoryAssignments:
    def __init__(
        self,
        broker_id: int,
        request: ControllerRequest,
        broker_epoch: Callable[[], int],
        image: Callable[[], MetadataImage | None],
        *,
        retry_backoff_ms: int = 100,
    ) -> None:
        self.broker_id = broker_id
        self._request = request
        self._broker_epoch = broker_epoch
        self._image = image
        self.retry_backoff_ms = retry_backoff_ms
        self._backoff_ms = retry_backoff_ms
        self._queued: dict[TopicIdPartition, bytes] = {}
        self._wake = asyncio.Event()
        # Counted for tests and logs: partitions the controller accepted.
        self.assigned = 0

    def submit(self, topic_id: bytes, partition: int, directory: bytes) -> None:
        """Tell the controller (soon) that the replica of ``(topic_id, partition)`` is in
        ``directory``."""
        key = (topic_id, partition)
        if self._queued.get(key) != directory:
            self._queued[key] = directory
            self._wake.set()

    @property
    def queued(self) -> int:
        return len(self._queued)

    def _needed(self, key: TopicIdPartition, directory: bytes) -> bool:
        image = self._image()
        if image is None:
            return True
        partition = image.topics.get_partition(*key)
        if partition is None or self.broker_id not in partition.replicas:
            return False
        return directory_of(partition, self.broker_id) != directory

    def _next_batch(self) -> dict[TopicIdPartition, bytes]:
        batch: dict[TopicIdPartition, bytes] = {}
        for key in list(self._queued):
            if len(batch) >= MAX_ASSIGNMENTS_PER_REQUEST:
                break
            directory = self._queued.pop(key)
            if self._needed(key, directory):
                batch[key] = directory
        return batch

    async def run(self, stopping: asyncio.Event) -> None:
        stop = asyncio.ensure_future(stopping.wait())
        try:
            while not stopping.is_set():
                if not self._queued or self._broker_epoch() < 0:
                    self._wake.clear()
                    wake = asyncio.ensure_future(self._wake.wait())
                    timeout = None if not self._queued else self.retry_backoff_ms / 1000
                    await asyncio.wait(
                        {stop, wake}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                    )
                    wake.cancel()
                    continue
                batch = self._next_batch()
                if not batch:
                    continue
                try:
                    retry = await self.send(batch)
                except asyncio.CancelledError:
                    current = asyncio.current_task()
                    if current is None or current.cancelling():
                        raise
                    retry = batch  # a stray cancellation from a layer below: try again
                except Exception:
                    log.exception("AssignReplicasToDirs failed")
                    retry = batch
                if retry:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(asyncio.shield(stop), self._backoff_ms / 1000)
                    self._backoff_ms = min(self._backoff_ms * 2, MAX_BACKOFF_MS)
                    for key, directory in retry.items():
                        self._queued.setdefault(key, directory)
                else:
                    self._backoff_ms = self.retry_backoff_ms
        finally:
            stop.cancel()

    async def send(self, batch: dict[TopicIdPartition, bytes]) -> dict[TopicIdPartition, bytes]:
        """One AssignReplicasToDirs request for ``batch``; returns what must be retried."""
        body = assignment_request(
            self.broker_id,
            self._broker_epoch(),
            [(directory, topic_id, index) for (topic_id, index), directory in batch.items()],
        )
        response = await self._request(ASSIGN_REPLICAS_TO_DIRS_KEY, 0, body)
        top = int(response.get("error_code", 0))
        if top:
            log.warning(
                "AssignReplicasToDirs of %d partitions failed: %s; retrying",
                len(batch),
                _error_name(top),
            )
            return batch
        retry = dict(batch)
        for directory in response.get("directories") or ():
            for topic in directory.get("topics") or ():
                for data in topic.get("partitions") or ():
                    key = (bytes(topic["topic_id"]), int(data["partition_index"]))
                    if key not in retry:
                        continue
                    code = int(data.get("error_code", 0))
                    if code == 0:
                        del retry[key]
                        self.assigned += 1
                    else:
                        _log_partition_error(key, retry[key], code)
        if len(retry) < len(batch):
            log.info(
                "The controller placed %d replicas of broker %d in their log dirs",
                len(batch) - len(retry),
                self.broker_id,
            )
        return retry


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _log_partition_error(key: TopicIdPartition, directory: bytes, code: int) -> None:
    log.warning(
        "AssignReplicasToDirs of partition %s-%d to dir %s failed: %s; retrying",
        uuid_to_str(key[0]),
        key[1],
        uuid_to_str(directory),
        _error_name(code),
    )
