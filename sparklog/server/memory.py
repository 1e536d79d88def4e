"""The node process's memory policy: no transparent huge pages.

A node allocates and frees large short-lived buffers all the time: Arrow's pool (mimalloc)
holds a remote fetch's decoded row group, numpy its encoder's arrays, Python the rebuilt batch
bytes. Both mimalloc and numpy ask the kernel for transparent huge pages on such regions
(``madvise(MADV_HUGEPAGE)``), so on a kernel whose THP mode is ``madvise`` (the usual default)
each first touch of a fresh 2 MiB region makes the kernel zero the whole huge page, and every
purge of freed memory repeats it. Profiled on a node serving the first read of tiered data,
zeroing pages was a third of its CPU. As Redis and MongoDB do for the same reason, the node
opts its own process out with ``prctl(PR_SET_THP_DISABLE)``: regular pages are then zeroed only
where touched and a freed region is refilled page by page. The setting is the process's own
(inherited by children it forks) and changes nothing for the rest of the machine.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

__all__ = ["disable_transparent_huge_pages"]

log = logging.getLogger(__name__)

_PR_SET_THP_DISABLE = 41  # linux/prctl.h, Linux 3.15+


def disable_transparent_huge_pages() -> bool:
    """Opt this process out of transparent huge pages; whether the kernel took it.

    A no-op (False) off Linux or where the call is refused (an old kernel, a seccomp filter):
    the node runs the same, only with the kernel's default.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        result = libc.prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0)
    except (OSError, AttributeError) as exc:
        log.debug("prctl(PR_SET_THP_DISABLE) unavailable: %s", exc)
        return False
    if result != 0:
        log.debug("prctl(PR_SET_THP_DISABLE) refused: errno %d", ctypes.get_errno())
        return False
    return True
