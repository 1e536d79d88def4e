"""Opening a partition directory: Kafka's ``LogLoader`` steps before the log is usable.

Contract (reliability note A7):
- :func:`sweep_temp_files` deletes ``*.deleted``, ``*.cleaned`` and ``*.tmp`` files, completes
  ``*.swap`` files unless they come from an unfinished split (KAFKA-6264), and removes index
  files whose ``.log`` is gone.
- :func:`recover_segments` re-checks (CRC, offsets) every segment from the one holding the
  recovery point after a crash, and any segment whose tail is damaged even after a clean
  shutdown. After the first truncation, all later segments are deleted, so the result is a
  prefix of what was appended. Indexes that fail their sanity check are rebuilt by
  :class:`LogSegment` on open regardless of the shutdown kind.
"""

from __future__ import annotations

import bisect
import logging
import os

from sparklog.storage.checkpoint import read_partition_metadata
from sparklog.storage.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment
from sparklog.storage.slices import DELETED_SUFFIX
from sparklog.storage.txn_index import TXN_INDEX_SUFFIX

PARTITION_METADATA = "partition.metadata"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
TMP_SUFFIX = ".tmp"

_log = logging.getLogger(__name__)


def log_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_log_dir_name(name: str) -> tuple[str, int] | None:
    """``(topic, partition)`` for a ``topic-partition`` directory name, else ``None``."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        return None
    return topic, int(partition)


def load_topic_id(directory: str) -> bytes | None:
    path = os.path.join(directory, PARTITION_METADATA)
    try:
        return read_partition_metadata(path)
    except FileNotFoundError:
        return None
    except ValueError as exc:
        _log.warning("Ignoring unreadable %s: %s", path, exc)
        return None


def _base_of(name: str) -> int | None:
    stem = name.split(".", 1)[0]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


def sweep_temp_files(directory: str) -> None:
    """Kafka's ``removeTempFilesAndCollectSwapFiles`` for one log directory."""
    names = os.listdir(directory)
    cleaned_bases = [
        b for n in names if n.endswith(CLEANED_SUFFIX) and (b := _base_of(n)) is not None
    ]
    min_cleaned = min(cleaned_bases, default=None)
    for name in names:
        path = os.path.join(directory, name)
        if name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX, TMP_SUFFIX)):
            os.remove(path)
        elif name.endswith(SWAP_SUFFIX):
            base = _base_of(name)
            if base is None or (min_cleaned is not None and base >= min_cleaned):
                # KAFKA-6264: a swap from an unfinished split; the originals are still there.
                os.remove(path)
            else:
                os.replace(path, path[: -len(SWAP_SUFFIX)])
    names = os.listdir(directory)
    logs = {b for n in names if n.endswith(LOG_SUFFIX) and (b := _base_of(n)) is not None}
    for name in names:
        if name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)):
            base = _base_of(name)
            if base is not None and base not in logs:
                os.remove(os.path.join(directory, name))


def segment_bases(directory: str) -> list[int]:
    return sorted(
        b
        for n in os.listdir(directory)
        if n.endswith(LOG_SUFFIX) and (b := _base_of(n)) is not None
    )


def recover_segments(
    directory: str, segments: list[LogSegment], recovery_point: int, clean: bool
) -> list[tuple[int, int]]:
    """Recover segments from the one holding ``recovery_point`` (all of them after a crash;
    only damaged ones after a clean shutdown). Deletes segments after a truncation. Returns
    the (epoch, start offset) pairs seen, for the epoch cache."""
    bases = [s.base_offset for s in segments]
    first = 0 if clean else max(bisect.bisect_right(bases, recovery_point) - 1, 0)
    epoch_starts: list[tuple[int, int]] = []
    for i, segment in enumerate(segments):
        if (not clean and i >= first) or segment.needs_recovery:
            _log.info("Recovering segment %s", segment.path)
            result = segment.recover()
            epoch_starts.extend(result.epoch_starts)
            if result.truncated_bytes:
                _log.warning(
                    "Corruption found in segment %s, truncating %d bytes at position %d",
                    segment.path,
                    result.truncated_bytes,
                    result.valid_bytes,
                )
                for later in segments[i + 1 :]:
                    _log.warning("Deleting segment %s after a truncation", later.path)
                    later.delete_now()
                del segments[i + 1 :]
                break
    if segments and any(s.indexes_rebuilt for s in segments):
        _log.info("Rebuilt indexes in %s", directory)
    return epoch_starts
