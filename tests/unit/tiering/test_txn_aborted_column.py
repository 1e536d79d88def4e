"""The remote log manager hands a segment's aborted transactions to the transcoder, so the
Parquet ``aborted`` column marks exactly the data of aborted transactions (issue 5)."""

from __future__ import annotations

import io
import os

import pyarrow.parquet as pq

from sparklog.broker.remote_log_manager import segment_aborted_txns
from sparklog.protocol.kafka_uuid import random_uuid
from sparklog.protocol.record_codec import build_batch
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from sparklog.tiering.layout import STATE_COPY_FINISHED, ManifestSegment
from sparklog.tiering.metadata import AbortedTxn
from sparklog.tiering.transcode import segment_to_parquet


class _Clock:
    def __call__(self) -> int:
        return 1_000_000


def _txn(pid: int, seq: int, value: bytes) -> bytes:
    return build_batch(
        [(b"k", value, (), 1_000_000)],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=True,
    )


def test_aborted_column_follows_the_transaction_indexes(tmp_path: object) -> None:
    log = Log.open(os.path.join(str(tmp_path), "t-0"), LogConfig(), _Clock())
    log.append_as_leader(_txn(1, 0, b"a0"), 0)  # 0: aborted, marker in the next segment
    log.append_as_leader(_txn(2, 0, b"c0"), 0)  # 1: committed
    log.append_as_leader(build_batch([(b"k", b"p", (), 1_000_000)]), 0)  # 2: plain
    log.append_control_marker(2, 0, 0, True, 0)  # 3
    log.roll()
    log.append_as_leader(_txn(1, 1, b"a1"), 0)  # 4: aborted
    log.append_control_marker(1, 0, 0, False, 0)  # 5
    log.roll()
    log.high_watermark = log.log_end_offset
    first, second = log.segments[0], log.segments[1]

    assert segment_aborted_txns(log, first.base_offset, first.next_offset) == (AbortedTxn(1, 0, 5),)
    assert segment_aborted_txns(log, second.base_offset, second.next_offset) == (
        AbortedTxn(1, 0, 5),
    )
    flags: dict[int, bool] = {}
    for segment in (first, second):
        txns = segment_aborted_txns(log, segment.base_offset, segment.next_offset)
        data, _ = segment_to_parquet(segment.path, txns)
        assert isinstance(data, bytes)
        table = pq.read_table(io.BytesIO(data), columns=["offset", "is_control", "aborted"])
        for offset, control, aborted in zip(
            table["offset"].to_pylist(),
            table["is_control"].to_pylist(),
            table["aborted"].to_pylist(),
            strict=True,
        ):
            if not control:
                flags[offset] = aborted
    assert flags == {0: True, 1: False, 2: False, 4: True}


def test_transcode_counts_control_aborted_and_transactional_rows(tmp_path: object) -> None:
    """The counts the manifest records (issue 15): a reader plans a whole object without row
    filters only when they say it holds nothing to drop."""
    log = Log.open(os.path.join(str(tmp_path), "t-0"), LogConfig(), _Clock())
    log.append_as_leader(_txn(1, 0, b"a0"), 0)  # 0: aborted
    log.append_as_leader(_txn(2, 0, b"c0"), 0)  # 1: committed
    log.append_as_leader(build_batch([(b"k", b"p", (), 1_000_000)]), 0)  # 2: plain
    log.append_control_marker(2, 0, 0, True, 0)  # 3: COMMIT
    log.append_control_marker(1, 0, 0, False, 0)  # 4: ABORT
    log.roll()
    log.append_as_leader(build_batch([(b"k", b"p", (), 1_000_000)]), 0)  # 5: plain only
    log.roll()
    log.high_watermark = log.log_end_offset
    counts = []
    for segment in log.segments[:2]:
        txns = segment_aborted_txns(log, segment.base_offset, segment.next_offset)
        _, stats = segment_to_parquet(segment.path, txns)
        counts.append((stats.control_count, stats.aborted_count, stats.transactional_count))
    assert counts == [(2, 1, 4), (0, 0, 0)]


def test_manifest_counts_round_trip_and_old_manifests_stay_readable() -> None:
    segment = ManifestSegment(
        segment_id=random_uuid(),
        base_offset=0,
        end_offset=9,
        record_count=10,
        first_timestamp=1,
        max_timestamp=2,
        size_bytes=3,
        segment_bytes=4,
        leader_epochs=((0, 0),),
        path="segments/x.parquet",
        state=STATE_COPY_FINISHED,
        copied_ms=1,
        broker_id=1,
        leader_epoch=0,
        control_records=2,
        aborted_records=3,
        transactional_records=7,
    )
    doc = segment.to_json()
    assert ManifestSegment.from_json(doc) == segment
    assert (segment.rows_to_drop(False), segment.rows_to_drop(True)) == (2, 5)
    old = {k: v for k, v in doc.items() if not k.endswith("_records")}
    legacy = ManifestSegment.from_json(old)
    assert legacy.control_records is None and legacy.rows_to_drop(False) is None
    assert "control_records" not in legacy.to_json()
