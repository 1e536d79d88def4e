"""Time-boxed metadata publishing: a large image is applied to the partitions in rounds.

Opening a partition's log and becoming its leader costs file creations and fsyncs (about a
millisecond each here), so applying an image that adds 10,000 partitions at once would hold the
event loop for many seconds, during which the broker's heartbeats stop and its controller (on a
combined node, the same loop) fences it. The replica manager therefore works on an image in
rounds of at most :data:`ROUND_BUDGET_S`; partitions left over are applied by the next round,
which the event loop runs after it has served whatever is waiting (heartbeats, raft, requests).

Contract:
- Within one image, every partition is applied at most once (:meth:`PublishRounds.done`); a new
  image starts afresh, so every partition is looked at against the newest image.
- Without a running event loop (unit tests, tools) a round has no time limit: one call applies
  everything, as before.
- A partition whose log cannot be opened because the process is out of file descriptors
  (EMFILE / ENFILE) is not a log dir failure: it is reported once per round at ERROR, answers
  KAFKA_STORAGE_ERROR meanwhile (:meth:`PublishRounds.unavailable`), and is retried every
  :data:`RETRY_S` until it opens.
- Until it is applied, a partition is simply not hosted (UNKNOWN_TOPIC_OR_PARTITION, which
  clients retry). Deleting the logs of removed partitions is time-boxed the same way
  (:meth:`PublishRounds.may_drop`); until then they keep serving their old state.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from typing import Final

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

ROUND_BUDGET_S: Final = 0.1
RETRY_S: Final = 1.0


class PublishRounds:
    """Which partitions of the current image are applied, and when to run the next round."""

    def __init__(
        self,
        budget_s: float = ROUND_BUDGET_S,
        retry_s: float = RETRY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.budget_s = budget_s
        self.retry_s = retry_s
        self._clock = clock
        self._image: object = None
        self._done: set[TopicPartition] = set()
        self._deadline = math.inf
        self._deferred = 0
        self._applied = 0
        self._failed: dict[TopicPartition, str] = {}
        self._failed_now: list[TopicPartition] = []
        self._scheduled: asyncio.Handle | None = None
        self.rounds = 0

    def begin(self, image: object) -> None:
        """Start a round on ``image`` (a new image: every partition is pending again)."""
        if image is not self._image:
            self._image = image
            self._done.clear()
        self._deferred = 0
        self._applied = 0
        self._failed_now = []
        self.rounds += 1
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._deadline = math.inf
        else:
            self._deadline = self._clock() + self.budget_s

    def skip(self, tp: TopicPartition) -> bool:
        """True if ``tp`` is already applied to this image, or this round is out of time
        (every round applies at least one partition, so rounds always make progress)."""
        if tp in self._done:
            return True
        if self._deferred or (self._applied and self._clock() >= self._deadline):
            self._deferred += 1
            return True
        return False

    def may_drop(self) -> bool:
        """True if this round still has time to delete one more partition's log (a deleted
        topic's partitions go in rounds too); False counts it as left for the next round."""
        if self._deferred or (self._applied and self._clock() >= self._deadline):
            self._deferred += 1
            return False
        self._applied += 1
        return True

    def done(self, tp: TopicPartition) -> None:
        self._applied += 1
        self._done.add(tp)
        self._failed.pop(tp, None)

    def failed(self, tp: TopicPartition, exc: BaseException) -> None:
        """``tp`` could not be opened for lack of file descriptors; retried later."""
        self._applied += 1
        self._failed[tp] = f"Partition {tp[0]}-{tp[1]} cannot be opened now: {exc}"
        self._failed_now.append(tp)

    def forget(self, tp: TopicPartition) -> None:
        self._failed.pop(tp, None)

    def unavailable(self, tp: TopicPartition) -> str | None:
        """Why ``tp`` is not served (out of file descriptors), or None."""
        return self._failed.get(tp)

    @property
    def pending(self) -> int:
        """Partitions this round left for later."""
        return self._deferred + len(self._failed_now)

    def end(self, again: Callable[[], None]) -> None:
        """Finish the round: report failures and schedule ``again`` if work is left."""
        if self._failed_now:
            first = self._failed_now[0]
            log.error(
                "%d partition(s) could not be opened for lack of file descriptors (first: %s); "
                "they answer KAFKA_STORAGE_ERROR and are retried in %.0f s",
                len(self._failed_now),
                self._failed[first],
                self.retry_s,
            )
        if not self.pending or self._scheduled is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._deferred:
            log.info("Applying metadata to %d more partition(s) in the next round", self._deferred)

        def run() -> None:
            self._scheduled = None
            again()

        delay = self.retry_s if self._failed_now and not self._deferred else 0.0
        self._scheduled = loop.call_later(delay, run)

    def cancel(self) -> None:
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
