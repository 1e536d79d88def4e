"""The event queue of a deterministic simulation: actions at simulated times.

Contract: actions run in time order, and actions at the same time in the order they were
scheduled (a sequence number breaks ties, so a run is a function of its seed alone).
:meth:`EventQueue.next_seq` hands out numbers from the same counter, for ids that must be
unique and ordered along with the events.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator

Action = Callable[[], None]


class EventQueue:
    def __init__(self) -> None:
        self._queue: list[tuple[int, int, Action]] = []
        self._seq = 0

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def at(self, time_ms: int, action: Action) -> None:
        heapq.heappush(self._queue, (time_ms, self.next_seq(), action))

    def due(self, end_ms: int) -> Iterator[tuple[int, Action]]:
        """Pop the actions due at or before ``end_ms`` (including those they schedule)."""
        while self._queue and self._queue[0][0] <= end_ms:
            time_ms, _, action = heapq.heappop(self._queue)
            yield time_ms, action
