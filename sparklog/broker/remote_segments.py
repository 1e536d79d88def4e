"""What a copy to the tier reads: a closed local segment, whole or from a batch boundary.

A new leader may hold a segment that straddles the store's highest copied offset (another
replica, leading before, rolled its segments elsewhere). Batch boundaries are the same on
every replica (followers append the leader's batches as they are), so such a segment is copied
from the batch starting right above the store's end: :func:`tail_position` finds that batch's
file position, :func:`copy_source` hands the copy a log file that starts there. Blocking file
I/O: :func:`copy_source` runs on the copier thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterator

from sparklog.storage.segment import LogSegment
from sparklog.tiering.metadata import LogSegmentData


def tail_position(segment: LogSegment, offset: int) -> int | None:
    """The file position of the batch starting at ``offset`` in ``segment``; None when no
    batch starts there (then the segment cannot be split at ``offset``)."""
    found = segment.translate_offset(offset)
    if found is None:
        return None
    position, header = found
    return position if header.base_offset == offset else None


@contextlib.contextmanager
def copy_source(data: LogSegmentData, position: int) -> Iterator[LogSegmentData]:
    """``data`` itself, or for ``position > 0`` a copy whose log holds the segment's bytes
    from ``position`` on (in a temporary file removed afterwards)."""
    if position <= 0:
        yield data
        return
    fd, path = tempfile.mkstemp(suffix=".log")
    try:
        with os.fdopen(fd, "wb") as out, open(data.log_path, "rb") as source:
            source.seek(position)
            shutil.copyfileobj(source, out)
        yield dataclasses.replace(data, log_path=path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
