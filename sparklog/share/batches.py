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
    records: Buffer, aborted: Iterable[tuple[int, int, int]] = ()
) -> list[FetchedBatch]:
    """The batches of ``records`` in order, each marked deliverable or not."""
    ranges: dict[int, list[tuple[int, int]]] = {}
    for producer_id, first, last in aborted:
        ranges.setdefault(producer_id, []).append((first, last))
    out: list[FetchedBatch] = []
    for _pos, header in iter_batches(records):
        deliverable = not header.is_control
        if deliverable and header.is_transactional:
            for first, last in ranges.get(header.producer_id, ()):
                if first <= header.base_offset <= last:
                    deliverable = False
                    break
        out.append(FetchedBatch(header.base_offset, header.last_offset, deliverable))
    return out
