"""Node CPU per fetch for a consumer of many partitions, with and without fetch sessions (KIP-227).

Run: ``.venv/bin/python tests/bench/bench_fetch_sessions.py [--partitions 1000] [--fetches 300]
[--hot 10]``. Not collected by pytest (file name ``bench_*.py``); it asserts only that every
fetch answered without error and that the consumer read what was produced, and prints one line
per figure next to the machine's load average.

One node; one topic of ``--partitions`` partitions, each holding one record; ``--hot`` of them
also hold ``--fetches`` single-record batches. A raw client (the project's codec over
``KafkaClientConnection``, Fetch v17 by topic id, ``max_wait_ms`` 0) fetches every partition
``--fetches`` times in two scenarios, each without a session (session id 0, epoch -1: every
request names every partition, every answer lists every partition) and with one (a full fetch
at epoch 0, then incremental fetches naming only the partitions whose offset moved):

  idle      the consumer is at the end of every partition: nothing to return
  hot       the consumer starts at offset 0 of the hot partitions and reads one batch of each
            per fetch (``partition_max_bytes`` 100): 1% of the partitions return records

Figures: node CPU per fetch (user + system from /proc/<pid>/stat, over the whole run), the
client's wall time per fetch, and the request and response sizes of one steady-state fetch.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sparklog.net.client import KafkaClientConnection
from sparklog.protocol.headers import encode_request
from sparklog.protocol.messages import API_BY_NAME
from sparklog.protocol.record_codec import build_batch
from sparklog.protocol.types import join_chunks
from tests.integration.node_harness import Node

FETCH = API_BY_NAME["Fetch"]
TOPIC = "bench-sessions"


@dataclass
class Figures:
    cpu_us: float
    wall_us: float
    request_bytes: int
    response_partitions: int


def node_cpu_s(node: Node) -> float:
    fields = Path(f"/proc/{node.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def create_topic(node: Node, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(timeout=60)


async def topic_id(conn: KafkaClientConnection) -> bytes:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        body = {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}
        response = await conn.request(API_BY_NAME["Metadata"], 12, body)
        topic = response["topics"][0]
        if topic["error_code"] == 0 and topic["partitions"]:
            return bytes(topic["topic_id"])
        await asyncio.sleep(0.2)
    raise RuntimeError("topic never appeared in Metadata")


async def produce(conn: KafkaClientConnection, partitions: list[int], value: bytes) -> None:
    """One record to each of ``partitions``; retried while the node still creates them."""
    batch = build_batch([(None, value)])
    deadline = time.monotonic() + 60
    while partitions:
        body = {
            "transactional_id": None,
            "acks": 1,
            "timeout_ms": 30_000,
            "topic_data": [
                {
                    "name": TOPIC,
                    "partition_data": [{"index": p, "records": batch} for p in partitions],
                }
            ],
        }
        response = await conn.request(API_BY_NAME["Produce"], 9, body)
        answers = [p for t in response["responses"] for p in t["partition_responses"]]
        partitions = [p["index"] for p in answers if p["error_code"]]
        if partitions:
            assert time.monotonic() < deadline, answers
            await asyncio.sleep(0.2)


def fetch_body(
    tid: bytes, offsets: dict[int, int], session_id: int, epoch: int, max_bytes: int
) -> dict[str, Any]:
    partitions = [
        {
            "partition": p,
            "current_leader_epoch": -1,
            "fetch_offset": offset,
            "last_fetched_epoch": -1,
            "log_start_offset": -1,
            "partition_max_bytes": max_bytes,
        }
        for p, offset in offsets.items()
    ]
    return {
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 50 * 1024 * 1024,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": [{"topic_id": tid, "partitions": partitions}] if partitions else [],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def next_offsets(response: dict[str, Any]) -> dict[int, int]:
    """The next fetch offset of each partition that returned records (one batch each here)."""
    moved: dict[int, int] = {}
    for topic in response["responses"]:
        for p in topic["partitions"]:
            assert p["error_code"] == 0, p
            records = p["records"]
            if records:
                base = int.from_bytes(bytes(records[:8]), "big", signed=True)
                last_delta = int.from_bytes(bytes(records[23:27]), "big")
                moved[p["partition_index"]] = base + last_delta + 1
    return moved


async def run(
    node: Node,
    conn: KafkaClientConnection,
    tid: bytes,
    start: dict[int, int],
    fetches: int,
    sessions: bool,
    max_bytes: int,
) -> Figures:
    offsets = dict(start)
    session_id, epoch = 0, (0 if sessions else -1)
    changed = dict(offsets)
    request_bytes = partitions_answered = 0
    cpu = node_cpu_s(node)
    began = time.perf_counter()
    for _ in range(fetches):
        send = changed if sessions and epoch > 0 else offsets
        body = fetch_body(tid, send, session_id, epoch, max_bytes)
        request_bytes = len(join_chunks(encode_request(FETCH, 17, 1, "bench", body)))
        response = await conn.request(FETCH, 17, body)
        assert response["error_code"] == 0, response["error_code"]
        changed = next_offsets(response)
        offsets.update(changed)
        partitions_answered = sum(len(t["partitions"]) for t in response["responses"])
        if sessions:
            session_id = response["session_id"]
            assert session_id > 0, "the broker opened no session"
            epoch += 1
    wall = time.perf_counter() - began
    cpu_used = node_cpu_s(node) - cpu
    return Figures(
        1e6 * cpu_used / fetches, 1e6 * wall / fetches, request_bytes, partitions_answered
    )


async def bench(node: Node, partitions: int, fetches: int, hot: int) -> None:
    conn = KafkaClientConnection(node.host, node.port, client_id="bench")
    try:
        tid = await topic_id(conn)
        await produce(conn, list(range(partitions)), b"first")
        hot_partitions = list(range(0, partitions, max(partitions // hot, 1)))[:hot]
        for i in range(fetches):
            await produce(conn, hot_partitions, f"hot-{i}".encode())
        ends = {p: 1 + (fetches if p in hot_partitions else 0) for p in range(partitions)}
        hot_start = {p: (0 if p in hot_partitions else ends[p]) for p in range(partitions)}
        for scenario, start, max_bytes in (("idle", ends, 1 << 20), ("hot", hot_start, 100)):
            for sessions in (False, True):
                figures = await run(node, conn, tid, start, fetches, sessions, max_bytes)
                label = "with session" if sessions else "no session"
                print(
                    f"{scenario:<5} {label:<13} node CPU {figures.cpu_us:8.0f} us/fetch"
                    f"  wall {figures.wall_us:8.0f} us/fetch"
                    f"  request {figures.request_bytes:7,} B"
                    f"  partitions answered {figures.response_partitions:5}",
                    flush=True,
                )
    finally:
        await conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--fetches", type=int, default=300)
    parser.add_argument("--hot", type=int, default=10)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    print(f"cpus: {os.cpu_count()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="sparklog-bench-") as tmp:
        node = Node(Path(tmp) / "node", {"num.partitions": 1})
        node.start()
        try:
            create_topic(node, args.partitions)
            asyncio.run(bench(node, args.partitions, args.fetches, args.hot))
        finally:
            node.close()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
