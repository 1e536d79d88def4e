"""Tiered-storage throughput: transcode + upload (MB/s of segment per core) and the
Parquet -> Kafka batches re-encode behind a remote fetch, next to a local read of the same bytes.

Run: ``.venv/bin/python tests/bench/bench_tiering.py [--records N] [--value-bytes B]
[--codec 0-4] [--no-s3]``. Not collected by pytest (file name ``bench_*.py``); it asserts
nothing and prints one line per scenario. All timings are single-threaded, so MB/s is per core.

Scenarios (segment of N records in batches of 500, ``--codec`` compression, 4-byte keys):
  transcode      segment_to_parquet of the local .log to a local Parquet file
  copy file://   RemoteStorageManager.copy_log_segment_data to a file:// store
  copy s3 moto   the same to S3 through a moto server on loopback (unless --no-s3)
  re-encode      parquet_to_batches of the whole segment (what a remote fetch does), origin codec
  re-encode none the same with compression none
  fetch file://  RemoteStorageManager.fetch_log_segment in 1 MiB fetches, from a file:// store
  local read     reading the .log bytes from disk in 1 MiB slices (what a local fetch sends)
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sparklog.protocol.kafka_uuid import random_uuid
from sparklog.protocol.record_codec import build_batch
from sparklog.tiering.metadata import (
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    TopicIdPartition,
)
from sparklog.tiering.rsm import RemoteStorageManager
from sparklog.tiering.store import open_store
from sparklog.tiering.transcode import parquet_to_batches, segment_to_parquet

MB = 1_000_000


def build_segment(path: Path, records: int, value_bytes: int, codec: int) -> int:
    # Random hex text: compresses about 2:1 like typical payloads, distinct per record.
    half = (value_bytes + 1) // 2
    with open(path, "wb") as f:
        for base in range(0, records, 500):
            n = min(500, records - base)
            batch = [
                (
                    b"%04d" % (i % 10000),
                    os.urandom(half).hex().encode()[:value_bytes],
                    (),
                    1_700_000_000_000 + base + i,
                )
                for i in range(n)
            ]
            f.write(build_batch(batch, base_offset=base, compression=codec))
    return path.stat().st_size


_PAYLOAD_BYTES = 0


def timed(label: str, size: int, fn: Callable[[], object], records: int) -> None:
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    print(
        f"{label:<16} {size / MB / elapsed:8.1f} MB/s of segment  "
        f"{_PAYLOAD_BYTES / MB / elapsed:8.1f} MB/s of keys+values  "
        f"{records / elapsed / 1000:8.1f} k records/s  ({elapsed:.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--codec", type=int, default=4, help="0 none 1 gzip 2 snappy 3 lz4 4 zstd")
    parser.add_argument("--no-s3", action="store_true")
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's request log
    global _PAYLOAD_BYTES
    _PAYLOAD_BYTES = args.records * (4 + args.value_bytes)

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "00000000000000000000.log"
        size = build_segment(log, args.records, args.value_bytes, args.codec)
        print(
            f"segment: {args.records} records, {args.value_bytes} B values, codec {args.codec},"
            f" {size / MB:.1f} MB on disk"
        )
        n = args.records
        out = str(Path(tmp) / "seg.parquet")
        timed("transcode", size, lambda: segment_to_parquet(str(log), out=out), n)
        parquet = Path(out).read_bytes()
        print(f"parquet: {len(parquet) / MB:.1f} MB ({len(parquet) / size:.0%} of the segment)")

        tp = TopicIdPartition(random_uuid(), "bench", 0)
        metadata = RemoteLogSegmentMetadata(
            RemoteLogSegmentId.generate(tp), 0, n - 1, 0, 1, 0, size
        )
        data = LogSegmentData(str(log))
        rsm = RemoteStorageManager(open_store(f"file://{tmp}/remote"), cluster_id="bench")
        timed("copy file://", size, lambda: rsm.copy_log_segment_data(metadata, data), n)

        if not args.no_s3:
            s3_copy(tmp, size, n, metadata, data)

        timed("re-encode", size, lambda: parquet_to_batches(parquet, 0, 1 << 40), n)
        timed(
            "re-encode none",
            size,
            lambda: parquet_to_batches(parquet, 0, 1 << 40, compression=0),
            n,
        )

        def remote_fetch() -> None:
            offset = 0
            while offset < n:
                chunk = rsm.fetch_log_segment(metadata, offset, 1 << 20)
                offset = _next_offset(chunk)

        timed("fetch file://", size, remote_fetch, n)

        def local_read() -> None:
            with open(log, "rb") as f:
                while f.read(1 << 20):
                    pass

        timed("local read", size, local_read, n)


def _next_offset(chunk: bytes) -> int:
    from sparklog.protocol.records import iter_batches

    last = -1
    for _, header in iter_batches(chunk):
        last = header.last_offset
    return last + 1


def s3_copy(
    tmp: str, size: int, n: int, metadata: RemoteLogSegmentMetadata, data: LogSegmentData
) -> None:
    try:
        import s3fs
        from moto.server import ThreadedMotoServer
    except ImportError:
        print("copy s3 moto     skipped (moto or s3fs missing)")
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        options = {"key": "k", "secret": "s", "endpoint_url": f"http://127.0.0.1:{port}"}
        s3fs.S3FileSystem(skip_instance_cache=True, **options).mkdir("bench")
        rsm = RemoteStorageManager(open_store("s3://bench/remote", options), cluster_id="bench")
        timed("copy s3 moto", size, lambda: rsm.copy_log_segment_data(metadata, data), n)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
