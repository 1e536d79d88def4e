"""Executor-side hot reader: a partition's offset range fetched from its leader.

Contract of :func:`read_hot`: yields batches in the schema of :mod:`.schema` holding the data
records with ``start <= offset < end`` in offset order. Control batches are skipped; under
read_committed records of aborted transactions are skipped using the Fetch response's aborted
transaction list, as Kafka consumers do. Offsets that vanish under the read (retention) fail with
:class:`~.planning.DataLossError` when ``failOnDataLoss`` is true, else the read skips to the log
start. For now this uses Kafka Fetch; the gRPC read service comes later.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from sparklog.client.connection import KafkaConnection
from sparklog.protocol.record_codec import decode_batch
from sparklog.protocol.records import RECORDS_OFFSET

from .planning import DataLossError, HotPiece
from .schema import build_batch, headers_array

__all__ = ["read_hot"]

FETCH_MAX_BYTES = 8 << 20
OFFSET_OUT_OF_RANGE = 1
ABORT_MARKER = 0
MAX_EMPTY_FETCHES = 20
_LENGTH = struct.Struct(">i")
_LOG_OVERHEAD = 12


def _fetch(conn: KafkaConnection, piece: HotPiece, offset: int) -> Any:
    response = conn.request(
        "Fetch",
        {
            "max_wait_ms": 100,
            "min_bytes": 1,
            "max_bytes": FETCH_MAX_BYTES,
            "isolation_level": 1 if piece.read_committed else 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": piece.topic,
                    "topic_id": piece.topic_id,
                    "partitions": [
                        {
                            "partition": piece.partition,
                            "fetch_offset": offset,
                            "partition_max_bytes": FETCH_MAX_BYTES,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    return response["responses"][0]["partitions"][0]


class _Columns:
    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.types: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.headers: list[tuple[tuple[str, bytes | None], ...]] = []

    def batch(self, piece: HotPiece) -> pa.RecordBatch:
        return build_batch(
            topic=piece.topic,
            partition=piece.partition,
            keys=pa.array(self.keys, pa.binary()),
            values=pa.array(self.values, pa.binary()),
            offsets=pa.array(self.offsets, pa.int64()),
            timestamps_ms=pa.array(self.timestamps, pa.int64()),
            timestamp_types=pa.array(self.types, pa.int32()),
            headers=headers_array(self.headers) if piece.include_headers else None,
            include_headers=piece.include_headers,
        )


def read_hot(piece: HotPiece) -> Iterator[pa.RecordBatch]:
    offset = piece.start
    aborted_pids: set[int] = set()
    empty = 0
    with KafkaConnection.connect(piece.broker, client_id="sparklog-connector") as conn:
        while offset < piece.end:
            part = _fetch(conn, piece, offset)
            if part["error_code"] == OFFSET_OUT_OF_RANGE:
                log_start = int(part["log_start_offset"])
                if piece.fail_on_data_loss or log_start <= offset:
                    raise DataLossError(
                        f"Cannot fetch offset {offset} of {piece.topic}-{piece.partition}"
                        f" (log start {log_start}); records [{offset}, {log_start}) are lost."
                        " Set failOnDataLoss to false to skip them."
                    )
                offset = log_start
                continue
            if part["error_code"] != 0:
                raise RuntimeError(
                    f"Fetch {piece.topic}-{piece.partition} at {offset} failed with error"
                    f" {part['error_code']}"
                )
            # Aborted transactions start at first_offset; a pid stays aborted until its marker.
            pending = [
                (int(a["first_offset"]), int(a["producer_id"]))
                for a in part["aborted_transactions"] or ()
            ]
            heapq.heapify(pending)
            data = part["records"]
            columns = _Columns()
            pos, progressed = 0, False
            while data is not None and pos + RECORDS_OFFSET <= len(data):
                # A size-limited response may end with a partial batch: leave it for next time.
                if pos + _LOG_OVERHEAD + _LENGTH.unpack_from(data, pos + 8)[0] > len(data):
                    break
                header, records = decode_batch(data, pos)
                pos += header.size_in_bytes
                if header.next_offset <= offset:
                    continue
                progressed = True
                while pending and pending[0][0] <= header.last_offset:
                    aborted_pids.add(heapq.heappop(pending)[1])
                if header.is_control:
                    if records and _is_abort(records[0].key):
                        aborted_pids.discard(header.producer_id)
                elif not (
                    piece.read_committed
                    and header.is_transactional
                    and header.producer_id in aborted_pids
                ):
                    for record in records:
                        if offset <= record.offset < piece.end:
                            columns.offsets.append(record.offset)
                            columns.timestamps.append(record.timestamp)
                            columns.types.append(header.timestamp_type)
                            columns.keys.append(record.key)
                            columns.values.append(record.value)
                            columns.headers.append(record.headers)
                offset = max(offset, header.next_offset)
                if offset >= piece.end:
                    break
            if columns.offsets:
                yield columns.batch(piece)
            if not progressed:
                empty += 1
                if empty >= MAX_EMPTY_FETCHES:
                    raise RuntimeError(
                        f"{piece.topic}-{piece.partition}: no records at offset {offset} below"
                        f" {piece.end} after {empty} fetches (high watermark"
                        f" {part['high_watermark']})"
                    )
            else:
                empty = 0


def _is_abort(key: bytes | None) -> bool:
    # Control record key: version int16, type int16 (0 = ABORT, 1 = COMMIT).
    return key is not None and len(key) >= 4 and int.from_bytes(key[2:4], "big") == ABORT_MARKER
