"""A deliberately tiny, independent Kafka wire encoder for tests and benchmarks.

Contract: builds request frames (4-byte size prefix included) for a handful of fixed,
non-flexible API versions plus ApiVersions v3, builds uncompressed v2 record batches with a
correct CRC-32C, and decodes just enough of the responses the harness and benchmarks read.

It is independent of ``sparklog.protocol`` on purpose: the harness must be able to probe a node
(and the fuzzer must be able to seed valid frames) even while the node's own codec is broken, and
a bug shared by encoder and decoder could otherwise hide itself. Versions used here are within
Apache Kafka 4.x's supported ranges (Produce 3+, Fetch 4+, Metadata 0+, ApiVersions 0-4).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

import crc32c

API_PRODUCE = 0
API_FETCH = 1
API_LIST_OFFSETS = 2
API_METADATA = 3
API_API_VERSIONS = 18


def _string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _bytes(value: bytes | None) -> bytes:
    if value is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(value)) + value


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _varint(value: int) -> bytes:
    # zig-zag over 64 bits covers both Kafka varint and varlong.
    return _uvarint((value << 1) ^ (value >> 63))


def _compact_string(value: str) -> bytes:
    raw = value.encode()
    return _uvarint(len(raw) + 1) + raw


def frame(body: bytes) -> bytes:
    """Prefix ``body`` (header + request) with its int32 size."""
    return struct.pack(">i", len(body)) + body


def header_v1(api_key: int, api_version: int, correlation_id: int, client_id: str) -> bytes:
    return struct.pack(">hhi", api_key, api_version, correlation_id) + _string(client_id)


def header_v2(api_key: int, api_version: int, correlation_id: int, client_id: str) -> bytes:
    return header_v1(api_key, api_version, correlation_id, client_id) + b"\x00"


def api_versions_v0(correlation_id: int = 1, client_id: str = "probe") -> bytes:
    return frame(header_v1(API_API_VERSIONS, 0, correlation_id, client_id))


def api_versions_v3(correlation_id: int = 1, client_id: str = "probe") -> bytes:
    body = _compact_string("sparklog-tests") + _compact_string("0.1") + b"\x00"
    return frame(header_v2(API_API_VERSIONS, 3, correlation_id, client_id) + body)


def metadata_v1(topics: list[str] | None, correlation_id: int = 1) -> bytes:
    if topics is None:
        body = struct.pack(">i", -1)
    else:
        body = struct.pack(">i", len(topics)) + b"".join(_string(t) for t in topics)
    return frame(header_v1(API_METADATA, 1, correlation_id, "probe") + body)


def list_offsets_v1(topic: str, partition: int, timestamp: int, correlation_id: int = 1) -> bytes:
    body = struct.pack(">ii", -1, 1) + _string(topic) + struct.pack(">iiq", 1, partition, timestamp)
    return frame(header_v1(API_LIST_OFFSETS, 1, correlation_id, "probe") + body)


@dataclass(frozen=True, slots=True)
class Record:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def record_batch(records: list[Record], base_timestamp_ms: int) -> bytes:
    """An uncompressed magic-2 batch, base offset 0, no producer id, CreateTime."""
    encoded = bytearray()
    for delta, rec in enumerate(records):
        body = bytearray(b"\x00")  # record attributes
        body += _varint(0)  # timestamp delta
        body += _varint(delta)
        for blob in (rec.key, rec.value):
            body += _varint(-1) if blob is None else _varint(len(blob)) + blob
        body += _varint(len(rec.headers))
        for name, hvalue in rec.headers:
            raw = name.encode()
            body += _varint(len(raw)) + raw
            body += _varint(-1) if hvalue is None else _varint(len(hvalue)) + hvalue
        encoded += _varint(len(body)) + body
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            0,  # attributes: no compression, CreateTime, not transactional
            len(records) - 1,
            base_timestamp_ms,
            base_timestamp_ms,
            -1,
            -1,
            -1,
            len(records),
        )
        + encoded
    )
    crc = crc32c.crc32c(after_crc)
    # batchLength counts everything after the length field itself.
    batch_length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", 0, batch_length, 0, 2, crc) + after_crc


def produce_v3(
    topic: str,
    partition: int,
    records: bytes,
    acks: int = 1,
    timeout_ms: int = 30_000,
    correlation_id: int = 1,
) -> bytes:
    body = (
        _string(None)
        + struct.pack(">hii", acks, timeout_ms, 1)
        + _string(topic)
        + struct.pack(">ii", 1, partition)
        + _bytes(records)
    )
    return frame(header_v1(API_PRODUCE, 3, correlation_id, "bench") + body)


def fetch_v4(
    topic: str,
    partition: int,
    offset: int,
    max_bytes: int,
    max_wait_ms: int = 500,
    correlation_id: int = 1,
) -> bytes:
    body = (
        struct.pack(">iiiib", -1, max_wait_ms, 1, max_bytes, 0)
        + struct.pack(">i", 1)
        + _string(topic)
        + struct.pack(">iiqi", 1, partition, offset, max_bytes)
    )
    return frame(header_v1(API_FETCH, 4, correlation_id, "bench") + body)


def recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            raise ConnectionError(f"peer closed after {len(chunks)} of {size} bytes")
        chunks += chunk
    return bytes(chunks)


def recv_response(sock: socket.socket) -> tuple[int, bytes]:
    """Read one response frame; return (correlation id, bytes after the correlation id)."""
    (size,) = struct.unpack(">i", recv_exact(sock, 4))
    payload = recv_exact(sock, size)
    (correlation_id,) = struct.unpack_from(">i", payload)
    return correlation_id, payload[4:]


def api_versions_error_code(response_body: bytes) -> int:
    (code,) = struct.unpack_from(">h", response_body)
    return int(code)


@dataclass(frozen=True, slots=True)
class ProduceResult:
    error_code: int
    base_offset: int


def parse_produce_v3(body: bytes) -> ProduceResult:
    """Single topic, single partition response of :func:`produce_v3`."""
    pos = 4  # topic count
    (name_len,) = struct.unpack_from(">h", body, pos)
    pos += 2 + name_len + 4  # name, partition count
    _partition, error_code, base_offset = struct.unpack_from(">ihq", body, pos)
    return ProduceResult(error_code, base_offset)


@dataclass(frozen=True, slots=True)
class FetchResult:
    error_code: int
    high_watermark: int
    records: bytes


def parse_fetch_v4(body: bytes) -> FetchResult:
    """Single topic, single partition response of :func:`fetch_v4`."""
    pos = 4 + 4  # throttle, topic count
    (name_len,) = struct.unpack_from(">h", body, pos)
    pos += 2 + name_len + 4
    _partition, error_code, high_watermark, _lso = struct.unpack_from(">ihqq", body, pos)
    pos += 4 + 2 + 8 + 8
    (aborted,) = struct.unpack_from(">i", body, pos)
    pos += 4 + max(aborted, 0) * 16
    (records_len,) = struct.unpack_from(">i", body, pos)
    pos += 4
    records = body[pos : pos + max(records_len, 0)]
    return FetchResult(error_code, high_watermark, records)


def batch_spans(records: bytes) -> list[tuple[int, int]]:
    """(base offset, record count) of each complete batch in a fetched byte range."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while pos + 61 <= len(records):
        base_offset, batch_length = struct.unpack_from(">qi", records, pos)
        end = pos + 12 + batch_length
        if end > len(records):
            break  # a fetch may end with a partial batch
        (count,) = struct.unpack_from(">i", records, pos + 57)
        spans.append((base_offset, count))
        pos = end
    return spans
