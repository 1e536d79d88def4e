"""The node's file descriptor budget, settled once at start before any log is opened.

- The soft ``RLIMIT_NOFILE`` is raised to the hard limit, as the JVM does for Kafka
  (HotSpot's ``MaxFDLimit``, on by default): a shell's ``ulimit -n 1024`` soft limit under a
  larger hard one then costs nothing. A limit the kernel refuses to raise is kept as it is.
- The segment file pool (:mod:`sparklog.storage.handles`) is then bounded by
  ``sparklog.log.open.files.max``, or by half of the (raised) soft limit when that is 0, so the
  rest stays free for sockets, the metadata log and checkpoints.
"""

from __future__ import annotations

import contextlib
import resource

from sparklog.config import ServerConfig
from sparklog.storage.handles import configure_default_pool


def raise_open_files_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard one if allowed; ``(before, after)``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def settle_open_files(config: ServerConfig) -> str:
    """Raise the limit, bound the segment file pool; the line the node logs about it."""
    before, after = raise_open_files_limit()
    pool = configure_default_pool(int(config.get("sparklog.log.open.files.max")))
    raised = f", raised from {before}" if after != before else ""
    return (
        f"Segment files are opened on demand, at most {pool.capacity} at a time "
        f"(RLIMIT_NOFILE {after}{raised})"
    )
