"""Delayed operations: requests parked until their condition holds or their time runs out.

Kafka parks a fetch that has fewer than ``min_bytes`` available, and an ``acks=all`` produce that
the high watermark does not cover yet, in a purgatory keyed by partition. Here a delayed
operation is an awaiting coroutine: it registers interest in a set of partition keys and is woken
by :meth:`DelayedOperations.notify` (an append, a high-watermark move, a leadership change), then
re-checks its own condition. Waking is cheap and idempotent; a spurious wake-up only costs one
re-check, a missed one only delays the operation until its deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Iterable


class DelayedOperations:
    """Watch keys -> waiters. One instance per kind of operation (fetch, produce)."""

    def __init__(self) -> None:
        self._watchers: dict[Hashable, set[asyncio.Event]] = {}

    def notify(self, key: Hashable) -> None:
        for event in self._watchers.get(key, ()):
            event.set()

    async def wait_until(
        self,
        keys: Iterable[Hashable],
        condition: Callable[[], bool],
        timeout_s: float,
    ) -> bool:
        """Wait until ``condition()`` is true (re-checked on every notify of ``keys``).

        Returns the final value of the condition: False means the deadline passed first.
        """
        if condition():
            return True
        if timeout_s <= 0:
            return False
        event = asyncio.Event()
        key_list = list(keys)
        for key in key_list:
            self._watchers.setdefault(key, set()).add(event)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return condition()
                try:
                    await asyncio.wait_for(event.wait(), remaining)
                except TimeoutError:
                    return condition()
                event.clear()
                if condition():
                    return True
        finally:
            for key in key_list:
                waiters = self._watchers.get(key)
                if waiters is not None:
                    waiters.discard(event)
                    if not waiters:
                        del self._watchers[key]
