"""Which fetched batches a share-partition may hand out: never a control batch, and under
read_committed never a batch of an aborted transaction (its producer's data between the
aborted range's first offset and its abort marker)."""

from __future__ import annotations

from sparklog.protocol.record_codec import RecordInput, build_batch
from sparklog.share.batches import classify_batches
from sparklog.share.share_partition import FetchedBatch


def batch(base: int, count: int, *, producer_id: int = -1, txn: bool = False) -> bytes:
    records = [RecordInput(None, b"v") for _ in range(count)]
    return build_batch(
        records,
        base_offset=base,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
        is_transactional=txn,
    )


def marker(offset: int, producer_id: int) -> bytes:
    return build_batch(
        [RecordInput(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")],
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )


def test_plain_batches_are_deliverable() -> None:
    data = batch(0, 3) + batch(3, 2)
    assert classify_batches(data) == [FetchedBatch(0, 2), FetchedBatch(3, 4)]


def test_control_and_aborted_batches_are_not() -> None:
    data = (
        batch(0, 2, producer_id=7, txn=True)  # aborted by the marker at 4
        + batch(2, 2, producer_id=8, txn=True)  # another producer's, committed
        + marker(4, 7)
        + batch(5, 1, producer_id=7, txn=True)  # after the abort: a new transaction
        + marker(6, 8)
    )
    assert classify_batches(data, [(7, 0, 4)]) == [
        FetchedBatch(0, 1, False),
        FetchedBatch(2, 3, True),
        FetchedBatch(4, 4, False),
        FetchedBatch(5, 5, True),
        FetchedBatch(6, 6, False),
    ]


def test_a_partial_trailing_batch_is_left_out() -> None:
    data = batch(0, 2) + batch(2, 2)[:-5]
    assert classify_batches(data) == [FetchedBatch(0, 1)]


def test_an_aborted_range_without_an_end_closes_at_the_producers_marker() -> None:
    data = (
        batch(0, 2, producer_id=7, txn=True)
        + marker(2, 7)
        + batch(3, 2, producer_id=7, txn=True)  # the next transaction, committed
        + marker(5, 7)
    )
    assert classify_batches(data, [(7, 0, None)]) == [
        FetchedBatch(0, 1, False),
        FetchedBatch(2, 2, False),
        FetchedBatch(3, 4, True),
        FetchedBatch(5, 5, False),
    ]
