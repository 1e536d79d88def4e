"""The remote log manager hands a segment's aborted transactions to the transcoder, so the
Parquet ``aborted`` column marks exactly the data of aborted transactions (issue 5)."""

from __future__ import annotations

import io
import os

import pyarrow.parquet as pq

from sparklog.broker.remote_log_manager import segment_aborted_txns
from sparklog.protocol.record_codec import build_batch
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
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
