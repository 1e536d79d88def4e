"""``sparklog log dump --files F.log[,G.log]``: kafka-dump-log.sh for our segment files.

Prints one line per batch (base offset, last offset, count, position, leader epoch, producer
fields, compression, CRC validity, size) and, with ``--print-data-log``, one line per record.
A torn or corrupt tail is reported, not fatal: the dump stops there and says how many bytes were
left unread, which is exactly what recovery would truncate.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from sparklog.protocol.record_codec import decode_batch
from sparklog.protocol.records import CorruptRecordError, iter_batches, validate_batch

_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def _show(value: bytes | None) -> str:
    if value is None:
        return "null"
    return value.decode("utf-8", errors="backslashreplace")


def dump_file(path: str, print_data: bool, out: TextIO | None = None) -> int:
    """Dump one segment; returns the number of bytes after the last valid batch."""
    stream = out or sys.stdout
    with open(path, "rb") as f:
        data = f.read()
    print(f"Dumping {path}", file=stream)
    end = 0
    for position, header in iter_batches(data):
        try:
            validate_batch(data, position)
            valid = True
        except CorruptRecordError:
            valid = False
        print(
            f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
            f"count: {header.records_count} baseSequence: {header.base_sequence} "
            f"lastSequence: {header.last_sequence} producerId: {header.producer_id} "
            f"producerEpoch: {header.producer_epoch} "
            f"partitionLeaderEpoch: {header.partition_leader_epoch} "
            f"isTransactional: {str(header.is_transactional).lower()} "
            f"isControl: {str(header.is_control).lower()} position: {position} "
            f"CreateTime: {header.max_timestamp} size: {header.size_in_bytes} "
            f"magic: {header.magic} compresscodec: {_CODECS.get(header.compression, '?')} "
            f"crc: {header.crc} isvalid: {str(valid).lower()}",
            file=stream,
        )
        if not valid:
            break
        end = position + header.size_in_bytes
        if print_data:
            _, records = decode_batch(data, position)
            for record in records:
                headers = ",".join(f"{k}:{_show(v)}" for k, v in record.headers)
                print(
                    f"| offset: {record.offset} CreateTime: {record.timestamp} "
                    f"keySize: {-1 if record.key is None else len(record.key)} "
                    f"valueSize: {-1 if record.value is None else len(record.value)} "
                    f"headerKeys: [{headers}] key: {_show(record.key)} "
                    f"payload: {_show(record.value)}",
                    file=stream,
                )
    leftover = len(data) - end
    if leftover:
        print(f"Found {leftover} invalid bytes at the end of {path}", file=stream)
    return leftover


def run_dump(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files.split(","):
        try:
            if dump_file(path, args.print_data_log):
                status = 1
        except OSError as exc:
            print(f"Error: cannot read {path}: {exc.strerror}", file=sys.stderr)
            status = 1
    return status
