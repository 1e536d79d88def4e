"""The hot read service on a real node: discovery, the stream's content and bounds, its errors,
and the connector's two hot transports giving the same rows as a Kafka consumer.

One node per module (tiering off); records are produced by confluent-kafka in batches with and
without compression, with null keys/values and headers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pyarrow as pa
import pytest

from sparklog.client.connection import KafkaConnection
from sparklog.connector import hot
from sparklog.connector.hot import read_hot, read_service_address
from sparklog.connector.planning import HotPiece
from sparklog.protocol.record_codec import decode_batch
from sparklog.protocol.records import iter_batches
from sparklog.readservice_wire import hot_read_pb2 as pb
from sparklog.readservice_wire import hot_read_pb2_grpc as pb_grpc
from tests.integration.ck_helpers import create_topic, make_producer
from tests.integration.node_harness import Node
from tests.integration.tiering_support import Rec, consume_confluent, make_records, now_ms

TOPIC = "hot-read"
RECORDS = 6_000


class Env:
    def __init__(self, node: Node, consumed: list[tuple[int, Rec]], address: str) -> None:
        self.node, self.consumed, self.address = node, consumed, address
        self.channel = grpc.insecure_channel(address)
        self.stub = pb_grpc.HotReadStub(self.channel)  # type: ignore[no-untyped-call]

    def read(self, **fields: Any) -> list[Any]:
        request: dict[str, Any] = {
            "topic": TOPIC,
            "partition": 0,
            "start_offset": 0,
            "end_offset": RECORDS,
        }
        request.update(fields)
        return list(self.stub.ReadRange(pb.ReadRangeRequest(**request), timeout=30))


def _topic_id(node: Node, topic: str) -> bytes:
    with KafkaConnection.connect(node.bootstrap) as conn:
        response = conn.request(
            "Metadata",
            {
                "topics": [{"name": topic}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
    return bytes(response["topics"][0]["topic_id"])


def _produce(node: Node, records: list[Rec]) -> None:
    half = len(records) // 2
    for part, codec in ((records[:half], "none"), (records[half:], "lz4")):
        producer = make_producer(
            node, **{"compression.codec": codec, "linger.ms": 20, "batch.num.messages": 200}
        )
        for r in part:
            producer.produce(
                TOPIC, key=r.key, value=r.value, headers=list(r.headers), timestamp=r.timestamp
            )
        producer.flush(30)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    node = Node(Path(tmp_path_factory.mktemp("hot-read")) / "node")
    node.start()
    try:
        create_topic(node, TOPIC, 1)
        _produce(node, make_records(RECORDS, now_ms() - 60_000, seed=3))
        consumed = consume_confluent(node, TOPIC, 0, RECORDS)
        hot._addresses.clear()
        address = read_service_address(node.bootstrap)
        assert address is not None
        yield Env(node, consumed, address)
    finally:
        node.close()


def _records(chunks: list[Any]) -> list[tuple[int, Rec]]:
    out: list[tuple[int, Rec]] = []
    for chunk in chunks:
        pos = 0
        while pos < len(chunk.records):
            header, records = decode_batch(chunk.records, pos)
            assert not header.is_control
            pos += header.size_in_bytes
            out.extend((r.offset, Rec(r.key, r.value, r.headers, r.timestamp)) for r in records)
    return out


def _batch_count(buf: bytes) -> int:
    return sum(1 for _ in iter_batches(buf))


def test_address_is_discovered_with_the_bound_port(env: Env) -> None:
    host, _, port = env.address.rpartition(":")
    assert host == env.node.host and int(port) > 0


def test_stream_holds_the_stored_batches_of_the_range(env: Env) -> None:
    chunks = env.read(max_chunk_bytes=64 << 10)
    assert len(chunks) > 5
    assert all(len(c.records) <= 64 << 10 or _batch_count(c.records) == 1 for c in chunks)
    assert chunks[-1].next_offset == RECORDS
    assert chunks[-1].high_watermark == RECORDS and chunks[-1].log_start_offset == 0
    assert _records(chunks) == env.consumed


def test_stream_is_bounded_by_the_high_watermark_and_starts_batch_aligned(env: Env) -> None:
    chunks = env.read(start_offset=1234, end_offset=10**12)
    got = _records(chunks)
    assert got[0][0] <= 1234 and got[-1][0] == RECORDS - 1
    assert [p for p in got if p[0] >= 1234] == env.consumed[1234:]
    assert env.read(start_offset=RECORDS) == []


@pytest.mark.parametrize(
    ("fields", "status", "name"),
    [
        ({"topic": "nope"}, grpc.StatusCode.NOT_FOUND, "UNKNOWN_TOPIC_OR_PARTITION"),
        ({"partition": 5}, grpc.StatusCode.NOT_FOUND, "UNKNOWN_TOPIC_OR_PARTITION"),
        ({"start_offset": RECORDS + 1}, grpc.StatusCode.OUT_OF_RANGE, "OFFSET_OUT_OF_RANGE"),
        (
            {"current_leader_epoch": 999},
            grpc.StatusCode.FAILED_PRECONDITION,
            "UNKNOWN_LEADER_EPOCH",
        ),
    ],
)
def test_errors_are_statuses_named_after_kafka_errors(
    env: Env, fields: dict[str, Any], status: grpc.StatusCode, name: str
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        env.read(**fields)
    error: Any = caught.value
    assert error.code() == status
    assert error.details().startswith(f"{name}: ")
    if status == grpc.StatusCode.OUT_OF_RANGE:
        assert ("sparklog-log-start-offset", "0") in tuple(error.trailing_metadata())


def _table_rows(batches: list[pa.RecordBatch]) -> list[tuple[int, Rec]]:
    table = pa.Table.from_batches(batches)
    rows = table.to_pylist()
    out = []
    for row in rows:
        headers = tuple((h["key"], h["value"]) for h in row["headers"] or ())
        ts = int(row["timestamp"].timestamp() * 1000)
        out.append((row["offset"], Rec(row["key"], row["value"], headers, ts)))
    return out


@pytest.mark.parametrize("protocol", ["grpc", "kafka"])
def test_read_hot_over_both_transports_equals_the_consumer(env: Env, protocol: str) -> None:
    topic_id = _topic_id(env.node, TOPIC)
    piece = HotPiece(TOPIC, 0, 17, RECORDS - 5, env.node.bootstrap, topic_id, include_headers=True)
    batches = list(read_hot(piece, protocol))
    assert all(b.schema == batches[0].schema for b in batches)
    assert _table_rows(batches) == env.consumed[17 : RECORDS - 5]


def test_bad_protocol_names_the_option(env: Env) -> None:
    piece = HotPiece(TOPIC, 0, 0, 10, env.node.bootstrap)
    with pytest.raises(ValueError, match=r"sparklog\.hot\.protocol"):
        list(read_hot(piece, "carrier-pigeon"))


def test_disabled_service_is_not_published_and_reads_fall_back(tmp_path: Path) -> None:
    node = Node(tmp_path / "node", {"sparklog.read.listener": "disabled"})
    node.start()
    try:
        create_topic(node, "plain", 1)
        producer = make_producer(node)
        for i in range(10):
            producer.produce("plain", value=b"%d" % i)
        producer.flush(30)
        assert read_service_address(node.bootstrap) is None
        piece = HotPiece("plain", 0, 0, 10, node.bootstrap, _topic_id(node, "plain"))
        batches = list(read_hot(piece))
        assert pa.Table.from_batches(batches).column("value").to_pylist() == [
            b"%d" % i for i in range(10)
        ]
    finally:
        node.close()
