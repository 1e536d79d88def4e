"""Node CPU per one-record Produce request, next to this machine's limits.

Run: ``.venv/bin/python tests/bench/bench_small_produce.py [--requests N] [--window W]
[--profile FILE]``. Not collected by pytest (file name ``bench_*.py``); it asserts nothing.

One sparklog node (tests/integration/node_harness.py), one topic of one partition. A raw-socket
client sends N Produce v3 requests (acks=1), each carrying one batch of one 100-byte record, W of
them in flight at once on one connection, and reads every response. The figure is the node
process's CPU time (user + system, /proc/PID/stat) over the run divided by N: what one small
request costs the node from its bytes arriving to its response leaving (target <= 100 us).
Printed next to the machine's limits measured in the same run: the CPU time of one empty
Python call loop of N iterations in this process (an interpreter-speed yardstick) and the cores.
``--profile FILE`` runs py-spy on the node during the run and writes its collapsed stacks there
(``--format raw``).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.bench_produce_consume import create_topic, node_cpu_s
from tests.integration import wire
from tests.integration.node_harness import Node

TARGET_US = 100.0


def one_record_batch() -> bytes:
    return wire.record_batch([wire.Record(b"key", b"v" * 100)], int(time.time() * 1000))


def produce_pipelined(node: Node, topic: str, requests: int, window: int) -> float:
    """Send ``requests`` one-record Produce requests, ``window`` in flight; wall seconds."""
    batch = one_record_batch()
    frames = [wire.produce_v3(topic, 0, batch, correlation_id=i) for i in range(window)]
    with socket.create_connection((node.host, node.port), timeout=60) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent = received = 0
        started = time.perf_counter()
        while received < requests:
            burst = []
            while sent < requests and sent - received < window:
                burst.append(frames[sent % window])
                sent += 1
            if burst:
                sock.sendall(b"".join(burst))
            _, body = wire.recv_response(sock)
            received += 1
            if wire.parse_produce_v3(body).error_code:
                raise RuntimeError("produce failed")
        return time.perf_counter() - started


def python_loop_us(iterations: int) -> float:
    """CPU microseconds of one trivial Python function call (this interpreter's speed)."""

    def f(x: int) -> int:
        return x + 1

    started = time.process_time()
    for i in range(iterations):
        f(i)
    return (time.process_time() - started) / iterations * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--window", type=int, default=32)
    parser.add_argument("--profile", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-small-produce-") as tmp:
        node = Node(Path(tmp) / "node", {"log.flush.interval.messages": "9223372036854775807"})
        node.start()
        try:
            topic = "small"
            create_topic(node, topic)
            produce_pipelined(node, topic, 2_000, args.window)  # warm-up
            profiler = None
            if args.profile:
                profiler = subprocess.Popen(
                    [
                        str(Path(sys.executable).parent / "py-spy"),
                        "record",
                        "-p",
                        str(node.pid),
                        "-o",
                        args.profile,
                        "--rate",
                        "500",
                        "--format",
                        "raw",
                        "--nonblocking",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(1.0)
            cpu_before = node_cpu_s(node)
            wall = produce_pipelined(node, topic, args.requests, args.window)
            cpu = node_cpu_s(node) - cpu_before
            if profiler is not None:
                profiler.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
                profiler.wait(timeout=60)
        finally:
            node.stop()
    per_request_us = cpu / args.requests * 1e6
    print(f"machine: {os.cpu_count()} cores; one Python call {python_loop_us(1_000_000):.3f} us")
    print(
        f"one-record produce: {args.requests} requests, window {args.window}: "
        f"{args.requests / wall:,.0f} req/s, node CPU {per_request_us:.1f} us/request "
        f"(target <= {TARGET_US:.0f} us)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
