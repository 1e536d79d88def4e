"""Tiered-storage throughput: transcode + upload (MB/s of segment per core) and the
Parquet -> Kafka batches re-encode behind a remote fetch, next to a local read of the same bytes.

Run: ``.venv/bin/python tests/bench/bench_tiering.py [--records N] [--value-bytes B ...]
[--codec 0-4] [--values hex|random|json] [--no-s3] [--no-node] [--consumer-records N]
[--fetch-cache-bytes N] [--segment-bytes N]``. Not collected by pytest (file
name ``bench_*.py``); it asserts no timing (only that consumers got every record) and prints one
line per scenario. The library scenarios run in this thread and are timed in CPU time of the
process, so their MB/s is per core even on a loaded machine; the consumer scenarios share the
machine between the node and the consumer (wall time).

Library scenarios, once per ``--value-bytes`` (default 100 and 1024; a segment of N records
for 100-byte values, proportionally fewer for larger ones, in batches of 500, ``--codec``
compression, 4-byte keys; ``--values``: random hex text by default, or random bytes, or
JSON-ish events; the ``parquet:`` line names the codecs the transcode chose for keys and
values, which ``pyarrow write`` uses too):
  transcode      segment_to_parquet of the local .log to a local Parquet file
  pyarrow write  the same rows, already an Arrow table in memory, written with the same
                 writer options: the limit transcoding can approach
  decompress     only decompressing the segment's batches (the codec library's speed)
  ceiling        write and decompress together (1 / (1/write + 1/decompress)): what
                 transcoding could reach if decoding records cost nothing
  copy file://   RemoteStorageManager.copy_log_segment_data to a file:// store
  copy s3 moto   the same to S3 through a moto server on loopback (unless --no-s3)
  re-encode      parquet_to_batches of the whole segment (what a remote fetch does), origin codec
  re-encode none the same with compression none
  fetch file://  RemoteStorageManager.fetch_log_segment in 1 MiB fetches, from a file:// store
  local read     reading the .log bytes from disk in 1 MiB slices (what a local fetch sends)

Then, end to end through a real node (unless --no-node): ``--consumer-records`` records of
``--value-bytes`` random bytes go to two topics on one node, a plain one and one with
``remote.storage.enable=true`` and ``local.retention.bytes=1`` (so all but the active segment
is served by remote fetch), both with ``segment.bytes`` ``--segment-bytes`` (16 MiB by default,
a 64th of Kafka's 1 GiB; 1 MiB, the minimum, shows the per-segment cost), followed by one
segment of filler records so that every measured record is in a tiered segment; a
confluent-kafka consumer then reads each from offset 0:
  consume local          the plain topic, local fetch (sendfile of segment slices)
  consume remote file:// the tiered topic, store on local disk
  consume remote s3 moto the same with the store on a moto S3 server (unless --no-s3)
Five rounds interleave the topics, after a warm-up read of one tiered segment of another
topic (a running broker has served remote reads before). Round 1 is the first read of the
tiered data (nothing of it rebuilt yet: every remote fetch reads Parquet and encodes
batches); rounds 2-5 read the same range again, which
``sparklog.remote.storage.fetch.cache.bytes`` (``--fetch-cache-bytes``: 0, off, by default as
on a node; 268435456 shows reads served from rebuilt batches kept in memory, whose first read
pays for filling that memory) may serve from rebuilt batches. Each line shows
round 1 and the best of rounds 2-5 apart, with the node's CPU time (and per MB) in each, then
the remote/local throughput ratio of the first read and of the repeat reads, both against the
best local round (local fetches are served from the page cache in every round).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import os
import random
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pyarrow as pa
import pyarrow.parquet as pq

from sparklog.protocol.kafka_uuid import random_uuid
from sparklog.protocol.record_codec import build_batch
from sparklog.tiering.metadata import (
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    TopicIdPartition,
)
from sparklog.tiering.parquet_batches import parquet_to_batches
from sparklog.tiering.rsm import RemoteStorageManager
from sparklog.tiering.store import open_store
from sparklog.tiering.transcode import (
    DEFAULT_ROW_GROUP_ROWS,
    open_parquet_writer,
    segment_to_parquet,
)
from tests.bench.bench_produce_consume import node_cpu_s
from tests.conftest import MotoS3
from tests.integration.node_harness import Node
from tests.integration.tiering_support import StoreView

MB = 1_000_000


def make_value(kind: str, i: int, value_bytes: int) -> bytes:
    """``hex``: random hex text, compresses about 2:1 (zstd's entropy coder only), distinct
    per record; ``random``: random bytes (incompressible: encrypted or already compressed
    payloads); ``json``: JSON-ish events with a few varying fields (compresses several-fold)."""
    if kind == "random":
        return os.urandom(value_bytes)
    if kind == "json":
        event = (
            b'{"id":%d,"user":"user-%d","event":"%s","ts":%d,"session":"%s","tags":["web",'
            b'"eu-west-1","v2"],"amount":%d.%02d,"items":['
            % (
                i,
                i % 9973,
                (b"click", b"view", b"purchase")[i % 3],
                1_700_000_000_000 + i,
                os.urandom(8).hex().encode(),
                i % 500,
                i % 100,
            )
        )
        item = b'{"sku":"%s","qty":%d},'
        while len(event) < value_bytes - 2:
            event += item % (os.urandom(4).hex().encode(), len(event) % 9)
        return (event[: value_bytes - 2] + b"]}")[:value_bytes]
    return os.urandom((value_bytes + 1) // 2).hex().encode()[:value_bytes]


def build_segment(path: Path, records: int, value_bytes: int, codec: int, kind: str) -> int:
    with open(path, "wb") as f:
        for base in range(0, records, 500):
            n = min(500, records - base)
            batch = [
                (
                    b"%04d" % (i % 10000),
                    make_value(kind, base + i, value_bytes),
                    (),
                    1_700_000_000_000 + base + i,
                )
                for i in range(n)
            ]
            f.write(build_batch(batch, base_offset=base, compression=codec))
    return path.stat().st_size


_PAYLOAD_BYTES = 0
_REPEATS = 3
_CONSUMER_ROUNDS = 5


def timed(label: str, size: int, fn: Callable[[], object], records: int) -> float:
    """Best of ``_REPEATS`` runs (the first also warms caches and lazy imports up); returns
    the best time."""
    elapsed = float("inf")
    for _ in range(_REPEATS):
        start = time.process_time()
        fn()
        elapsed = min(elapsed, max(time.process_time() - start, 1e-9))
    report(label, size, elapsed, records)
    return elapsed


def report(label: str, size: int, elapsed: float, records: int) -> None:
    print(
        f"{label:<16} {size / MB / elapsed:8.1f} MB/s of segment  "
        f"{_PAYLOAD_BYTES / MB / elapsed:8.1f} MB/s of keys+values  "
        f"{records / elapsed / 1000:8.1f} k records/s  ({elapsed:.2f} s)"
    )


def decompress_all(log: Path) -> None:
    from sparklog.protocol.compression import decompress
    from sparklog.protocol.records import RECORDS_OFFSET, iter_batches

    buf = log.read_bytes()
    for position, header in iter_batches(buf):
        if header.compression:
            decompress(
                header.compression, buf[position + RECORDS_OFFSET : position + header.size_in_bytes]
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, nargs="+", default=[100, 1024])
    parser.add_argument("--codec", type=int, default=4, help="0 none 1 gzip 2 snappy 3 lz4 4 zstd")
    parser.add_argument("--no-s3", action="store_true")
    parser.add_argument("--no-node", action="store_true", help="skip the consumer scenarios")
    parser.add_argument("--consumer-records", type=int, default=200_000)
    parser.add_argument("--fetch-cache-bytes", type=int, default=0)
    parser.add_argument(
        "--segment-bytes",
        type=int,
        default=16 << 20,
        help="segment.bytes of the consumer scenarios' topics (Kafka's default is 1 GiB)",
    )
    parser.add_argument(
        "--values",
        choices=("hex", "random", "json"),
        default="hex",
        help="library scenarios' values: random hex text (default), random bytes, JSON-ish",
    )
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's request log
    for value_bytes in args.value_bytes:
        records = max(1000, args.records * 104 // (4 + value_bytes))
        library_scenarios(records, value_bytes, args.codec, args.no_s3, args.values)
    if not args.no_node:
        consumer_scenarios(
            args.consumer_records,
            args.value_bytes[0],
            args.no_s3,
            args.fetch_cache_bytes,
            args.segment_bytes,
        )


def library_scenarios(n: int, value_bytes: int, codec: int, no_s3: bool, kind: str) -> None:
    global _PAYLOAD_BYTES
    _PAYLOAD_BYTES = n * (4 + value_bytes)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "00000000000000000000.log"
        size = build_segment(log, n, value_bytes, codec, kind)
        print(
            f"segment: {n} records, {value_bytes} B {kind} values, codec {codec},"
            f" {size / MB:.1f} MB on disk"
        )
        out = str(Path(tmp) / "seg.parquet")
        timed("transcode", size, lambda: segment_to_parquet(str(log), out=out), n)
        parquet = Path(out).read_bytes()
        table = pq.read_table(pa.BufferReader(parquet))
        # The codecs the transcode chose for the record bytes (column_codecs), written alike.
        chunks = pq.ParquetFile(pa.BufferReader(parquet)).metadata.row_group(0)
        chosen = {
            chunks.column(i).path_in_schema: chunks.column(i).compression.lower()
            for i in range(chunks.num_columns)
            if chunks.column(i).path_in_schema in ("key", "value")
        }
        chosen = {name: "none" if c == "uncompressed" else c for name, c in chosen.items()}

        def write_from_memory() -> None:
            with open_parquet_writer(pa.BufferOutputStream(), codec_by_column=chosen) as writer:
                writer.write_table(table, row_group_size=DEFAULT_ROW_GROUP_ROWS)

        written = timed("pyarrow write", size, write_from_memory, n)
        unpacked = timed("decompress", size, lambda: decompress_all(log), n)
        report("ceiling", size, written + unpacked, n)
        print(
            f"parquet: {len(parquet) / MB:.1f} MB ({len(parquet) / size:.0%} of the segment;"
            f" keys {chosen.get('key')}, values {chosen.get('value')})"
        )

        tp = TopicIdPartition(random_uuid(), "bench", 0)
        metadata = RemoteLogSegmentMetadata(
            RemoteLogSegmentId.generate(tp), 0, n - 1, 0, 1, 0, size
        )
        data = LogSegmentData(str(log))
        rsm = RemoteStorageManager(open_store(f"file://{tmp}/remote"), cluster_id="bench")
        timed("copy file://", size, lambda: rsm.copy_log_segment_data(metadata, data), n)

        if not no_s3:
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


def _next_offset(chunk: bytes | memoryview) -> int:
    from sparklog.protocol.records import iter_batches

    last = -1
    for _, header in iter_batches(chunk):
        last = header.last_offset
    return last + 1


@contextlib.contextmanager
def moto_endpoint() -> Iterator[str]:
    """A moto S3 server on a free loopback port for the block's duration: its endpoint URL."""
    from moto.server import ThreadedMotoServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def s3_copy(
    tmp: str, size: int, n: int, metadata: RemoteLogSegmentMetadata, data: LogSegmentData
) -> None:
    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("s3fs") is None:
        print("copy s3 moto     skipped (moto or s3fs missing)")
        return
    import s3fs

    with moto_endpoint() as endpoint:
        options = {"key": "k", "secret": "s", "endpoint_url": endpoint}
        # moto's backend is per process: every call makes a bucket of its own
        bucket = f"bench-{os.urandom(4).hex()}"
        s3fs.S3FileSystem(skip_instance_cache=True, **options).mkdir(bucket)
        store = open_store(f"s3://{bucket}/remote", options)
        rsm = RemoteStorageManager(store, cluster_id="bench")
        timed("copy s3 moto", size, lambda: rsm.copy_log_segment_data(metadata, data), n)


def consumer_scenarios(
    records: int, value_bytes: int, no_s3: bool, cache_bytes: int, segment_bytes: int
) -> None:
    from tests.integration.tiering_support import file_store, s3_store

    with tempfile.TemporaryDirectory() as tmp:
        consume_through_node(
            Path(tmp) / "node-file",
            "file://",
            file_store(f"file://{tmp}/remote"),
            None,
            records,
            value_bytes,
            cache_bytes,
            segment_bytes,
            with_local=True,
        )
        if no_s3:
            return
        if importlib.util.find_spec("moto") is None:
            print("consume remote s3 moto skipped (moto missing)")
            return
        with moto_endpoint() as endpoint:
            moto = MotoS3(endpoint)
            store = s3_store(moto, f"s3://{moto.new_bucket()}/tiered")
            consume_through_node(
                Path(tmp) / "node-s3",
                "s3 moto",
                store,
                moto,
                records,
                value_bytes,
                cache_bytes,
                segment_bytes,
                with_local=False,
            )


def consume_through_node(
    workdir: Path,
    label: str,
    store: StoreView,
    moto: MotoS3 | None,
    records: int,
    value_bytes: int,
    cache_bytes: int,
    segment_bytes: int,
    with_local: bool,
) -> None:
    """Produce to a tiered topic (and a plain one), wait for tiering, time a consumer on each."""
    import tests.integration.tiering_support as ts
    from tests.integration.ck_helpers import create_topic

    overrides = ts.node_overrides(store, moto)
    overrides["sparklog.remote.storage.fetch.cache.bytes"] = cache_bytes
    node = Node(workdir, overrides)
    node.start()
    try:
        rng = random.Random(7)
        # The measured records, then one segment more, so that every measured record lies in
        # a closed (tiered) segment and only the filler stays in the active one.
        filler = segment_bytes // (value_bytes + 8) + 1
        data = [
            ts.Rec(b"%08d" % i, rng.randbytes(value_bytes), (), ts.now_ms())
            for i in range(records + filler)
        ]
        payload = records * (8 + value_bytes)
        topics = [(f"consume remote {label}", "tiered")]
        create_topic(node, "tiered", 1, ts.topic_configs(**{"segment.bytes": str(segment_bytes)}))
        ts.produce(node, "tiered", data)
        if with_local:
            topics.insert(0, ("consume local", "plain"))
            create_topic(node, "plain", 1, {"segment.bytes": str(segment_bytes)})
            ts.produce(node, "plain", data)
        ts.wait_until(
            "the tiered topic to be tiered",
            lambda: ts.fully_tiered(node, store, "tiered"),
            300.0,
            lambda: ts.tiering_state(node, store, "tiered"),
        )
        # A first consumer makes the node create __consumer_offsets (librdkafka looks its group
        # coordinator up), and reads one tiered segment of a topic of its own, as a running
        # broker has served remote reads before: so round 1 times the first read of the tiered
        # data (nothing of it decoded or cached yet), not the creation of 50 partitions or a
        # fresh process's first remote fetch (its thread pools, imports and first allocations).
        warmup = data[: 2 * filler]
        create_topic(node, "warmup", 1, ts.topic_configs(**{"segment.bytes": str(segment_bytes)}))
        ts.produce(node, "warmup", warmup)
        ts.wait_until(
            "the warm-up topic to be tiered",
            lambda: ts.fully_tiered(node, store, "warmup"),
            300.0,
            lambda: ts.tiering_state(node, store, "warmup"),
        )
        count_consumed(node, "warmup", filler)
        # Rounds interleave the topics (the machine's load changes); best and worst are shown,
        # with the node's CPU time per round (less noisy than the wall time on a shared box).
        times: dict[str, list[float]] = {name: [] for name, _ in topics}
        cpu: dict[str, list[float]] = {name: [] for name, _ in topics}
        for _ in range(_CONSUMER_ROUNDS):
            for name, topic in topics:
                start, node_start = time.perf_counter(), node_cpu_s(node)
                got = count_consumed(node, topic, records)
                times[name].append(time.perf_counter() - start)
                cpu[name].append(node_cpu_s(node) - node_start)
                assert got == records, f"{name}: consumed {got} of {records}"
        print(
            f"consumer: {records} records of {value_bytes} B, {payload / MB:.0f} MB a round,"
            f" segment.bytes {segment_bytes}"
        )
        for name, _ in topics:
            first, again = times[name][0], min(times[name][1:])
            cpu_first, cpu_again = cpu[name][0], min(cpu[name][1:])
            print(
                f"{name:<24} first read {payload / MB / first:7.1f} MB/s ({first:.2f} s,"
                f" node CPU {cpu_first:.2f} s = {cpu_first * 1000 / (payload / MB):.2f} ms/MB);"
                f" repeat best {payload / MB / again:7.1f} MB/s ({again:.2f} s, node CPU"
                f" {cpu_again:.2f} s = {cpu_again * 1000 / (payload / MB):.2f} ms/MB;"
                f" worst {max(times[name][1:]):.2f} s)"
            )
        if with_local:
            # Local reads come from the page cache in every round: both ratios are against
            # the best local round.
            local, remote = min(times[topics[0][0]]), times[topics[1][0]]
            print(
                f"remote / local consumer throughput, first read (remote round 1 / best local):"
                f" {local / remote[0]:.2f}"
            )
            print(
                f"remote / local consumer throughput, repeat reads (best of remote rounds 2-"
                f"{_CONSUMER_ROUNDS} / best local): {local / min(remote[1:]):.2f} (remote"
                f" rounds {', '.join(f'{t:.2f}' for t in remote)} s; fetch cache"
                f" {cache_bytes} bytes)"
            )
    finally:
        node.stop()


def count_consumed(node: Node, topic: str, records: int, deadline_s: float = 600.0) -> int:
    """Read ``topic`` from offset 0 until its first ``records`` offsets arrive; only counts (the
    Python loop is kept minimal so the node's fetch path, not the test's bookkeeping, is what is
    measured). Records after them (the filler) are read but not counted."""
    from confluent_kafka import TopicPartition

    from tests.integration.ck_helpers import make_consumer

    consumer = make_consumer(node, **{"fetch.max.bytes": 8_388_608})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    deadline = time.monotonic() + deadline_s
    try:
        while got < records and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                if msg.error() is not None:
                    raise RuntimeError(f"consumer error: {msg.error()}")
                got += msg.offset() < records
    finally:
        consumer.close()
    return got


if __name__ == "__main__":
    main()
