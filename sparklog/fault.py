"""Fatal faults and supervised tasks: nothing a node runs may fail without a trace.

Kafka routes an error the process cannot continue after (the raft I/O thread failing, the
metadata log dir failing, every data log dir failing) to a ``ProcessTerminatingFaultHandler``:
it logs ``Encountered fatal fault: <message>`` with the cause and halts the JVM with status 1,
running no shutdown hook. :func:`halt` does the same here: it logs at ERROR (the cause's
traceback included), flushes the log handlers and calls ``os._exit(1)``. No clean-shutdown
marker is written, so the next start recovers every log from its recovery point, exactly as
after a crash; nothing already written is touched.

:class:`FaultHandler` is the seam: the node and the raft driver take one (default
:func:`halt`), and tests pass a recorder instead of ending the test process.

:func:`supervise` gives a long-running task a done-callback. A task that ends with an
exception (not a cancellation) is logged at ERROR with its traceback, under its name, and the
exception is retrieved, so asyncio's "Task exception was never retrieved" never appears for
it; an *essential* task's failure then goes to the fault handler. :func:`install_loop_handler`
replaces the loop's exception handler with one that logs every unhandled error at ERROR with
its traceback (asyncio's own message kept, so a test can still look for it); it decides
nothing: what is fatal is for the supervised task to say.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from typing import Any, NoReturn, Protocol

log = logging.getLogger(__name__)

EXIT_STATUS = 1


class FaultHandler(Protocol):
    """Handles a fault the process cannot continue after."""

    def __call__(self, message: str, cause: BaseException | None = None) -> None: ...


def halt(message: str, cause: BaseException | None = None) -> NoReturn:
    """Kafka's ``ProcessTerminatingFaultHandler``: log, flush the logs, ``os._exit(1)``."""
    log.error("Encountered fatal fault: %s", message, exc_info=cause)
    flushables: list[Any] = [*logging.getLogger().handlers, sys.stdout, sys.stderr]
    for target in flushables:
        with contextlib.suppress(Exception):  # a broken log stream must not stop the halt
            target.flush()
    os._exit(EXIT_STATUS)


def supervise(
    task: asyncio.Task[Any],
    name: str,
    *,
    fault_handler: FaultHandler | None = None,
) -> asyncio.Task[Any]:
    """Log ``task``'s exception when it ends with one; with ``fault_handler`` (an essential
    task), escalate it there, and a cancellation too: an essential task is only ever cancelled
    by the node's shutdown, which the handler knows about, so any other cancellation (a
    ``CancelledError`` leaking out of an await the task did not own) is a fault rather than a
    silent end. Returns ``task``."""

    def done(finished: asyncio.Task[Any]) -> None:
        if finished.cancelled():
            if fault_handler is not None:
                fault_handler(f"the essential task {name} was cancelled", None)
            return
        exc = finished.exception()
        if exc is None:
            return
        log.error("Task %s failed", name, exc_info=exc)
        if fault_handler is not None:
            fault_handler(f"the essential task {name} failed: {exc!r}", exc)

    task.add_done_callback(done)
    return task


def loop_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Log an error asyncio could not deliver anywhere, at ERROR with its traceback."""
    message = str(context.get("message") or "Unhandled error in the event loop")
    exc = context.get("exception")
    where = context.get("task") or context.get("future") or context.get("handle")
    if where is not None:
        message = f"{message} ({where!r})"
    log.error("Event loop: %s", message, exc_info=exc if isinstance(exc, BaseException) else None)


def install_loop_handler(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Route the loop's unhandled errors to :func:`loop_exception_handler`."""
    target = loop or asyncio.get_running_loop()
    target.set_exception_handler(loop_exception_handler)
