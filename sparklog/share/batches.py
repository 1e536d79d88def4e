"""Which fetched batches a share-partition may hand out.

A share consumer gets whole record batches and the offset ranges it acquired; it must never
acquire a control batch (transaction markers) nor, under ``share.isolation.level`` =
read_committed, a batch of an aborted transaction. Aborted ranges are given as
``(producer_id, first_offset, last_offset)`` (Kafka's transaction index entries; ``last_offset``
is the abort marker's offset).
"""

from __future__ import annotations

from collections.abc import Iterable

from sparklog.protocol.records import Buffer, iter_batches
from sparklog.share.share_partition import FetchedBatch


def classify_batches(
    records: Buffer, aborted: Iterable[tuple[int, int, int | None]] = ()
) -> list[FetchedBatch]:
    """The batches of ``records`` in order, each marked deliverable or not. An aborted range
    whose last offset is None (remote storage gives only where it starts) ends at its
    producer's next control batch, as a read_committed consumer reads it."""
    ranges: dict[int, list[tuple[int, int | None]]] = {}
    for producer_id, first, last in sorted(aborted, key=lambda a: (a[0], a[1])):
        ranges.setdefault(producer_id, []).append((first, last))
    active: dict[int, int] = {}  # producer -> start of the open-ended range it is inside
    closed: set[tuple[int, int]] = set()
    out: list[FetchedBatch] = []
    for _pos, header in iter_batches(records):
        pid = header.producer_id
        if header.is_control:
            if pid in active:
                closed.add((pid, active.pop(pid)))
            out.append(FetchedBatch(header.base_offset, header.last_offset, False))
            continue
        deliverable = True
        if header.is_transactional:
            for first, last in ranges.get(pid, ()):
                if last is None:
                    if header.base_offset >= first and (pid, first) not in closed:
                        active.setdefault(pid, first)
                elif first <= header.base_offset <= last:
                    deliverable = False
            if pid in active:
                deliverable = False
        out.append(FetchedBatch(header.base_offset, header.last_offset, deliverable))
    return out
