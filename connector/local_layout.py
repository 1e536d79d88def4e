"""Driver-local partition directories for the native plan's shared scan of local files.

A scan over several partitions' Parquet files needs each row's ``partition``. Told by a
``CASE`` over ``_metadata`` (:func:`.native._partition_case`), it costs every query: Spark then
builds the whole metadata struct (path, name, size, row index...) for every row, even for a
``count()`` that reads no column (measured on the 2-core machine, 2M rows in 30 files: a
``count()`` took 0.45 CPU s against 0.34 without it; four per-partition scans and a union
took 0.73). Spark's own partition discovery gives the column for free: a file under a
``partition=N`` directory below the scan's ``basePath`` carries ``N`` as a constant of the
file (no per-row work, ``count()`` reads nothing, a filter on it prunes files before they are
opened).

Contract of :func:`partition_layout`: given local file paths per partition (tier objects of a
``file://`` store, hot tail files of :mod:`.hot_tail`), it returns a directory (the scan's
``basePath``) holding ``partition=N/<index>-<name>`` symbolic links to them, and the links'
``file://`` URLs in the order given. Only for a ``local`` master (the executors must see the
driver's directory). The same files give the same directory again (one per distinct set, cached
for the process), so repeated reads of an unchanged range create nothing. Directories live in
one temporary directory per driver process, removed at exit, and are never removed before: a
DataFrame may still name them. A link whose target disappears (retention) reads as a missing
file, as the target would (``ignoreMissingFiles`` applies).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping, Sequence
from urllib.parse import unquote, urlparse

__all__ = ["local_path", "partition_layout"]

_lock = threading.Lock()
_root: list[str] = []
_layouts: dict[tuple[tuple[int, tuple[str, ...]], ...], tuple[str, list[str]]] = {}


def local_path(url: str) -> str | None:
    """The absolute local path of a ``file:`` URL (or of a bare absolute path), else None."""
    parsed = urlparse(url)
    if parsed.scheme not in ("", "file") or parsed.netloc not in ("", "localhost"):
        return None
    path = unquote(parsed.path)
    return path if os.path.isabs(path) else None


def _base() -> str:
    with _lock:
        if not _root:
            path = tempfile.mkdtemp(prefix="sparklog-layout-")
            atexit.register(shutil.rmtree, path, True)
            _root.append(path)
        return _root[0]


def partition_layout(files: Mapping[int, Sequence[str]]) -> tuple[str, list[str]]:
    """``(basePath, link URLs)`` for ``files`` (partition -> local paths); see the module
    docstring."""
    key = tuple((partition, tuple(paths)) for partition, paths in sorted(files.items()))
    with _lock:
        hit = _layouts.get(key)
    if hit is not None:
        return hit[0], list(hit[1])
    root = tempfile.mkdtemp(prefix="scan-", dir=_base())
    urls = []
    for partition, paths in files.items():
        directory = os.path.join(root, f"partition={int(partition)}")
        os.mkdir(directory)
        for index, path in enumerate(paths):
            # The index keeps names unique; Spark skips names starting with "_" or ".".
            link = os.path.join(directory, f"{index:06d}-{os.path.basename(path)}")
            os.symlink(path, link)
            urls.append(f"file://{link}")
    with _lock:
        _layouts.setdefault(key, (f"file://{root}", urls))
    return f"file://{root}", list(urls)
