"""Produce/consume throughput of one sparklog node, next to this machine's own limits.

Run: ``.venv/bin/python tests/bench/bench_produce_consume.py [--records N] [--only a,b,c]``.
Not collected by pytest (file name ``bench_*.py``); it asserts nothing and prints a table:
scenario, measured figure, target, and the machine limit measured in the same run (loopback TCP
throughput for 2 s; disk write + fsync of 1 GiB or 2 s worth, in the node's directory).

Scenarios:
  a. confluent-kafka, 1 KiB records, batch.size 1 MiB, linger.ms 5, 1 partition: produce N
     then consume N (targets 200k rec/s produce, 250k rec/s consume).
  b. confluent-kafka, linger.ms 0, batch.size 16 KiB (target 60k rec/s produce).
  c. broker only: one ~1 MiB uncompressed batch encoded once, sent in pipelined Produce v3
     requests, then read back with Fetch v4 at large max bytes (targets 500 MB/s, 1 GB/s).
The node's peak RSS (VmHWM, and the highest VmRSS sampled every 50 ms) is reported too.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.integration import wire
from tests.integration.node_harness import Node

MIB = 1024 * 1024
RECORD_SIZE = 1024


@dataclass(frozen=True, slots=True)
class Row:
    scenario: str
    figure: str
    target: str
    limit: str


class RssSampler(threading.Thread):
    def __init__(self, node: Node) -> None:
        super().__init__(daemon=True)
        self.node = node
        self.peak_rss_kib = 0
        self.hwm_kib = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(0.05):
            try:
                memory = self.node.memory_kib()
            except (OSError, RuntimeError):
                continue
            self.peak_rss_kib = max(self.peak_rss_kib, memory.get("VmRSS", 0))
            self.hwm_kib = max(self.hwm_kib, memory.get("VmHWM", 0))


def loopback_mb_s(seconds: float = 2.0) -> float:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    sender = socket.create_connection(server.getsockname())
    receiver, _ = server.accept()
    received = 0

    def drain() -> None:
        nonlocal received
        while True:
            chunk = receiver.recv(4 * MIB)
            if not chunk:
                return
            received += len(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    payload = b"\x00" * MIB
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        sender.sendall(payload)
    sender.close()
    reader.join(timeout=10)
    elapsed = time.perf_counter() - started
    receiver.close()
    server.close()
    return received / elapsed / 1e6


def disk_mb_s(directory: Path, max_bytes: int = 1024 * MIB, seconds: float = 2.0) -> float:
    path = directory / "disk-probe.bin"
    payload = os.urandom(MIB)
    written = 0
    started = time.perf_counter()
    with path.open("wb") as out:
        while written < max_bytes and time.perf_counter() - started < seconds:
            out.write(payload)
            written += len(payload)
        out.flush()
        os.fsync(out.fileno())
    elapsed = time.perf_counter() - started
    path.unlink()
    return written / elapsed / 1e6


def create_topic(node: Node, topic: str) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    futures[topic].result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = admin.list_topics(topic=topic, timeout=5).topics.get(topic)
        if found is not None and found.error is None and found.partitions:
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {topic} never became available")


def produce_rate(node: Node, topic: str, records: int, config: dict[str, Any]) -> float:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": node.bootstrap, "acks": 1, **config})
    value = b"x" * RECORD_SIZE
    failures = 0

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal failures
        if err is not None:
            failures += 1

    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value=value, partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.001)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    if remaining or failures:
        raise RuntimeError(f"{remaining} undelivered and {failures} failed records")
    return records / elapsed


def node_cpu_s(node: Node) -> float:
    """User + system CPU seconds the node process has used so far."""
    fields = Path(f"/proc/{node.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busy(node: Node, cpu_before: float, records: int, rate: float) -> str:
    """How busy the node was: its CPU time over the wall time of the run."""
    wall = records / rate
    return f"node CPU {100 * (node_cpu_s(node) - cpu_before) / wall:.0f}%"


def consume_rate(node: Node, topic: str, records: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            # librdkafka prefetches up to these limits; the defaults (1 MiB per partition,
            # 100k queued messages) make a Python consume loop, not the broker, the limit.
            "fetch.max.bytes": 64 * MIB,
            "max.partition.fetch.bytes": 8 * MIB,
            "queued.max.messages.kbytes": 2 * 1024 * 1024 - 1,
            "queued.min.messages": 1_000_000,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = 0
    started = time.perf_counter()
    deadline = time.monotonic() + 300
    while seen < records and time.monotonic() < deadline:
        for msg in consumer.consume(num_messages=100_000, timeout=1.0):
            if msg.error() is None:
                seen += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    if seen < records:
        raise RuntimeError(f"consumed only {seen} of {records}")
    return records / elapsed


def one_mib_batch() -> bytes:
    count = MIB // (RECORD_SIZE + 16)
    value = b"y" * RECORD_SIZE
    try:
        from sparklog.protocol.record_codec import build_batch

        return build_batch([(None, value)] * count)
    except ImportError:
        records = [wire.Record(None, value)] * count
        return wire.record_batch(records, int(time.time() * 1000))


class FrameReader:
    """A light client's receive path: recv_into one reused buffer, views instead of copies."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray(1 << 20)

    def _fill(self, view: memoryview) -> None:
        done = 0
        while done < len(view):
            got = self.sock.recv_into(view[done:])
            if got == 0:
                raise ConnectionError("peer closed the connection")
            done += got

    def frame(self) -> memoryview:
        header = memoryview(self.buf)[:4]
        self._fill(header)
        (size,) = struct.unpack_from(">i", self.buf)
        if size > len(self.buf):
            self.buf = bytearray(size)
        view = memoryview(self.buf)[:size]
        self._fill(view)
        return view


def _fetch_records(body: memoryview) -> tuple[int, memoryview]:
    """(error code, records view) of a single-partition Fetch v4 response body."""
    pos = 4 + 4 + 4  # correlation id, throttle, topic count
    (name_len,) = struct.unpack_from(">h", body, pos)
    pos += 2 + name_len + 4
    _partition, error_code = struct.unpack_from(">ih", body, pos)
    pos += 4 + 2 + 8 + 8
    (aborted,) = struct.unpack_from(">i", body, pos)
    pos += 4 + max(aborted, 0) * 16
    (records_len,) = struct.unpack_from(">i", body, pos)
    pos += 4
    return int(error_code), body[pos : pos + max(records_len, 0)]


def _last_batch_end(records: memoryview) -> int:
    """The next offset after the last complete batch in ``records`` (-1 if none)."""
    pos, next_offset = 0, -1
    while pos + 61 <= len(records):
        base_offset, batch_length = struct.unpack_from(">qi", records, pos)
        if pos + 12 + batch_length > len(records):
            break
        (last_delta,) = struct.unpack_from(">i", records, pos + 23)
        next_offset = base_offset + last_delta + 1
        pos += 12 + batch_length
    return next_offset


def raw_produce_fetch(node: Node, topic: str, total_bytes: int) -> tuple[float, float]:
    batch = one_mib_batch()
    requests = total_bytes // len(batch)
    window = 16
    with socket.create_connection((node.host, node.port), timeout=60) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        frames = [wire.produce_v3(topic, 0, batch, correlation_id=i) for i in range(window)]
        in_flight = 0
        sent = 0
        started = time.perf_counter()
        while sent < requests or in_flight:
            while sent < requests and in_flight < window:
                sock.sendall(frames[sent % window])
                sent += 1
                in_flight += 1
            _, body = wire.recv_response(sock)
            in_flight -= 1
            produced = wire.parse_produce_v3(body)
            if produced.error_code:
                raise RuntimeError(f"produce error code {produced.error_code}")
        produce_s = time.perf_counter() - started

        offset = 0
        fetched = 0
        reader = FrameReader(sock)
        started = time.perf_counter()
        while fetched < requests * len(batch):
            sock.sendall(wire.fetch_v4(topic, 0, offset, 64 * MIB))
            error_code, records = _fetch_records(reader.frame())
            if error_code:
                raise RuntimeError(f"fetch error code {error_code}")
            next_offset = _last_batch_end(records)
            if next_offset < 0:
                raise RuntimeError(f"fetch at {offset} returned no complete batch")
            offset = next_offset
            fetched += len(records)
        fetch_s = time.perf_counter() - started
    return requests * len(batch) / produce_s / 1e6, fetched / fetch_s / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000, help="records for scenario a")
    parser.add_argument("--raw-mib", type=int, default=2048, help="MiB produced in scenario c")
    parser.add_argument("--only", default="a,b,c", help="comma-separated scenarios to run")
    args = parser.parse_args()
    wanted = set(args.only.split(","))

    with tempfile.TemporaryDirectory(prefix="sparklog-bench-") as tmp:
        workdir = Path(tmp)
        print("measuring machine limits ...", flush=True)
        loopback = loopback_mb_s()
        disk = disk_mb_s(workdir)
        limits = f"loopback {loopback:,.0f} MB/s; disk {disk:,.0f} MB/s"
        node = Node(workdir / "node", {"log.segment.bytes": 1024 * MIB})
        node.start()
        sampler = RssSampler(node)
        sampler.start()
        rows: list[Row] = []
        try:
            if "a" in wanted:
                print("scenario a ...", flush=True)
                create_topic(node, "bench-a")
                cpu = node_cpu_s(node)
                rate = produce_rate(
                    node,
                    "bench-a",
                    args.records,
                    {"linger.ms": 5, "batch.size": MIB, "batch.num.messages": 1_000_000},
                )
                rows.append(
                    Row(
                        "a produce 1KiB linger5",
                        f"{rate:,.0f} rec/s ({rate * RECORD_SIZE / 1e6:,.0f} MB/s), "
                        + busy(node, cpu, args.records, rate),
                        "200,000 rec/s",
                        limits,
                    )
                )
                cpu = node_cpu_s(node)
                rate = consume_rate(node, "bench-a", args.records)
                rows.append(
                    Row(
                        "a consume 1KiB",
                        f"{rate:,.0f} rec/s ({rate * RECORD_SIZE / 1e6:,.0f} MB/s), "
                        + busy(node, cpu, args.records, rate),
                        "250,000 rec/s",
                        limits,
                    )
                )
            if "b" in wanted:
                print("scenario b ...", flush=True)
                create_topic(node, "bench-b")
                count = max(args.records // 5, 1_000)
                cpu = node_cpu_s(node)
                rate = produce_rate(
                    node, "bench-b", count, {"linger.ms": 0, "batch.size": 16 * 1024}
                )
                rows.append(
                    Row(
                        "b produce 1KiB linger0 16KiB",
                        f"{rate:,.0f} rec/s ({rate * RECORD_SIZE / 1e6:,.0f} MB/s), "
                        + busy(node, cpu, count, rate),
                        "60,000 rec/s",
                        limits,
                    )
                )
            if "c" in wanted:
                print("scenario c ...", flush=True)
                create_topic(node, "bench-c")
                produce_mb_s, fetch_mb_s = raw_produce_fetch(node, "bench-c", args.raw_mib * MIB)
                rows.append(Row("c raw produce 1MiB batches", f"{produce_mb_s:,.0f} MB/s",
                                "500 MB/s", limits))  # fmt: skip
                rows.append(Row("c raw fetch 64MiB max", f"{fetch_mb_s:,.0f} MB/s",
                                "1,000 MB/s", limits))  # fmt: skip
        finally:
            sampler.stopping.set()
            sampler.join(timeout=2)
            node.close()
        rows.append(
            Row(
                "node memory",
                f"VmHWM {sampler.hwm_kib / 1024:,.0f} MiB; "
                f"max VmRSS {sampler.peak_rss_kib / 1024:,.0f} MiB",
                "-",
                "-",
            )
        )
    widths = [max(len(getattr(r, f)) for r in rows) for f in ("scenario", "figure", "target")]
    header = ("scenario", "figure", "target", "machine limit")
    print()
    print("  ".join(h.ljust(w) for h, w in zip(header, [*widths, 0], strict=True)))
    for r in rows:
        cells = (r.scenario, r.figure, r.target, r.limit)
        print("  ".join(c.ljust(w) for c, w in zip(cells, [*widths, 0], strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
