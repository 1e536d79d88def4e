"""Malformed input against a live node: it must stay up, keep serving, and not leak sockets.

Thousands of cases (bounded by count and by wall time) over many concurrent connections:
random bodies behind a valid size prefix, random api keys and versions, mutated valid
requests, truncated frames, oversized and negative size prefixes, pure garbage, valid frames
followed by garbage, abortive (RST) closes and idle connections. Policy (reliability test plan
A6): a broken frame or header closes the connection, a bad payload gets an error code; neither
may crash the node. Afterwards the node's descriptor count must return near its baseline and a
confluent-kafka produce + consume round trip must work.

Kafka 4.4's allocation bounds are probed at their edges on a live node: an array claiming
1,000,001 elements (with the bytes to back them) or a header with 10,001 tagged fields closes
the connection unanswered, while exactly 1,000,000 and 10,000 are answered.
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from sparklog.protocol.types import uvarint_bytes
from tests.integration import wire
from tests.integration.ck_helpers import consume_exactly, create_topic, make_consumer, make_producer
from tests.integration.conftest import unique_topic
from tests.integration.node_harness import Node, probe_api_versions

pytestmark = pytest.mark.integration

MAX_CASES = 4_000
FUZZ_BUDGET_S = 40.0
WORKERS = 8
IDLE_CONNECTIONS = 50
FD_SLACK = 8

Case = list[bytes]  # chunks sent in order on one connection


def seed_frames(topic: str) -> list[bytes]:
    batch = wire.record_batch(
        [wire.Record(b"k", b"v" * 20, (("h", b"x"),)), wire.Record(None, b"w")], 1_700_000_000_000
    )
    return [
        wire.api_versions_v0(),
        wire.api_versions_v3(),
        wire.metadata_v1(None),
        wire.metadata_v1([topic]),
        wire.list_offsets_v1(topic, 0, -1),
        wire.produce_v3(topic, 0, batch),
        wire.fetch_v4(topic, 0, 0, 1 << 20, max_wait_ms=10),
    ]


def mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randrange(1, 9)):
        choice = rng.random()
        position = rng.randrange(0, len(buf) + 1)
        if choice < 0.5 and buf:
            buf[min(position, len(buf) - 1)] = rng.randrange(256)
        elif choice < 0.7:
            buf[position:position] = rng.randbytes(rng.randrange(1, 16))
        elif choice < 0.9 and buf:
            del buf[position : position + rng.randrange(1, 16)]
        else:
            # Extreme lengths and counts are where parsers over-allocate.
            value = rng.choice([-1, -2, 0x7FFFFFFF, 0x7FFF, -0x8000, 1 << 30])
            buf[position:position] = struct.pack(">i", value)
    return bytes(buf)


def make_case(rng: random.Random, seeds: list[bytes]) -> Case:
    kind = rng.randrange(10)
    seed = rng.choice(seeds)
    if kind == 0:  # valid size prefix, random body
        return [wire.frame(rng.randbytes(rng.randrange(0, 300)))]
    if kind == 1:  # random api key / version with a random body
        header = struct.pack(
            ">hhi", rng.randrange(-5, 100), rng.randrange(-2, 30), rng.randrange(1 << 31)
        )
        return [wire.frame(header + rng.randbytes(rng.randrange(0, 200)))]
    if kind == 2:  # mutated body, re-framed with a correct size
        return [wire.frame(mutate(rng, seed[4:]))]
    if kind == 3:  # mutated frame, size prefix included
        return [mutate(rng, seed)]
    if kind == 4:  # truncated frame, then the peer goes away
        return [seed[: rng.randrange(1, len(seed))]]
    if kind == 5:  # oversized or negative size prefix
        size = rng.choice([0x7FFFFFFF, 1 << 30, 200 * 1024 * 1024, -1, -0x80000000])
        return [struct.pack(">i", size) + rng.randbytes(rng.randrange(0, 100))]
    if kind == 6:  # pure garbage
        return [rng.randbytes(rng.randrange(1, 2_000))]
    if kind == 7:  # a valid frame followed by garbage on the same connection
        return [seed, rng.randbytes(rng.randrange(1, 200))]
    if kind == 8:  # valid frames pipelined, then a broken one
        return [*rng.sample(seeds, k=3), wire.frame(mutate(rng, seed[4:]))]
    # byte-by-byte dribble of a mutated frame
    data = mutate(rng, seed)
    return [data[i : i + 1] for i in range(min(len(data), 40))]


def run_case(node: Node, case: Case, abortive: bool) -> None:
    try:
        with socket.create_connection((node.host, node.port), timeout=2.0) as sock:
            sock.settimeout(0.2)
            for chunk in case:
                sock.sendall(chunk)
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + 0.3
            with contextlib.suppress(OSError):
                while time.monotonic() < deadline and sock.recv(65536):
                    pass
            if abortive:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass  # the node may close or reset at any point; that is allowed


def wait_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


@pytest.mark.timeout(180)
def test_node_survives_malformed_frames(node: Node) -> None:
    topic = unique_topic("fuzz")
    create_topic(node, topic, 1)
    seeds = seed_frames(topic)
    time.sleep(0.5)
    baseline_fds = node.fd_count()

    rng = random.Random(20240601)
    cases = [(make_case(rng, seeds), rng.random() < 0.2) for _ in range(MAX_CASES)]
    idle = [socket.create_connection((node.host, node.port), timeout=2.0) for _ in range(20)]
    started = time.monotonic()
    done = 0
    try:
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            for chunk_start in range(0, MAX_CASES, 200):
                if time.monotonic() - started > FUZZ_BUDGET_S:
                    break
                chunk = cases[chunk_start : chunk_start + 200]
                list(pool.map(lambda c: run_case(node, c[0], c[1]), chunk))
                done += len(chunk)
                assert node.is_running(), f"node died after {done} fuzz cases"
                assert probe_api_versions(node.host, node.port), f"no answer after {done} cases"
                if len(idle) < IDLE_CONNECTIONS:
                    idle.append(socket.create_connection((node.host, node.port), timeout=2.0))
    finally:
        for sock in idle:
            sock.close()
    assert done >= 500, f"only {done} cases ran in {FUZZ_BUDGET_S}s"
    assert node.is_running()

    assert wait_until(lambda: node.fd_count() <= baseline_fds + FD_SLACK, 15.0), (
        f"descriptor leak: {node.fd_count()} open now, {baseline_fds} before {done} cases"
    )

    roundtrip = unique_topic("fuzz-after")
    create_topic(node, roundtrip, 1)
    producer = make_producer(node)
    for index in range(100):
        producer.produce(roundtrip, value=b"%d" % index, partition=0)
    assert producer.flush(30) == 0
    consumer = make_consumer(node)
    try:
        from confluent_kafka import TopicPartition

        consumer.assign([TopicPartition(roundtrip, 0, 0)])
        records = consume_exactly(consumer, 100)
    finally:
        consumer.close()
    assert [r.value for r in records] == [b"%d" % index for index in range(100)]


def describe_log_dirs_v1(partitions: int, correlation_id: int) -> bytes:
    """DescribeLogDirs v1 (classic) asking for ``partitions`` partitions of one topic."""
    body = struct.pack(">i", 1) + struct.pack(">h", 1) + b"t" + struct.pack(">i", partitions)
    body += b"\x00" * (4 * partitions)
    return wire.frame(wire.header_v1(35, 1, correlation_id, "limits") + body)


def metadata_v12_with_header_tags(tags: int, correlation_id: int) -> bytes:
    """Metadata v12 (flexible header) whose header carries ``tags`` unknown empty tags."""
    header = wire.header_v1(3, 12, correlation_id, "limits")
    header += uvarint_bytes(tags) + b"".join(uvarint_bytes(i) + b"\x00" for i in range(tags))
    return wire.frame(header + b"\x01\x00\x00\x00")  # topics=[], no auto-create, tags


def answered(node: Node, request: bytes, correlation_id: int) -> bool:
    """True if ``request`` got its response; False if the node closed the connection."""
    with socket.create_connection((node.host, node.port), timeout=10.0) as sock:
        sock.sendall(request)
        try:
            got, _ = wire.recv_response(sock)
        except (ConnectionError, OSError):
            return False
        assert got == correlation_id
        return True


@pytest.mark.timeout(120)
def test_counts_over_kafka_limits_close_the_connection(node: Node) -> None:
    assert answered(node, describe_log_dirs_v1(1_000_000, 11), 11)
    assert not answered(node, describe_log_dirs_v1(1_000_001, 12), 12)
    assert answered(node, metadata_v12_with_header_tags(10_000, 13), 13)
    assert not answered(node, metadata_v12_with_header_tags(10_001, 14), 14)
    assert node.is_running()
    assert probe_api_versions(node.host, node.port)
